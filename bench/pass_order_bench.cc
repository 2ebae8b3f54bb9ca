// Pass-order search against XLA's default pipeline, on every corpus module with >= 100 ops.
//
//   build/release/bench/pass_order_bench [--budgets 100,1000] [--strategies a,b] [--seconds S]
//                                        [--min-ops N] [--target cpu|gpu] [--no-warm-start]
//
// Prints one row per module: original op count, after the default (XLA-order) pipeline, and after
// each strategy at each budget, with the improvement over the default (positive = fewer ops than
// XLA's order), then the geometric mean of default/best per column, and the default pipeline's
// time on the largest module per 10k instructions (median of --timing-runs runs in this warm
// process).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "ir/ir.h"
#include "optimizers/core/search.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/default_pipelines.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;

std::vector<std::string> CorpusFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

double Ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Pass-order search vs XLA's default pipeline on the HLO corpus"};
  std::vector<int64_t> budgets = {100, 1000};
  std::vector<std::string> strategies = {"random", "greedy", "beam", "annealing", "evolutionary"};
  double seconds = 120;
  int64_t min_ops = 100;
  std::string target = "cpu";
  const char* env = std::getenv("MLTUNE_CORPUS_DIR");
  std::string corpus = std::string(env != nullptr ? env : MLTUNE_CORPUS_DIR) + "/hlo";
  app.add_option("--budgets", budgets, "Budgets in environment steps")->delimiter(',');
  app.add_option("--strategies", strategies, "Strategies")->delimiter(',');
  app.add_option("--seconds", seconds, "Time cap per search");
  app.add_option("--min-ops", min_ops, "Smallest module (op count) to include");
  app.add_option("--target", target, "Default pipeline: cpu or gpu");
  app.add_option("--corpus", corpus, "Folder of HLO modules");
  int timing_runs = 9;
  bool warm_start = true;
  app.add_flag("!--no-warm-start", warm_start, "Search from scratch, not from the default order");
  app.add_option("--timing-runs", timing_runs, "Runs of the default pipeline to time");
  CLI11_PARSE(app, argc, argv);

  const auto files = CorpusFiles(corpus);
  if (files.empty()) {
    std::cerr << "no corpus at " << corpus << " (set MLTUNE_CORPUS_DIR)\n";
    return 1;
  }
  std::vector<std::string> columns;
  for (int64_t b : budgets) {
    for (const std::string& s : strategies) columns.push_back(absl::StrFormat("%s@%d", s, b));
  }
  std::printf("%-44s %7s %7s", "module", "orig", "default");
  for (const std::string& c : columns) std::printf(" %17s", c.c_str());
  std::printf("\n");

  std::map<std::string, double> log_ratio_sum;
  int rows = 0;
  double largest_ops = 0;
  std::string largest_name;
  std::unique_ptr<ir::Module> largest;
  for (const std::string& file : files) {
    auto module = ir::ParseHloFile(file);
    if (!module.ok() || !ir::VerifyModule(**module).ok()) continue;
    const int64_t original = opt::pass_order::OpCount(**module);
    if (original < min_ops) continue;
    std::unique_ptr<ir::Module> copy = (*module)->Clone();
    if (!passes::MakeDefaultPipeline(target)->Run(*copy).ok()) continue;
    const int64_t default_ops = opt::pass_order::OpCount(*copy);
    if (original > largest_ops) {
      largest_ops = static_cast<double>(original);
      largest_name = (*module)->name();
      largest = (*module)->Clone();
    }
    std::string name = fs::path(file).filename().string();
    if (name.size() > 44) name = name.substr(0, 41) + "...";
    std::printf("%-44s %7lld %7lld", name.c_str(), static_cast<long long>(original),
                static_cast<long long>(default_ops));
    std::fflush(stdout);
    for (int64_t b : budgets) {
      for (const std::string& s : strategies) {
        opt::pass_order::PassOrderOptions options;
        if (warm_start) options.seed_pipeline = target;
        auto problem = opt::pass_order::PassOrderProblem::Create(**module, options);
        auto strategy = opt::StrategyRegistry::Global().Create(s);
        if (!problem.ok() || !strategy.ok()) return 1;
        opt::Budget budget;
        budget.max_steps = b;
        budget.max_seconds = seconds;
        auto result = (*strategy)->Search(**problem, budget, /*seed=*/1);
        if (!result.ok()) {
          std::printf(" %17s", "error");
          continue;
        }
        const double best = result->best_score;
        const double gain = default_ops ? 100.0 * (default_ops - best) / default_ops : 0;
        std::printf(" %8.0f (%+5.1f%%)", best, gain);
        std::fflush(stdout);
        log_ratio_sum[absl::StrFormat("%s@%d", s, b)] +=
            std::log(static_cast<double>(default_ops) / std::max(best, 1.0));
      }
    }
    std::printf("\n");
    ++rows;
  }
  std::printf("%-44s %7s %7s", "geomean improvement over default", "", "");
  for (const std::string& c : columns) {
    const double g = rows ? std::exp(log_ratio_sum[c] / rows) : 1;
    std::printf(" %17s", absl::StrFormat("%+.1f%%", 100.0 * (1 - 1 / g)).c_str());
  }
  // The pipeline's time in a warm process (as in the long-running daemon): the median of
  // `timing_runs` runs, each on a fresh copy of the largest module.
  std::vector<double> ms;
  for (int run = 0; largest != nullptr && run < timing_runs; ++run) {
    std::unique_ptr<ir::Module> copy = largest->Clone();
    auto pipeline = passes::MakeDefaultPipeline(target);
    const auto start = std::chrono::steady_clock::now();
    if (!pipeline->Run(*copy).ok()) break;
    ms.push_back(Ms(start));
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.empty() ? 0 : ms[ms.size() / 2];
  std::printf(
      "\n\n%d modules; default %s pipeline on the largest (%s, %.0f ops): median of %zu runs "
      "%.1f ms (min %.1f), %.1f ms per 10k ops\n",
      rows, target.c_str(), largest_name.c_str(), largest_ops, ms.size(), median,
      ms.empty() ? 0 : ms.front(), largest_ops ? median * 1e4 / largest_ops : 0.0);
  return 0;
}
