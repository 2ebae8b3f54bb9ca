// Helpers shared by the neural-network ops (internal to mltune_frontend_onnx): reductions kept at
// the input's rank, the sliding-window geometry of convolutions and pooling, and the MatMul and
// Conv lowerings that the quantized ops reuse.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {

// x op y for operands of one shape (cannot fail).
Instruction* Bin(Emitter& b, Opcode op, Instruction* x, Instruction* y);
// begin, begin + 1, ..., end - 1.
std::vector<int64_t> Range(int64_t begin, int64_t end);
// The smallest value of `type`: the identity of a max reduction.
double Lowest(PrimitiveType type);
// `v` (of rank 1, extent x.dims[dim]) broadcast along dimension `dim` of x's shape.
Instruction* AlongDim(Emitter& b, Instruction* v, Instruction* x, int64_t dim);
// x reduced over `dims` and broadcast back to x's shape.
Instruction* ReduceKeep(Emitter& b, Instruction* x, const std::vector<int64_t>& dims,
                        Opcode combiner, double init);
// The number of elements over `dims` of x.
int64_t Count(Instruction* x, const std::vector<int64_t>& dims);
// Mean over `dims`, broadcast back to x's shape.
Instruction* MeanKeep(Emitter& b, Instruction* x, const std::vector<int64_t>& dims);
absl::StatusOr<Instruction*> Convolution(Emitter& b, Instruction* lhs, Instruction* rhs,
                                         const ConvolutionDimensionNumbers& dn,
                                         const Window& window, int64_t groups);

// Per spatial dimension: the padding of a sliding window (the ONNX pads, auto_pad applied) and
// the output extent.
struct SpatialWindow {
  std::vector<int64_t> kernel, strides, dilations, pad_lo, pad_hi, out;
};
// The window of a Conv or pooling node from its strides, dilations, pads and auto_pad.
absl::StatusOr<SpatialWindow> ComputeWindow(NodeContext& n, const std::vector<int64_t>& in,
                                            const std::vector<int64_t>& kernel, bool ceil_mode);
// The dimensions after N and C.
std::vector<int64_t> SpatialDims(Instruction* x);

// numpy.matmul(a, c): 1-D operands and broadcast batch dimensions.
absl::StatusOr<Instruction*> NumpyMatMul(NodeContext& n, Instruction* a, Instruction* c);
// The Conv node's convolution of x by w (its attributes; no bias).
absl::StatusOr<Instruction*> ConvolveNode(NodeContext& n, Instruction* x, Instruction* w);

}  // namespace mltune::ir::onnx
