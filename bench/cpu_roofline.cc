// Memory-bound kernels of the CPU backend against the machine's measured bandwidth: a STREAM-like
// read, copy and triad on one thread at sizes that fit L1, L2, L3 and only DRAM, the FP32 FMA peak,
// then per kernel kind (matrix-vector products of classifier heads in both weight orientations,
// max and average pooling in NCHW and NHWC, global average pooling, row and column reductions,
// elementwise ops, softmax) the module compiled with the default kernel parameters and timed in
// the runner child: GB/s of compulsory traffic (every parameter read once, every result written
// once) and its percentage of the bandwidth at the level the working set fits in.
//
//   taskset -c 1 build/release/bench/cpu_roofline [--seconds 0.3] [--rounds 3] [--cases a,b]
//                                                  [--set KIND.PARAM=VALUE] [--check] [--json]
//
// The runner calls a module repeatedly on the same buffers, so a working set that fits a cache
// level is read from it: the reference bandwidth is the smallest level holding the parameters and
// results (L2 up to half its size, L3 up to half of it, else DRAM; halves for the code, stack and
// the other core's share). Kernels that write little (matrix-vector products, reductions, global
// pools) are held to the read bandwidth, the others to triad's (two streams in, one out) or copy's.
// Run it pinned (taskset) so the STREAM loops and the runner child share one core's caches.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "bench/peers/onednn_peer.h"
#include "bench/peers/stream_bandwidth.h"
#include "nlohmann/json.hpp"

