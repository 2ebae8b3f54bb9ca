// Model-guided against measurement-only tile tuning on a simulated TPU: how many measurements
// each needs to reach the best tiles of a module (issue 9's tuning-time comparison, tpu-sim).
//
//   build/release/bench/tpu_tile_time_to_best --db STORE [FILES...] [--target tpu-v4-core]
//       [--k 5] [--pool 256] [--budget-factor 3] [--strategies annealing,greedy,random]
//       [--tolerance 0.01] [--seed 0]
//
// STORE holds cost-model/tile-<target> (mltune collect --target T --task tile, then mltune
// train-cost-model --target T); FILES default to the five corpus modules the time-to-best
// benchmarks hold out, and the bundled MLP. Each module is tuned as the daemon's tpu tile task
// tunes it: its default fusion's kernels, one tile each, the module's simulated time as the
// score. On a real chip every candidate is a compile-and-run, so each strategy is charged its
// simulator evaluations; the simulator is noise-free, so the comparison is of search decisions.
// The reference is the optimum: kernels' times add up, so a perfect model (the simulator itself)
// ranking every tile of every kernel and measuring its first choice finds it. A measurement-only
// strategy gets `budget-factor` times as many evaluations as model-topk used.
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
#include "optimizers/guided/rankers.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/tile_problem.h"

namespace {

using namespace mltune;
namespace fs = std::filesystem;
namespace tpu = backends::tpu;

// A parsed module and what the tile task derives from it.
struct Module {
  std::unique_ptr<ir::Module> module;
  costmodels::OpGraph graph;
  costmodels::FusionPlan plan;
  std::vector<costmodels::KernelSummary> kernels;
};

// One strategy's tuning; the clock counts simulator evaluations.
bench::TuningRun Tune(const Module& m, const tpu::TpuSimulator& sim, const std::string& strategy,
                      int64_t budget, const opt::StrategyParams& params,
                      const opt::tiling::TpuTileProblem::RankFn& rank, uint64_t seed) {
  bench::TuningRun run;
  run.strategy = strategy;
  opt::tiling::TpuTileProblem problem(m.kernels, sim);
  run.default_seconds = problem.Evaluate(problem.DefaultCandidate());
  if (rank) problem.SetRanker(rank);
  absl::StatusOr<std::unique_ptr<opt::Strategy>> s =
      rank ? opt::CreateModelTopK(params) : opt::StrategyRegistry::Global().Create(strategy);
  if (!s.ok()) {
    run.error = std::string(s.status().message());
    return run;
  }
  opt::Budget b{budget, 0};
  b.on_step = [&](const opt::Budget::Report& report) {
    ++run.clock;
    run.trace.emplace_back(run.clock, report.best_score);
  };
  absl::StatusOr<opt::Result> result = (*s)->Search(problem, b, seed);
  if (!result.ok()) {
    run.error = std::string(result.status().message());
    return run;
  }
  run.best = result->best_score;
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
      "Model-guided (model-topk) vs measurement-only tile tuning on a simulated TPU: "
      "measurements to the best tiles"};
  std::string db, target = "tpu-v4-core", strategies = "annealing,greedy,random";
  std::vector<std::string> files;
  int64_t k = 5, pool = 256;
  double budget_factor = 3, tolerance = 0.01;
  uint64_t seed = 0;
  app.add_option("--db", db, "Store holding cost-model/tile-<target> (mltune train-cost-model)")
      ->required();
  app.add_option("files", files, "HLO modules (default: five held-out corpus modules and the MLP)");
  app.add_option("--target", target, "TPU spec name, as the model was collected for")
      ->default_val("tpu-v4-core");
  app.add_option("--k", k, "Tiles model-topk measures per kernel")->default_val(5);
  app.add_option("--pool", pool, "Tiles model-topk ranks per kernel")->default_val(256);
  app.add_option("--budget-factor", budget_factor,
                 "Evaluations for each measurement-only strategy, as a multiple of model-topk's")
      ->default_val(3);
  app.add_option("--strategies", strategies, "Measurement-only strategies, comma-separated")
      ->default_val("annealing,greedy,random");
  app.add_option("--tolerance", tolerance, "Within this fraction of the optimum counts as reached")
      ->default_val(0.01);
  app.add_option("--seed", seed, "Search seed")->default_val(0);
  CLI11_PARSE(app, argc, argv);
  if (files.empty()) files = bench::TimeToBestFiles();

  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(target);
  if (spec == nullptr || spec->kind != "tpu") {
    std::cerr << "error: '" << target << "' is not a tpu spec\n";
    return 1;
  }
  absl::StatusOr<tpu::TpuSimulator> sim = tpu::TpuSimulator::Create(*spec);
  absl::StatusOr<opt::guided::StoredCostModel> newest =
      sim.ok() ? opt::guided::LoadNewestCostModel(db, "tile", target)
               : absl::StatusOr<opt::guided::StoredCostModel>(sim.status());
  if (!newest.ok()) {
    std::cerr << "error: " << newest.status().message() << "\n";
    return 1;
  }
  const std::vector<std::string> baselines = absl::StrSplit(strategies, ',', absl::SkipEmpty());
  const opt::StrategyParams topk = {{"k", static_cast<double>(k)},
                                    {"pool", static_cast<double>(pool)}};

