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
#include <fstream>
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
#include "bench/time_to_best_files.h"
#include "costmodels/learned/learned_model.h"
#include "ir/hlo_parser.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_tile_problem.h"
#include "storage/store.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;
namespace cpu = backends::cpu;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Each (kernel, configuration) measured once: its seconds (or error) and what measuring it cost.
class MeasurementMemo {
 public:
  MeasurementMemo(const cpu::LoweredModule& module, cpu::MeasureOptions options, uint64_t seed)
      : module_(module), options_(options), seed_(seed) {}

  struct Entry {
    absl::StatusOr<double> seconds;
    double cost = 0;  // wall seconds of the first measurement, compilation included
  };
  const Entry& Get(int32_t kernel, const cpu::KernelConfig& config) {
    auto key = std::make_pair(kernel, config);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    const Clock::time_point start = Clock::now();
    absl::StatusOr<cpu::Timing> t =
        cpu::MeasureKernel(module_, kernel, config, {}, options_, seed_);
    Entry e{t.ok() ? absl::StatusOr<double>(t->median_s) : absl::StatusOr<double>(t.status()),
            Since(start)};
    return entries_.emplace(std::move(key), std::move(e)).first->second;
  }
  int64_t size() const { return static_cast<int64_t>(entries_.size()); }

 private:
  const cpu::LoweredModule& module_;
  cpu::MeasureOptions options_;
  uint64_t seed_;
  std::map<std::pair<int32_t, cpu::KernelConfig>, Entry> entries_;
};

struct Run {
  std::string strategy;
  double best = std::numeric_limits<double>::infinity();
  double default_seconds = 0;
  int64_t measurements = 0;  // distinct (kernel, configuration) pairs this strategy asked for
  double clock = 0;          // charged seconds in all
  double inference = 0;      // of which the model's ranking
  std::vector<std::pair<double, double>> trace;  // (clock, best so far) after each evaluation
  std::string error;

  // The best so far once the clock had reached `clock` (the final best if it never did).
  double BestAt(double clock_limit) const {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [clock, b] : trace) {
      if (clock > clock_limit) break;
      best = b;
    }
    return best;
  }
  // The clock when the best so far came within `tolerance` of `reference`; -1 if it never did.
  double TimeTo(double reference, double tolerance) const {
    for (const auto& [clock, best] : trace) {
      if (best <= reference * (1 + tolerance)) return clock;
    }
    return -1;
  }
};

Run Tune(const cpu::LoweredModule& lowered, MeasurementMemo& memo, const std::string& strategy,
         int64_t budget, const opt::StrategyParams& params,
         std::shared_ptr<const costmodels::learned::LearnedModel> model, uint64_t seed) {
  Run run;
  run.strategy = strategy;
  std::set<std::pair<int32_t, cpu::KernelConfig>> asked;
  opt::tiling::CpuTileProblem problem(
      lowered, [&](int32_t k, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
        const MeasurementMemo::Entry& e = memo.Get(k, config);
        if (asked.insert({k, config}).second) {
          run.clock += e.cost;
          ++run.measurements;
        }
        return e.seconds;
      });
  absl::StatusOr<std::unique_ptr<opt::Strategy>> s =
      strategy == opt::kModelTopK ? opt::CreateModelTopK(params)
                                  : opt::StrategyRegistry::Global().Create(strategy);
  if (!s.ok()) {
    run.error = std::string(s.status().message());
    return run;
  }
  if (model != nullptr) {
    opt::tiling::CpuTileProblem::RankFn rank = opt::guided::CpuTileRanker(model, lowered);
    problem.SetRanker([&run, rank](int32_t k, const std::vector<cpu::KernelConfig>& configs) {
      const Clock::time_point start = Clock::now();
      absl::StatusOr<std::vector<double>> r = rank(k, configs);
      run.inference += Since(start);
      run.clock += Since(start);
      return r;
    });
  }
  opt::Budget b{budget, 0};
  b.on_step = [&](const opt::Budget::Report& report) {
    run.trace.emplace_back(run.clock, report.best_score);
  };
  absl::StatusOr<opt::Result> result = (*s)->Search(problem, b, seed);
  if (!result.ok()) {
    run.error = std::string(result.status().message());
    return run;
  }
  run.best = result->best_score;
  run.default_seconds = problem.Evaluate(problem.DefaultCandidate());
  return run;
}

