// Shared by the time-to-best benchmarks (tile_time_to_best, fusion_time_to_best): the options
// both take and their start-up (default modules, a fresh kernel cache, the store's newest learned
// model), measurements shared by the strategies and charged to each, one strategy's run on its own
// clock, and the markdown table and summary both print.
// Header-only: TimeToBestFiles reads the including executable's MLTUNE_CORPUS_DIR and
// MLTUNE_SOURCE_DIR.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/cpu_bench_util.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/guided/stored_cost_models.h"

namespace mltune::bench {

// Five corpus modules that the README's training data leaves out, and the bundled MLP.
inline std::vector<std::string> TimeToBestFiles() {
  const std::string corpus = MLTUNE_CORPUS_DIR "/hlo/hloenv/";
  std::vector<std::string> files;
  for (const char* name :
       {"maml_flax__module_0067.jit_train_step.26.before_optimizations.txt",
        "jax-enhance__module_0033.jit_prim_fun.13.before_optimizations.txt",
        "Scale-Mixtures-of-NNGP__module_0040.jit_serial.13.before_optimizations.txt",
        "jax_muzero__1649835456716499.module_0095.jit__var__1.31.before_optimizations.txt",
        "neural-tangents__module_0011.jit_fn.7.before_optimizations.txt"}) {
    if (std::filesystem::exists(corpus + name)) files.push_back(corpus + name);
  }
  files.push_back(MLTUNE_SOURCE_DIR "/examples/mlp_train_step.hlo");
  return files;
}

// Points $MLTUNE_KERNEL_CACHE at a new empty folder, so measurement costs include compilation, as
// a first tuning run of a module pays it.
inline void UseFreshKernelCache(const std::string& prefix) {
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / absl::StrCat(prefix, getpid());
  std::filesystem::remove_all(cache);
  setenv("MLTUNE_KERNEL_CACHE", cache.c_str(), 1);
  std::cerr << "kernel cache: " << cache.string() << " (fresh)\n";
}

// The options both benchmarks take.
struct CommonOptions {
  std::string db;
  std::vector<std::string> files;
  double budget_factor = 3;
  std::string strategies = "annealing,greedy";
  double tolerance = 0.01;
  uint64_t seed = 0;
  bool keep_cache = false;
};

// Adds --db (a store holding `model_name`), the files, --budget-factor (`budget_help`),
// --strategies, --tolerance, --seed and --keep-cache.
inline void AddCommonOptions(CLI::App& app, CommonOptions& o, const std::string& model_name,
                             const std::string& budget_help) {
  app.add_option("--db", o.db,
                 absl::StrCat("Store holding ", model_name, " (mltune train-cost-model)"))
      ->required();
  app.add_option("files", o.files,
                 "HLO modules (default: five held-out corpus modules and the MLP)");
  app.add_option("--budget-factor", o.budget_factor, budget_help)->default_val(3);
  app.add_option("--strategies", o.strategies, "Measurement-only strategies, comma-separated")
      ->default_val("annealing,greedy");
  app.add_option("--tolerance", o.tolerance, "Within this fraction of the best counts as the best")
      ->default_val(0.01);
  app.add_option("--seed", o.seed, "Search and input seed")->default_val(0);
  app.add_flag("--keep-cache", o.keep_cache,
               "Use $MLTUNE_KERNEL_CACHE as it is (compilations already cached cost nothing)");
}

struct Started {
  std::string model_name;  // cost-model/<task>-cpu
  opt::guided::StoredCostModel newest;
  std::vector<std::string> baselines;  // the measurement-only strategies
};

// After parsing: the default modules when none were given, a fresh kernel cache named after
// `cache_prefix` unless --keep-cache, the newest cpu model for `task`, and the baselines.
inline absl::StatusOr<Started> Start(CommonOptions& o, const std::string& task,
                                     const std::string& cache_prefix) {
  if (o.files.empty()) o.files = TimeToBestFiles();
  if (!o.keep_cache) UseFreshKernelCache(cache_prefix);
  absl::StatusOr<opt::guided::StoredCostModel> newest =
      opt::guided::LoadNewestCostModel(o.db, task, "cpu");
  if (!newest.ok()) return newest.status();
  return Started{opt::guided::CostModelName(task, "cpu"), *std::move(newest),
                 absl::StrSplit(o.strategies, ',', absl::SkipEmpty())};
}

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One strategy's tuning of one module, on its own clock of charged seconds.
struct TuningRun {
  std::string strategy;
  double best = std::numeric_limits<double>::infinity();
  double default_seconds = 0;
  int64_t measurements = 0;                      // distinct measurements this strategy asked for
  double clock = 0;                              // charged seconds in all
  double inference = 0;                          // of which the model's ranking
  std::vector<std::pair<double, double>> trace;  // (clock, best so far) after each evaluation
  std::string error;

