// The zoo's ONNX exports through mltune: imported, compiled by the CPU worker (default kernels,
// one thread), run on bench/peers/onnx_zoo_reference.py's inputs and compared with onnxruntime's
// sampled outputs (models/onnx/reference/). With --ort, onnxruntime is run in the same run on the
// same files (--exports: models/onnx, weights as inputs; or the peers' exports with initializers)
// and each model's latency ratio is reported, with its geomean per zoo role.
// Run: build/release/bench/onnx_zoo [--models a,b] [--ort [--exports DIR] [--out FILE.md]]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/runner.h"
#include "bench/zoo_models.h"
#include "frontends/onnx/conformance/conformance.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/evaluator/evaluator.h"

namespace {

namespace fs = std::filesystem;
namespace cpu = mltune::backends::cpu;
namespace onnx = mltune::ir::onnx;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Row {
  std::string name, role, outputs;
  double mltune_ms = 0, ort_ms = 0;
};

// Geomean of onnxruntime's latency over mltune's (above 1: mltune faster), per role and overall.
std::string Summary(const std::vector<Row>& rows) {
  std::map<std::string, std::vector<double>> by_role;
  for (const Row& r : rows) {
    if (r.mltune_ms <= 0 || r.ort_ms <= 0) continue;
    by_role[r.role].push_back(r.ort_ms / r.mltune_ms);
    by_role["all"].push_back(r.ort_ms / r.mltune_ms);
  }
  std::string out;
  for (const auto& [role, ratios] : by_role) {
    double log_sum = 0;
    for (double x : ratios) log_sum += std::log(x);
    absl::StrAppendFormat(&out, "- %s (%zu models): geomean %.3fx onnxruntime, lowest %.3fx\n",
                          role, ratios.size(),
                          std::exp(log_sum / static_cast<double>(ratios.size())),
                          *std::min_element(ratios.begin(), ratios.end()));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The zoo's ONNX exports on the CPU worker against onnxruntime's outputs"};
  std::string models, root = MLTUNE_SOURCE_DIR, exports, out_path;
  std::string python = (fs::path(root) / "build/peers-venv/bin/python").string();
  bool evaluator = false, ort = false;
  double min_seconds = 2.0;
  app.add_option("--models", models, "Comma-separated model names (default: all)");
  app.add_flag("--evaluator", evaluator,
               "Run the imported module on the reference evaluator instead of the CPU worker "
               "(tells an import error from a backend one)");
  app.add_flag("--ort", ort,
               "Run onnxruntime (one thread) on the same files in this run, before mltune, and "
               "compare outputs and latencies with it instead of the committed references");
  app.add_option("--exports", exports,
                 "With --ort: the directory of NAME.infer.bB.onnx files (default models/onnx, "
                 "weights as graph inputs; the peers' exports with initializers are under "
                 "build/peers-cache/onnx/*/)");
  app.add_option("--min-seconds", min_seconds, "Timed runs per model, each side")
      ->capture_default_str();
  app.add_option("--python", python, "The peers venv's interpreter (--ort)")->capture_default_str();
  app.add_option("--out", out_path, "Also write the table and its geomeans as markdown (--ort)");
  CLI11_PARSE(app, argc, argv);
  if (!exports.empty() && !ort) {
    std::fprintf(stderr,
                 "--exports needs --ort (only onnxruntime can say what their outputs are)\n");
    return 2;
  }
  std::vector<std::string> wanted = absl::StrSplit(models, ',', absl::SkipEmpty());
  const fs::path onnx_dir = exports.empty() ? fs::path(root) / "models/onnx" : fs::path(exports);
  fs::path ref_dir = fs::path(root) / "models/onnx/reference";
  if (ort) {
    ref_dir = fs::temp_directory_path() / absl::StrCat("mltune-onnx-zoo-", getpid());
    const std::string command = absl::StrCat(
        "'", python, "' '", root, "/bench/peers/onnx_zoo_reference.py' --onnx-dir '",
        onnx_dir.string(), "' --out '", ref_dir.string(), "' --min-seconds ", min_seconds,
        models.empty() ? "" : absl::StrCat(" --models ", models), " 1>&2");
    std::fprintf(stderr, "onnxruntime: %s\n", command.c_str());
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr,
                   "bench/peers/onnx_zoo_reference.py failed (scripts/setup --peers makes "
                   "the peers venv)\n");
      return 1;
    }
  }
  absl::StatusOr<std::map<std::string, std::string>> roles =
      mltune::bench::ZooRoles((fs::path(root) / "models").string());
  std::vector<fs::path> refs;
  for (const auto& e : fs::directory_iterator(ref_dir)) {
    if (e.path().extension() == ".json") refs.push_back(e.path());
  }
  std::sort(refs.begin(), refs.end());
  std::vector<Row> rows;
  std::printf("%-22s %-7s %9s %7s %9s %10s %10s %7s  %s\n", "model", "role", "import_s", "ops",
              "compile_s", "mltune_ms", ort ? "ort_ms" : "ort_ms(ref)", "ratio",
              "outputs vs onnxruntime");
  int failures = 0;
  for (const fs::path& path : refs) {
    const std::string name = path.stem().string();
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), name.substr(0, name.find('.'))) == wanted.end()) {
      continue;
    }
    const std::string family = name.substr(0, name.find('.'));
    const std::string role =
        roles.ok() && roles->count(family) != 0 ? roles->at(family) : std::string("-");
    auto fail = [&](const std::string& why) {
      ++failures;
      std::printf("%-22s error: %s\n", name.c_str(), why.c_str());
      rows.push_back(Row{name, role, absl::StrCat("error: ", why)});
    };
    absl::StatusOr<onnx::ZooReference> ref = onnx::ReadZooReference(path.string());
    if (!ref.ok()) {
      fail(std::string(ref.status().message()));
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<onnx::OnnxImport> imported =
        onnx::ImportOnnxFile((onnx_dir / ref->model).string());
    const double import_s = Seconds(start);
    if (!imported.ok()) {
      fail(std::string(imported.status().message()));
      continue;
    }
    std::vector<mltune::ir::Literal> args;
    for (const std::string& p : imported->parameter_names) {
      auto it = std::find_if(ref->inputs.begin(), ref->inputs.end(),
                             [&](const auto& in) { return in.name == p; });
      if (it == ref->inputs.end()) break;
      absl::StatusOr<mltune::ir::Literal> v = onnx::ZooInput(*it);
      if (!v.ok()) break;
      args.push_back(*std::move(v));
    }
    if (args.size() != imported->parameter_names.size()) {
      fail("the reference has no recipe for some graph input");
      continue;
    }
    if (evaluator) {
      absl::StatusOr<mltune::ir::Literal> result = mltune::ir::Evaluate(*imported->module, args);
      if (!result.ok()) {
        fail(std::string(result.status().message()));
        continue;
      }
      const std::string why = onnx::CompareWithZooReference(result->elements(), *ref);
      failures += !why.empty();
      std::printf("%-22s %-7s %9.2f %7lld %9s %10s %10.2f %7s  %s\n", name.c_str(), role.c_str(),
                  import_s, static_cast<long long>(imported->module->instruction_count()), "-", "-",
                  ref->ort_ms, "-", why.empty() ? "match (evaluator)" : why.c_str());
      continue;
    }
    start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<mltune::ir::Module>> optimized =
        cpu::RunCpuPipeline(*imported->module);
    if (!optimized.ok()) {
      fail(std::string(optimized.status().message()));
      continue;
    }
    absl::StatusOr<cpu::CompiledModule> compiled = cpu::CompileModule(**optimized);
    const double compile_s = Seconds(start);
    if (!compiled.ok()) {
      fail(std::string(compiled.status().message()));
      continue;
    }
    cpu::MeasureOptions measure;
    measure.threads = 1;
    measure.max_seconds = min_seconds;
    cpu::Timing timing;
    absl::StatusOr<std::vector<mltune::ir::Literal>> out =
        cpu::Execute(compiled->object, compiled->program, args, measure, &timing);
    if (!out.ok()) {
      fail(std::string(out.status().message()));
      continue;
    }
    const std::string why = onnx::CompareWithZooReference(*out, *ref);
    failures += !why.empty();
    const double mltune_ms = timing.median_s * 1e3;
    std::printf("%-22s %-7s %9.2f %7lld %9.2f %10.2f %10.2f %6.3fx  %s\n", name.c_str(),
                role.c_str(), import_s,
                static_cast<long long>(imported->module->instruction_count()), compile_s, mltune_ms,
                ref->ort_ms, ref->ort_ms / mltune_ms, why.empty() ? "match" : why.c_str());
    rows.push_back(Row{name, role, why.empty() ? "match" : why, mltune_ms, ref->ort_ms});
  }
  if (ort) {
    std::error_code ec;
    fs::remove_all(ref_dir, ec);
    const std::string summary = Summary(rows);
    std::printf("\nratio: onnxruntime's latency over mltune's, measured in this run\n%s",
                summary.c_str());
    if (!out_path.empty()) {
      std::ofstream md(out_path);
      md << "| model | role | mltune ms | onnxruntime ms | ratio | outputs |\n"
         << "|---|---|---:|---:|---:|---|\n";
      for (const Row& r : rows) {
        md << "| " << r.name << " | " << r.role << " | "
           << (r.mltune_ms > 0 ? absl::StrFormat("%.2f", r.mltune_ms) : "-") << " | "
           << (r.ort_ms > 0 ? absl::StrFormat("%.2f", r.ort_ms) : "-") << " | "
           << (r.mltune_ms > 0 ? absl::StrFormat("%.3fx", r.ort_ms / r.mltune_ms) : "-") << " | "
           << r.outputs << " |\n";
      }
      md << "\n" << summary;
    }
  }
  return failures == 0 ? 0 : 1;
}