std::string Seconds(double s, double clock) {
  return s < 0 ? absl::StrFormat("not in %.0f s", clock) : absl::StrFormat("%.1f s", s);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Model-guided (model-topk) vs measurement-only tile tuning on the CPU: time to best"};
  std::string db;
  std::vector<std::string> files;
  int64_t k = 5, pool = 256;
  double budget_factor = 3;
  std::string strategies = "annealing,greedy";
  double tolerance = 0.01;
  uint64_t seed = 0;
  bool keep_cache = false;
  app.add_option("--db", db, "Store holding cost-model/tile-cpu (mltune train-cost-model)")
      ->required();
  app.add_option("files", files, "HLO modules (default: five held-out corpus modules and the MLP)");
  app.add_option("--k", k, "Configurations model-topk measures per kernel")->default_val(5);
  app.add_option("--pool", pool, "Configurations model-topk ranks per kernel")->default_val(256);
  app.add_option("--budget-factor", budget_factor,
                 "Module evaluations for each measurement-only strategy, as a multiple of the "
                 "measurements model-topk made")
      ->default_val(3);
  app.add_option("--strategies", strategies, "Measurement-only strategies, comma-separated")
      ->default_val("annealing,greedy");
  app.add_option("--tolerance", tolerance, "Within this fraction of the best counts as the best")
      ->default_val(0.01);
  app.add_option("--seed", seed, "Search and input seed")->default_val(0);
  app.add_flag("--keep-cache", keep_cache,
               "Use $MLTUNE_KERNEL_CACHE as it is (compilations already cached cost nothing)");
  CLI11_PARSE(app, argc, argv);
  if (files.empty()) files = bench::TimeToBestFiles();

  // Measurement costs include compilation, as a first tuning run of a module pays it.
  if (!keep_cache) {
    const fs::path cache = fs::temp_directory_path() / absl::StrCat("mltune-ttb-", getpid());
    fs::remove_all(cache);
    setenv("MLTUNE_KERNEL_CACHE", cache.c_str(), 1);
    std::cerr << "kernel cache: " << cache.string() << " (fresh)\n";
  }
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(db);
  if (!store.ok()) {
    std::cerr << "error: " << store.status().message() << "\n";
    return 1;
  }
  const std::string name = opt::guided::CostModelName("tile", "cpu");
  absl::StatusOr<std::optional<storage::ModelRecord>> record = (*store)->LatestModel(name);
  if (!record.ok() || !record->has_value()) {
    std::cerr << "error: " << db << " has no " << name
              << " (mltune collect ... --db STORE, then mltune train-cost-model --db STORE)\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> loaded =
      costmodels::learned::LearnedModel::Load((*record)->data);
  if (!loaded.ok()) {
    std::cerr << "error: " << name << ": " << loaded.status().message() << "\n";
    return 1;
  }
  std::shared_ptr<const costmodels::learned::LearnedModel> model = *std::move(loaded);
  std::vector<std::string> baselines = absl::StrSplit(strategies, ',', absl::SkipEmpty());

  const cpu::MeasureOptions measure = opt::tiling::KernelTuningMeasureOptions();
  const opt::StrategyParams topk = {{"k", static_cast<double>(k)},
                                    {"pool", static_cast<double>(pool)}};

  std::cout << absl::StrFormat(
      "## Time to the best kernel configurations: model-topk (k=%d, pool=%d; %s v%d) vs "
      "measurement-only search (%.0fx as many module evaluations as model-topk's measurements), "
      "1 thread\n\n",
      k, pool, name, (*record)->version, budget_factor);
  std::cout << "| module | kernels | strategy | measured | best us | vs default | time to best | "
               "best at model-topk's time | charged in all |\n"
               "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  // Per baseline: time-to-best ratios (where both reached the best) and, per module, the
  // baseline's best at model-topk's time over model-topk's best.
  std::map<std::string, std::vector<double>> speedups, equal_time;
  std::map<std::string, int> reached, modules_run;
  double inference_total = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed = bench::ParseAndVerify(text, file);
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared =
        parsed.ok() ? bench::PrepareForCpu(**parsed) : parsed.status();
    absl::StatusOr<cpu::LoweredModule> lowered =
        prepared.ok() ? cpu::Lower(**prepared)
                      : absl::StatusOr<cpu::LoweredModule>(prepared.status());
    if (!lowered.ok()) {
      std::cerr << "skip " << file << ": " << lowered.status().message() << "\n";
      continue;
    }
    MeasurementMemo memo(*lowered, measure, seed);
    std::vector<Run> runs;
    runs.push_back(Tune(*lowered, memo, opt::kModelTopK, 1'000'000, topk, model, seed));
    const int64_t budget = std::max<int64_t>(
        10, static_cast<int64_t>(budget_factor * static_cast<double>(runs[0].measurements)));
    for (const std::string& s : baselines) {
      runs.push_back(Tune(*lowered, memo, s, budget, {}, nullptr, seed));
    }
    double reference = std::numeric_limits<double>::infinity();
    for (const Run& r : runs) reference = std::min(reference, r.best);
    const std::string short_name = fs::path(file).filename().string().substr(0, 48);
    for (const Run& r : runs) {
      if (!r.error.empty()) {
        std::cout << "| " << short_name << " | | " << r.strategy << " | error: " << r.error
                  << " |||||\n";
        continue;
      }
      const bool guided = r.strategy == opt::kModelTopK;
      std::cout << absl::StrFormat(
          "| %s | %d | %s | %d | %.3f | %.2fx | %s | %s | %.1f s%s |\n", short_name,
          lowered->kernels.size(), r.strategy, r.measurements, 1e6 * r.best,
          r.default_seconds / r.best, Seconds(r.TimeTo(reference, tolerance), r.clock),
          guided ? "-" : absl::StrFormat("%.3f us", 1e6 * r.BestAt(runs[0].clock)), r.clock,
          r.inference > 0 ? absl::StrFormat(" (model %.2f s)", r.inference) : "");
    }
    const double guided = runs[0].TimeTo(reference, tolerance);
    inference_total += runs[0].inference;
    for (size_t i = 1; i < runs.size(); ++i) {
      if (!runs[i].error.empty() || !runs[0].error.empty()) continue;
      const double t = runs[i].TimeTo(reference, tolerance);
      ++modules_run[runs[i].strategy];
      if (t >= 0) ++reached[runs[i].strategy];
      if (t > 0 && guided > 0) speedups[runs[i].strategy].push_back(t / guided);
      equal_time[runs[i].strategy].push_back(runs[i].BestAt(runs[0].clock) / runs[0].best);
    }
    std::cout.flush();
  }
  std::cout << "\n";
  for (const auto& [strategy, ratios] : equal_time) {
    std::cout << absl::StrFormat(
        "- %s: reached the best (within %.0f%%) on %d of %d modules; where both did, geomean "
        "time to best %s / model-topk %s; at model-topk's time its modules ran %.2fx slower "
        "than model-topk's (geomean)\n",
        strategy, 100 * tolerance, reached[strategy], modules_run[strategy], strategy,
        speedups[strategy].empty()
            ? std::string("(none)")
            : absl::StrFormat("%.2fx over %d", bench::GeoMean(speedups[strategy]),
                              speedups[strategy].size()),
        bench::GeoMean(ratios));
  }
  std::cout << absl::StrFormat("- model inference in all: %.2f s\n", inference_total);
  return 0;
}
