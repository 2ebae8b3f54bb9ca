// Model-guided against measurement-only fusion search on the CPU backend: how long each takes to
// reach the best fusion plan of a module (issue 9's tuning-time comparison, at graph level).
//
//   build/release/bench/fusion_time_to_best --db STORE [FILES...] [--budget-factor 3]
//       [--strategies annealing,greedy] [--tolerance 0.01] [--seed 0]
//
// STORE holds cost-model/fusion-cpu (mltune collect --task fusion, then mltune train-cost-model
// --task fusion); FILES default to the tile benchmark's five held-out corpus modules and the
// bundled MLP. Per module, "model-topk" with the daemon's fusion parameters (the model explores
// plans for 8 generations of 256; the 10 best ranked are measured) and each measurement-only
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
#include "costmodels/analytical/op_graph.h"
#include "costmodels/learned/learned_model.h"
#include "ir/hlo_parser.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "storage/store.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;
namespace cpu = backends::cpu;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Each plan measured once (whole module, default kernel parameters): seconds and what it cost.
class PlanMemo {
 public:
  PlanMemo(const ir::Module& module, cpu::MeasureOptions options, uint64_t seed)
      : module_(module), options_(options), seed_(seed) {}

  struct Entry {
    absl::StatusOr<double> seconds;
    double cost = 0;  // wall seconds of the first measurement, compilation included
  };
  const Entry& Get(const costmodels::FusionPlan& plan) {
    auto it = entries_.find(plan.kernel_of);
    if (it != entries_.end()) return it->second;
    const Clock::time_point start = Clock::now();
    absl::StatusOr<cpu::Timing> t = cpu::MeasureModule(module_, {}, &plan, options_, seed_);
    Entry e{t.ok() ? absl::StatusOr<double>(t->median_s) : absl::StatusOr<double>(t.status()),
            Since(start)};
    return entries_.emplace(plan.kernel_of, std::move(e)).first->second;
  }

 private:
  const ir::Module& module_;
  cpu::MeasureOptions options_;
  uint64_t seed_;
  std::map<std::vector<int32_t>, Entry> entries_;
};

struct Run {
  std::string strategy;
  double best = std::numeric_limits<double>::infinity();
  double default_seconds = 0;
  int64_t measurements = 0;                      // distinct plans this strategy asked for
  double clock = 0;                              // charged seconds in all
  double inference = 0;                          // of which the model's ranking
  std::vector<std::pair<double, double>> trace;  // (clock, best so far) after each evaluation
  std::string error;

  double BestAt(double clock_limit) const {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [clock, b] : trace) {
      if (clock > clock_limit) break;
      best = b;
    }
    return best;
  }
  double TimeTo(double reference, double tolerance) const {
    for (const auto& [clock, best] : trace) {
      if (best <= reference * (1 + tolerance)) return clock;
    }
    return -1;
  }
};

