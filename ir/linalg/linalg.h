// Textbook dense linear algebra on one real matrix held row-major in doubles (element (r, c) at
// r * cols + c), following LAPACK's unblocked algorithms (potf2, getf2, geqr2, org2r) so results,
// pivots and info codes have LAPACK's meaning: what the reference evaluator and the CPU backend's
// runtime compute for JAX's LAPACK-style custom-calls.
#pragma once

#include <cstdint>
#include <vector>

namespace mltune::ir::linalg {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double& operator()(int64_t r, int64_t c) { return v[r * cols + c]; }
  double operator()(int64_t r, int64_t c) const { return v[r * cols + c]; }
};

// Cholesky of the n x n matrix `a` using only its `lower` (or upper) triangle; writes the factor
// there (a = L L^T, or a = U^T U) and leaves the other triangle untouched. Returns LAPACK's info:
// 0, or k (1-based) when the leading minor of order k is not positive definite (the factorization
// stops there).
int64_t Cholesky(Matrix& a, bool lower);

// LU with partial pivoting (getf2): a = P L U, L unit lower below the diagonal, U on and above.
// `pivots` gets min(m, n) 1-based row indices; returns info (k when U(k, k) is exactly zero).
int64_t LuFactor(Matrix& a, std::vector<int32_t>& pivots);

// Householder QR (geqr2): R on and above the diagonal, reflector vectors below it, `taus` the
// min(m, n) scalar factors.
void QrFactor(Matrix& a, std::vector<double>& taus);

// Forms the m x n matrix Q with orthonormal columns from the first k reflectors that QrFactor
// left in `a` (org2r). `a` is m x n, k <= n.
void FormQ(Matrix& a, const std::vector<double>& taus, int64_t k);

// Solves op(A) X = B (left_side) or X op(A) = B for X, overwriting `b`. Only the `lower` (or
// upper) triangle of the square `a` is read; op(A) is A or A^T; a unit diagonal is not read.
void TriangularSolve(const Matrix& a, Matrix& b, bool left_side, bool lower, bool transpose,
                     bool unit_diagonal);

}  // namespace mltune::ir::linalg
