// Model-guided against measurement-only tuning on a simulated TPU: how many measurements each
// needs to reach the best tiles or fusion plan of a module (issue 9's tuning-time comparison on
// tpu-sim).
//
//   build/release/bench/tpu_time_to_best --db STORE [FILES...] [--task tile|fusion]
//       [--target tpu-v4-core] [--budget-factor 3] [--strategies annealing,greedy,random]
//       [--tolerance 0.01] [--seed 0]
//
// STORE holds cost-model/<task>-<target> (mltune collect --target T --task K, then mltune
// train-cost-model --target T --task K); FILES default to the five corpus modules the
// time-to-best benchmarks hold out, and the bundled MLP. Each module is tuned as the daemon's tpu
// task tunes it, with the module's simulated time as the score. On a chip every candidate is a
// compile and a run, so each strategy is charged its simulator evaluations; the simulator is
// noise-free, so the comparison is of search decisions. model-topk runs with the daemon's
// parameters: tile measures the 5 best ranked tiles per kernel; fusion measures the 10 best
// ranked plans, then climbs in the model's order, with `--fusion-budget` evaluations in all.
// A measurement-only strategy gets `budget-factor` times as many evaluations as model-topk used.
// The reference: for tiles the optimum (kernel times add up, so a perfect ranker, the simulator
// itself, measuring its first choice per kernel finds it); for fusion the best plan of any run
// and of a long annealing (`--reference-budget` evaluations).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "bench/time_to_best.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/tile_problem.h"

namespace {

using namespace mltune;
namespace fs = std::filesystem;
namespace tpu = backends::tpu;

// A parsed module and what the tpu tasks derive from it.
struct Module {
  std::unique_ptr<ir::Module> module;
  costmodels::OpGraph graph;
  costmodels::FusionPlan plan;  // the default fusion, whose kernels the tile task tunes
  std::vector<costmodels::KernelSummary> kernels;
};

// One strategy's search of `problem`; the clock counts simulator evaluations. With `guided`, it
// is model-topk with `params` (the problem has its ranker).
template <typename ProblemT>
bench::TuningRun Tune(ProblemT& problem, const std::string& strategy, int64_t budget, bool guided,
                      const opt::StrategyParams& params, uint64_t seed) {
  bench::TuningRun run;
  run.strategy = strategy;
  run.default_seconds = problem.Evaluate(problem.DefaultCandidate());
  bench::RunStrategy(
      problem, guided ? std::string(opt::kModelTopK) : strategy, params, opt::Budget{budget, 0},
      seed, [&] { return run.clock += 1; }, run);
  run.measurements = static_cast<int64_t>(run.clock);
  return run;
}

std::string Evaluations(const bench::TuningRun& r, double reference, double tolerance) {
  const double t = r.TimeTo(reference, tolerance);
  return t < 0 ? absl::StrFormat("not in %d", r.measurements) : absl::StrFormat("%.0f", t);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Model-guided (model-topk) vs measurement-only tuning on a simulated TPU: measurements to "
      "the best tiles or fusion plan"};
  std::string db, task = "tile", target = "tpu-v4-core", strategies = "annealing,greedy,random";
  std::vector<std::string> files;
  int64_t fusion_budget = 30, reference_budget = 3000;
  double budget_factor = 3, tolerance = 0.01;
  uint64_t seed = 0;
  app.add_option("--db", db, "Store holding cost-model/<task>-<target> (mltune train-cost-model)")
      ->required();
  app.add_option("files", files, "HLO modules (default: five held-out corpus modules and the MLP)");
  app.add_option("--task", task, "tile or fusion")
      ->default_val("tile")
      ->check(CLI::IsMember({"tile", "fusion"}));
  app.add_option("--target", target, "TPU spec name, as the model was collected for")
      ->default_val("tpu-v4-core");
  app.add_option("--fusion-budget", fusion_budget, "fusion: model-topk's evaluations")
      ->default_val(30);
  app.add_option("--reference-budget", reference_budget,
                 "fusion: evaluations of the long annealing that joins the reference")
      ->default_val(3000);
  app.add_option("--budget-factor", budget_factor,
                 "Evaluations for each measurement-only strategy, as a multiple of model-topk's")
      ->default_val(3);
  app.add_option("--strategies", strategies, "Measurement-only strategies, comma-separated")
      ->default_val("annealing,greedy,random");
  app.add_option("--tolerance", tolerance,
                 "Within this fraction of the reference counts as reached")
      ->default_val(0.01);
  app.add_option("--seed", seed, "Search seed")->default_val(0);
  CLI11_PARSE(app, argc, argv);
  if (files.empty()) files = bench::TimeToBestFiles();
  const bool tiles = task == "tile";

  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(target);
  if (spec == nullptr || spec->kind != "tpu") {
    std::cerr << "error: '" << target << "' is not a tpu spec\n";
    return 1;
  }
  absl::StatusOr<tpu::TpuSimulator> sim = tpu::TpuSimulator::Create(*spec);
  absl::StatusOr<opt::guided::StoredCostModel> newest =
      sim.ok() ? opt::guided::LoadNewestCostModel(db, task, target)
               : absl::StatusOr<opt::guided::StoredCostModel>(sim.status());
  if (!newest.ok()) {
    std::cerr << "error: " << newest.status().message() << "\n";
    return 1;
  }
  const std::vector<std::string> baselines = absl::StrSplit(strategies, ',', absl::SkipEmpty());
  const opt::StrategyParams topk = tiles ? opt::StrategyParams{} : opt::FusionModelTopKParams();

