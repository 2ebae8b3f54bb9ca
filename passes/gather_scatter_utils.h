// Shape-manipulation helpers shared by gather_simplifier and scatter_simplifier, after XLA's
// gather_scatter_utils and hlo_creation_utils. Each returns its input when nothing needs doing.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/computation.h"
#include "ir/instruction.h"

namespace mltune::passes {

// transpose(operand, permutation), or operand for the identity.
ir::Instruction* MaybeTranspose(ir::Computation& c, ir::Instruction* operand,
                                const std::vector<int64_t>& permutation);
// reshape(operand) with size-1 dimensions inserted at the (sorted) result positions `dims`.
ir::Instruction* InsertDegenerateDims(ir::Computation& c, ir::Instruction* operand,
                                      const std::vector<int64_t>& dims);
// reshape(operand) without its (size-1) dimensions `dims`.
ir::Instruction* ElideDegenerateDims(ir::Computation& c, ir::Instruction* operand,
                                     const std::vector<int64_t>& dims);
// reshape(operand) merging its first n dimensions into one.
ir::Instruction* CollapseFirstNDims(ir::Computation& c, ir::Instruction* operand, int64_t n);
// reshape(operand) splitting its first dimension into `dims`.
ir::Instruction* ExpandFirstDimIntoNDims(ir::Computation& c, ir::Instruction* operand,
                                         const std::vector<int64_t>& dims);
// Start/scatter indices as a 2-D [N, index vector] array: the index vector dimension made
// explicit (an implicit trailing one becomes size 1) and moved last, the others flattened.
ir::Instruction* TransformStartIndices(ir::Computation& c, ir::Instruction* indices,
                                       int64_t index_vector_dim);

}  // namespace mltune::passes
