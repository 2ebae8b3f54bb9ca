// Which implementation a dot or convolution kernel defaults to, measured: every distinct dot and
// convolution kernel of the zoo's inference models (kernels compiling to one program counted
// once), alone, one thread, as tuning measures it, under every impl it offers (0: the generated
// GEMM, default blocking; 1: dnnl_sgemm; convolutions oneDNN's primitive takes, 2: plain layouts
// where offered, 3: blocked layouts; depthwise convolutions, 4: the generated depthwise kernel;
// batched dots, 5: oneDNN's matmul primitive; grouped convolutions, 6: the generated grouped one).
// Reports per kernel each time and the default's pick
// (cpu::PreferOneDnnGemm for dots and the other convolutions, lowering.cc's pointwise rule for
// the primitive's), and separately for the manifest's fit models (the defaults were fitted on
// them) and its report models (held out), weighted by copies in the models, the default's time
// against the best impl per kernel, overall and per kind (bench/matrix_kinds.h).
//
//   build/release/bench/gemm_defaults [--zoo models] [--zoo-role fit|report|all]
//       [--models bert,vit] [--batches 1,8] [--rounds 2] [--kinds "depthwise conv"]
//       [--out bench/results_gemm_defaults.md]
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
#include "bench/matrix_kinds.h"
#include "bench/zoo_models.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace {

namespace cpu = mltune::backends::cpu;
using namespace mltune;

struct Row {
  std::string model, role;
  int64_t batch_size = 0;
  std::string kernel;
  cpu::GemmShape shape;
  bench::MatrixKind kind = bench::MatrixKind::kGemm;
  int64_t copies = 0;
  std::vector<int64_t> impls;   // offered, the default first
  std::vector<double> seconds;  // one per impl
  double Default() const { return seconds.front(); }
  size_t Best() const {
    return static_cast<size_t>(std::min_element(seconds.begin(), seconds.end()) - seconds.begin());
  }
  double Seconds(int64_t impl) const {  // infinity when not offered
    for (size_t i = 0; i < impls.size(); ++i) {
      if (impls[i] == impl) return seconds[i];
    }
    return std::numeric_limits<double>::infinity();
  }
};

// The default against the best impl per kernel over `rows`, weighted by copies.
struct Tally {
  int64_t kernels = 0, copies = 0, right = 0;
  double chosen = 0, best = 0;
  void Add(const Row& r) {
    const double c = static_cast<double>(r.copies);
    ++kernels;
    copies += r.copies;
    chosen += c * r.Default();
    best += c * r.seconds[r.Best()];
    right += r.Best() == 0 ? 1 : 0;
  }
  std::string Line(const std::string& label) const {
    return absl::StrFormat("| %s | %d | %d | %.2f | %.2f | %.3f | %d of %d |\n", label, kernels,
                           copies, chosen * 1e3, best * 1e3, best > 0 ? chosen / best : 0.0, right,
                           kernels);
  }
};

