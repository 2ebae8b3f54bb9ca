#include "ir/linalg/linalg.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace mltune::ir::linalg {
namespace {

Matrix Transposed(const Matrix& a) {
  Matrix t{a.cols, a.rows, std::vector<double>(a.v.size())};
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < a.cols; ++c) t(c, r) = a(r, c);
  }
  return t;
}

// Applies H = I - tau v v^T from the left to columns [c0, cols) of rows [r0, rows) of `a`,
// where v = (1, a(r0+1.., vcol)).
void ApplyReflector(Matrix& a, int64_t r0, int64_t vcol, double tau, int64_t c0) {
  if (tau == 0) return;
  for (int64_t c = c0; c < a.cols; ++c) {
    double w = a(r0, c);
    for (int64_t r = r0 + 1; r < a.rows; ++r) w += a(r, vcol) * a(r, c);
    w *= tau;
    a(r0, c) -= w;
    for (int64_t r = r0 + 1; r < a.rows; ++r) a(r, c) -= a(r, vcol) * w;
  }
}

}  // namespace

int64_t Cholesky(Matrix& a, bool lower) {
  if (!lower) {
    // a = U^T U with U upper is the lower factorization of a^T, transposed back.
    Matrix t = Transposed(a);
    const int64_t info = Cholesky(t, true);
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t c = r; c < a.cols; ++c) a(r, c) = t(c, r);
    }
    return info;
  }
  const int64_t n = a.rows;
  for (int64_t j = 0; j < n; ++j) {
    double d = a(j, j);
    for (int64_t k = 0; k < j; ++k) d -= a(j, k) * a(j, k);
    if (!(d > 0)) return j + 1;  // also catches NaN
    const double ljj = std::sqrt(d);
    a(j, j) = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a(i, j);
      for (int64_t k = 0; k < j; ++k) s -= a(i, k) * a(j, k);
      a(i, j) = s / ljj;
    }
  }
  return 0;
}

int64_t LuFactor(Matrix& a, std::vector<int32_t>& pivots) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  pivots.assign(k, 0);
  int64_t info = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    for (int64_t i = j + 1; i < m; ++i) {
      if (std::fabs(a(i, j)) > std::fabs(a(p, j))) p = i;
    }
    pivots[j] = static_cast<int32_t>(p + 1);
    if (a(p, j) != 0) {
      if (p != j) {
        for (int64_t c = 0; c < n; ++c) std::swap(a(j, c), a(p, c));
      }
      for (int64_t i = j + 1; i < m; ++i) a(i, j) /= a(j, j);
    } else if (info == 0) {
      info = j + 1;
    }
    for (int64_t i = j + 1; i < m; ++i) {
      for (int64_t c = j + 1; c < n; ++c) a(i, c) -= a(i, j) * a(j, c);
    }
  }
  return info;
}

void QrFactor(Matrix& a, std::vector<double>& taus) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  taus.assign(k, 0);
  for (int64_t i = 0; i < k; ++i) {
    // dlarfg: the reflector that maps (alpha, x) to (beta, 0).
    const double alpha = a(i, i);
    double xnorm = 0;
    for (int64_t r = i + 1; r < m; ++r) xnorm = std::hypot(xnorm, a(r, i));
    double tau = 0;
    if (xnorm != 0) {
      const double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
      tau = (beta - alpha) / beta;
      const double scale = 1 / (alpha - beta);
      for (int64_t r = i + 1; r < m; ++r) a(r, i) *= scale;
      a(i, i) = beta;
    }
    taus[i] = tau;
    ApplyReflector(a, i, i, tau, i + 1);
  }
}

void FormQ(Matrix& a, const std::vector<double>& taus, int64_t k) {
  const int64_t m = a.rows, n = a.cols;
  for (int64_t j = k; j < n; ++j) {
    for (int64_t l = 0; l < m; ++l) a(l, j) = 0;
    if (j < m) a(j, j) = 1;
  }
  for (int64_t i = k - 1; i >= 0; --i) {
    if (i < n - 1) {
      a(i, i) = 1;
      ApplyReflector(a, i, i, taus[i], i + 1);
    }
    for (int64_t l = i + 1; l < m; ++l) a(l, i) *= -taus[i];
    a(i, i) = 1 - taus[i];
    for (int64_t l = 0; l < i; ++l) a(l, i) = 0;
  }
}

void TriangularSolve(const Matrix& a, Matrix& b, bool left_side, bool lower, bool transpose,
                     bool unit_diagonal) {
  // op(A)(i, j), reading only the stored triangle.
  auto op = [&](int64_t i, int64_t j) { return transpose ? a(j, i) : a(i, j); };
  // Is op(A) lower triangular?
  const bool op_lower = lower != transpose;
  if (left_side) {
    // op(A) X = B, column by column of B.
    const int64_t m = b.rows;
    for (int64_t c = 0; c < b.cols; ++c) {
      for (int64_t t = 0; t < m; ++t) {
        const int64_t i = op_lower ? t : m - 1 - t;
        // The solved unknowns x(k) that row i of op(A) multiplies: k < i, or k > i.
        const int64_t k0 = op_lower ? 0 : i + 1, k1 = op_lower ? i : m;
        double s = b(i, c);
        for (int64_t k = k0; k < k1; ++k) s -= op(i, k) * b(k, c);
        b(i, c) = unit_diagonal ? s : s / op(i, i);
      }
    }
  } else {
    // X op(A) = B, row by row: x op(A) = b_row, i.e. solve for x(j) in column order.
    const int64_t n = b.cols;
    for (int64_t r = 0; r < b.rows; ++r) {
      for (int64_t t = 0; t < n; ++t) {
        // For lower op(A), x(j) depends on x(k) for k > j: go backwards.
        const int64_t j = op_lower ? n - 1 - t : t;
        const int64_t k0 = op_lower ? j + 1 : 0, k1 = op_lower ? n : j;
        double s = b(r, j);
        for (int64_t k = k0; k < k1; ++k) s -= b(r, k) * op(k, j);
        b(r, j) = unit_diagonal ? s : s / op(j, j);
      }
    }
  }
}

}  // namespace mltune::ir::linalg