  std::cout << absl::StrFormat(
      "## Measurements to the best tiles on %s: model-topk (k=%d, pool=%d; %s v%d) vs "
      "measurement-only search (%.0fx model-topk's evaluations); optimum from a perfect model\n\n",
      target, k, pool, opt::guided::CostModelName("tile", target), newest->version, budget_factor);
  std::cout << "| module | kernels | strategy | evaluations | best us | vs default | vs optimum | "
               "evaluations to optimum | best at model-topk's count |\n"
               "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  std::map<std::string, std::vector<double>> at_equal, to_optimum_ratio;
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
    int64_t tileable = 0;
    for (const costmodels::KernelSummary& s : m.kernels) tileable += s.opaque ? 0 : 1;
    if (tileable == 0) continue;

    tpu::TpuSimulator oracle_sim = *sim;
    const opt::tiling::TpuTileProblem::RankFn oracle =
        [&](int32_t kernel,
            const std::vector<tpu::TileConfig>& tiles) -> absl::StatusOr<std::vector<double>> {
      std::vector<double> scores;
      for (const tpu::TileConfig& t : tiles) {
        const tpu::KernelTiming timing =
            oracle_sim.SimulateKernel(m.kernels[static_cast<size_t>(kernel)], t);
        scores.push_back(timing.valid ? timing.seconds : std::numeric_limits<double>::infinity());
      }
      return scores;
    };
    const bench::TuningRun best =
        Tune(m, *sim, "optimum", 1'000'000, {{"k", 1}, {"pool", 1e6}}, oracle, seed);
    std::vector<bench::TuningRun> runs;
    runs.push_back(Tune(m, *sim, opt::kModelTopK, 1'000'000, topk,
                        opt::guided::TpuTileRanker(newest->model, m.graph, *m.module, m.plan),
                        seed));
    const int64_t budget = std::max<int64_t>(
        10, static_cast<int64_t>(budget_factor * static_cast<double>(runs[0].measurements)));
    for (const std::string& s : baselines) runs.push_back(Tune(m, *sim, s, budget, {}, {}, seed));
    const std::string name = fs::path(file).filename().string().substr(0, 48);
    const double optimum = best.best;
    if (!std::isfinite(optimum)) {
      std::cerr << "skip " << file << ": no valid tile for some kernel on " << target << "\n";
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
      std::cout << "| " << name << " | " << tileable << " | " << r.strategy << " | "
                << r.measurements << " | " << absl::StrFormat("%.3f", 1e6 * r.best) << " | "
                << absl::StrFormat("%.3fx", r.default_seconds / r.best) << " | "
                << absl::StrFormat("%.3fx", r.best / optimum) << " | "
                << Evaluations(r, optimum, tolerance) << " | "
                << (guided ? "-" : absl::StrFormat("%.3fx optimum", at / optimum)) << " |\n";
      if (r.TimeTo(optimum, tolerance) >= 0) ++reached[r.strategy];
      if (!guided) at_equal[r.strategy].push_back(at / runs[0].best);
      const double t = r.TimeTo(optimum, tolerance), g = runs[0].TimeTo(optimum, tolerance);
      if (!guided && t > 0 && g > 0) to_optimum_ratio[r.strategy].push_back(t / g);
    }
  }
  std::cout << "\n- model-topk reached the optimum (within "
            << absl::StrFormat("%.0f%%", 100 * tolerance) << ") on " << reached[opt::kModelTopK]
            << " of " << modules << " modules\n";
  for (const std::string& s : baselines) {
    const std::vector<double>& r = to_optimum_ratio[s];
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