namespace {

using namespace mltune;
namespace cpu = backends::cpu;
using bench::StreamKind;

std::string F32(const std::vector<int64_t>& dims) {
  return absl::StrCat("f32[", absl::StrJoin(dims, ","), "]");
}
int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

constexpr const char* kAdd =
    "add_f32 {\n  add_p = f32[] parameter(0)\n  add_q = f32[] parameter(1)\n  ROOT add_s = f32[] "
    "add(add_p, add_q)\n}\n";
constexpr const char* kMax =
    "max_f32 {\n  max_p = f32[] parameter(0)\n  max_q = f32[] parameter(1)\n  ROOT max_s = f32[] "
    "maximum(max_p, max_q)\n}\n";

struct Case {
  std::string name, kind, shape, hlo;
  int64_t read_bytes = 0, write_bytes = 0;
};

// A batch-1 dense layer: x[1,k] times the weight, stored [k,n] (JAX, PyTorch's x @ W) or [n,k]
// (ONNX Gemm transB=1, torch.nn.Linear), plus a bias as the exporters emit it.
Case Gemv(int64_t k, int64_t n, bool weight_nk, bool bias) {
  const std::vector<int64_t> wd = weight_nk ? std::vector<int64_t>{n, k} : std::vector{k, n};
  std::string hlo = absl::StrCat("HloModule gemv\nENTRY e {\n  x = ", F32({1, k}),
                                 " parameter(0)\n  w = ", F32(wd), " parameter(1)\n");
  const std::string dot = absl::StrCat(F32({1, n}), " dot(x, w), lhs_contracting_dims={1}, ",
                                       "rhs_contracting_dims={", weight_nk ? 1 : 0, "}\n");
  if (bias) {
    absl::StrAppend(&hlo, "  b = ", F32({n}), " parameter(2)\n  d = ", dot, "  bb = ", F32({1, n}),
                    " broadcast(b), dimensions={1}\n  ROOT y = ", F32({1, n}), " add(d, bb)\n}\n");
  } else {
    absl::StrAppend(&hlo, "  ROOT d = ", dot, "}\n");
  }
  return {absl::StrCat("gemv_", k, "x", n, weight_nk ? "_nk" : "_kn", bias ? "_bias" : ""),
          "gemv",
          absl::StrCat(
              "[1,", k, "] x W",
              weight_nk ? absl::StrCat("[", n, ",", k, "]^T") : absl::StrCat("[", k, ",", n, "]"),
              bias ? " + b" : ""),
          hlo,
          4 * (k + n * k + (bias ? n : 0)),
          4 * n};
}

// Pooling over the two spatial dimensions of a [1,c,h,w] (NCHW) or [1,h,w,c] (NHWC) input:
// max (with -inf padding, as PyTorch's padded max pool) or average (a window sum divided by the
// window's area, count_include_pad).
Case Pool(bool max, int64_t c, int64_t hw, int64_t size, int64_t stride, int64_t pad, bool nhwc) {
  const int64_t out = (hw + 2 * pad - size) / stride + 1;
  const std::vector<int64_t> in_dims =
      nhwc ? std::vector<int64_t>{1, hw, hw, c} : std::vector<int64_t>{1, c, hw, hw};
  const std::vector<int64_t> out_dims =
      nhwc ? std::vector<int64_t>{1, out, out, c} : std::vector<int64_t>{1, c, out, out};
  const std::string s = absl::StrCat(size, "x", size), st = absl::StrCat(stride, "x", stride);
  const std::string p = absl::StrCat(pad, "_", pad, "x", pad, "_", pad);
  const std::string window =
      nhwc ? absl::StrCat("size=1x", s, "x1 stride=1x", st, "x1 pad=0_0x", p, "x0_0")
           : absl::StrCat("size=1x1x", s, " stride=1x1x", st, " pad=0_0x0_0x", p);
  std::string hlo =
      absl::StrCat("HloModule pool\n", max ? kMax : kAdd, "ENTRY e {\n  x = ", F32(in_dims),
                   " parameter(0)\n  init = f32[] constant(", max ? "-inf" : "0", ")\n");
  if (max) {
    absl::StrAppend(&hlo, "  ROOT r = ", F32(out_dims), " reduce-window(x, init), window={", window,
                    "}, to_apply=max_f32\n}\n");
  } else {
    absl::StrAppend(
        &hlo, "  r = ", F32(out_dims), " reduce-window(x, init), window={", window,
        "}, to_apply=add_f32\n  area = f32[] constant(", size * size, ")\n  ab = ", F32(out_dims),
        " broadcast(area), dimensions={}\n  ROOT y = ", F32(out_dims), " divide(r, ab)\n}\n");
  }
  return {absl::StrCat(max ? "maxpool_" : "avgpool_", size, "x", size, "s", stride, "_",
                       nhwc ? "nhwc" : "nchw"),
          max ? "max pool" : "avg pool",
          absl::StrCat(nhwc ? "NHWC " : "NCHW ", absl::StrJoin(in_dims, "x"), " ", s, "/s", stride,
                       " p", pad),
          hlo,
          4 * Elements(in_dims),
          4 * Elements(out_dims)};
}

// The mean over the spatial dimensions (a classifier's global average pool).
Case GlobalAvgPool(int64_t c, int64_t hw, bool nhwc) {
  const std::vector<int64_t> in_dims =
      nhwc ? std::vector<int64_t>{1, hw, hw, c} : std::vector<int64_t>{1, c, hw, hw};
  const std::string hlo =
      absl::StrCat("HloModule gap\n", kAdd, "ENTRY e {\n  x = ", F32(in_dims),
                   " parameter(0)\n  zero = f32[] constant(0)\n  s = ", F32({1, c}),
                   " reduce(x, zero), dimensions={", nhwc ? "1,2" : "2,3",
                   "}, to_apply=add_f32\n  n = f32[] constant(", hw * hw, ")\n  nb = ", F32({1, c}),
                   " broadcast(n), dimensions={}\n  ROOT y = ", F32({1, c}), " divide(s, nb)\n}\n");
  return {absl::StrCat("global_avgpool_", nhwc ? "nhwc" : "nchw"),
          "global avg pool",
          absl::StrCat(nhwc ? "NHWC " : "NCHW ", absl::StrJoin(in_dims, "x")),
          hlo,
          4 * Elements(in_dims),
          4 * c};
}

Case Reduce(int64_t rows, int64_t cols, int64_t dim) {
  const std::string hlo = absl::StrCat(
      "HloModule reduce\n", kAdd, "ENTRY e {\n  x = ", F32({rows, cols}),
      " parameter(0)\n  zero = f32[] constant(0)\n  ROOT r = ", F32({dim == 1 ? rows : cols}),
      " reduce(x, zero), dimensions={", dim, "}, to_apply=add_f32\n}\n");
  return {absl::StrCat(dim == 1 ? "reduce_rows_" : "reduce_cols_", rows, "x", cols),
          dim == 1 ? "row reduce" : "column reduce",
          absl::StrCat(rows, "x", cols, " sum over dim ", dim),
          hlo,
          4 * rows * cols,
          4 * (dim == 1 ? rows : cols)};
}

Case Elementwise(const std::string& op, const std::vector<int64_t>& dims) {
  const std::string s = F32(dims);
  std::string hlo = absl::StrCat("HloModule ew\nENTRY e {\n  x = ", s, " parameter(0)\n");
  int64_t inputs = 1;
  if (op == "relu") {
    absl::StrAppend(&hlo, "  zero = f32[] constant(0)\n  z = ", s,
                    " broadcast(zero), dimensions={}\n  ROOT r = ", s, " maximum(x, z)\n}\n");
  } else {
    inputs = 2;
    absl::StrAppend(&hlo, "  y = ", s, " parameter(1)\n  ROOT r = ", s, " ",
                    op == "add" ? "add" : "multiply", "(x, y)\n}\n");
  }
  return {absl::StrCat(op, "_", Elements(dims) * 4 >> 20, "MB"),
          op,
          absl::StrJoin(dims, "x"),
          hlo,
          4 * inputs * Elements(dims),
          4 * Elements(dims)};
}

Case Softmax(int64_t rows, int64_t cols) {
  const std::string s = F32({rows, cols}), v = F32({rows});
  const std::string hlo =
      absl::StrCat("HloModule softmax\n", kAdd, kMax, "ENTRY e {\n  x = ", s,
                   " parameter(0)\n  ninf = f32[] constant(-inf)\n  mx = ", v,
                   " reduce(x, ninf), dimensions={1}, to_apply=max_f32\n  mxb = ", s,
                   " broadcast(mx), dimensions={0}\n  sh = ", s, " subtract(x, mxb)\n  ex = ", s,
                   " exponential(sh)\n  zero = f32[] constant(0)\n  sum = ", v,
                   " reduce(ex, zero), dimensions={1}, to_apply=add_f32\n  sb = ", s,
                   " broadcast(sum), dimensions={0}\n  ROOT y = ", s, " divide(ex, sb)\n}\n");
  return {absl::StrCat("softmax_", rows, "x", cols),
          "softmax row",
          absl::StrCat(rows, "x", cols),
          hlo,
          4 * rows * cols,
          4 * rows * cols};
}

std::vector<Case> AllCases() {
  return {
      // Classifier heads: MobileNetV3 (1024 -> 1000), ResNet-50 (2048 -> 1000), EfficientNet-B0
      // and MobileNetV2 (1280 -> 1000), ConvNeXt-T (768 -> 1000).
      Gemv(1024, 1000, true, true),
      Gemv(1024, 1000, false, false),
      Gemv(2048, 1000, true, true),
      Gemv(2048, 1000, false, false),
      Gemv(1280, 1000, true, false),
      Gemv(768, 1000, false, true),
      // ResNet's stem max pool, both layouts; an average pool; global average pools.
      Pool(true, 64, 112, 3, 2, 1, false),
      Pool(true, 64, 112, 3, 2, 1, true),
      Pool(false, 64, 56, 3, 1, 1, false),
      Pool(false, 64, 56, 3, 1, 1, true),
      GlobalAvgPool(1280, 7, false),
      GlobalAvgPool(2048, 7, true),
      // Reductions and elementwise ops in L2, L3 and DRAM.
      Reduce(512, 512, 1),
      Reduce(512, 512, 0),
      Reduce(4096, 4096, 1),
      Reduce(4096, 4096, 0),
      Elementwise("add", {1, 56, 56, 64}),
      Elementwise("mul", {1, 56, 56, 256}),
      Elementwise("relu", {1, 112, 112, 64}),
      Elementwise("add", {4096, 4096}),
      Elementwise("relu", {4096, 4096}),
      Softmax(1, 1000),
      Softmax(4096, 1024),
  };
}

struct Level {
  std::string name;
  int64_t bytes;  // the STREAM arrays' size
  double read = 0, copy = 0, triad = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Memory-bound CPU kernels against the measured single-thread bandwidth"};
  double seconds = 0.3;
  int rounds = 3;
  std::string cases_arg;
  bool check = false, as_json = false;
  app.add_option("--seconds", seconds, "timing cap per measurement (the runner's max_seconds)");
  app.add_option("--rounds", rounds, "timing rounds; each case keeps its best");
  app.add_option("--cases", cases_arg, "comma-separated case names or prefixes (default: all)");
  std::vector<std::string> sets;
  app.add_option("--set", sets,
                 "KIND.PARAM=VALUE: that parameter value for every kernel of that kind offering "
                 "it (e.g. reduce-window.order=1), to compare a choice with the default");
  app.add_flag("--check", check, "check every case against the reference evaluator too");
  app.add_flag("--json", as_json, "print JSON instead of markdown");
  CLI11_PARSE(app, argc, argv);

