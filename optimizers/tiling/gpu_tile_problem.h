// Tile search on the GPU backend: CpuTileProblem's search (a part per kernel, identical kernels
// tuned once, the slowest first, the defaults as the seed) over each kernel's GPU parameters
// (backends/gpu/gpu_codegen.h: launch shapes, reduction splits, GEMM tiles, cuBLASLt
// algorithms), each kernel compiled alone and timed on the device.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cpu/lowering.h"
#include "backends/gpu/gpu_program.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::opt::tiling {

// `module` with each kernel's parameters replaced by its GPU parameters: the space
// CpuTileProblem searches for the GPU. The copy points into `module`'s instructions.
backends::cpu::LoweredModule WithGpuParams(const backends::cpu::LoweredModule& module);

// Kernel `kernel`'s GPU program under its defaults, less what names it, with its parameter
// space: equal for kernels that compile to one program.
absl::StatusOr<std::string> GpuKernelProgramKey(const backends::cpu::LoweredModule& module,
                                                const backends::cpu::Kernel& kernel);

// A kernel's configuration with what its implementation ignores set to the defaults: a
// cuBLASLt GEMM (impl above 0) takes no tiles.
backends::cpu::KernelConfig CanonicalGpuConfig(const backends::cpu::Kernel& kernel,
                                               backends::cpu::KernelConfig config);

// Seconds of a kernel of `module` alone on the device under a configuration (compiled with
// `nvrtc`, timed with `options` on inputs of `seed`); each canonical configuration measured once.
CpuTileProblem::MeasureFn GpuKernelMeasure(const backends::cpu::LoweredModule& module,
                                           const backends::gpu::NvrtcOptions& nvrtc,
                                           const backends::gpu::GpuMeasureOptions& options,
                                           uint64_t seed);

}  // namespace mltune::opt::tiling
