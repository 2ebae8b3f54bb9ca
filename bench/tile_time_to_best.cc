// Model-guided against measurement-only tuning on the CPU backend: how long each takes to reach
// the best kernel configurations of a module (issue 9's tuning-time comparison).
//
//   build/release/bench/tile_time_to_best --db STORE [FILES...] [--k 5] [--pool 256]
//       [--budget-factor 3] [--strategies annealing,greedy] [--tolerance 0.01] [--seed 0]
//
// STORE holds cost-model/tile-cpu (mltune collect, then mltune train-cost-model); FILES default to
// five corpus modules that the README's training command leaves out, and the bundled MLP
// example. Per module, "model-topk" (the newest model ranks up to `pool` configurations per
// kernel, the `k` best are measured) and each measurement-only strategy tune the kernel
// parameters, each kernel measured alone as the daemon's tile task does. A measurement-only
// strategy gets `budget-factor` times as many module evaluations as model-topk measured
// (kernel, configuration) pairs, so it has room to spend more time than model-topk did.
//
// Every (kernel, configuration) is compiled and measured once, and every strategy sees that
// measurement: the comparison is of search decisions, not of timing noise. Each strategy is
// charged, on its own clock, the wall time the first measurement of each pair it asks for took
// (compilation included; the kernel cache starts empty) and, for model-topk, its model's
// inference time. The reference is the best module time any strategy found; time to best is the
// strategy's clock when its best came within `tolerance` of it. "best at model-topk's time" is a
// measurement-only strategy's best when its clock reached model-topk's whole clock.
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
#include "bench/time_to_best.h"
#include "costmodels/learned/learned_model.h"
#include "ir/hlo_parser.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/cpu_tile_problem.h"
#include "storage/store.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;
namespace cpu = backends::cpu;
using MeasurementMemo = bench::MeasurementMemo<std::pair<int32_t, cpu::KernelConfig>>;

// (kernel, configuration) pairs not in `memo` are measured with `measure` and the search seed.
bench::TuningRun Tune(const cpu::LoweredModule& lowered, MeasurementMemo& memo,
                      const cpu::MeasureOptions& measure, const std::string& strategy,
                      int64_t budget, const opt::StrategyParams& params,
                      std::shared_ptr<const costmodels::learned::LearnedModel> model,
                      uint64_t seed) {
  bench::TuningRun run;
  run.strategy = strategy;
  bench::ChargedMeasurements<std::pair<int32_t, cpu::KernelConfig>> measured(memo, run);
  opt::tiling::CpuTileProblem problem(
      lowered, [&](int32_t k, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
        return measured.Get(
            {k, config}, [&] { return cpu::MeasureKernel(lowered, k, config, {}, measure, seed); });
      });
  if (model != nullptr) {
    problem.SetRanker(bench::ChargedRanker(run, opt::guided::CpuTileRanker(model, lowered)));
  }
  bench::RunStrategy(
      problem, strategy, params, opt::Budget{budget, 0}, seed, [&] { return run.clock; }, run);
  if (!run.error.empty()) return run;
  run.default_seconds = problem.Evaluate(problem.DefaultCandidate());
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Model-guided (model-topk) vs measurement-only tile tuning on the CPU: time to best"};
  bench::CommonOptions o;
  int64_t k = 5, pool = 256;
  bench::AddCommonOptions(app, o, opt::guided::CostModelName("tile", "cpu"),
                          "Module evaluations for each measurement-only strategy, as a multiple "
                          "of the measurements model-topk made");
  app.add_option("--k", k, "Configurations model-topk measures per kernel")->default_val(5);
  app.add_option("--pool", pool, "Configurations model-topk ranks per kernel")->default_val(256);
  CLI11_PARSE(app, argc, argv);
  absl::StatusOr<bench::Started> started = bench::Start(o, "tile", "mltune-ttb-");
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

  const cpu::MeasureOptions measure = opt::tiling::KernelTuningMeasureOptions();
  const opt::StrategyParams topk = {{"k", static_cast<double>(k)},
                                    {"pool", static_cast<double>(pool)}};

  std::cout << absl::StrFormat(
      "## Time to the best kernel configurations: model-topk (k=%d, pool=%d; %s v%d) vs "
      "measurement-only search (%.0fx as many module evaluations as model-topk's measurements), "
      "1 thread\n\n",
      k, pool, name, newest->version, budget_factor);
  std::cout << "| module | kernels | strategy | measured | best us | vs default | time to best | "
               "best at model-topk's time | charged in all |\n"
               "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  bench::TimeToBestReport report(tolerance, 2);
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared = bench::ReadForCpu(file);
    absl::StatusOr<cpu::LoweredModule> lowered =
        prepared.ok() ? cpu::Lower(**prepared)
                      : absl::StatusOr<cpu::LoweredModule>(prepared.status());
    if (!lowered.ok()) {
      std::cerr << "skip " << file << ": " << lowered.status().message() << "\n";
      continue;
    }
    MeasurementMemo memo;
    std::vector<bench::TuningRun> runs;
    runs.push_back(Tune(*lowered, memo, measure, opt::kModelTopK, 1'000'000, topk, model, seed));
    const int64_t budget = std::max<int64_t>(
        10, static_cast<int64_t>(budget_factor * static_cast<double>(runs[0].measurements)));
    for (const std::string& s : baselines) {
      runs.push_back(Tune(*lowered, memo, measure, s, budget, {}, nullptr, seed));
    }
    report.AddModule(fs::path(file).filename().string().substr(0, 48),
                     static_cast<int64_t>(lowered->kernels.size()), runs);
  }
  report.PrintSummary("slower than", "model inference");
  return 0;
}
