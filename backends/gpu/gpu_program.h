// A whole module on the GPU: every kernel of the CPU backend's kernel plan generated
// (gpu_codegen.h) and compiled to PTX (nvrtc_compiler.h), device buffers planned for the entry's
// parameters, each kernel's outputs and workspaces, and the launches in order; run and timed in
// the mltune-gpu-runner child (time limit, CUDA events, L2 flushed before each sample), results
// checked against the reference evaluator.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/lowering.h"
#include "backends/gpu/gpu_codegen.h"
#include "backends/gpu/nvrtc_compiler.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::backends::gpu {

struct GpuModuleProgram {
  std::string arch;                  // what the PTX targets ("sm_90")
  std::vector<std::string> ptx;      // one module per kernel
  std::vector<std::string> sources;  // each module's CUDA C++ (for mltune-gpu-emulator)
  std::vector<int64_t> buffer_bytes;
  struct Param {
    int64_t buffer;
    ir::Shape shape;
  };
  std::vector<Param> params;  // the entry's parameter leaves, in order
  struct Result {
    int64_t buffer = -1;  // -1: a constant
    ir::Shape shape;
    std::optional<ir::Literal> constant;  // a result the module computes at compile time
  };
  std::vector<Result> results;  // the entry's result leaves, in order
  // Buffers that start as a constant's bytes (a while loop's initial state, say).
  struct Constant {
    int64_t buffer;
    std::string bytes;
  };
  std::vector<Constant> constants;
  struct Launch {
    // kKernel: a generated kernel; kGemm: cuBLASLt (GpuLaunch::Kind::kGemm); kConv: cuDNN
    // (GpuLaunch::Kind::kConv); kCopy: args[0] to
    // args[1], `bytes`; kWhile: `cond`, then while the byte in buffer `pred` is nonzero, `body`
    // and `cond` again (host-driven: the runner reads the predicate back each trip);
    // kConditional: `branches[i]` for the s32 index in buffer `pred` (out of range: the last),
    // or branch 0 where `pred_index` is false and the byte is nonzero, else branch 1.
    enum class Kind { kKernel, kGemm, kConv, kCopy, kWhile, kConditional };
    Kind kind = Kind::kKernel;
    int64_t module = 0;  // index into ptx
    int32_t kernel = 0;  // LoweredModule::kernels index (of the entry's module)
    std::string entry;
    int64_t grid[3] = {1, 1, 1};
    int32_t block = 1;
    std::vector<int64_t> args;                         // buffer indices
    int64_t batch = 1, m = 1, n = 1, k = 1, algo = 1;  // a GEMM's shape and algorithm
    GpuConvShape conv;                                 // kConv (and `algo`)
    int64_t bytes = 0;                                 // kCopy
    int64_t pred = -1;                                 // kWhile
    std::vector<Launch> cond, body;                    // kWhile
    bool pred_index = false;                           // kConditional: an s32 index
    std::vector<std::vector<Launch>> branches;         // kConditional
  };
  std::vector<Launch> launches;
  int64_t cache_hits = 0;  // kernels whose PTX came from the cache
};

// Generates and compiles every kernel of `lowered` (`configs`: one per kernel, empty for the
// defaults). Unimplemented, listing each kernel the GPU does not generate yet (its name and
// kind), before anything is compiled.
absl::StatusOr<GpuModuleProgram> CompileGpuModule(const cpu::LoweredModule& lowered,
                                                  const std::vector<cpu::KernelConfig>& configs,
                                                  const NvrtcOptions& options);

// Kernel `kernel` alone under `config`: its inputs are the program's parameters, its outputs
// its results (what the tuner measures).
absl::StatusOr<GpuModuleProgram> CompileGpuKernel(const cpu::LoweredModule& lowered, int32_t kernel,
                                                  const cpu::KernelConfig& config,
                                                  const NvrtcOptions& options);

