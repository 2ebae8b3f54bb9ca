// Model-guided against measurement-only fusion search on the CPU backend: how long each takes to
// reach the best fusion plan of a module (issue 9's tuning-time comparison, at graph level).
//
//   build/release/bench/fusion_time_to_best --db STORE [FILES...] [--budget-factor 3]
//       [--model-plans 30] [--strategies annealing,greedy] [--tolerance 0.01] [--seed 0]
//
// STORE holds cost-model/fusion-cpu (mltune collect --task fusion, then mltune train-cost-model
// --task fusion); FILES default to the tile benchmark's five held-out corpus modules and the
// bundled MLP. Per module, "model-topk" with the daemon's fusion parameters (the model explores
// plans for 8 generations of 256 and the 10 best ranked are measured, in rounds from the best
// measured plan until `model-plans` distinct plans are measured) and each measurement-only
// strategy search fusion priorities, every plan measured as the whole module, as the daemon's
// cpu fusion task does. A measurement-only strategy may measure `budget-factor` times as many
// distinct plans as model-topk did (many priority vectors make the same plan; their repeats are
// free).
//
// Every plan is compiled and measured once, and every strategy sees that measurement: the
// comparison is of search decisions, not of timing noise. Each strategy is charged, on its own
// clock, the wall time the first measurement of each plan it asks for took (compilation
// included; the kernel cache starts empty) and, for model-topk, its model's ranking time
// (lowering each plan and predicting its new kernels). The reference is the best module time any
// strategy found; time to best is the strategy's clock when its best came within `tolerance` of
// it.
//
// Then every plan measured for a module, whichever strategy asked for it, is ranked by the model
// (and by the newest fusion model of each `--also-rank` store: two models on one set of plans):
// Kendall's tau between predicted and measured module times, and the measured time of the plan
// predicted fastest and of the best of the 10 predicted fastest, over the best measured. The plans
// are those the searches visited, not a uniform sample, and include model-topk's own.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "bench/ranking_metrics.h"
#include "bench/time_to_best.h"
#include "costmodels/analytical/op_graph.h"
#include "costmodels/learned/learned_model.h"
#include "ir/hlo_parser.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/cpu_tile_problem.h"
#include "storage/store.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;
namespace cpu = backends::cpu;
using PlanMemo = bench::MeasurementMemo<std::vector<int32_t>>;

// `plans`: how many distinct plans the strategy may measure (steps that hit a plan measured before
// are free, as the problem caches them). Plans not in `memo` are measured with `measure` and the
// search seed.
bench::TuningRun Tune(const ir::Module& module, PlanMemo& memo, const cpu::MeasureOptions& measure,
                      const std::string& strategy, int64_t plans,
                      const opt::StrategyParams& topk_params,
                      std::shared_ptr<const costmodels::learned::LearnedModel> model, bool observe,
                      uint64_t seed) {
  bench::TuningRun run;
  run.strategy = strategy;
  bench::ChargedMeasurements<std::vector<int32_t>> measured(memo, run);
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(module),
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        // Whole module, default kernel parameters.
        const PlanMemo::Entry& e = measured.GetEntry(
            plan.kernel_of, [&] { return cpu::MeasureModule(module, {}, &plan, measure, seed); });
        if (!e.seconds.ok()) return e.seconds.status();
        return opt::fusion::PlanTiming{*e.seconds, e.kernel_s};
      });
  if (strategy == opt::kModelTopK) {
    opt::fusion::CpuFusionProblem::Ranker ranker = opt::guided::CpuFusionRanker(model, module);
    problem.SetRanker({bench::ChargedRanker(run, ranker.rank),
                       observe ? bench::ChargedRanker(run, ranker.observe)
                               : opt::fusion::CpuFusionProblem::ObserveFn()});
  }
  opt::Budget b{100 * plans, 0};
  b.stop = [&] { return run.measurements >= plans; };
  bench::RunStrategy(
      problem, strategy, topk_params, b, seed, [&] { return run.clock; }, run);
  if (!run.error.empty()) return run;
  run.default_seconds = problem.Evaluate(problem.DefaultCandidate());
  return run;
}

struct RankingRow {
  std::string module, model;
  bench::RankingMetrics metrics;
};

