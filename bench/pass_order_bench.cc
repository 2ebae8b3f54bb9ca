// Pass-order search against XLA's default pipeline and against XLA itself.
//
//   build/release/bench/pass_order_bench [--zoo models/hlo | --corpus DIR] [--only .train.,.b1.]
//                                        [--budgets 100,1000] [--strategies a,b] [--seconds S]
//                                        [--min-ops N]
//                                        [--target cpu|gpu] [--no-warm-start]
//
// By default (the zoo, models/hlo): one row per zoo module XLA received
// (`*.before.hlo[.gz]`): its op count, after mltune's XLA-order pipeline ("default"), in XLA's
// module entering layout assignment where the zoo has per-pass dumps ("xla@la": where mltune's
// pipeline ends), in XLA CPU's own optimized output ("xla": `*.after.*`, fusion bodies counted:
// docs/search.md defines the count), and
// after each strategy at each budget, with the improvement over the default (positive = fewer
// ops). Then the geometric means, the XLA passes mltune's pipeline still lacks, and the pipeline's
// time on the largest module. With --corpus: the same without the XLA column, on every module of a
// folder with >= --min-ops ops.
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
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/ir.h"
#include "optimizers/core/search.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/default_pipelines.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;

// Every module file under `dir`; with `zoo`, only the modules XLA received (`*.before.hlo*`).
std::vector<std::string> ModuleFiles(const std::string& dir, bool zoo) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && (!zoo || name.find(".before.hlo") != std::string::npos)) {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// XLA's module entering CpuLayoutAssignment, where mltune's default pipeline ends: the last
// per-pass dump before the one after `layout-assignment` (dumps are written only when a pass
// changes the module), or "" when the zoo has no per-pass dumps of this module.
std::string XlaAtLayoutAssignment(const std::string& before) {
  const fs::path file(before);
  std::string stem = file.filename().string();
  stem.resize(stem.rfind(".before.hlo"));
  const fs::path dir = file.parent_path().parent_path() / "passes" / stem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  std::vector<std::string> dumps;
  for (const auto& e : fs::directory_iterator(dir)) dumps.push_back(e.path().string());
  std::sort(dumps.begin(), dumps.end());
  for (size_t i = 1; i < dumps.size(); ++i) {
    if (dumps[i].find(".after_layout-assignment.") != std::string::npos) return dumps[i - 1];
  }
  return "";
}

// XLA CPU's optimized module beside a zoo module XLA received, or "" when there is none.
std::string XlaOutputOf(const std::string& before) {
  const size_t at = before.rfind(".before.hlo");
  if (at == std::string::npos) return "";
  const std::string stem = before.substr(0, at) + ".after.hlo";
  std::error_code ec;
  for (const std::string& p : {stem, stem + ".gz"}) {
    if (fs::exists(p, ec)) return p;
  }
  return "";
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
  std::string zoo = std::string(MLTUNE_SOURCE_DIR) + "/models/hlo";
  app.add_option("--budgets", budgets, "Budgets in environment steps")->delimiter(',');
  app.add_option("--strategies", strategies, "Strategies")->delimiter(',');
  app.add_option("--seconds", seconds, "Time cap per search");
  app.add_option("--min-ops", min_ops, "Smallest module (op count) to include");
  app.add_option("--target", target, "Default pipeline: cpu or gpu");
  auto* corpus_opt = app.add_option("--corpus", corpus, "Folder of HLO modules");
  app.add_option("--zoo", zoo, "The zoo's HLO folder (models/hlo)")->excludes(corpus_opt);
  std::vector<std::string> only;
  app.add_option("--only", only, "Only files whose name contains one of these (e.g. .train.)")
      ->delimiter(',');
  int timing_runs = 9;
  bool warm_start = true;
  app.add_flag("!--no-warm-start", warm_start, "Search from scratch, not from the default order");
  app.add_option("--timing-runs", timing_runs, "Runs of the default pipeline to time");
  CLI11_PARSE(app, argc, argv);

  const bool use_zoo = corpus_opt->count() == 0;
  if (use_zoo) min_ops = 0;
  std::vector<std::string> files = ModuleFiles(use_zoo ? zoo : corpus, use_zoo);
  if (!only.empty()) {
    std::erase_if(files, [&](const std::string& f) {
      const std::string name = fs::path(f).filename().string();
      return std::none_of(only.begin(), only.end(),
                          [&](const std::string& o) { return name.find(o) != std::string::npos; });
    });
  }
  if (files.empty()) {
    std::cerr << "no modules at " << (use_zoo ? zoo : corpus)
              << " (scripts/zoo writes the zoo; --corpus DIR for another folder)\n";
    return 1;
  }
  std::vector<std::string> columns;
  for (int64_t b : budgets) {
    for (const std::string& s : strategies) columns.push_back(absl::StrFormat("%s@%d", s, b));
  }
  std::printf("%-30s %7s %7s %7s %7s", "module", "orig", "default", use_zoo ? "xla@la" : "",
              use_zoo ? "xla" : "");
  for (const std::string& c : columns) std::printf(" %17s", c.c_str());
  std::printf("\n");

  std::map<std::string, double> log_ratio_sum;
  int rows = 0;
  double xla_log_ratio_sum = 0;  // log(XLA's ops / mltune default's ops)
  int xla_rows = 0;
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
    std::string xla_at_layout = "";
    if (const std::string dump = XlaAtLayoutAssignment(file); !dump.empty()) {
      auto at_layout = ir::ParseHloFile(dump);
      xla_at_layout =
          at_layout.ok() ? absl::StrCat(opt::pass_order::OpCount(**at_layout)) : "error";
    }
    std::string xla_ops = "";
    if (const std::string xla = XlaOutputOf(file); !xla.empty()) {
      auto xla_module = ir::ParseHloFile(xla);
      if (xla_module.ok()) {
        const int64_t n = opt::pass_order::OpCount(**xla_module);
        xla_ops = absl::StrCat(n);
        xla_log_ratio_sum += std::log(static_cast<double>(n) / std::max<int64_t>(default_ops, 1));
        ++xla_rows;
      } else {
        xla_ops = "error";
        std::cerr << xla << ": " << xla_module.status() << "\n";
      }
    }
    if (original > largest_ops) {
      largest_ops = static_cast<double>(original);
      largest_name = (*module)->name();
      largest = (*module)->Clone();
    }
    std::string name = fs::path(file).filename().string();
    if (const size_t at = name.find(".before.hlo"); at != std::string::npos) name.resize(at);
    if (name.size() > 30) name = name.substr(0, 27) + "...";
    std::printf("%-30s %7lld %7lld %7s %7s", name.c_str(), static_cast<long long>(original),
                static_cast<long long>(default_ops), xla_at_layout.c_str(), xla_ops.c_str());
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
  std::printf("%-62s", "geomean improvement over default");
  for (const std::string& c : columns) {
    const double g = rows ? std::exp(log_ratio_sum[c] / rows) : 1;
    std::printf(" %17s", absl::StrFormat("%+.1f%%", 100.0 * (1 - 1 / g)).c_str());
  }
  if (xla_rows > 0) {
    std::printf(
        "\n\nXLA's own output vs mltune's default pipeline (geomean of %d modules): "
        "%.3fx the ops",
        xla_rows, std::exp(xla_log_ratio_sum / xla_rows));
  }
  // The pipeline's paths name each pass; a pass skipped in two sub-pipelines is named once.
  std::vector<std::string> skipped, missing;
  passes::MakeDefaultPipeline(target, &skipped);
  for (const std::string& path : skipped) {
    const std::string pass = path.substr(path.rfind('/') + 1);
    if (std::find(missing.begin(), missing.end(), pass) == missing.end()) missing.push_back(pass);
  }
  std::printf(
      "\nXLA %s passes before layout assignment that mltune's default pipeline lacks (%zu): %s; "
      "XLA's passes from layout assignment on (layout assignment, fusion, copy insertion, ...) "
      "are backend code generation and not in the pipeline",
      target.c_str(), missing.size(), absl::StrJoin(missing, ", ").c_str());
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
