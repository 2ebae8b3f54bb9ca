// Each kind of matrix kernel (bench/matrix_kinds.h: GEMM, GEMV, batched dot, dense, pointwise,
// grouped and depthwise convolution) of the zoo's inference models against the single-core FP32
// peak measured in the same run: every model of a role compiled with the default kernels, every
// kernel timed inside the module's run (MeasureOptions::kernel_times, as `mltune run
// --kernel-times`), and per kind the GFLOP/s, its fraction of the peak, and how many of the
// kernels whose arithmetic intensity puts them above the L3 ridge point (peak over the measured
// L3 read bandwidth) reach `--fraction` of the peak.
//
//   taskset -c 1 build/release/bench/cpu_kinds [--zoo-role report|fit|all] [--models a,b]
//       [--batches 1,8] [--seconds 0.5] [--out bench/results_cpu_kinds.md]
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "bench/matrix_kinds.h"
#include "bench/peers/onednn_peer.h"
#include "bench/peers/stream_bandwidth.h"
#include "bench/zoo_models.h"

namespace {

namespace cpu = mltune::backends::cpu;
namespace bench = mltune::bench;

struct KernelRow {
  std::string model, kernel;
  int64_t batch_size = 0, impl = -1;
  bench::MatrixDims dims;
  bench::KindSample sample;
};

std::string Today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::gmtime(&now));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per kind of matrix kernel of the zoo's models: GFLOP/s against the measured peak"};
  std::string zoo = MLTUNE_SOURCE_DIR "/models", role = "report", out;
  std::vector<std::string> models;
  std::vector<int64_t> batches = {1};
  double seconds = 0.5, fraction = 0.85;
  int top = 25;
  app.add_option("--zoo", zoo, "The model zoo (manifest.json, hlo/)");
  app.add_option("--zoo-role", role,
                 "The manifest's models of this role: report (held out), fit or all");
  app.add_option("--models", models, "Zoo models (default: every model of the role)")
      ->delimiter(',');
  app.add_option("--batches", batches, "Inference batch sizes")->delimiter(',');
  app.add_option("--seconds", seconds, "Timing cap per module (the runner's max_seconds)");
  app.add_option("--fraction", fraction,
                 "The fraction of the peak a compute-bound kernel should reach");
  app.add_option("--top", top, "The slowest kernels listed one by one");
  app.add_option("--out", out, "Also write the markdown here");
  CLI11_PARSE(app, argc, argv);
  const std::string models_given = absl::StrJoin(models, ",");
  if (models.empty()) {
    absl::StatusOr<std::vector<std::string>> of_role = bench::ZooModelsOfRole(zoo, role);
    if (!of_role.ok()) {
      std::cerr << of_role.status().message() << "\n";
      return 1;
    }
    models = *std::move(of_role);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool pinned = sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
  if (!pinned) std::cerr << "warning: not pinned to one CPU (run under taskset -c N)\n";

  // The limits, measured before every model and after the last: the machine is shared (and its
  // other vCPU may be this core's SMT sibling), so a co-runner only lowers a measurement and the
  // best of them is the estimate of what the core can do.
  const int64_t l3 = bench::CacheBytes(3, 32 << 20);
  std::vector<double> peaks, l3_gbs_seen;
  auto measure_limits = [&] {
    peaks.push_back(bench::MeasurePeakGflops(0.5));
    l3_gbs_seen.push_back(bench::StreamBandwidthGBs(bench::StreamKind::kRead, l3 / 4, 0.2));
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<KernelRow> rows;
  std::vector<std::string> notes;
  int64_t untimed_loops = 0;
  for (const std::string& model : models) {
    for (int64_t b : batches) {
      const std::string file = absl::StrCat(zoo, "/hlo/", model, ".infer.b", b, ".before.hlo");
      std::cerr << "[" << model << " b" << b << "]\n";
      measure_limits();
      absl::StatusOr<std::unique_ptr<mltune::ir::Module>> module = bench::ReadForCpu(file);
      if (!module.ok()) {
        notes.push_back(
            absl::StrCat(model, " b", b, ": ", bench::OneLine(module.status().ToString())));
        continue;
      }
      absl::StatusOr<cpu::CompiledModule> compiled = cpu::CompileModule(**module);
      if (!compiled.ok()) {
        notes.push_back(
            absl::StrCat(model, " b", b, ": ", bench::OneLine(compiled.status().ToString())));
        continue;
      }
      cpu::MeasureOptions options;
      options.max_seconds = seconds;
      options.kernel_times = true;
      absl::StatusOr<cpu::Timing> t = cpu::Measure(compiled->object, compiled->program, 0, options);
      if (!t.ok() || t->kernel_s.size() != compiled->lowered.kernels.size()) {
        notes.push_back(absl::StrCat(
            model, " b", b, ": ",
            t.ok() ? "no kernel times came back" : bench::OneLine(t.status().ToString())));
        continue;
      }
      for (const cpu::Kernel& k : compiled->lowered.kernels) {
        // Dots inside a while or conditional body run as their loop kernel's time, not alone.
        if (!k.called.empty()) ++untimed_loops;
        if (k.kind != cpu::KernelKind::kDot && k.kind != cpu::KernelKind::kConvolution) continue;
        KernelRow row;
        row.model = model;
        row.batch_size = b;
        row.kernel = k.name;
        row.impl = bench::ParamValue(k, compiled->configs[static_cast<size_t>(k.id)], "impl");
        row.dims = bench::MatrixDimsOf(*k.root);
        row.sample.kind = bench::ClassifyMatrix(row.dims);
        row.sample.flops = bench::MatrixFlops(row.dims);
        row.sample.intensity = bench::ArithmeticIntensity(row.dims);
        row.sample.seconds = t->kernel_s[static_cast<size_t>(k.id)];
        rows.push_back(row);
      }
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  measure_limits();
  const double peak = *std::max_element(peaks.begin(), peaks.end());
  const double peak_low = *std::min_element(peaks.begin(), peaks.end());
  const double l3_gbs = *std::max_element(l3_gbs_seen.begin(), l3_gbs_seen.end());
  const double ridge = peak / l3_gbs;

  std::vector<bench::KindSample> samples;
  for (const KernelRow& r : rows) samples.push_back(r.sample);
  const std::vector<bench::KindSummary> kinds =
      bench::SummarizeKinds(samples, peak, ridge, fraction);
  bench::KindSummary all;
  for (const bench::KindSummary& k : kinds) {
    all.kernels += k.kernels;
    all.flops += k.flops;
    all.seconds += k.seconds;
    all.compute_bound += k.compute_bound;
    all.compute_bound_at += k.compute_bound_at;
  }

  std::ostringstream md;
  md << "# Matrix kernels of the zoo by kind against the measured peak (`bench/cpu_kinds`)\n\n";
  md << "Command: `taskset -c 1 build/release/bench/cpu_kinds --zoo-role " << role << " --batches "
     << absl::StrJoin(batches, ",") << " --seconds " << seconds
     << (models_given.empty() ? "" : " --models " + models_given) << "`  \n";
  md << "Date: " << Today() << "; machine: " << bench::CpuModel() << " ("
     << std::thread::hardware_concurrency() << " CPUs, shared), one thread"
     << (pinned ? ", pinned" : ", NOT pinned") << "; " << absl::StrFormat("%.0f", wall)
     << " s for the models.  \n";
  md << absl::StrFormat(
      "FP32 peak (MeasurePeakGflops, one thread, measured before each model and after the last, "
      "%d times): best %.1f GFLOP/s (lowest %.1f), the best used. L3 read bandwidth (%d KiB "
      "arrays, best of the same times): %.1f GB/s. Ridge point: %.2f FLOP/byte; a kernel at or "
      "above it is counted compute-bound.\n\n",
      static_cast<int>(peaks.size()), peak, peak_low, l3 / 4 / 1024, l3_gbs, ridge);
  md << "Every dot and convolution kernel of the models (default kernels: the default impl and "
        "blocking), timed inside the module's run (median of the runs; "
        "`MeasureOptions::kernel_times`). FLOPs: 2 per multiply-add of the products behind the "
        "kernel (a convolution's padding counted). Intensity: FLOPs over the compulsory bytes "
        "(both operands read once, the result written once).\n\n";
  md << absl::StrFormat(
      "| kind | kernels | time (ms) | GFLOP | GFLOP/s | of peak | compute-bound | of those >= "
      "%.0f%% of peak |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
      fraction * 100);
  auto line = [&](const std::string& label, const bench::KindSummary& k) {
    md << absl::StrFormat("| %s | %d | %.2f | %.3f | %.1f | %.1f%% | %d | %d |\n", label, k.kernels,
                          k.seconds * 1e3, k.flops * 1e-9, k.gflops(),
                          peak > 0 ? 100 * k.gflops() / peak : 0.0, k.compute_bound,
                          k.compute_bound_at);
  };
  for (int k = 0; k < bench::kMatrixKinds; ++k) {
    if (kinds[static_cast<size_t>(k)].kernels == 0) continue;
    line(std::string(bench::MatrixKindName(static_cast<bench::MatrixKind>(k))),
         kinds[static_cast<size_t>(k)]);
  }
  line("all", all);
  if (untimed_loops > 0) {
    md << "\n"
       << untimed_loops
       << " while/conditional kernel(s): any dot inside their bodies is timed as part of the "
          "loop, not here.\n";
  }
  for (const std::string& note : notes) md << "\nNot measured: " << note << "\n";

  std::vector<const KernelRow*> slowest;
  for (const KernelRow& r : rows) slowest.push_back(&r);
  std::sort(slowest.begin(), slowest.end(), [](const KernelRow* a, const KernelRow* b) {
    return a->sample.seconds > b->sample.seconds;
  });
  if (static_cast<int>(slowest.size()) > top) slowest.resize(static_cast<size_t>(top));
  md << "\n## The " << slowest.size() << " slowest kernels\n\n";
  md << "| model | batch | kernel | kind | impl | GEMM batch | m | n | k | time (us) | GFLOP/s | "
        "of peak | FLOP/byte |\n|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const KernelRow* r : slowest) {
    const double gflops = r->sample.seconds > 0 ? r->sample.flops * 1e-9 / r->sample.seconds : 0;
    md << absl::StrFormat(
        "| %s | %d | %s | %s | %d | %d | %d | %d | %d | %.1f | %.1f | %.1f%% | "
        "%.1f |\n",
        r->model, r->batch_size, r->kernel, bench::MatrixKindName(r->sample.kind), r->impl,
        r->dims.batch, r->dims.m, r->dims.n, r->dims.k, r->sample.seconds * 1e6, gflops,
        peak > 0 ? 100 * gflops / peak : 0.0, r->sample.intensity);
  }
  std::cout << md.str();
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
