#include "bench/matrix_kinds.h"

#include "backends/cpu/gemm_shape.h"
#include "ir/instruction.h"

namespace mltune::bench {

MatrixDims MatrixDimsOf(const ir::Instruction& mm) {
  const backends::cpu::GemmShape shape = backends::cpu::GemmShapeOf(mm);
  MatrixDims d;
  d.convolution = mm.opcode() == ir::Opcode::kConvolution;
  d.batch = shape.batch;
  d.m = shape.m;
  d.n = shape.n;
  d.k = shape.k;
  d.bytes =
      mm.operand(0)->shape().ByteSize() + mm.operand(1)->shape().ByteSize() + mm.shape().ByteSize();
  if (d.convolution) {
    d.pointwise = true;
    if (mm.window.has_value()) {
      for (const ir::WindowDim& w : mm.window->dims) d.pointwise &= w.size == 1;
    }
    d.feature_groups = mm.feature_group_count;
    d.input_features = mm.operand(0)->shape().dimensions()[static_cast<size_t>(
        mm.conv_dnums->input_feature_dimension)];
  }
  return d;
}

}  // namespace mltune::bench