struct GpuMeasureOptions {
  int device = 0;
  int min_reps = 5;
  int max_reps = 200;
  double max_seconds = 0.3;     // stop sampling after this much timed work...
  double target_spread = 0.02;  // ...or once (p75 - p25) / median is this small (10+ samples)
  bool flush_l2 = true;
  bool graph = true;             // time the launches replayed as one CUDA graph
  bool launch_times = false;     // also each launch alone (GpuTiming::launch_s)
  int64_t device_memory_mb = 0;  // refuse programs whose buffers need more; 0: no limit
  double timeout_seconds = 120;  // wall clock, then the child is killed
  std::string runner;            // the child; "" = GpuRunnerPath() (mltune-gpu-emulator to test)
};

struct GpuTiming {
  double median_s = 0, min_s = 0, p25_s = 0, p75_s = 0, spread = 0;
  int64_t samples = 0;
  std::string device;            // the device's name, as the driver reports it
  std::string graph;             // "on", "off", or "failed: why" (then launched one by one)
  std::vector<double> launch_s;  // with launch_times: each launch's median seconds
};

// The runner executable: $MLTUNE_GPU_RUNNER, else next to the running program, else the build
// tree's; "" where this build has none (no CUDA toolkit).
std::string GpuRunnerPath();
// mltune-gpu-emulator: $MLTUNE_GPU_EMULATOR, else next to the running program, else the build
// tree's; "" where this build has none.
std::string GpuEmulatorPath();

// Times the program on seeded random inputs: on this machine's GPU, or, where it has none, through
// the measure delegate (a remote GPU worker) when one is installed.
absl::StatusOr<GpuTiming> MeasureGpu(const GpuModuleProgram& program, uint64_t seed,
                                     const GpuMeasureOptions& options = {});

// A timing run as the runner reads it: its plan (JSON, naming its files relative to its folder)
// and those files (PTX, CUDA sources, constants). What a remote GPU worker gets to time.
struct GpuPlanBundle {
  std::string plan_json;
  std::map<std::string, std::string> files;  // name -> bytes
};
GpuPlanBundle BundleForMeasure(const GpuModuleProgram& program, uint64_t seed,
                               const GpuMeasureOptions& options);
// Writes the bundle to temporary files and times it with the runner (options.runner, else
// GpuRunnerPath()). InvalidArgument for a plan naming a file the bundle lacks.
absl::StatusOr<GpuTiming> MeasureGpuBundle(const GpuPlanBundle& bundle,
                                           const GpuMeasureOptions& options);

// Where MeasureGpu times programs when this machine has no GPU: a daemon with remote GPU workers
// installs a delegate (daemon/remote); nullopt from it leaves the program to the local runner
// (which then says there is no GPU). Process-wide; nullptr removes it.
using GpuMeasureDelegate = std::function<std::optional<absl::StatusOr<GpuTiming>>(
    const GpuPlanBundle& bundle, const GpuMeasureOptions& options)>;
void SetGpuMeasureDelegate(GpuMeasureDelegate delegate);

// Runs the program once on `args` (the entry's parameter leaves) and returns its result leaves;
// with `timing`, also times it on those inputs.
absl::StatusOr<std::vector<ir::Literal>> ExecuteGpu(const GpuModuleProgram& program,
                                                    const std::vector<ir::Literal>& args,
                                                    const GpuMeasureOptions& options = {},
                                                    GpuTiming* timing = nullptr);

// Runs the program on seeded random arguments for `module` (the module as given, before the cpu
// pipeline) and compares its results with the reference evaluator's, within the tolerance and
// rounding spreads the CPU backend's check uses (backends/cpu/check.h); `ill_conditioned`
// receives how many elements passed only within their spread.
absl::Status CheckGpuAgainstEvaluator(const ir::Module& module, const GpuModuleProgram& program,
                                      uint64_t seed, const GpuMeasureOptions& options = {},
                                      GpuTiming* timing = nullptr,
                                      int64_t* ill_conditioned = nullptr);

}  // namespace mltune::backends::gpu
