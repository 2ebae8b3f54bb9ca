// Internal to the evaluator: matrices of a literal's batch as ir/linalg's Matrix, and back.
#pragma once

#include <cstdint>

#include "ir/linalg/linalg.h"
#include "ir/literal.h"

namespace mltune::ir::eval {

using linalg::Cholesky;
using linalg::FormQ;
using linalg::LuFactor;
using linalg::Matrix;
using linalg::QrFactor;
using linalg::TriangularSolve;

// Matrix `index` of the batch held in the last two logical dimensions of `l` (element (r, c) is
// logical element [..., r, c]), in doubles; and back, rounding to the literal's type.
Matrix LoadMatrix(const Literal& l, int64_t index);
void StoreMatrix(const Matrix& m, Literal& l, int64_t index);
// Number of matrices in the batch (product of the leading dimensions); 0 when rank < 2.
int64_t MatrixCount(const Shape& shape);

}  // namespace mltune::ir::eval
