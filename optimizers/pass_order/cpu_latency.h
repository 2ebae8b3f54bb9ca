// Scoring pass orders by measured runtime: each candidate module is compiled by the CPU backend
// (default kernel configurations and fusion) and timed in the runner child. The candidate's pass
// sequence stands in for the backend's pipeline; only its calls are inlined first, since the
// backend lowers the entry computation alone and XLA's CPU compiler never keeps a call (JAX's
// training steps arrive full of them). The op count saturates
// after a few passes on real training steps while runtime keeps telling candidates apart, so the
// pass-order task (`--option score=latency` on target cpu), `mltune search pass-order --score
// latency` and bench/pass_order_latency score with this. docs/search.md has the semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/compiler.h"
#include "backends/cpu/runner.h"
#include "ir/module.h"
#include "optimizers/pass_order/observation.h"

namespace mltune::opt::pass_order {

// The timing policy of a latency-scored search: one thread, at least 3 samples, stop sampling
// after `max_seconds` of timed runs. Short caps keep a search to seconds per candidate; the
// spread of a training step's runs is a few percent.
backends::cpu::MeasureOptions LatencyMeasureOptions(double max_seconds = 0.1);

struct CpuLatencyOptions {
  backends::cpu::MeasureOptions measure = LatencyMeasureOptions();
  backends::cpu::CompilerOptions compiler;
  uint64_t seed = 0;  // of the random inputs (ir::MakeRandomArguments); passes keep parameters
};

struct CpuLatencyStats {
  int64_t calls = 0;        // Score/Measure calls
  int64_t measured = 0;     // distinct modules compiled and timed successfully
  int64_t memo_hits = 0;    // calls answered from an earlier call on an identical module
  int64_t unsupported = 0;  // distinct modules the backend cannot lower (CheckSupported)
  int64_t failed = 0;       // distinct modules whose compile or run failed
  double compile_seconds = 0;
  double measure_seconds = 0;  // wall time of the runner children
};

// What the scorer compiles for `module`: a copy with every call inlined (call-inliner) and tuple
// values in the form the lowering reads (cpu::NormalizeTupleUses).
absl::StatusOr<std::unique_ptr<ir::Module>> InlineCallsForLowering(const ir::Module& module);

// Compiles and times modules, each structurally distinct module (ir::Fingerprint of what is
// compiled) once: a search reaches the same module by many pass orders. Thread-safe (one lock
// around everything, since measurements in parallel would disturb each other's timings).
class CpuLatencyScorer {
 public:
  explicit CpuLatencyScorer(CpuLatencyOptions options = {});

  // The median seconds of the candidate's run (calls inlined), or Unimplemented (CheckSupported's,
  // naming the op) when the backend cannot lower it, or the compile's or the runner's error.
  absl::StatusOr<double> Measure(const ir::Module& candidate);
  // Measure as a search score: +infinity for a module that cannot be compiled or run (an invalid
  // candidate the search steps away from, never an error).
  double Score(const ir::Module& module);

  CpuLatencyStats stats() const;
  // The first failure's message ("" when none): why some candidates scored +infinity.
  std::string first_error() const;

 private:
  const CpuLatencyOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, absl::StatusOr<double>> memo_;  // by fingerprint
  CpuLatencyStats stats_;
  std::string first_error_;
};

// Score() of a shared scorer, for PassOrderOptions::cost_model.
ScoreFn LatencyScoreFn(std::shared_ptr<CpuLatencyScorer> scorer);

// FailedPrecondition naming the op (CheckSupported's message) when the backend cannot lower the
// module as given (calls inlined): its score, the search's start, would be undefined.
absl::Status CheckLatencyScorable(const ir::Module& module);

// The baseline of a latency-scored search: XLA's default cpu pipeline as the CPU backend runs it
// (backends::cpu::RunCpuPasses: without tree_reduction_rewriter), measured by `scorer`.
absl::StatusOr<double> DefaultCpuPipelineLatency(const ir::Module& module,
                                                 CpuLatencyScorer& scorer);

}  // namespace mltune::opt::pass_order
