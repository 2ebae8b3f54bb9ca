// Compiles generated CUDA C++ to PTX in process with NVRTC, cached on disk by content, and checks
// PTX with ptxas: the GPU worker's counterpart of backends/cpu/compiler.h. No CUDA header comes in
// through here; without the toolkit at build time every call is Unimplemented.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::backends::gpu {

struct NvrtcOptions {
  // The real architecture; NVRTC compiles for its virtual one (sm_90 -> compute_90). An "a" or
  // "f" suffix (sm_90a) selects the architecture- or family-specific features.
  std::string arch = "sm_90";
  // After the defaults (-default-device, --std=c++17, -lineinfo, the toolkit's include path), so
  // they can override them; e.g. "--use_fast_math", which is off by default as in XLA.
  std::vector<std::string> extra_flags;
  std::string cache_dir;  // "" = DefaultGpuKernelCacheDir()
};

struct PtxModule {
  std::string ptx;
  std::string key;  // hex SHA-256 of the source, arch, flags and NVRTC version
  bool cache_hit = false;
  std::string log;  // NVRTC's log (warnings) of a compile; empty on a cache hit
};

// $MLTUNE_GPU_KERNEL_CACHE, else $XDG_CACHE_HOME/mltune/gpu-kernels, else
// ~/.cache/mltune/gpu-kernels.
std::string DefaultGpuKernelCacheDir();

// NVRTC's version ("13.0"), or "" when built without the CUDA toolkit.
std::string NvrtcVersion();

// Compiles `source` to PTX, or returns the cached PTX of an identical compile (<dir>/<key>.ptx,
// written atomically). `name` is the file name NVRTC's messages and the line info use
// ("gpu_k3.cu"); it is not part of the key. A compile error is InvalidArgument with NVRTC's log,
// which names `name` and the line.
absl::StatusOr<PtxModule> CompileToPtx(const std::string& source, const std::string& name,
                                       const NvrtcOptions& options = {});

// Assembles `ptx` for `arch` ("sm_90") with the toolkit's ptxas, discarding the result: OK, or
// InvalidArgument with ptxas's messages.
absl::Status AssemblePtx(const std::string& ptx, const std::string& arch);

// What ptxas -v reports for one kernel.
struct PtxasUsage {
  int registers = 0;
  int64_t shared_bytes = 0;  // static shared memory
  int64_t stack_bytes = 0;   // the stack frame
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
};

// Assembles `ptx` for `arch` with ptxas -v and returns the usage of the kernel `entry`:
// InvalidArgument where ptxas rejects the PTX, NotFound where it has no such entry.
absl::StatusOr<PtxasUsage> PtxasResourceUsage(const std::string& ptx, const std::string& arch,
                                              const std::string& entry);

}  // namespace mltune::backends::gpu
