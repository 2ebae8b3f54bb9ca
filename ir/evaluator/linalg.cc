// The HLO linear-algebra ops cholesky and triangular-solve, on batches of real matrices
// (computed in double, rounded once to the element type).
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/linalg_kernels.h"

namespace mltune::ir::eval {
namespace {

absl::Status CheckRealMatrices(const Instruction& instr, const Literal& l) {
  if (IsComplex(l.element_type())) {
    return absl::UnimplementedError(
        absl::StrCat(std::string(OpcodeName(instr.opcode())), " on complex matrices"));
  }
  if (!IsFloatingPoint(l.element_type()) || l.shape().rank() < 2) {
    return Invalid(instr, "needs a batch of float matrices");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Literal> HandleCholesky(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& a = ops[0];
  if (absl::Status s = CheckRealMatrices(instr, a); !s.ok()) return s;
  const int64_t rank = a.shape().rank();
  if (a.shape().dimensions(rank - 1) != a.shape().dimensions(rank - 2) ||
      !a.shape().Compatible(instr.shape())) {
    return Invalid(instr, "needs square matrices and a result of the same shape");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const bool lower = instr.cholesky_lower;
  for (int64_t b = 0; b < MatrixCount(a.shape()); ++b) {
    Matrix m = LoadMatrix(a, b);
    const int64_t info = Cholesky(m, lower);
    for (int64_t r = 0; r < m.rows; ++r) {
      for (int64_t c = 0; c < m.cols; ++c) {
        // The other triangle is implementation-defined in XLA; zero it. A matrix that is not
        // positive definite yields NaNs, as XLA's expansion does.
        if (info != 0) {
          m(r, c) = std::numeric_limits<double>::quiet_NaN();
        } else if (lower ? c > r : c < r) {
          m(r, c) = 0;
        }
      }
    }
    StoreMatrix(m, *out, b);
  }
  return out;
}

absl::StatusOr<Literal> HandleTriangularSolve(Evaluator& ev, const Instruction& instr,
                                              Operands& ops) {
  if (ops.size() != 2 || !instr.triangular_solve.has_value()) {
    return Invalid(instr, "needs a, b and options");
  }
  const Literal& a = ops[0];
  const Literal& b = ops[1];
  if (absl::Status s = CheckRealMatrices(instr, a); !s.ok()) return s;
  if (absl::Status s = CheckRealMatrices(instr, b); !s.ok()) return s;
  const TriangularSolveOptions& opt = *instr.triangular_solve;
  const int64_t rank = a.shape().rank();
  const int64_t k = a.shape().dimensions(rank - 1);
  const int64_t solve_dim = opt.left_side ? rank - 2 : rank - 1;
  if (b.shape().rank() != rank || a.shape().dimensions(rank - 2) != k ||
      b.shape().dimensions(solve_dim) != k || MatrixCount(a.shape()) != MatrixCount(b.shape()) ||
      !b.shape().Compatible(instr.shape()) || a.element_type() != b.element_type()) {
    return Invalid(instr, "a, b and the result do not match");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const bool transpose = opt.transpose_a != TriangularTranspose::kNoTranspose;
  for (int64_t i = 0; i < MatrixCount(a.shape()); ++i) {
    const Matrix am = LoadMatrix(a, i);
    Matrix bm = LoadMatrix(b, i);
    TriangularSolve(am, bm, opt.left_side, opt.lower, transpose, opt.unit_diagonal);
    StoreMatrix(bm, *out, i);
  }
  return out;
}

}  // namespace mltune::ir::eval
