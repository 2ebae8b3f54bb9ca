// The runtime routines generated code calls for JAX's LAPACK-style custom-calls, as XLA's CPU
// backend calls its runtime library: they are linked into mltune-cpu-runner, which exports them to
// the objects it loads, and run ir/linalg's algorithms, the evaluator's, in doubles. Each takes one
// matrix (row-major, f32 when `f64` is 0, else f64) and works in place.
#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/linalg/linalg.h"

namespace {

using mltune::ir::linalg::Matrix;

Matrix Load(int32_t f64, const void* data, int64_t rows, int64_t cols) {
  Matrix m{rows, cols, std::vector<double>(static_cast<size_t>(rows * cols))};
  for (int64_t i = 0; i < rows * cols; ++i) {
    m.v[static_cast<size_t>(i)] =
        f64 != 0 ? static_cast<const double*>(data)[i] : static_cast<const float*>(data)[i];
  }
  return m;
}

void Store(int32_t f64, const Matrix& m, void* data) {
  for (size_t i = 0; i < m.v.size(); ++i) {
    if (f64 != 0) {
      static_cast<double*>(data)[i] = m.v[i];
    } else {
      static_cast<float*>(data)[i] = static_cast<float>(m.v[i]);
    }
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int32_t mltune_rt_potrf(int32_t f64, void* a, int64_t n,
                                                               int32_t lower) {
  Matrix m = Load(f64, a, n, n);
  const int64_t info = mltune::ir::linalg::Cholesky(m, lower != 0);
  Store(f64, m, a);
  return static_cast<int32_t>(info);
}

__attribute__((visibility("default"))) int32_t mltune_rt_getrf(int32_t f64, void* a, int64_t rows,
                                                               int64_t cols, int32_t* pivots) {
  Matrix m = Load(f64, a, rows, cols);
  std::vector<int32_t> piv;
  const int64_t info = mltune::ir::linalg::LuFactor(m, piv);
  std::memcpy(pivots, piv.data(), piv.size() * sizeof(int32_t));
  Store(f64, m, a);
  return static_cast<int32_t>(info);
}

__attribute__((visibility("default"))) void mltune_rt_geqrf(int32_t f64, void* a, int64_t rows,
                                                            int64_t cols, void* taus) {
  Matrix m = Load(f64, a, rows, cols);
  std::vector<double> t;
  mltune::ir::linalg::QrFactor(m, t);
  Store(f64, m, a);
  Store(f64, Matrix{1, static_cast<int64_t>(t.size()), t}, taus);
}

__attribute__((visibility("default"))) void mltune_rt_orgqr(int32_t f64, void* a, int64_t rows,
                                                            int64_t cols, int64_t k,
                                                            const void* taus) {
  Matrix m = Load(f64, a, rows, cols);
  const Matrix t = Load(f64, taus, 1, k);
  mltune::ir::linalg::FormQ(m, t.v, k);
  Store(f64, m, a);
}

__attribute__((visibility("default"))) void mltune_rt_trsm(int32_t f64, const void* a, void* b,
                                                           int64_t rows, int64_t cols,
                                                           int32_t left_side, int32_t lower,
                                                           int32_t transpose,
                                                           int32_t unit_diagonal) {
  const int64_t order = left_side != 0 ? rows : cols;
  const Matrix am = Load(f64, a, order, order);
  Matrix bm = Load(f64, b, rows, cols);
  mltune::ir::linalg::TriangularSolve(am, bm, left_side != 0, lower != 0, transpose != 0,
                                      unit_diagonal != 0);
  Store(f64, bm, b);
}

}  // extern "C"
