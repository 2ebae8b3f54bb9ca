// XLA tuned by mltune, measured by XLA: per zoo module (inference and training steps, as JAX
// hands them to XLA), jax.jit's runtime beside the xla-options result and pass-order on xla-cpu
// with XLA's replaced passes off and on, each winner re-measured against jax.jit's compile in the
// same run; and per module the rank correlation of op count with XLA's measured latency over
// every pass-order candidate scored. Runs the daemon's tasks in-process.
// Run: build/release/bench/xla_tuning [--models M ...] [--budget 8] [--pass-order-budget 30]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/xla/xla_worker.h"
#include "bench/zoo_models.h"
#include "daemon/task.h"
#include "ir/fingerprint.h"
#include "ir/hlo_files.h"
#include "nlohmann/json.hpp"

namespace mltune::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TaskFigures {
  double tuned_s = NAN;
  int64_t measured = 0, discarded = 0;
  double rank_correlation = NAN;
  std::string detail;  // the options found, or the pass sequence's length
  std::string error;
};

TaskFigures RunTask(const ir::Module& module, const std::string& task, const std::string& strategy,
                    int64_t budget, double measure_seconds, const daemon::TaskOptions& extra,
                    double* jit_s) {
  TaskFigures figures;
  const daemon::Task* t = daemon::TaskRegistry::Global().Find(task);
  daemon::TaskRequest request;
  request.module = &module;
  request.fingerprint = ir::Fingerprint(module);
  request.target = "xla-cpu";
  request.strategy = strategy;
  request.options = extra;
  request.options["measure_seconds"] = absl::StrCat(measure_seconds);
  request.budget = opt::Budget(budget, 0);
  request.worker = "bench";
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<daemon::TaskOutcome> outcome = t->Run(request);
  std::cerr << "  " << task << (extra.empty() ? "" : " " + extra.begin()->second) << ": "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
            << " s\n";
  if (!outcome.ok()) {
    figures.error = std::string(outcome.status().message()).substr(0, 160);
    return figures;
  }
  figures.tuned_s = outcome->tuned_score;
  if (jit_s != nullptr && std::isnan(*jit_s)) *jit_s = outcome->baseline_score;
  const json report = json::parse(outcome->artifacts.at("xla"));
  figures.measured = report.value("measured", int64_t{0});
  figures.discarded = report.value("mismatched", int64_t{0}) +
                      report.value("rejected", int64_t{0}) + report.value("crashed", int64_t{0});
  if (report.contains("op_count_rank_correlation")) {
    figures.rank_correlation = report["op_count_rank_correlation"].get<double>();
  }
  if (task == "xla-options") {
    figures.detail = outcome->artifacts.at("compiler_options");
  } else {
    const std::string& seq = outcome->artifacts.at("pass_sequence");
    figures.detail = seq.empty()
                         ? "kept XLA's"
                         : absl::StrCat(std::count(seq.begin(), seq.end(), '\n') + 1, " passes");
  }
  // Outcomes compare to the same run's baseline; rescale to the first task's jax.jit figure.
  if (jit_s != nullptr && outcome->baseline_score > 0 && !std::isnan(*jit_s)) {
    figures.tuned_s = *jit_s * outcome->tuned_score / outcome->baseline_score;
  }
  return figures;
}

// "train.b2" of "resnet50.train.b2.before.hlo.gz".
std::string StepLabel(const std::string& file, const std::string& model) {
  const std::string rest = file.substr(model.size() + 1);
  return rest.substr(0, rest.find(".before"));
}

std::string Ms(double s) { return std::isnan(s) ? "-" : absl::StrFormat("%.3g", s * 1e3); }
std::string Ratio(double a, double b) {
  return std::isnan(a) || std::isnan(b) || b <= 0 ? "-" : absl::StrFormat("%.3fx", a / b);
}

