#include "ir/evaluator/linalg_kernels.h"

namespace mltune::ir::eval {

int64_t MatrixCount(const Shape& shape) {
  if (!shape.IsArray() || shape.rank() < 2) return 0;
  int64_t n = 1;
  for (int64_t d = 0; d + 2 < shape.rank(); ++d) n *= shape.dimensions(d);
  return n;
}

Matrix LoadMatrix(const Literal& l, int64_t index) {
  const int64_t rank = l.shape().rank();
  Matrix m{l.shape().dimensions(rank - 2), l.shape().dimensions(rank - 1), {}};
  const int64_t size = m.rows * m.cols;
  m.v.resize(size);
  for (int64_t i = 0; i < size; ++i) m.v[i] = l.GetAsDouble(index * size + i);
  return m;
}

void StoreMatrix(const Matrix& m, Literal& l, int64_t index) {
  const int64_t size = m.rows * m.cols;
  for (int64_t i = 0; i < size; ++i) l.SetFromDouble(index * size + i, m.v[i]);
}

}  // namespace mltune::ir::eval
