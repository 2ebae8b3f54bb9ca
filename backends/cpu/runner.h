// Runs compiled programs in a child process (mltune-cpu-runner) with time and memory limits:
// a candidate that crashes, hangs or exhausts memory comes back as an error naming what
// happened, and the caller (the daemon) lives on. Timing follows one policy everywhere: warm-up,
// then repeated runs until the spread is small or the time cap is hit; median and spread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/compiler.h"
#include "ir/literal.h"

namespace mltune::backends::cpu {

struct MeasureOptions {
  int threads = 1;                 // OMP_NUM_THREADS of the child (generated code and oneDNN)
  int min_reps = 5;                // timed samples at least
  int max_reps = 500;              // and at most
  double max_seconds = 0.3;        // stop sampling after this much timed work...
  double target_spread = 0.02;     // ...or once (p75 - p25) / median is this small (10+ samples)
  int64_t memory_limit_mb = 8192;  // RLIMIT_AS of the child
  double timeout_seconds = 60;     // wall clock, then the child is killed
  // A module's kernels timed one by one as well (Timing::kernel_s), in extra runs after the
  // timing so the module's own time carries no timer calls.
  bool kernel_times = false;
};

struct Timing {
  double median_s = 0, min_s = 0, p25_s = 0, p75_s = 0;
  double spread = 0;    // (p75 - p25) / median
  int64_t samples = 0;  // timed samples
  int64_t calls_per_sample = 1;
  // With MeasureOptions::kernel_times, a module's kernels (LoweredModule::kernels' order): each
  // one's median seconds inside the whole module's run. Empty otherwise, and for a lone kernel.
  std::vector<double> kernel_s;
  // Who measured it when not this process's runner: a remote worker's name and device.
  std::string measured_by;
};

// Where Measure times programs: a daemon with remote measurement workers installs a delegate
// (daemon/remote) that sends each program to a worker on the machine that holds the hardware. A
// delegate answering nullopt (no worker is connected) leaves the program to this host's runner.
// Process-wide, since measurements are made deep inside searches; nullptr removes it.
using MeasureDelegate = std::function<std::optional<absl::StatusOr<Timing>>(
    const Program& program, uint64_t seed, const MeasureOptions& options)>;
void SetMeasureDelegate(MeasureDelegate delegate);

// The runner executable: $MLTUNE_CPU_RUNNER, else next to the running program, else the build
// tree's.
std::string RunnerPath();

// Times `object` (compiled from `program`) on seeded random inputs.
absl::StatusOr<Timing> Measure(const CompiledObject& object, const Program& program, uint64_t seed,
                               const MeasureOptions& options = {});

// Runs `object` once on `args` (one per program parameter) and returns its results; with
// `timing`, also measures it on those inputs.
absl::StatusOr<std::vector<ir::Literal>> Execute(const CompiledObject& object,
                                                 const Program& program,
                                                 const std::vector<ir::Literal>& args,
                                                 const MeasureOptions& options = {},
                                                 Timing* timing = nullptr);

}  // namespace mltune::backends::cpu
