// Each kind of matrix kernel (bench/matrix_kinds.h: GEMM, GEMV, batched dot, dense, pointwise,
// grouped and depthwise convolution) of the zoo's inference models against the single-core FP32
// peak measured in the same run: every model of a role compiled with the default kernels, every
// kernel timed inside the module's run (MeasureOptions::kernel_times, as `mltune run
// --kernel-times`), and per kind the GFLOP/s, its fraction of the peak, and how many of the
// kernels whose arithmetic intensity puts them above the L3 ridge point (peak over the measured
// L3 read bandwidth) reach `--fraction` of the peak.
//
//   taskset -c 1 build/release/bench/cpu_kinds [--zoo-role report|fit|all] [--models a,b]
//       [--batches 1,8] [--seconds 0.5] [--threads 1] [--ab impl=4:3 [--ab-rounds 3]]
//       [--out bench/results_cpu_kinds.md]
//
// --ab PARAM=FROM:TO also compiles each model with every kernel whose default PARAM (impl,
// parallel, ...) is FROM set to TO (where offered) and times both programs alternately,
// --ab-rounds times each: the switched kernels' time inside the module's run and the module's
// latency, default against switched, in the same run (a kernel alone, with hot caches, can rank
// choices differently).
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
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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

// The --ab row of one model: `compiled` (the defaults) against the same module with every kernel
// whose default `param` is `from` switched to `to`, measured alternately.
absl::StatusOr<std::string> AbParam(const mltune::ir::Module& module,
                                    const cpu::CompiledModule& compiled, const std::string& param,
                                    int64_t from, int64_t to, int rounds,
                                    const cpu::MeasureOptions& options, const std::string& model,
                                    int64_t batch) {
  std::vector<cpu::KernelConfig> configs = compiled.configs;
  std::vector<int32_t> switched;
  for (const cpu::Kernel& k : compiled.lowered.kernels) {
    for (size_t p = 0; p < k.params.size(); ++p) {
      const std::vector<int64_t>& c = k.params[p].choices;
      if (k.params[p].name != param || configs[static_cast<size_t>(k.id)][p] != from ||
          std::find(c.begin(), c.end(), to) == c.end()) {
        continue;
      }
      configs[static_cast<size_t>(k.id)][p] = to;
      configs[static_cast<size_t>(k.id)] =
          cpu::CanonicalConfig(k, configs[static_cast<size_t>(k.id)]);
      switched.push_back(k.id);
    }
  }
  if (switched.empty()) {
    return absl::NotFoundError(absl::StrCat("no kernel defaults to ", param, "=", from));
  }
  absl::StatusOr<cpu::CompiledModule> other = cpu::CompileModule(module, configs);
  if (!other.ok()) return other.status();
  double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};  // [program][module, switched kernels]
  for (int r = 0; r < rounds; ++r) {
    for (int which = 0; which < 2; ++which) {
      const cpu::CompiledModule& c = which == 0 ? compiled : *other;
      absl::StatusOr<cpu::Timing> t = cpu::Measure(c.object, c.program, 0, options);
      if (!t.ok()) return t.status();
      if (t->kernel_s.size() != c.lowered.kernels.size()) {
        return absl::InternalError("no kernel times came back");
      }
      double kernels = 0;
      for (int32_t id : switched) kernels += t->kernel_s[static_cast<size_t>(id)];
      best[which][0] = std::min(best[which][0], t->median_s);
      best[which][1] = std::min(best[which][1], kernels);
    }
  }
  return absl::StrFormat("| %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.3fx |\n", model, batch,
                         switched.size(), best[0][1] * 1e3, best[1][1] * 1e3, best[0][0] * 1e3,
                         best[1][0] * 1e3, best[1][0] / best[0][0]);
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
  std::string ab;
  int ab_rounds = 3, threads = 1;
  app.add_option("--ab", ab,
                 "PARAM=FROM:TO: also time each model with the kernels whose default PARAM is FROM "
                 "set to TO");
  app.add_option("--ab-rounds", ab_rounds, "--ab: alternate measurements of each program");
  app.add_option("--threads", threads, "Threads of the generated code (OMP_NUM_THREADS)");
  app.add_option("--out", out, "Also write the markdown here");
  CLI11_PARSE(app, argc, argv);
  int64_t ab_from = -1, ab_to = -1;
  std::string ab_param;
  if (!ab.empty()) {
    const std::vector<std::string> named = absl::StrSplit(ab, '=');
    const std::vector<std::string> parts =
        absl::StrSplit(named.size() == 2 ? named[1] : std::string(), ':');
    if (named.size() != 2 || named[0].empty() || parts.size() != 2 ||
        !absl::SimpleAtoi(parts[0], &ab_from) || !absl::SimpleAtoi(parts[1], &ab_to)) {
      std::cerr << "--ab: expected PARAM=FROM:TO (a parameter and two of its values), got '" << ab
                << "'\n";
      return 1;
    }
    ab_param = named[0];
  }
  std::vector<std::string> ab_lines;  // one markdown row per model and batch
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
      options.threads = threads;
      absl::StatusOr<cpu::Timing> t = cpu::Measure(compiled->object, compiled->program, 0, options);
      if (!t.ok() || t->kernel_s.size() != compiled->lowered.kernels.size()) {
        notes.push_back(absl::StrCat(
            model, " b", b, ": ",
            t.ok() ? "no kernel times came back" : bench::OneLine(t.status().ToString())));
        continue;
      }
      if (ab_from >= 0) {
        absl::StatusOr<std::string> row =
            AbParam(**module, *compiled, ab_param, ab_from, ab_to, ab_rounds, options, model, b);
        if (row.ok()) {
          ab_lines.push_back(*row);
        } else {
          notes.push_back(
              absl::StrCat(model, " b", b, " (--ab): ", bench::OneLine(row.status().ToString())));
        }
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
     << std::thread::hardware_concurrency() << " CPUs, shared), "
     << (threads == 1 ? std::string("one thread") : absl::StrCat(threads, " threads"))
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
  if (!ab_lines.empty()) {
    const std::string a = absl::StrCat(ab_param, " ", ab_from),
                      z = absl::StrCat(ab_param, " ", ab_to);
    md << "\n## Default " << a << " against " << z << " inside the models (--ab, " << threads
       << " thread(s), " << ab_rounds
       << " alternate rounds, the best of each)\n\n"
          "| model | batch | kernels switched | their time, "
       << a << " (ms) | " << z << " (ms) | module, " << a << " (ms) | " << z
       << " (ms) | module speed-up |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const std::string& l : ab_lines) md << l;
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