std::string Us(double seconds) {
  return std::isfinite(seconds) ? absl::StrFormat("%.1f", seconds * 1e6) : "-";
}

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
  CLI::App app{
      "The default impl against every impl offered on the zoo's dot and convolution kernels"};
  std::string zoo = MLTUNE_SOURCE_DIR "/models", models_csv, batches_csv = "1,8", out, role = "all";
  int rounds = 2;
  app.add_option("--zoo", zoo, "The model zoo (manifest.json, hlo/)");
  app.add_option("--zoo-role", role,
                 "Only the manifest's models of this role: fit (the defaults were fitted on them), "
                 "report (held out) or all");
  app.add_option("--models", models_csv, "Comma-separated model names (default: every model)");
  app.add_option("--batches", batches_csv, "Comma-separated inference batch sizes");
  app.add_option("--rounds", rounds, "Measurements per configuration; the fastest is kept");
  std::string kinds_csv;
  app.add_option("--kinds", kinds_csv,
                 "Comma-separated kinds to measure (bench/matrix_kinds.h's names, such as "
                 "\"depthwise conv\"); default: every kind");
  app.add_option("--out", out, "Also write the markdown table here");
  CLI11_PARSE(app, argc, argv);
  if (!cpu::OneDnnAvailable()) {
    std::cerr << "this build has no oneDNN: nothing to compare\n";
    return 1;
  }
  absl::StatusOr<std::map<std::string, std::string>> roles = bench::ZooRoles(zoo);
  absl::StatusOr<std::vector<std::string>> of_role = bench::ZooModelsOfRole(zoo, role);
  if (!roles.ok() || !of_role.ok()) {
    std::cerr << (roles.ok() ? of_role.status() : roles.status()).message() << "\n";
    return 1;
  }
  std::vector<std::string> models = absl::StrSplit(models_csv, ',', absl::SkipEmpty());
  const std::vector<std::string> kinds = absl::StrSplit(kinds_csv, ',', absl::SkipEmpty());
  if (models.empty()) models = *of_role;
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
        std::vector<int64_t> impls;
        for (const cpu::KernelParam& p : k.params) {
          if (p.name == "impl") impls = p.choices;
        }
        if (impls.size() < 2) continue;
        const bench::MatrixKind kind = bench::ClassifyMatrix(bench::MatrixDimsOf(*k.root));
        if (!kinds.empty() && std::find(kinds.begin(), kinds.end(),
                                        std::string(bench::MatrixKindName(kind))) == kinds.end()) {
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
        row.role = roles->count(model) ? roles->at(model) : "";
        row.batch_size = std::stoll(std::string(b));
        row.kernel = k.name;
        row.shape = cpu::GemmShapeOf(*k.root);
        row.kind = kind;
        row.copies = 1;
        row.impls = impls;
        std::string times;
        for (int64_t impl : impls) {
          row.seconds.push_back(Fastest(*lowered, k.id, WithImpl(k, impl), rounds));
          absl::StrAppendFormat(&times, " impl%d %.1f us", impl, row.seconds.back() * 1e6);
        }
        std::fprintf(stderr, "%s b%s %s (%s) [%lld]%lldx%lldx%lld:%s\n", model.c_str(),
                     std::string(b).c_str(), k.name.c_str(),
                     std::string(bench::MatrixKindName(row.kind)).c_str(),
                     static_cast<long long>(row.shape.batch), static_cast<long long>(row.shape.m),
                     static_cast<long long>(row.shape.n), static_cast<long long>(row.shape.k),
                     times.c_str());
        rows.push_back(row);
      }
    }
  }
  std::erase_if(rows, [](const Row& r) {
    return std::any_of(r.seconds.begin(), r.seconds.end(),
                       [](double s) { return !std::isfinite(s); });
  });
  std::ostringstream md;
  md << "<!-- build/release/bench/gemm_defaults --zoo-role " << role << " --batches " << batches_csv
     << " --rounds " << rounds << (models_csv.empty() ? "" : " --models " + models_csv) << "\n     "
     << absl::StrFormat(
            "%.0f", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
     << " s; " << bench::CpuModel() << " (" << std::thread::hardware_concurrency()
     << " CPUs); one thread; kernels alone, hot caches (KernelTuningMeasureOptions) -->\n\n";
  md << "## The default impl of the zoo's dot and convolution kernels against the best impl\n\n";
  md << "impl 0: the generated GEMM (default blocking); 1: dnnl_sgemm; 2: oneDNN's convolution "
        "primitive on plain layouts; 3: the same on its blocked layouts; 4: the generated "
        "depthwise kernel; 5: oneDNN's matmul primitive (batched dots); 6: the generated grouped "
        "kernel. Times weighted by each kernel's copies in its model. Fit: the manifest's models "
        "the defaults were fitted on; report: its held-out models, for the check.\n\n";
  for (const std::string& set : {std::string("fit"), std::string("report"), std::string("")}) {
    Tally all, dots_generated, dots_onednn;
    std::vector<Tally> kinds(bench::kMatrixKinds);
    for (const Row& r : rows) {
      if (r.role != set) continue;
      all.Add(r);
      kinds[static_cast<size_t>(r.kind)].Add(r);
    }
    if (all.kernels == 0) continue;
    md << "### " << (set.empty() ? "models without a role" : set + " set") << "\n\n";
    md << absl::StrFormat(
        "The default: %.2f ms against %.2f ms for the best impl per kernel (%.3fx), right on %d "
        "of %d distinct kernels.\n\n",
        all.chosen * 1e3, all.best * 1e3, all.best > 0 ? all.chosen / all.best : 0.0, all.right,
        all.kernels);
    md << "| kind | kernels | copies | default (ms) | best (ms) | default / best | picked right "
          "|\n|---|---:|---:|---:|---:|---:|---|\n";
    for (int k = 0; k < bench::kMatrixKinds; ++k) {
      if (kinds[static_cast<size_t>(k)].kernels == 0) continue;
      md << kinds[static_cast<size_t>(k)].Line(
          std::string(bench::MatrixKindName(static_cast<bench::MatrixKind>(k))));
    }
    md << all.Line("all");
    md << "\n";
  }
  md << "| model | role | batch | kernel | kind | GEMM batch | m | n | k | copies | impl 0 (us) | "
        "impl 1 (us) | impl 2 (us) | impl 3 (us) | impl 4 (us) | impl 5 (us) | impl 6 (us) | "
        "default | best | default / best |\n"
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        "---:|---:|\n";
  for (const Row& r : rows) {
    md << absl::StrFormat(
        "| %s | %s | %d | %s | %s | %d | %d | %d | %d | %d | %s | %s | %s | %s "
        "| %s | %s | %s | %d | %d | %.2f |\n",
        r.model, r.role, r.batch_size, r.kernel, bench::MatrixKindName(r.kind), r.shape.batch,
        r.shape.m, r.shape.n, r.shape.k, r.copies, Us(r.Seconds(0)), Us(r.Seconds(1)),
        Us(r.Seconds(2)), Us(r.Seconds(3)), Us(r.Seconds(4)), Us(r.Seconds(5)), Us(r.Seconds(6)),
        r.impls.front(), r.impls[r.Best()], r.Default() / r.seconds[r.Best()]);
  }
  std::cout << md.str();
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