  // The best so far once the clock had reached `clock_limit` (the final best if it never did).
  double BestAt(double clock_limit) const {
    double b = std::numeric_limits<double>::infinity();
    for (const auto& [clock_at, best_at] : trace) {
      if (clock_at > clock_limit) break;
      b = best_at;
    }
    return b;
  }
  // The clock when the best so far came within `tolerance` of `reference`; -1 if it never did.
  double TimeTo(double reference, double tolerance) const {
    for (const auto& [clock_at, best_at] : trace) {
      if (best_at <= reference * (1 + tolerance)) return clock_at;
    }
    return -1;
  }
};

// Runs `strategy` on `problem` within `budget`: model-topk with `topk_params`, else the named
// strategy of opt::StrategyRegistry. The budget's on_step appends (clock(), best so far) to
// run.trace, clock() called once per step; the best score, or the error, goes into `run`.
inline void RunStrategy(opt::Problem& problem, const std::string& strategy,
                        const opt::StrategyParams& topk_params, opt::Budget budget, uint64_t seed,
                        const std::function<double()>& clock, TuningRun& run) {
  absl::StatusOr<std::unique_ptr<opt::Strategy>> s =
      strategy == opt::kModelTopK ? opt::CreateModelTopK(topk_params)
                                  : opt::StrategyRegistry::Global().Create(strategy);
  if (!s.ok()) {
    run.error = std::string(s.status().message());
    return;
  }
  budget.on_step = [&](const opt::Budget::Report& report) {
    run.trace.emplace_back(clock(), report.best_score);
  };
  absl::StatusOr<opt::Result> result = (*s)->Search(problem, budget, seed);
  if (!result.ok()) {
    run.error = std::string(result.status().message());
    return;
  }
  run.best = result->best_score;
}

// Each key (a fusion plan, a kernel and its configuration) measured once and shared by every
// strategy: its seconds or error, and the wall time of that first measurement, compilation
// included.
template <typename Key>
class MeasurementMemo {
 public:
  struct Entry {
    absl::StatusOr<double> seconds;
    double cost = 0;
    std::vector<double> kernel_s;  // Timing::kernel_s, when measured with kernel times
  };
  using Measure = std::function<absl::StatusOr<backends::cpu::Timing>()>;

  // `measure` runs on the first Get of `key` only.
  const Entry& Get(const Key& key, const Measure& measure) {
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    absl::StatusOr<backends::cpu::Timing> t = measure();
    Entry e{t.ok() ? absl::StatusOr<double>(t->median_s) : absl::StatusOr<double>(t.status()),
            SecondsSince(start), t.ok() ? t->kernel_s : std::vector<double>{}};
    return entries_.emplace(key, std::move(e)).first->second;
  }

  const std::map<Key, Entry>& entries() const { return entries_; }

 private:
  std::map<Key, Entry> entries_;
};

// The memo as one strategy's run sees it: the first time the run asks for a key it is charged
// that measurement's cost, as if it had measured the key itself; asking again is free, as the
// problems cache what they evaluated.
template <typename Key>
class ChargedMeasurements {
 public:
  ChargedMeasurements(MeasurementMemo<Key>& memo, TuningRun& run) : memo_(memo), run_(run) {}
  absl::StatusOr<double> Get(const Key& key,
                             const typename MeasurementMemo<Key>::Measure& measure) {
    return GetEntry(key, measure).seconds;
  }
  const typename MeasurementMemo<Key>::Entry& GetEntry(
      const Key& key, const typename MeasurementMemo<Key>::Measure& measure) {
    const typename MeasurementMemo<Key>::Entry& e = memo_.Get(key, measure);
    if (asked_.insert(key).second) {
      run_.clock += e.cost;
      ++run_.measurements;
    }
    return e;
  }

