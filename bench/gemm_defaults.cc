// Which GEMM implementation a dot or im2col convolution kernel defaults to, measured: every
// distinct GEMM kernel of the zoo's inference models (kernels compiling to one program counted
// once), alone, one thread, as tuning measures it, under the generated GEMM (impl 0, its default
// blocking) and under dnnl_sgemm (impl 1). Reports per kernel both times and what the default
// rule (cpu::PreferOneDnnGemm) picks, and over all kernels, weighted by their copies in the
// models, the time of the rule's picks against always-generated, always-oneDNN and the best of
// the two per kernel.
//
//   build/release/bench/gemm_defaults [--zoo models] [--models bert,vit] [--batches 1,8]
//       [--rounds 2] [--out bench/results_gemm_defaults.md]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/onednn.h"
#include "bench/cpu_bench_util.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace {

namespace cpu = mltune::backends::cpu;
using namespace mltune;

struct Row {
  std::string model;
  int64_t batch_size = 0;
  std::string kernel;
  cpu::GemmShape shape;
  int64_t copies = 0;
  double generated = 0, onednn = 0;  // seconds
  bool rule_onednn = false;
};

// The fastest of `rounds` measurements of kernel `k` under `config` (co-runners only slow a run).
double Fastest(const cpu::LoweredModule& lowered, int32_t k, const cpu::KernelConfig& config,
               int rounds) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < rounds; ++r) {
    absl::StatusOr<cpu::Timing> t =
        cpu::MeasureKernel(lowered, k, config, {}, opt::tiling::KernelTuningMeasureOptions(), 0);
    if (!t.ok()) {
      std::cerr << "  " << lowered.kernels[static_cast<size_t>(k)].name << ": " << t.status()
                << "\n";
      return best;
    }
    best = std::min(best, t->median_s);
  }
  return best;
}