  std::cout << absl::StrFormat(
      "## Measurements to the best %s on %s: model-topk (%s v%d) vs measurement-only search "
      "(%.0fx model-topk's evaluations); reference: %s\n\n",
      tiles ? "tiles" : "fusion plan", target, opt::guided::CostModelName(task, target),
      newest->version, budget_factor,
      tiles ? "the optimum, from a perfect ranker"
            : absl::StrFormat("the best of every run and of annealing with %d evaluations",
                              reference_budget));
  std::cout << "| module | " << (tiles ? "kernels" : "producers")
            << " | strategy | evaluations | best us | vs default | vs reference | "
               "evaluations to reference | best at model-topk's count |\n"
               "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  std::map<std::string, std::vector<double>> at_equal, to_reference_ratio;
  std::map<std::string, int> reached;
  int modules = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseHloText(text);
    if (parsed.ok()) {
      if (absl::Status v = ir::VerifyModule(**parsed); !v.ok()) parsed = v;
    }
    if (!parsed.ok()) {
      std::cerr << "skip " << file << ": " << parsed.status().message() << "\n";
      continue;
    }
    Module m;
    m.module = *std::move(parsed);
    m.graph = costmodels::BuildOpGraph(*m.module);
    m.plan = costmodels::PlanFusion(m.graph);
    m.kernels = costmodels::SummarizeKernels(m.graph, m.plan);
    int64_t size = 0;
    if (tiles) {
      for (const costmodels::KernelSummary& s : m.kernels) size += s.opaque ? 0 : 1;
    } else {
      size = static_cast<int64_t>(costmodels::FusibleProducers(m.graph).size());
    }
    if (size == 0) {
      std::cerr << "skip " << file << ": no " << (tiles ? "tileable kernels" : "fusible producers")
                << "\n";
      continue;
    }