int Main(int argc, char** argv) {
  CLI::App app{"XLA tuned by mltune (xla-options, pass-order on xla-cpu), measured by XLA"};
  std::string zoo = (fs::path(MLTUNE_SOURCE_DIR) / "models").string();
  std::vector<std::string> models;
  std::string role = "all";
  std::vector<std::string> steps = {"infer", "train"};
  int64_t budget = 8;
  int64_t pass_order_budget = 30;
  double measure_seconds = 0.2;
  bool as_json = false;
  app.add_option("--zoo-dir", zoo, "The zoo (manifest.json, hlo/)");
  app.add_option("--models", models, "Zoo models (default: every model of --role)");
  app.add_option("--role", role, "Models of this manifest role: fit, report or all");
  app.add_option("--steps", steps, "Steps: infer (batch 1), train");
  app.add_option("--budget", budget, "xla-options: candidates (each compiled and timed by XLA)");
  app.add_option("--pass-order-budget", pass_order_budget,
                 "pass-order: pass applications (each distinct module reached is timed by XLA)");
  app.add_option("--measure-seconds", measure_seconds, "Timed work per candidate, at most");
  app.add_flag("--json", as_json, "Print JSON");
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<backends::xla::XlaWorkerInfo> info =
      backends::xla::XlaWorker::Shared("cpu").Describe();
  if (!info.ok()) {
    std::cerr << "xla_tuning: " << info.status().message() << "\n";
    return 1;
  }
  if (models.empty()) {
    absl::StatusOr<std::vector<std::string>> of_role = ZooModelsOfRole(zoo, role);
    if (!of_role.ok()) {
      std::cerr << "xla_tuning: " << of_role.status().message() << "\n";
      return 1;
    }
    models = *of_role;
  }
  json rows = json::array();
  std::vector<double> speedups;
  std::cout << "| model | step | jax.jit ms | xla-options ms | options | pass-order ms (XLA "
               "passes off) | pass-order ms (on) | best vs jax.jit | measured | discarded | "
               "op-count rank corr. (off, on) |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|"
               "---|\n";
  for (const std::string& model : models) {
    for (const std::string& step : steps) {
      std::string path;
      for (const auto& entry : fs::directory_iterator(fs::path(zoo) / "hlo")) {
        const std::string name = entry.path().filename().string();
        const std::string prefix = absl::StrCat(model, ".", step, ".b");
        const bool batch_ok = step != "infer" || name.rfind(prefix + "1.", 0) == 0;
        if (name.rfind(prefix, 0) == 0 && batch_ok &&
            name.find(".before.hlo") != std::string::npos) {
          path = entry.path().string();
        }
      }
      if (path.empty()) continue;
      std::cerr << "[" << model << " " << step << "]\n";
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::LoadVerifiedHlo(path);
      if (!module.ok()) {
        std::cerr << "  " << module.status().message() << "\n";
        continue;
      }
      double jit_s = NAN;
      const TaskFigures options =
          RunTask(**module, "xla-options", "annealing", budget, measure_seconds, {}, &jit_s);
      const TaskFigures off = RunTask(**module, "pass-order", "greedy", pass_order_budget,
                                      measure_seconds, {{"xla_passes", "off"}}, &jit_s);
      const TaskFigures on = RunTask(**module, "pass-order", "greedy", pass_order_budget,
                                     measure_seconds, {{"xla_passes", "on"}}, &jit_s);
      double best = jit_s;
      for (const TaskFigures* f : {&options, &off, &on}) {
        if (!std::isnan(f->tuned_s)) best = std::min(best, f->tuned_s);
      }
      if (!std::isnan(jit_s) && best > 0) speedups.push_back(jit_s / best);
      std::string errors;
      for (const TaskFigures* f : {&options, &off, &on}) {
        if (!f->error.empty()) errors += " " + f->error;
      }
      std::cout << absl::StrFormat(
          "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s, %s |%s\n", model,
          StepLabel(fs::path(path).filename().string(), model), Ms(jit_s), Ms(options.tuned_s),
          options.detail, Ms(off.tuned_s), Ms(on.tuned_s), Ratio(jit_s, best),
          options.measured + off.measured + on.measured,
          options.discarded + off.discarded + on.discarded,
          std::isnan(off.rank_correlation) ? "-" : absl::StrFormat("%.2f", off.rank_correlation),
          std::isnan(on.rank_correlation) ? "-" : absl::StrFormat("%.2f", on.rank_correlation),
          errors.empty() ? "" : " <!--" + errors + " -->");
      std::cout.flush();
      rows.push_back({{"model", model},
                      {"step", step},
                      {"jit_s", jit_s},
                      {"options_s", options.tuned_s},
                      {"options", options.detail},
                      {"pass_order_off_s", off.tuned_s},
                      {"pass_order_on_s", on.tuned_s},
                      {"rank_correlation_off", off.rank_correlation},
                      {"rank_correlation_on", on.rank_correlation}});
    }
  }
  double log_sum = 0;
  for (double s : speedups) log_sum += std::log(s);
  const double geomean = speedups.empty() ? NAN : std::exp(log_sum / speedups.size());
  std::cout << "\nGeomean of the best tuned result against jax.jit: "
            << absl::StrFormat("%.3fx", geomean) << " over " << speedups.size()
            << " modules (above 1x: faster than jax.jit). XLA: " << info->device << ", jax "
            << info->jax << ".\n";
  if (as_json) std::cout << json{{"rows", rows}, {"geomean", geomean}}.dump(1) << "\n";
  return 0;
}

}  // namespace
}  // namespace mltune::bench

int main(int argc, char** argv) { return mltune::bench::Main(argc, argv); }
