// CUDA C++ generation for the kernels of the CPU backend's kernel plan (backends/cpu/lowering.h):
// each kernel becomes one or more __global__ functions (a GEMM whose epilogue reads its product
// at other indices gets a second launch), with tunable launch and tiling parameters, ready for
// NVRTC (nvrtc_compiler.h). Element expressions come from backends/cpu/element_expr.h in the GPU
// dialect, so both backends compute the same values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/lowering.h"
#include "ir/shape.h"

namespace mltune::backends::gpu {

// The source every generated translation unit starts with (prelude.cc).
const char* GpuPrelude();

// OK where the GPU generates code for `kernel`; otherwise Unimplemented naming its kind and op.
absl::Status CheckGpuSupported(const cpu::Kernel& kernel);

// The tunable parameters of `kernel` on the GPU, each with its choices, the default first:
//   loop: block (threads), items (elements per thread, a block's apart), vector (consecutive
//     elements per thread, stored as one vector where the outputs are f32);
//   reduce: split (0 a thread, 1 a warp, 2 a block per output element, 3 a block per 32
//     consecutive outputs, its warps sharing the reduced elements), block;
//   row: group (0 a block, 1 a warp per row), block;
//   reduce-window and scatter: block;
//   dot and convolution (an implicit GEMM): tile_m, tile_n, tile_k (a block's shared-memory
//     tiles), thread_m, thread_n (each thread's register tile); a dot also `impl`: 0 the
//     generated GEMM, 1-4 cuBLASLt with its heuristic's first to fourth algorithm (the operands
//     packed where they are not plain row-major buffers, the epilogue a launch after it). A dot
//     of at least 64K multiply-adds defaults to cuBLASLt's first algorithm, as the CPU defaults
//     such products to oneDNN. A convolution cuDNN takes also has `impl` 5-8: cuDNN's
//     forward convolution with its heuristic's first to fourth algorithm.
// Defaults follow the shape: a reduction over the minor dimension gets a warp or a block per
// output, one over major dimensions a thread per output (its reads are then coalesced) where the
// outputs number 64K or more, else split 3. Convolutions take `impl` too: cuBLASLt over an im2col
// pack (skipped for a 1x1 window on NHWC; HWIO weights read in place), or cuDNN (operands read
// in place when NCHW/OIHW or NHWC/OHWI, else packed to NHWC/OHWI); of 64K multiply-adds or more,
// cuDNN is the default where it packs no more than im2col, pads symmetrically and the GEMM has
// at least as many rows as its contraction, grouped ones always.
std::vector<cpu::KernelParam> GpuKernelParams(const cpu::Kernel& kernel);
cpu::KernelConfig DefaultGpuConfig(const cpu::Kernel& kernel);

// A buffer a launch passes: kernel input or output `index`, or workspace `index`.
struct GpuArg {
  enum class Kind { kInput, kOutput, kWorkspace };
  Kind kind = Kind::kInput;
  int64_t index = 0;
};

// A cuDNN forward convolution's shape: x [N, C, spatial...], w [K, C/groups, window...] and
// y [N, K, output spatial...] as sizes, all three packed with the feature minor (NHWC, OHWI) or
// after the batch (NCHW, OIHW); symmetric padding, stride and dilation per spatial dimension
// (two or three: a 1-D convolution gets a unit dimension).
struct GpuConvShape {
  bool nhwc = false;
  int64_t groups = 1;
  std::vector<int64_t> x, w, y, pad, stride, dilation;
};

// A launch of a generated kernel, a cuBLASLt GEMM (`batch` products C[m,n] = A[m,k] B[k,n] of
// row-major f32 matrices, args A, B, C) or a cuDNN convolution (args x, w, y, f32), with the
// `algo`-th (1-based) of the algorithms the library's heuristic proposes for the shape.
struct GpuLaunch {
  enum class Kind { kKernel, kGemm, kConv };
  Kind kind = Kind::kKernel;
  std::string entry;  // the extern "C" __global__ function
  int64_t grid[3] = {1, 1, 1};
  int32_t block = 1;  // threads, one dimension
  std::vector<GpuArg> args;
  int64_t batch = 1, m = 1, n = 1, k = 1;  // kGemm
  int64_t algo = 1;                        // kGemm, kConv
  GpuConvShape conv;                       // kConv
};

// One kernel's CUDA translation unit and how to run it: its launches in order, over its inputs'
// and outputs' buffers (logical row-major arrays, stored as cpu::StorageType) and a workspace.
struct GpuKernelProgram {
  std::string name;    // "gpu_k<id>", NVRTC's file name is name + ".cu"
  std::string source;  // prelude, constants, helpers, the __global__ functions
  std::vector<GpuLaunch> launches;
  std::vector<int64_t> workspaces;  // bytes of each workspace buffer
  std::vector<ir::Shape> inputs, outputs;
};

// Kernel `kernel` of `module` with `config` (one value per GpuKernelParams entry; empty: the
// defaults). InvalidArgument for a configuration it cannot take (a value not offered; a GEMM tile
// needing more than 1,024 threads or less than one warp), Unimplemented for a kind not generated.
absl::StatusOr<GpuKernelProgram> GenerateGpuKernel(const cpu::LoweredModule& module, int32_t kernel,
                                                   const cpu::KernelConfig& config = {});

}  // namespace mltune::backends::gpu
