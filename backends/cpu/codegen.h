// C++ source generation for lowered kernels. A Program is one translation unit exporting
//   extern "C" void mltune_entry(void* const* args, void* const* results, char* scratch);
//   extern "C" int64_t mltune_scratch_bytes();
//   extern "C" void mltune_bind_constants(const void* segment);  // where `constants` is set
//   extern "C" void mltune_params_changed();  // frozen weights' values changed: pack them again
// over logical row-major buffers: the whole module (its kernels in order, temporaries placed in
// `scratch` with reuse), or one kernel alone (its inputs as args, its outputs as results), which
// is what the tile search measures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/lowering.h"
#include "ir/shape.h"

namespace mltune::backends::cpu {

struct Program {
  std::string source;
  std::vector<ir::Shape> params;   // array shapes of args
  std::vector<ir::Shape> results;  // array shapes of results
  int64_t scratch_bytes = 0;
  bool uses_onednn = false;
  // The constants segment: the bytes of the constants the source names by offset rather than
  // spells out (ConstantPool), bound once before the first call; null when there are none.
  // Shared, since a model's weights can be hundreds of MB and programs are copied freely.
  std::shared_ptr<const std::string> constants;
};

// The source every program starts with (prelude.cc).
const char* Prelude();
// What a program using oneDNN's convolution or matmul primitive adds after
// <oneapi/dnnl/dnnl.h> and the prelude (prelude.cc).
const char* OneDnnConvPrelude();

// The register tile (rows, 16-float vectors) of GEMM micro-kernel choice `micro`.
struct MicroKernelShape {
  int rows;
  int vectors;
};
MicroKernelShape MicroKernel(int64_t micro);

// `configs` has one entry per kernel (an empty entry, or an empty vector: the defaults).
absl::StatusOr<Program> GenerateModule(const LoweredModule& module,
                                       const std::vector<KernelConfig>& configs = {});
absl::StatusOr<Program> GenerateKernel(const LoweredModule& module, int32_t kernel,
                                       const KernelConfig& config = {});

}  // namespace mltune::backends::cpu
