// The zoo's ONNX exports through mltune: imported, compiled by the CPU worker (default kernels,
// one thread), run on bench/peers/onnx_zoo_reference.py's inputs and compared with onnxruntime's
// sampled outputs (models/onnx/reference/). Run: build/release/bench/onnx_zoo [--models a,b]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/runner.h"
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The zoo's ONNX exports on the CPU worker against onnxruntime's outputs"};
  std::string models, root = MLTUNE_SOURCE_DIR;
  bool evaluator = false;
  app.add_option("--models", models, "Comma-separated model names (default: all)");
  app.add_flag("--evaluator", evaluator,
               "Run the imported module on the reference evaluator instead of the CPU worker "
               "(tells an import error from a backend one)");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> wanted = absl::StrSplit(models, ',', absl::SkipEmpty());
  std::vector<fs::path> refs;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "models/onnx/reference")) {
    if (e.path().extension() == ".json") refs.push_back(e.path());
  }
  std::sort(refs.begin(), refs.end());
  std::printf("%-22s %9s %7s %9s %12s %11s  %s\n", "model", "import_s", "ops", "compile_s",
              "mltune_ms", "ort_ms(ref)", "outputs vs onnxruntime");
  int failures = 0;
  for (const fs::path& path : refs) {
    const std::string name = path.stem().string();
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), name.substr(0, name.find('.'))) == wanted.end()) {
      continue;
    }
    auto fail = [&](const std::string& why) {
      ++failures;
      std::printf("%-22s error: %s\n", name.c_str(), why.c_str());
    };
    absl::StatusOr<onnx::ZooReference> ref = onnx::ReadZooReference(path.string());
    if (!ref.ok()) {
      fail(std::string(ref.status().message()));
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<onnx::OnnxImport> imported =
        onnx::ImportOnnxFile((fs::path(root) / "models/onnx" / ref->model).string());
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
      std::printf("%-22s %9.2f %7lld %9s %12s %11.2f  %s\n", name.c_str(), import_s,
                  static_cast<long long>(imported->module->instruction_count()), "-", "-",
                  ref->ort_ms, why.empty() ? "match (evaluator)" : why.c_str());
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
    measure.max_seconds = 2.0;
    cpu::Timing timing;
    absl::StatusOr<std::vector<mltune::ir::Literal>> out =
        cpu::Execute(compiled->object, compiled->program, args, measure, &timing);
    if (!out.ok()) {
      fail(std::string(out.status().message()));
      continue;
    }
    const std::string why = onnx::CompareWithZooReference(*out, *ref);
    failures += !why.empty();
    std::printf("%-22s %9.2f %7lld %9.2f %12.2f %11.2f  %s\n", name.c_str(), import_s,
                static_cast<long long>(imported->module->instruction_count()), compile_s,
                timing.median_s * 1e3, ref->ort_ms, why.empty() ? "match" : why.c_str());
  }
  return failures == 0 ? 0 : 1;
}
