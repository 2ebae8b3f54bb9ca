#include "passes/gather_scatter_utils.h"

#include <algorithm>

#include "ir/hlo_builder.h"

namespace mltune::passes {

using ir::Computation;
using ir::Instruction;

Instruction* MaybeTranspose(Computation& c, Instruction* operand,
                            const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return MakeTranspose(c, operand, permutation);
  }
  return operand;
}

Instruction* InsertDegenerateDims(Computation& c, Instruction* operand,
                                  const std::vector<int64_t>& dims) {
  if (dims.empty()) return operand;
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<int64_t>& in = operand->shape().dimensions();
  std::vector<int64_t> out;
  size_t next_in = 0, next_new = 0;
  const size_t rank = in.size() + sorted.size();
  for (size_t i = 0; i < rank; ++i) {
    if (next_new < sorted.size() && sorted[next_new] == static_cast<int64_t>(i)) {
      out.push_back(1);
      ++next_new;
    } else {
      out.push_back(in[next_in++]);
    }
  }
  return MakeReshape(c, operand, out);
}

Instruction* ElideDegenerateDims(Computation& c, Instruction* operand,
                                 const std::vector<int64_t>& dims) {
  if (dims.empty()) return operand;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < operand->shape().rank(); ++i) {
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) {
      out.push_back(operand->shape().dimensions(i));
    }
  }
  return MakeReshape(c, operand, out);
}

Instruction* CollapseFirstNDims(Computation& c, Instruction* operand, int64_t n) {
  const std::vector<int64_t>& in = operand->shape().dimensions();
  int64_t product = 1;
  for (int64_t i = 0; i < n; ++i) product *= in[i];
  std::vector<int64_t> out = {product};
  out.insert(out.end(), in.begin() + n, in.end());
  return MakeReshape(c, operand, out);
}

Instruction* ExpandFirstDimIntoNDims(Computation& c, Instruction* operand,
                                     const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& in = operand->shape().dimensions();
  std::vector<int64_t> out = dims;
  out.insert(out.end(), in.begin() + 1, in.end());
  return MakeReshape(c, operand, out);
}

Instruction* TransformStartIndices(Computation& c, Instruction* indices, int64_t index_vector_dim) {
  int64_t rank = indices->shape().rank();
  if (index_vector_dim == rank) {
    indices = InsertDegenerateDims(c, indices, {index_vector_dim});
    ++rank;
  } else if (index_vector_dim < rank - 1) {
    std::vector<int64_t> permutation;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != index_vector_dim) permutation.push_back(i);
    }
    permutation.push_back(index_vector_dim);
    indices = MaybeTranspose(c, indices, permutation);
  }
  if (rank > 2) {
    indices = CollapseFirstNDims(c, indices, rank - 1);
  } else if (rank == 1) {
    indices = InsertDegenerateDims(c, indices, {0});
  }
  return indices;
}

}  // namespace mltune::passes
