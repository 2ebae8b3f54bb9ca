// Rewrites the CPU pipeline (RunCpuPasses) applies after XLA's passes, so ops the kernels do not
// take directly run as ops they do, the way XLA's CPU compiler rewrites them.
#pragma once

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/registry.h"

namespace mltune::backends::cpu {

// Dots and convolutions of bf16 or f16 (operands or result; every type among bf16, f16, f32)
// compute in f32, as XLA's CPU backend runs them (its float normalization and ChangeOpDataType):
// operands converted to f32 (the converts fuse into the GEMM's or im2col's packing), the product
// accumulated in f32, the result converted back to its type once. Returns how many were rewritten.
int64_t UpcastLowPrecisionMatrixOps(ir::Module& module);

// Every topk becomes a stable sort of (values, iota indices) along the last dimension, by
// descending total order (ascending with largest=false), sliced to its first k, as XLA's
// TopkDecomposer: ties keep the lower index first, +NaN sorts above +inf and -NaN below -inf.
// Returns how many were rewritten.
int64_t DecomposeTopK(ir::Module& module);

// Every forward NCHW 2-D convolution reads and writes [batch, spatial..., feature], as XLA's CPU
// compiler makes them (ConvCanonicalization), with transposes around it. Returns how many were
// rewritten.
int64_t CanonicalizeConvolutions(ir::Module& module);
// Whether `module` has a convolution CanonicalizeConvolutions rewrites (checked before a trial
// copy of a module is made for it).
bool HasChannelsFirstConvolutions(const ir::Module& module);
// CanonicalizeConvolutions, then the transposes sunk below elementwise ops (reshape-mover, and
// whole elementwise regions such as a SiLU that reads its input twice) and reduce-windows and
// cancelled (algsimp), so an NCHW network runs NHWC from its first
// convolution to its last; `registry` provides the passes. True when that left at most two
// transposes more than the module had (the input's and the output's; one a reduction reads
// through is not counted): where others stay (a GroupNorm's reshapes of the channels stop them),
// they are strided copies the caller should not keep.
absl::StatusOr<bool> CanonicalizeConvolutionLayouts(ir::Module& module,
                                                    const passes::Registry& registry);

}  // namespace mltune::backends::cpu