    // Each run gets a fresh problem: the same simulator state, nothing shared.
    auto run = [&](const std::string& strategy, int64_t budget, bool guided,
                   const opt::StrategyParams& params, bool oracle) {
      if (tiles) {
        opt::tiling::TpuTileProblem problem(m.kernels, *sim);
        if (oracle) {
          problem.SetRanker(
              [&m, exact = *sim](int32_t kernel, const std::vector<tpu::TileConfig>& tiles) mutable
              -> absl::StatusOr<std::vector<double>> {
                std::vector<double> scores;
                for (const tpu::TileConfig& t : tiles) {
                  const tpu::KernelTiming timing =
                      exact.SimulateKernel(m.kernels[static_cast<size_t>(kernel)], t);
                  scores.push_back(timing.valid ? timing.seconds
                                                : std::numeric_limits<double>::infinity());
                }
                return scores;
              });
        } else if (guided) {
          problem.SetRanker(opt::guided::TpuTileRanker(newest->model, m.graph, *m.module, m.plan));
        }
        return Tune(problem, strategy, budget, guided || oracle, params, seed);
      }
      opt::fusion::TpuFusionProblem problem(m.graph, *sim);
      if (guided) {
        problem.SetRanker(
            opt::guided::TpuFusionRanker(newest->model, *m.module, problem.graph(), *sim));
      }
      return Tune(problem, strategy, budget, guided, params, seed);
    };
    const bench::TuningRun best =
        tiles ? run("optimum", 1'000'000, false, {{"k", 1}, {"pool", 1e6}}, true)
              : run("annealing", reference_budget, false, {}, false);
    std::vector<bench::TuningRun> runs;
    runs.push_back(run(opt::kModelTopK, tiles ? 1'000'000 : fusion_budget, true, topk, false));
    const int64_t budget = std::max<int64_t>(
        10, static_cast<int64_t>(budget_factor * static_cast<double>(runs[0].measurements)));
    for (const std::string& s : baselines) runs.push_back(run(s, budget, false, {}, false));
    const std::string name = fs::path(file).filename().string().substr(0, 48);
    double reference = best.best;
    for (const bench::TuningRun& r : runs) reference = std::min(reference, r.best);
    if (!std::isfinite(reference)) {
      std::cerr << "skip " << file << ": no valid " << (tiles ? "tile" : "plan")
                << " for some kernel on " << target << "\n";
      continue;
    }
    ++modules;
    for (const bench::TuningRun& r : runs) {
      if (!r.error.empty()) {
        std::cout << "| " << name << " | | " << r.strategy << " | error: " << r.error
                  << " ||||||\n";
        continue;
      }
      const bool guided = r.strategy == opt::kModelTopK;
      const double at = r.BestAt(runs[0].clock);
      std::cout << "| " << name << " | " << size << " | " << r.strategy << " | " << r.measurements
                << " | " << absl::StrFormat("%.3f", 1e6 * r.best) << " | "
                << absl::StrFormat("%.3fx", r.default_seconds / r.best) << " | "
                << absl::StrFormat("%.3fx", r.best / reference) << " | "
                << Evaluations(r, reference, tolerance) << " | "
                << (guided ? "-" : absl::StrFormat("%.3fx reference", at / reference)) << " |\n";
      if (r.TimeTo(reference, tolerance) >= 0) ++reached[r.strategy];
      if (!guided) at_equal[r.strategy].push_back(at / runs[0].best);
      const double t = r.TimeTo(reference, tolerance), g = runs[0].TimeTo(reference, tolerance);
      if (!guided && t > 0 && g > 0) to_reference_ratio[r.strategy].push_back(t / g);
    }
  }
  std::cout << "\n- model-topk reached the reference (within "
            << absl::StrFormat("%.0f%%", 100 * tolerance) << ") on " << reached[opt::kModelTopK]
            << " of " << modules << " modules\n";
  for (const std::string& s : baselines) {
    const std::vector<double>& r = to_reference_ratio[s];
    std::cout << "- " << s << ": reached it on " << reached[s] << " of " << modules
              << "; where both did, geomean evaluations " << s << " / model-topk "
              << (r.empty() ? std::string("(none)")
                            : absl::StrFormat("%.2fx over %d", bench::GeoMean(r), r.size()))
              << "; at model-topk's count its modules ran "
              << absl::StrFormat("%.3fx", bench::GeoMean(at_equal[s]))
              << " model-topk's time (geomean)\n";
  }
  return 0;
}