// Every plan of `memo` that measured, ranked by `model` (CpuFusionRanker: the sum of its kernels'
// predicted times).
absl::StatusOr<bench::RankingMetrics> RankMeasuredPlans(
    const ir::Module& module, const PlanMemo& memo,
    std::shared_ptr<const costmodels::learned::LearnedModel> model) {
  std::vector<costmodels::FusionPlan> plans;
  std::vector<double> measured;
  for (const auto& [kernel_of, entry] : memo.entries()) {
    if (!entry.seconds.ok()) continue;
    costmodels::FusionPlan plan;
    plan.kernel_of = kernel_of;
    for (size_t node = 0; node < kernel_of.size(); ++node) {
      const int32_t k = kernel_of[node];
      if (k < 0) continue;
      if (static_cast<size_t>(k) >= plan.kernels.size()) plan.kernels.resize(k + 1);
      plan.kernels[static_cast<size_t>(k)].push_back(static_cast<int32_t>(node));
    }
    plans.push_back(std::move(plan));
    measured.push_back(*entry.seconds);
  }
  absl::StatusOr<std::vector<double>> predicted =
      opt::guided::CpuFusionRanker(std::move(model), module).rank(plans);
  if (!predicted.ok()) return predicted.status();
  return bench::Ranking(*predicted, measured, 10);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Model-guided (model-topk) vs measurement-only fusion search on the CPU"};
  bench::CommonOptions o;
  int64_t model_plans = 30;
  int64_t k = -1, rerank = -1, cycles = -1, rounds = -1,
          refine = -1;  // -1: the daemon's (opt::FusionModelTopKParams)
  bench::AddCommonOptions(app, o, opt::guided::CostModelName("fusion", "cpu"),
                          "Distinct plans each measurement-only strategy may measure, as a "
                          "multiple of the plans model-topk measured");
  app.add_option("--model-plans", model_plans,
                 "Distinct plans model-topk measures (its rounds and hill climbing stop there); "
                 "0: one round and no hill climbing, the 10 it ranks first")
      ->default_val(30)
      ->check(CLI::Range(0, 100000));
  app.add_option("--k", k, "plans model-topk measures per round (default: the daemon's)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--rerank", rerank,
                 "model-topk ranks its pool again after each measurement: 0 or 1 (default: the "
                 "daemon's)")
      ->check(CLI::Range(0, 1));
  app.add_option("--cycles", cycles,
                 "model-topk's cycles of rounds and climb, each from the best measured plan "
                 "(0: until its plans run out; default: the daemon's)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--rounds", rounds, "model-topk's rounds (default: the daemon's)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--refine", refine,
                 "model-topk's hill climbing by measurement after its rounds: 0 none, 1 steepest "
                 "descent, 2 first improvement in the model's order (default: the daemon's)")
      ->check(CLI::Range(0, 2));
  bool no_observe = false;
  app.add_flag("--no-observe", no_observe,
               "model-topk ranks with the model alone: measured plans' kernel times do not "
               "correct its predictions (the daemon's model-topk uses them)");
  std::vector<std::string> also_rank;
  app.add_option("--also-rank", also_rank,
                 "Stores whose newest fusion model also ranks each module's measured plans");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::pair<std::string, std::shared_ptr<const costmodels::learned::LearnedModel>>>
      rankers;
  for (const std::string& db : also_rank) {
    absl::StatusOr<opt::guided::StoredCostModel> m =
        opt::guided::LoadNewestCostModel(db, "fusion", "cpu");
    if (!m.ok()) {
      std::cerr << "error: --also-rank " << db << ": " << m.status().message() << "\n";
      return 1;
    }
    rankers.emplace_back(absl::StrCat(fs::path(db).filename().string(), " v", m->version),
                         m->model);
  }
  absl::StatusOr<bench::Started> started = bench::Start(o, "fusion", "mltune-ftb-");
  if (!started.ok()) {
    std::cerr << "error: " << started.status().message() << "\n";
    return 1;
  }
  const std::string& name = started->model_name;
  const opt::guided::StoredCostModel* newest = &started->newest;
  std::shared_ptr<const costmodels::learned::LearnedModel> model = newest->model;
  const std::vector<std::string>& files = o.files;
  const std::vector<std::string>& baselines = started->baselines;
  const double budget_factor = o.budget_factor, tolerance = o.tolerance;
  const uint64_t seed = o.seed;

  // As the daemon's cpu fusion task measures a module, and ranks with the daemon's parameters.
  // --model-plans 0 (no cap on plans) is the first run's model-topk: one round, no hill climbing,
  // which stops on its own.
  cpu::MeasureOptions measure = opt::tiling::ModuleTuningMeasureOptions();
  measure.kernel_times = true;
  const bool observe = !no_observe;
  opt::StrategyParams topk_params = opt::FusionModelTopKParams();
  if (model_plans == 0) {
    topk_params["rounds"] = 1;
    topk_params["refine"] = 0;
  }
  if (k >= 1) topk_params["k"] = static_cast<double>(k);
  if (rerank >= 0) topk_params["rerank"] = static_cast<double>(rerank);
  if (cycles >= 0) topk_params["cycles"] = static_cast<double>(cycles);
  if (rounds >= 0) topk_params["rounds"] = static_cast<double>(rounds);
  if (refine >= 0) topk_params["refine"] = static_cast<double>(refine);

  std::cout << absl::StrFormat(
      "## Time to the best fusion plan: model-topk (k=%d, 8 generations of 256 plans, rounds %d"
      "%s, at most %s plans; %s v%d) vs measurement-only search (up to %.0fx as many distinct "
      "plans measured as model-topk), 1 thread\n\n",
      static_cast<int>(topk_params["k"]), static_cast<int>(topk_params["rounds"]),
      topk_params["refine"] == 0   ? ""
      : topk_params["refine"] == 1 ? " then hill climbing"
                                   : " then hill climbing in the model's order",
      model_plans > 0 ? absl::StrCat(model_plans) : "unlimited", name, newest->version,
      budget_factor);
  std::cout << "| module | fusible producers | strategy | measured plans | best us | vs default "
               "| time to best | best at model-topk's time | charged in all |\n"
               "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  bench::TimeToBestReport report(tolerance, 3);
  std::vector<RankingRow> ranking;
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared = bench::ReadForCpu(file);
    if (!prepared.ok()) {
      std::cerr << "skip " << file << ": " << prepared.status().message() << "\n";
      continue;
    }
    const int64_t producers = static_cast<int64_t>(
        costmodels::FusibleProducers(costmodels::BuildOpGraph(**prepared)).size());
    if (producers == 0) {
      std::cerr << "skip " << file << ": no fusion decision to make\n";
      continue;
    }
    PlanMemo memo;
    std::vector<bench::TuningRun> runs;
    runs.push_back(Tune(**prepared, memo, measure, opt::kModelTopK,
                        model_plans > 0 ? model_plans : 1'000'000, topk_params, model, observe,
                        seed));
    const int64_t budget = std::max<int64_t>(
        10, static_cast<int64_t>(budget_factor * static_cast<double>(runs[0].measurements)));
    for (const std::string& s : baselines) {
      runs.push_back(Tune(**prepared, memo, measure, s, budget, {}, nullptr, false, seed));
    }
    const std::string label = fs::path(file).filename().string().substr(0, 48);
    report.AddModule(label, producers, runs);
    std::vector<std::pair<std::string, std::shared_ptr<const costmodels::learned::LearnedModel>>>
        all = {{absl::StrCat(fs::path(o.db).filename().string(), " v", newest->version), model}};
    all.insert(all.end(), rankers.begin(), rankers.end());
    for (const auto& [model_label, m] : all) {
      absl::StatusOr<bench::RankingMetrics> r = RankMeasuredPlans(**prepared, memo, m);
      if (!r.ok()) {
        std::cerr << label << ": ranking with " << model_label << ": " << r.status().message()
                  << "\n";
        continue;
      }
      ranking.push_back({label, model_label, *r});
    }
  }
  report.PrintSummary("as long as", "model ranking");
  std::cout << "\n### Every measured plan ranked by the model\n\n"
               "| module | model | plans | Kendall tau | predicted fastest / best | best of 10 "
               "predicted fastest / best |\n|---|---|---:|---:|---:|---:|\n";
  for (const RankingRow& r : ranking) {
    std::cout << absl::StrFormat("| %s | %s | %d | %.3f | %.3fx | %.3fx |\n", r.module, r.model,
                                 r.metrics.candidates, r.metrics.kendall_tau, r.metrics.top1_ratio,
                                 r.metrics.topk_ratio);
  }
  return 0;
}
