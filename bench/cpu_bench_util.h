// Shared by the CPU backend benchmarks (bench/cpu_ops.cc, bench/cpu_models.cc): preparing a module
// as the daemon does, tuning its kernel parameters with CpuTileProblem and a search strategy,
// and running the PyTorch eager peer (bench/peers/torch_ops.py).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/cpu_backend.h"
#include "ir/module.h"
#include "nlohmann/json.hpp"

namespace mltune::bench {

// Parses HLO text and verifies it (a typo in a benchmark's generated HLO fails loudly).
absl::StatusOr<std::unique_ptr<ir::Module>> ParseAndVerify(std::string_view text,
                                                           const std::string& name);

// What the daemon compiles: the module after XLA's default cpu pipeline, checked with
// backends::cpu::CheckSupported (its Unimplemented error is passed on unchanged).
absl::StatusOr<std::unique_ptr<ir::Module>> PrepareForCpu(const ir::Module& module);
// A file read, parsed, verified and prepared for the CPU (the time-to-best benchmarks' modules).
absl::StatusOr<std::unique_ptr<ir::Module>> ReadForCpu(const std::string& file);

struct TuneOptions {
  int64_t budget = 24;  // search steps (whole-candidate evaluations)
  std::string strategy = "annealing";
  uint64_t seed = 0;
  backends::cpu::MeasureOptions kernel_measure;  // each kernel alone, during the search
  // The search scores kernels measured alone, once each; at the end the whole module is timed
  // with the finalists (the defaults, the search's best, and the oneDNN seeds), alternating,
  // `validate_rounds` times each (best median kept), and the fastest is the result. A single noisy
  // kernel measurement during the search then cannot decide the answer. 0: no check.
  int validate_rounds = 2;
  backends::cpu::MeasureOptions module_measure;
};

// The options both benchmarks tune with: `threads` for every measurement, kernels capped at
// `tune_seconds` each during the search, whole modules at `seconds` (at most 0.1 s while picking
// the finalist).
TuneOptions MakeTuneOptions(int threads, double seconds, double tune_seconds, int64_t budget,
                            const std::string& strategy, uint64_t seed);

struct TuneOutcome {
  std::vector<backends::cpu::KernelConfig> configs;  // one per kernel: the chosen finalist
  double default_kernel_seconds = 0;  // sum over kernels measured alone, compiler defaults
  double tuned_kernel_seconds = 0;    // the same for the chosen configuration
  int64_t steps = 0;                  // charged search steps (seeds included)
  int64_t measurements = 0;           // distinct (kernel, configuration) pairs measured
  double seconds = 0;                 // wall time of the search (compiles included)
  std::string last_error;             // the last kernel error seen during the search, if any
  std::vector<backends::cpu::KernelConfig> searched_configs;  // the search's best
  // Each kernel measured alone: with its defaults, and in the search's best configuration.
  std::vector<double> kernel_default_seconds, kernel_searched_seconds;
  // The module-level check: each finalist's name ("defaults", "search", "oneDNN seed", "oneDNN
  // conv seed", "oneDNN blocked conv seed") and whole module seconds, and which one was chosen
  // (without a check: "search", or "defaults" when the search's best is the defaults).
  std::vector<std::pair<std::string, double>> finalists;
  std::string chosen = "search";
};

// Tunes every kernel parameter of `lowered` (CpuTileProblem: each kernel generated, compiled and
// measured alone, as the daemon's tile task does). The search is seeded with the compiler's
// defaults and, where a GEMM kernel (dot, convolution) can call oneDNN, with every GEMM kernel
// switched to impl=1, and with the convolutions on oneDNN's convolution primitive (impl=2, and
// impl=3: oneDNN's layouts) where they offer it, so a budget of a few steps already compares the
// libraries against the generated GEMM; the strategy then spends the rest of the budget from the
// best seed. Then the finalists are timed as whole modules (TuneOptions::validate_rounds) and
// the fastest is chosen.
absl::StatusOr<TuneOutcome> TuneKernels(const backends::cpu::LoweredModule& lowered,
                                        const TuneOptions& options);

// The value of parameter `name` in `config`, or -1 when the kernel has no such parameter.
int64_t ParamValue(const backends::cpu::Kernel& kernel, const backends::cpu::KernelConfig& config,
                   std::string_view name);

struct TorchPeerResult {
  bool ok = false;
  std::string error;       // why there are no timings (torch missing, the script failed, ...)
  std::string blas_line;   // the script's stderr report (torch version, threads, BLAS)
  nlohmann::json results;  // {name: {"alloc_s", "out_s", "reps"}}
};

// Runs `script` (bench/peers/torch_ops.py) once with `python` on `specs` (a JSON list).
TorchPeerResult RunTorchPeer(const std::string& python, const std::string& script, int threads,
                             double min_seconds, const nlohmann::json& specs);

double GeoMean(const std::vector<double>& values);  // 0 for an empty list
// The CPU's model name (/proc/cpuinfo), for the machine line of a results file.
std::string CpuModel();
// The size of cache level `level` of CPU 0 from sysfs ("1024K"), or `fallback`: sysconf's
// _SC_LEVEL3_CACHE_SIZE reads 320 MB on this VM, whose sysfs and lscpu say 32 MB.
int64_t CacheBytes(int level, int64_t fallback);

// The first line of `text`, cut to `limit` characters with "..." (error messages in tables).
std::string OneLine(const std::string& text, size_t limit = 160);

// Markdown table cell helpers: milliseconds with 3 significant digits, or "-".
std::string Ms(double seconds);
std::string Ratio(double value);  // "1.23x", or "-" when not finite or not positive

}  // namespace mltune::bench