// The kernel's configuration with `impl` set to `value` (canonical), or empty without it.
cpu::KernelConfig WithImpl(const cpu::Kernel& kernel, int64_t value) {
  cpu::KernelConfig config = cpu::DefaultConfig(kernel);
  for (size_t p = 0; p < kernel.params.size(); ++p) {
    if (kernel.params[p].name != "impl") continue;
    const std::vector<int64_t>& c = kernel.params[p].choices;
    if (std::find(c.begin(), c.end(), value) == c.end()) return {};
    config[p] = value;
    return cpu::CanonicalConfig(kernel, config);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Generated GEMM against dnnl_sgemm on the zoo's GEMM kernels, and the default rule"};
  std::string zoo = MLTUNE_SOURCE_DIR "/models", models_csv, batches_csv = "1,8", out;
  int rounds = 2;
  app.add_option("--zoo", zoo, "The model zoo (its hlo/ folder)");
  app.add_option("--models", models_csv, "Comma-separated model names (default: every model)");
  app.add_option("--batches", batches_csv, "Comma-separated inference batch sizes");
  app.add_option("--rounds", rounds, "Measurements per configuration; the fastest is kept");
  app.add_option("--out", out, "Also write the markdown table here");
  CLI11_PARSE(app, argc, argv);
  if (!cpu::OneDnnAvailable()) {
    std::cerr << "this build has no oneDNN: nothing to compare\n";
    return 1;
  }
  std::vector<std::string> models = absl::StrSplit(models_csv, ',', absl::SkipEmpty());
  if (models.empty()) {
    std::set<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(zoo + "/hlo")) {
      const std::string name = e.path().filename().string();
      if (const size_t dot = name.find(".infer.b1.before.hlo"); dot != std::string::npos) {
        found.insert(name.substr(0, dot));
      }
    }
    models.assign(found.begin(), found.end());
  }
  std::vector<Row> rows;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& model : models) {
    for (absl::string_view b : absl::StrSplit(batches_csv, ',', absl::SkipEmpty())) {
      const std::string file = absl::StrCat(zoo, "/hlo/", model, ".infer.b", b, ".before.hlo");
      absl::StatusOr<std::unique_ptr<ir::Module>> module = bench::ReadForCpu(file);
      if (!module.ok()) {
        std::cerr << file << ": " << module.status() << "\n";
        continue;
      }
      absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**module);
      if (!lowered.ok()) {
        std::cerr << file << ": " << lowered.status() << "\n";
        continue;
      }
      std::map<std::string, size_t> row_of;
      for (const cpu::Kernel& k : lowered->kernels) {
        if (k.kind != cpu::KernelKind::kDot && k.kind != cpu::KernelKind::kConvolution) continue;
        const cpu::KernelConfig generated = WithImpl(k, 0), onednn = WithImpl(k, 1);
        // Convolutions with oneDNN's primitive default to it (kDefaultConvolutionImpl).
        const cpu::KernelConfig defaults = cpu::DefaultConfig(k);
        if (generated.empty() || onednn.empty() ||
            (k.kind == cpu::KernelKind::kConvolution && defaults.front() >= 2)) {
          continue;
        }
        absl::StatusOr<std::string> key = opt::tiling::KernelProgramKey(*lowered, k);
        if (!key.ok()) continue;
        auto [it, fresh] = row_of.emplace(*key, rows.size());
        if (!fresh) {
          ++rows[it->second].copies;
          continue;
        }
        Row row;
        row.model = model;
        row.batch_size = std::stoll(std::string(b));
        row.kernel = k.name;
        row.shape = cpu::GemmShapeOf(*k.root);
        row.copies = 1;
        row.rule_onednn = cpu::PreferOneDnnGemm(row.shape);
        row.generated = Fastest(*lowered, k.id, generated, rounds);
        row.onednn = Fastest(*lowered, k.id, onednn, rounds);
        std::fprintf(stderr, "%s b%s %s [%lld]%lldx%lldx%lld: generated %.1f us, oneDNN %.1f us\n",
                     model.c_str(), std::string(b).c_str(), k.name.c_str(),
                     static_cast<long long>(row.shape.batch), static_cast<long long>(row.shape.m),
                     static_cast<long long>(row.shape.n), static_cast<long long>(row.shape.k),
                     row.generated * 1e6, row.onednn * 1e6);
        rows.push_back(row);
      }
    }
  }
  std::erase_if(
      rows, [](const Row& r) { return !std::isfinite(r.generated) || !std::isfinite(r.onednn); });
  // Totals weighted by copies: the module time each policy spends in these kernels.
  double all_generated = 0, all_onednn = 0, rule = 0, best = 0;
  int64_t rule_right = 0;
  for (const Row& r : rows) {
    const double c = static_cast<double>(r.copies);
    all_generated += c * r.generated;
    all_onednn += c * r.onednn;
    rule += c * (r.rule_onednn ? r.onednn : r.generated);
    best += c * std::min(r.generated, r.onednn);
    rule_right += (r.rule_onednn == (r.onednn < r.generated)) ? 1 : 0;
  }
  std::ostringstream md;
  md << "<!-- build/release/bench/gemm_defaults --batches " << batches_csv << " --rounds " << rounds
     << (models_csv.empty() ? "" : " --models " + models_csv) << "\n     "
     << absl::StrFormat(
            "%.0f", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
     << " s; " << bench::CpuModel() << " (" << std::thread::hardware_concurrency()
     << " CPUs); one thread; kernels alone, hot caches (KernelTuningMeasureOptions) -->\n\n";
  md << "## GEMM kernels of the zoo: the generated GEMM (default blocking) against dnnl_sgemm\n\n";
  md << absl::StrFormat(
      "%d distinct GEMM kernels. Time in them, each weighted by its copies in its model: always "
      "generated %.1f ms, always dnnl_sgemm %.1f ms, the best of the two per kernel %.1f ms, the "
      "default rule (cpu::PreferOneDnnGemm) %.1f ms (%.3fx the best; %lld of %d kernels picked "
      "right).\n\n",
      static_cast<int>(rows.size()), all_generated * 1e3, all_onednn * 1e3, best * 1e3, rule * 1e3,
      best > 0 ? rule / best : 0.0, static_cast<long long>(rule_right),
      static_cast<int>(rows.size()));
  md << "| model | batch | kernel | GEMM batch | m | n | k | copies | generated (us) | dnnl_sgemm "
        "(us) | generated / oneDNN | rule |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:"
        "|---|\n";
  for (const Row& r : rows) {
    md << absl::StrFormat("| %s | %d | %s | %d | %d | %d | %d | %d | %.1f | %.1f | %.2f | %s |\n",
                          r.model, r.batch_size, r.kernel, r.shape.batch, r.shape.m, r.shape.n,
                          r.shape.k, r.copies, r.generated * 1e6, r.onednn * 1e6,
                          r.generated / r.onednn, r.rule_onednn ? "oneDNN" : "generated");
  }
  std::cout << md.str();
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