 private:
  MeasurementMemo<Key>& memo_;
  TuningRun& run_;
  std::set<Key> asked_;
};

// `rank` (or a ranker's observe, which returns nothing) wrapped so each call's wall time is
// charged to `run`, as model inference.
template <typename Rank>
auto ChargedRanker(TuningRun& run, Rank rank) {
  return [&run, rank](const auto&... args) {
    const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    auto charge = [&] {
      const double seconds = SecondsSince(start);
      run.inference += seconds;
      run.clock += seconds;
    };
    if constexpr (std::is_void_v<decltype(rank(args...))>) {
      rank(args...);
      charge();
    } else {
      auto ranked = rank(args...);
      charge();
      return ranked;
    }
  };
}

// The per-module rows (model-topk first in `runs`, then the measurement-only strategies) and,
// over all modules, each measurement-only strategy's summary against model-topk.
class TimeToBestReport {
 public:
  // `ratio_digits`: decimals of the "vs default" and "at model-topk's time" ratios.
  TimeToBestReport(double tolerance, int ratio_digits)
      : tolerance_(tolerance), ratio_digits_(ratio_digits) {}

  // Prints one row per run; `size` is the module's size column (kernels, fusible producers).
  void AddModule(const std::string& name, int64_t size, const std::vector<TuningRun>& runs) {
    double reference = std::numeric_limits<double>::infinity();
    for (const TuningRun& r : runs) reference = std::min(reference, r.best);
    for (const TuningRun& r : runs) {
      if (!r.error.empty()) {
        std::cout << "| " << name << " | | " << r.strategy << " | error: " << r.error << " |||||\n";
        continue;
      }
      const bool guided = r.strategy == opt::kModelTopK;
      const double to_best = r.TimeTo(reference, tolerance_);
      std::cout << "| " << name << " | " << size << " | " << r.strategy << " | " << r.measurements
                << " | " << absl::StrFormat("%.3f", 1e6 * r.best) << " | "
                << Ratio(r.default_seconds / r.best) << " | "
                << (to_best < 0 ? absl::StrFormat("not in %.0f s", r.clock)
                                : absl::StrFormat("%.1f s", to_best))
                << " | "
                << (guided ? "-" : absl::StrFormat("%.3f us", 1e6 * r.BestAt(runs[0].clock)))
                << " | " << absl::StrFormat("%.1f s", r.clock)
                << (r.inference > 0 ? absl::StrFormat(" (model %.2f s)", r.inference) : "")
                << " |\n";
    }
    const double guided = runs[0].TimeTo(reference, tolerance_);
    inference_total_ += runs[0].inference;
    for (size_t i = 1; i < runs.size(); ++i) {
      if (!runs[i].error.empty() || !runs[0].error.empty()) continue;
      const double t = runs[i].TimeTo(reference, tolerance_);
      ++modules_run_[runs[i].strategy];
      if (t >= 0) ++reached_[runs[i].strategy];
      if (t > 0 && guided > 0) speedups_[runs[i].strategy].push_back(t / guided);
      equal_time_[runs[i].strategy].push_back(runs[i].BestAt(runs[0].clock) / runs[0].best);
    }
    std::cout.flush();
  }

  // `slower`: how "at model-topk's time its modules ran <ratio> <slower> model-topk's" reads.
  void PrintSummary(const std::string& slower, const std::string& inference_label) const {
    std::cout << "\n";
    for (const auto& [strategy, ratios] : equal_time_) {
      auto it = speedups_.find(strategy);
      const std::vector<double> s = it != speedups_.end() ? it->second : std::vector<double>{};
      auto reached = reached_.find(strategy);
      std::cout << "- " << strategy << ": reached the best (within "
                << absl::StrFormat("%.0f", 100 * tolerance_) << "%) on "
                << (reached != reached_.end() ? reached->second : 0) << " of "
                << modules_run_.at(strategy) << " modules; where both did, geomean "
                << "time to best " << strategy << " / model-topk "
                << (s.empty() ? std::string("(none)")
                              : absl::StrFormat("%.2fx over %d", GeoMean(s), s.size()))
                << "; at model-topk's time its modules ran " << Ratio(GeoMean(ratios)) << " "
                << slower << " model-topk's (geomean)\n";
    }
    std::cout << "- " << inference_label
              << " in all: " << absl::StrFormat("%.2f s", inference_total_) << "\n";
  }

 private:
  std::string Ratio(double r) const { return absl::StrFormat("%.*fx", ratio_digits_, r); }

  double tolerance_;
  int ratio_digits_;
  std::map<std::string, std::vector<double>> speedups_, equal_time_;
  std::map<std::string, int> reached_, modules_run_;
  double inference_total_ = 0;
};

}  // namespace mltune::bench