  std::vector<Case> cases;
  const std::vector<std::string> only = absl::StrSplit(cases_arg, ',', absl::SkipEmpty());
  for (Case& c : AllCases()) {
    if (only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& w) {
          return c.name.rfind(w, 0) == 0;
        })) {
      cases.push_back(std::move(c));
    }
  }

  cpu_set_t set;
  CPU_ZERO(&set);
  const bool pinned = sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
  if (!pinned) std::cerr << "warning: not pinned to one CPU (run under taskset -c N)\n";

  const int64_t l2 = bench::CacheBytes(2, 1 << 20);
  const int64_t l3 = bench::CacheBytes(3, 32 << 20);
  std::vector<Level> levels = {{"L1", 16 << 10},
                               {"L2", l2 / 2},
                               {"L3", l3 / 4},
                               {"DRAM", std::max<int64_t>(8 * l3, 256 << 20)}};
  std::cerr << "measuring bandwidth...\n";
  for (Level& lv : levels) {
    // `bytes` is the footprint: copy's two arrays and triad's three share it.
    lv.read = bench::StreamBandwidthGBs(StreamKind::kRead, lv.bytes, 0.3);
    lv.copy = bench::StreamBandwidthGBs(StreamKind::kCopy, lv.bytes / 2, 0.3);
    lv.triad = bench::StreamBandwidthGBs(StreamKind::kTriad, lv.bytes / 3, 0.3);
  }
  const double peak = bench::MeasurePeakGflops(0.5);

  struct Row {
    Case c;
    std::unique_ptr<ir::Module> module;
    std::unique_ptr<cpu::CompiledModule> compiled;
    std::string kernels, error, checked = "-";
    double best_s = -1;
  };
  std::vector<Row> rows;
  for (Case& c : cases) {
    Row row;
    row.c = std::move(c);
    std::cerr << "[" << row.c.name << "] " << row.c.shape << "\n";
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed =
        bench::ParseAndVerify(row.c.hlo, row.c.name);
    if (!parsed.ok()) {
      std::cerr << "error: " << row.c.name << ": " << parsed.status().message() << "\n"
                << row.c.hlo;
      return 1;
    }
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared = bench::PrepareForCpu(**parsed);
    absl::StatusOr<cpu::CompiledModule> compiled =
        prepared.ok() ? cpu::CompileModule(**prepared) : prepared.status();
    if (compiled.ok() && !sets.empty()) {
      std::vector<cpu::KernelConfig> configs = compiled->configs;
      for (const std::string& set : sets) {
        const std::vector<std::string> kv = absl::StrSplit(set, absl::MaxSplits('=', 1));
        const std::vector<std::string> kp = absl::StrSplit(kv[0], absl::MaxSplits('.', 1));
        int64_t value = 0;
        if (kv.size() != 2 || kp.size() != 2 || !absl::SimpleAtoi(kv[1], &value)) {
          std::cerr << "error: --set " << set << ": expected KIND.PARAM=VALUE\n";
          return 1;
        }
        for (const cpu::Kernel& k : compiled->lowered.kernels) {
          if (cpu::KernelKindName(k.kind) != kp[0]) continue;
          for (size_t p = 0; p < k.params.size(); ++p) {
            const std::vector<int64_t>& ch = k.params[p].choices;
            if (k.params[p].name == kp[1] && std::find(ch.begin(), ch.end(), value) != ch.end()) {
              configs[static_cast<size_t>(k.id)][p] = value;
            }
          }
        }
      }
      compiled = cpu::CompileModule(**prepared, configs);
    }
    if (!compiled.ok()) {
      row.error = bench::OneLine(std::string(compiled.status().message()));
    } else {
      row.module = *std::move(prepared);
      row.compiled = std::make_unique<cpu::CompiledModule>(*std::move(compiled));
      std::vector<std::string> kinds;
      for (const cpu::Kernel& k : row.compiled->lowered.kernels) {
        kinds.push_back(cpu::KernelKindName(k.kind));
      }
      row.kernels = absl::StrJoin(kinds, "+");
      if (check) {
        const absl::Status s = cpu::CheckAgainstEvaluator(*row.module, *row.compiled, 1);
        row.checked = s.ok() ? "ok" : bench::OneLine(std::string(s.message()), 60);
      }
    }
    rows.push_back(std::move(row));
  }
  cpu::MeasureOptions measure;
  measure.max_seconds = seconds;
  for (int r = 0; r < rounds; ++r) {
    for (Row& row : rows) {
      if (row.compiled == nullptr) continue;
      absl::StatusOr<cpu::Timing> t =
          cpu::Measure(row.compiled->object, row.compiled->program, 0, measure);
      if (!t.ok()) {
        row.error = bench::OneLine(std::string(t.status().message()));
        continue;
      }
      if (row.best_s < 0 || t->median_s < row.best_s) row.best_s = t->median_s;
    }
  }

  // The level holding the working set, and the STREAM kind the kernel's traffic resembles.
  auto level_of = [&](int64_t bytes) -> const Level& {
    if (bytes <= l2 / 2) return levels[1];
    if (bytes <= l3 / 2) return levels[2];
    return levels[3];
  };
  auto reference = [&](const Case& c, const Level& lv, std::string* kind) {
    *kind = c.write_bytes * 8 <= c.read_bytes   ? "read"
            : c.read_bytes >= 2 * c.write_bytes ? "triad"
                                                : "copy";
    return *kind == "read" ? lv.read : *kind == "triad" ? lv.triad : lv.copy;
  };

  nlohmann::json out;
  out["machine"] = bench::CpuModel();
  out["pinned"] = pinned;
  out["peak_gflops"] = peak;
  for (const Level& lv : levels) {
    out["bandwidth"].push_back({{"level", lv.name},
                                {"bytes", lv.bytes},
                                {"read_gbs", lv.read},
                                {"copy_gbs", lv.copy},
                                {"triad_gbs", lv.triad}});
  }
  for (const Row& row : rows) {
    const int64_t bytes = row.c.read_bytes + row.c.write_bytes;
    const Level& lv = level_of(bytes);
    std::string kind;
    const double ref = reference(row.c, lv, &kind);
    const double gbs = row.best_s > 0 ? static_cast<double>(bytes) / row.best_s * 1e-9 : -1;
    out["cases"].push_back({{"name", row.c.name},
                            {"kind", row.c.kind},
                            {"shape", row.c.shape},
                            {"bytes", bytes},
                            {"kernels", row.kernels},
                            {"seconds", row.best_s},
                            {"gbs", gbs},
                            {"level", lv.name},
                            {"reference", kind},
                            {"reference_gbs", ref},
                            {"fraction", gbs > 0 ? gbs / ref : -1},
                            {"check", row.checked},
                            {"error", row.error}});
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("Machine: %s, %s; FP32 FMA peak %.1f GFLOP/s (one thread)\n\n",
                               bench::CpuModel(), pinned ? "pinned to one CPU" : "NOT pinned",
                               peak);
  std::cout << "| level | footprint | read GB/s | copy GB/s | triad GB/s |\n"
               "|---|---:|---:|---:|---:|\n";
  for (const Level& lv : levels) {
    std::cout << absl::StrFormat("| %s | %.0f KiB | %.1f | %.1f | %.1f |\n", lv.name,
                                 static_cast<double>(lv.bytes) / 1024, lv.read, lv.copy, lv.triad);
  }
  std::cout << "\n| case | kind | shape | kernels | MB moved | level | ms | GB/s | % of "
               "level's bound |"
            << (check ? " check |" : "") << "\n|---|---|---|---|---:|---|---:|---:|---:|"
            << (check ? "---|" : "") << "\n";
  for (const nlohmann::json& c : out["cases"]) {
    const std::string err = c["error"].get<std::string>();
    std::cout << absl::StrFormat(
        "| %s | %s | %s | %s | %.2f | %s | %s | %s | %s |", c["name"].get<std::string>(),
        c["kind"].get<std::string>(), c["shape"].get<std::string>(),
        err.empty() ? c["kernels"].get<std::string>() : "error: " + err,
        c["bytes"].get<double>() / 1e6, c["level"].get<std::string>(),
        c["seconds"].get<double>() > 0 ? absl::StrFormat("%.4f", c["seconds"].get<double>() * 1e3)
                                       : "-",
        c["gbs"].get<double>() > 0 ? absl::StrFormat("%.1f", c["gbs"].get<double>()) : "-",
        c["fraction"].get<double>() > 0
            ? absl::StrFormat("%.0f%% of %s", c["fraction"].get<double>() * 100,
                              c["reference"].get<std::string>())
            : "-");
    if (check) std::cout << " " << c["check"].get<std::string>() << " |";
    std::cout << "\n";
  }
  return 0;
}