// `plans`: how many distinct plans the strategy may measure (steps that hit a plan measured before
// are free, as the problem caches them).
Run Tune(const ir::Module& module, PlanMemo& memo, const std::string& strategy, int64_t plans,
         std::shared_ptr<const costmodels::learned::LearnedModel> model, uint64_t seed) {
  Run run;
  run.strategy = strategy;
  std::set<std::vector<int32_t>> asked;
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(module),
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<double> {
        const PlanMemo::Entry& e = memo.Get(plan);
        if (asked.insert(plan.kernel_of).second) {
          run.clock += e.cost;
          ++run.measurements;
        }
        return e.seconds;
      });
  const bool guided = strategy == opt::kModelTopK;
  absl::StatusOr<std::unique_ptr<opt::Strategy>> s =
      guided ? opt::CreateModelTopK(opt::FusionModelTopKParams())
             : opt::StrategyRegistry::Global().Create(strategy);
  if (!s.ok()) {
    run.error = std::string(s.status().message());
    return run;
  }
  if (guided) {
    opt::fusion::CpuFusionProblem::RankFn rank = opt::guided::CpuFusionRanker(model, module);
    problem.SetRanker([&run, rank](const std::vector<costmodels::FusionPlan>& plans) {
      const Clock::time_point start = Clock::now();
      absl::StatusOr<std::vector<double>> r = rank(plans);
      run.inference += Since(start);
      run.clock += Since(start);
      return r;
    });
  }
  opt::Budget b{100 * plans, 0};
  b.stop = [&] { return run.measurements >= plans; };
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
  CLI::App app{"Model-guided (model-topk) vs measurement-only fusion search on the CPU"};
  std::string db;
  std::vector<std::string> files;
  double budget_factor = 3;
  std::string strategies = "annealing,greedy";
  double tolerance = 0.01;
  uint64_t seed = 0;
  bool keep_cache = false;
  app.add_option("--db", db, "Store holding cost-model/fusion-cpu (mltune train-cost-model)")
      ->required();
  app.add_option("files", files, "HLO modules (default: five held-out corpus modules and the MLP)");
  app.add_option("--budget-factor", budget_factor,
                 "Distinct plans each measurement-only strategy may measure, as a multiple of "
                 "the plans model-topk measured")
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

  if (!keep_cache) {
    const fs::path cache = fs::temp_directory_path() / absl::StrCat("mltune-ftb-", getpid());
    fs::remove_all(cache);
    setenv("MLTUNE_KERNEL_CACHE", cache.c_str(), 1);
    std::cerr << "kernel cache: " << cache.string() << " (fresh)\n";
  }
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(db);
  if (!store.ok()) {
    std::cerr << "error: " << store.status().message() << "\n";
    return 1;
  }
  const std::string name = opt::guided::CostModelName("fusion", "cpu");
  absl::StatusOr<std::optional<storage::ModelRecord>> record = (*store)->LatestModel(name);
  if (!record.ok() || !record->has_value()) {
    std::cerr << "error: " << db << " has no " << name
              << " (mltune collect ... --task fusion --db STORE, then mltune train-cost-model "
                 "--task fusion --db STORE)\n";
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

  // As the daemon's cpu fusion task measures a module.
  cpu::MeasureOptions measure;
  measure.max_seconds = 0.2;
  measure.min_reps = 5;

  std::cout << absl::StrFormat(
      "## Time to the best fusion plan: model-topk (k=10, 8 generations of 256 plans; %s v%d) "
      "vs measurement-only search (up to %.0fx as many distinct plans measured as model-topk), "
      "1 thread\n\n",
      name, (*record)->version, budget_factor);
  std::cout << "| module | fusible producers | strategy | measured plans | best us | vs default "
               "| time to best | best at model-topk's time | charged in all |\n"
               "|---|---:|---|---:|---:|---:|---:|---:|---:|\n";
  std::map<std::string, std::vector<double>> speedups, equal_time;
  std::map<std::string, int> reached, modules_run;
  double inference_total = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed = bench::ParseAndVerify(text, file);
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared =
        parsed.ok() ? bench::PrepareForCpu(**parsed) : parsed.status();
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
    PlanMemo memo(**prepared, measure, seed);
    std::vector<Run> runs;
    runs.push_back(Tune(**prepared, memo, opt::kModelTopK, 1'000'000, model, seed));
    const int64_t budget = std::max<int64_t>(
        10, static_cast<int64_t>(budget_factor * static_cast<double>(runs[0].measurements)));
    for (const std::string& s : baselines) {
      runs.push_back(Tune(**prepared, memo, s, budget, nullptr, seed));
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
          "| %s | %d | %s | %d | %.3f | %.3fx | %s | %s | %.1f s%s |\n", short_name, producers,
          r.strategy, r.measurements, 1e6 * r.best, r.default_seconds / r.best,
          Seconds(r.TimeTo(reference, tolerance), r.clock),
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
        "time to best %s / model-topk %s; at model-topk's time its modules ran %.3fx as long "
        "as model-topk's (geomean)\n",
        strategy, 100 * tolerance, reached[strategy], modules_run[strategy], strategy,
        speedups[strategy].empty()
            ? std::string("(none)")
            : absl::StrFormat("%.2fx over %d", bench::GeoMean(speedups[strategy]),
                              speedups[strategy].size()),
        bench::GeoMean(ratios));
  }
  std::cout << absl::StrFormat("- model ranking in all: %.2f s\n", inference_total);
  return 0;
}
