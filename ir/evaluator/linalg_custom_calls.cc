// The GPU LAPACK-style custom-calls JAX emitted in 2022 (cusolver_potrf, cusolver_getrf,
// cublas_getrf_batched, cusolver_geqrf, cusolver_orgqr, cublas_trsm_batched,
// cuda_lu_pivots_to_permutation), with LAPACK/cuBLAS semantics.
//
// jaxlib gives these calls column-major operands (operand_layout_constraints such as {1,2,0}),
// so LAPACK's matrix element (i, j) is logical element [..., i, j]: the evaluator works on
// logical indices and layouts never change values. The backend_config is jaxlib's descriptor
// struct (little-endian int fields); the fields are decoded and checked against the shapes.
// Results are tuples whose trailing workspace elements are returned zero-filled.
#include <numeric>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/backend_config.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/evaluator.h"
#include "ir/evaluator/linalg_kernels.h"

namespace mltune::ir::eval {
namespace {

// jaxlib's CusolverType / BlasType enum.
absl::Status CheckType(const Instruction& instr, int32_t type, PrimitiveType element) {
  static constexpr PrimitiveType kTypes[] = {PrimitiveType::kF32, PrimitiveType::kF64,
                                             PrimitiveType::kC64, PrimitiveType::kC128};
  if (type < 0 || type > 3 || kTypes[type] != element) {
    return Invalid(instr, absl::StrCat("descriptor type ", type, " does not match element type ",
                                       std::string(PrimitiveTypeName(element))));
  }
  if (IsComplex(element)) {
    return absl::UnimplementedError(
        absl::StrCat(instr.custom_call_target, " on complex matrices is not implemented"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DescriptorReader> Descriptor(const Instruction& instr, std::string& storage) {
  absl::StatusOr<std::string> bytes = DecodeBackendConfig(instr.backend_config);
  if (!bytes.ok()) return Invalid(instr, bytes.status().message());
  storage = *std::move(bytes);
  return DescriptorReader(storage);
}

// Reads `count` int32 fields.
absl::StatusOr<std::vector<int64_t>> Ints32(const Instruction& instr, DescriptorReader& r,
                                            int count) {
  std::vector<int64_t> v;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<int32_t> x = r.I32();
    if (!x.ok()) return Invalid(instr, x.status().message());
    v.push_back(*x);
  }
  return v;
}

// The tuple result, zero-filled, after checking it has at least `min_elements` elements.
absl::StatusOr<Literal> TupleResult(Evaluator& ev, const Instruction& instr, int64_t min_elements) {
  if (!instr.shape().IsTuple() || instr.shape().tuple_size() < min_elements) {
    return Invalid(instr,
                   absl::StrCat("result must be a tuple of at least ", min_elements, " elements"));
  }
  return ev.NewLiteral(instr.shape());
}

// Element `k` of the tuple result must be an s32 array of `count` elements.
absl::Status CheckS32(const Instruction& instr, const Literal& l, int64_t count,
                      std::string_view what) {
  if (l.element_type() != PrimitiveType::kS32 || l.element_count() != count) {
    return Invalid(instr,
                   absl::StrCat(std::string(what), " must be s32 with ", count, " elements"));
  }
  return absl::OkStatus();
}

absl::Status CheckMatrices(const Instruction& instr, const Literal& a, int64_t batch, int64_t rows,
                           int64_t cols) {
  const int64_t rank = a.shape().rank();
  if (rank < 2 || MatrixCount(a.shape()) != batch || a.shape().dimensions(rank - 2) != rows ||
      a.shape().dimensions(rank - 1) != cols) {
    return Invalid(instr, absl::StrCat("operand ", a.shape().ToString(false),
                                       " does not hold the descriptor's ", batch, " matrices of ",
                                       rows, "x", cols));
  }
  return absl::OkStatus();
}

// Copies `a` into the first tuple element of the result after checking shapes agree.
absl::Status CheckSameShape(const Instruction& instr, const Literal& a, const Literal& r) {
  if (!a.shape().Compatible(r.shape())) {
    return Invalid(instr, "first result must have the operand's shape");
  }
  return absl::OkStatus();
}

// LU of each matrix: shared by cusolver_getrf and cublas_getrf_batched.
absl::StatusOr<Literal> Lu(Evaluator& ev, const Instruction& instr, const Literal& a, int64_t batch,
                           int64_t m, int64_t n) {
  if (absl::Status s = CheckMatrices(instr, a, batch, m, n); !s.ok()) return s;
  absl::StatusOr<Literal> out = TupleResult(ev, instr, 3);
  if (!out.ok()) return out.status();
  Literal& lu = out->mutable_elements()[0];
  Literal& pivots = out->mutable_elements()[1];
  Literal& info = out->mutable_elements()[2];
  const int64_t k = std::min(m, n);
  if (absl::Status s = CheckSameShape(instr, a, lu); !s.ok()) return s;
  if (absl::Status s = CheckS32(instr, pivots, batch * k, "pivots"); !s.ok()) return s;
  if (absl::Status s = CheckS32(instr, info, batch, "info"); !s.ok()) return s;
  std::vector<int32_t> piv;
  for (int64_t b = 0; b < batch; ++b) {
    Matrix mat = LoadMatrix(a, b);
    info.Set<int32_t>(b, static_cast<int32_t>(LuFactor(mat, piv)));
    for (int64_t j = 0; j < k; ++j) pivots.Set<int32_t>(b * k + j, piv[j]);
    StoreMatrix(mat, lu, b);
  }
  return out;
}

// `shape` holds `batch` matrices of rows x cols in its last two dimensions.
absl::Status CheckMatrixShape(const Instruction& instr, const Shape& shape, int64_t batch,
                              int64_t rows, int64_t cols) {
  const int64_t rank = shape.IsArray() ? shape.rank() : 0;
  if (rank < 2 || MatrixCount(shape) != batch || shape.dimensions(rank - 2) != rows ||
      shape.dimensions(rank - 1) != cols) {
    return Invalid(
        instr, absl::StrCat("operand ", shape.ToString(false), " does not hold the descriptor's ",
                            batch, " matrices of ", rows, "x", cols));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace mltune::ir::eval

namespace mltune::ir {

absl::StatusOr<LinalgCall> DecodeLinalgCall(const Instruction& instr) {
  using eval::CheckMatrixShape;
  using eval::CheckType;
  using eval::Descriptor;
  using eval::DescriptorReader;
  using eval::Ints32;
  using eval::Invalid;
  const std::string& target = instr.custom_call_target;
  if (instr.opcode() != Opcode::kCustomCall || instr.operand_count() < 1 ||
      !instr.operand(0)->shape().IsArray()) {
    return Invalid(instr, "not a LAPACK-style custom-call");
  }
  const Shape& a = instr.operand(0)->shape();
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  LinalgCall c;
  int fields = 0;
  if (target == "cusolver_potrf") {
    fields = 2;
  } else if (target == "cusolver_getrf" || target == "cusolver_geqrf") {
    fields = 4;
  } else if (target == "cublas_getrf_batched") {
    fields = 3;
  } else if (target == "cusolver_orgqr") {
    fields = 5;
  } else if (target == "cublas_trsm_batched") {
    fields = 8;
  } else {
    return Invalid(instr, "not a LAPACK-style custom-call");
  }
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, fields);
  if (!f.ok()) return f.status();
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*f)[0]), a.element_type()); !s.ok()) {
    return s;
  }
  if (target == "cusolver_potrf") {
    absl::StatusOr<int64_t> batch = r->I64();
    absl::StatusOr<int64_t> n = batch.ok() ? r->I64() : batch;
    if (!n.ok()) return Invalid(instr, n.status().message());
    if ((*f)[1] != 0 && (*f)[1] != 1) return Invalid(instr, absl::StrCat("bad uplo ", (*f)[1]));
    c.lower = (*f)[1] == 0;
    c.batch = *batch;
    c.m = c.n = c.k = *n;
  } else if (target == "cublas_getrf_batched") {
    c.batch = (*f)[1];
    c.m = c.n = c.k = (*f)[2];
  } else if (target == "cublas_trsm_batched") {
    c.batch = (*f)[1];
    c.m = (*f)[2];
    c.n = (*f)[3];
    const int64_t side = (*f)[4], uplo = (*f)[5], trans = (*f)[6], diag = (*f)[7];
    if (side < 0 || side > 1 || uplo < 0 || uplo > 1 || trans < 0 || trans > 2 || diag < 0 ||
        diag > 1) {
      return Invalid(instr, "bad side/uplo/trans/diag in the descriptor");
    }
    c.left_side = side == 0;
    c.lower = uplo == 0;
    c.transpose = trans != 0;
    c.unit_diagonal = diag == 1;
    c.k = c.left_side ? c.m : c.n;
    if (instr.operand_count() != 2) return Invalid(instr, "takes a and b");
    if (absl::Status s = CheckMatrixShape(instr, instr.operand(1)->shape(), c.batch, c.m, c.n);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckMatrixShape(instr, a, c.batch, c.k, c.k); !s.ok()) return s;
    return c;
  } else {
    c.batch = (*f)[1];
    c.m = (*f)[2];
    c.n = (*f)[3];
    c.k = target == "cusolver_orgqr" ? (*f)[4] : std::min(c.m, c.n);
    if (target == "cusolver_orgqr" && (c.k < 0 || c.k > c.n || c.n > c.m)) {
      return Invalid(instr, "taus do not match the descriptor (needs k <= n <= m)");
    }
  }
  if (absl::Status s = CheckMatrixShape(instr, a, c.batch, c.m, c.n); !s.ok()) return s;
  return c;
}

}  // namespace mltune::ir

namespace mltune::ir::eval {

// PotrfDescriptor { type; uplo (0 lower, 1 upper); int64 batch, n; int lwork; }.
// Result (factor, info s32[batch], workspace); the other triangle keeps the input, as in LAPACK.
absl::StatusOr<Literal> CusolverPotrf(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 1) return Invalid(instr, "takes one operand");
  const Literal& a = ops[0];
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<std::vector<int64_t>> head = Ints32(instr, *r, 2);
  if (!head.ok()) return head.status();
  absl::StatusOr<int64_t> batch = r->I64();
  absl::StatusOr<int64_t> n = batch.ok() ? r->I64() : batch;
  if (!n.ok()) return Invalid(instr, n.status().message());
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*head)[0]), a.element_type());
      !s.ok()) {
    return s;
  }
  const int64_t uplo = (*head)[1];
  if (uplo != 0 && uplo != 1) return Invalid(instr, absl::StrCat("bad uplo ", uplo));
  if (absl::Status s = CheckMatrices(instr, a, *batch, *n, *n); !s.ok()) return s;
  absl::StatusOr<Literal> out = TupleResult(ev, instr, 2);
  if (!out.ok()) return out.status();
  Literal& factor = out->mutable_elements()[0];
  Literal& info = out->mutable_elements()[1];
  if (absl::Status s = CheckSameShape(instr, a, factor); !s.ok()) return s;
  if (absl::Status s = CheckS32(instr, info, *batch, "info"); !s.ok()) return s;
  for (int64_t b = 0; b < *batch; ++b) {
    Matrix m = LoadMatrix(a, b);
    info.Set<int32_t>(b, static_cast<int32_t>(Cholesky(m, uplo == 0)));
    StoreMatrix(m, factor, b);
  }
  return out;
}

// GetrfDescriptor { type; int batch, m, n; }. Result (lu, pivots s32[batch, min(m,n)] 1-based,
// info s32[batch], workspace).
absl::StatusOr<Literal> CusolverGetrf(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 1) return Invalid(instr, "takes one operand");
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, 4);
  if (!f.ok()) return f.status();
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*f)[0]), ops[0].element_type());
      !s.ok()) {
    return s;
  }
  return Lu(ev, instr, ops[0], (*f)[1], (*f)[2], (*f)[3]);
}

// GetrfBatchedDescriptor { type; int batch, n; }: square matrices, same results as getrf.
absl::StatusOr<Literal> CublasGetrfBatched(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 1) return Invalid(instr, "takes one operand");
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, 3);
  if (!f.ok()) return f.status();
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*f)[0]), ops[0].element_type());
      !s.ok()) {
    return s;
  }
  return Lu(ev, instr, ops[0], (*f)[1], (*f)[2], (*f)[2]);
}

// GeqrfDescriptor { type; int batch, m, n, lwork; }. Result (a with R above and Householder
// vectors below the diagonal, taus [batch, min(m,n)], info s32[batch], workspace).
absl::StatusOr<Literal> CusolverGeqrf(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 1) return Invalid(instr, "takes one operand");
  const Literal& a = ops[0];
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, 4);
  if (!f.ok()) return f.status();
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*f)[0]), a.element_type()); !s.ok()) {
    return s;
  }
  const int64_t batch = (*f)[1], m = (*f)[2], n = (*f)[3], k = std::min(m, n);
  if (absl::Status s = CheckMatrices(instr, a, batch, m, n); !s.ok()) return s;
  absl::StatusOr<Literal> out = TupleResult(ev, instr, 3);
  if (!out.ok()) return out.status();
  Literal& qr = out->mutable_elements()[0];
  Literal& taus = out->mutable_elements()[1];
  Literal& info = out->mutable_elements()[2];
  if (absl::Status s = CheckSameShape(instr, a, qr); !s.ok()) return s;
  if (taus.element_type() != a.element_type() || taus.element_count() != batch * k) {
    return Invalid(instr, "taus must have the operand's type and batch x min(m, n) elements");
  }
  if (absl::Status s = CheckS32(instr, info, batch, "info"); !s.ok()) return s;
  std::vector<double> t;
  for (int64_t b = 0; b < batch; ++b) {
    Matrix mat = LoadMatrix(a, b);
    QrFactor(mat, t);
    StoreMatrix(mat, qr, b);
    for (int64_t j = 0; j < k; ++j) taus.SetFromDouble(b * k + j, t[j]);
  }
  return out;
}

// OrgqrDescriptor { type; int batch, m, n, k, lwork; }. Operands (a from geqrf, taus [batch, k]);
// result (q [batch, m, n], info s32[batch], workspace).
absl::StatusOr<Literal> CusolverOrgqr(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2) return Invalid(instr, "takes a and taus");
  const Literal& a = ops[0];
  const Literal& taus = ops[1];
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, 5);
  if (!f.ok()) return f.status();
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*f)[0]), a.element_type()); !s.ok()) {
    return s;
  }
  const int64_t batch = (*f)[1], m = (*f)[2], n = (*f)[3], k = (*f)[4];
  if (absl::Status s = CheckMatrices(instr, a, batch, m, n); !s.ok()) return s;
  if (k < 0 || k > n || n > m || taus.element_count() != batch * k ||
      taus.element_type() != a.element_type()) {
    return Invalid(instr, "taus do not match the descriptor (needs k <= n <= m)");
  }
  absl::StatusOr<Literal> out = TupleResult(ev, instr, 2);
  if (!out.ok()) return out.status();
  Literal& q = out->mutable_elements()[0];
  if (absl::Status s = CheckSameShape(instr, a, q); !s.ok()) return s;
  if (absl::Status s = CheckS32(instr, out->elements()[1], batch, "info"); !s.ok()) return s;
  std::vector<double> t(k);
  for (int64_t b = 0; b < batch; ++b) {
    Matrix mat = LoadMatrix(a, b);
    for (int64_t j = 0; j < k; ++j) t[j] = taus.GetAsDouble(b * k + j);
    FormQ(mat, t, k);
    StoreMatrix(mat, q, b);
  }
  return out;
}

// TrsmBatchedDescriptor { type; int batch, m, n; side (0 left, 1 right); uplo (0 lower,
// 1 upper); trans (0 N, 1 T, 2 C); diag (0 non-unit, 1 unit); } with alpha = 1. Operands (a, b);
// result (x, workspace, workspace) with op(a) x = b (left) or x op(a) = b (right).
absl::StatusOr<Literal> CublasTrsmBatched(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2) return Invalid(instr, "takes a and b");
  const Literal& a = ops[0];
  const Literal& b = ops[1];
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, 8);
  if (!f.ok()) return f.status();
  if (absl::Status s = CheckType(instr, static_cast<int32_t>((*f)[0]), a.element_type()); !s.ok()) {
    return s;
  }
  const int64_t batch = (*f)[1], m = (*f)[2], n = (*f)[3];
  const int64_t side = (*f)[4], uplo = (*f)[5], trans = (*f)[6], diag = (*f)[7];
  if (side < 0 || side > 1 || uplo < 0 || uplo > 1 || trans < 0 || trans > 2 || diag < 0 ||
      diag > 1) {
    return Invalid(instr, "bad side/uplo/trans/diag in the descriptor");
  }
  const int64_t k = side == 0 ? m : n;
  if (absl::Status s = CheckMatrices(instr, a, batch, k, k); !s.ok()) return s;
  if (absl::Status s = CheckMatrices(instr, b, batch, m, n); !s.ok()) return s;
  if (b.element_type() != a.element_type()) return Invalid(instr, "a and b types differ");
  absl::StatusOr<Literal> out = TupleResult(ev, instr, 1);
  if (!out.ok()) return out.status();
  Literal& x = out->mutable_elements()[0];
  if (absl::Status s = CheckSameShape(instr, b, x); !s.ok()) return s;
  for (int64_t i = 0; i < batch; ++i) {
    const Matrix am = LoadMatrix(a, i);
    Matrix bm = LoadMatrix(b, i);
    TriangularSolve(am, bm, side == 0, uplo == 0, trans != 0, diag == 1);
    StoreMatrix(bm, x, i);
  }
  return out;
}

// LuPivotsToPermutationDescriptor { int64 batch; int pivot_size, permutation_size; }. The
// operand holds 0-based pivots (row i was swapped with row pivots[i]); the result is the
// permutation those swaps apply to 0..permutation_size-1. Out-of-range pivots are skipped.
absl::StatusOr<Literal> LuPivotsToPermutation(Evaluator& ev, const Instruction& instr,
                                              Operands& ops) {
  if (ops.size() != 1) return Invalid(instr, "takes one operand");
  const Literal& pivots = ops[0];
  std::string storage;
  absl::StatusOr<DescriptorReader> r = Descriptor(instr, storage);
  if (!r.ok()) return r.status();
  absl::StatusOr<int64_t> batch = r->I64();
  if (!batch.ok()) return Invalid(instr, batch.status().message());
  absl::StatusOr<std::vector<int64_t>> f = Ints32(instr, *r, 2);
  if (!f.ok()) return f.status();
  const int64_t pivot_size = (*f)[0], perm_size = (*f)[1];
  if (pivot_size < 0 || perm_size < 0 || pivots.element_type() != PrimitiveType::kS32 ||
      pivots.element_count() != *batch * pivot_size ||
      instr.shape().element_type() != PrimitiveType::kS32 ||
      instr.shape().ElementCount() != *batch * perm_size) {
    return Invalid(instr, "pivots and result do not match the descriptor");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  std::vector<int32_t> perm(perm_size);
  for (int64_t b = 0; b < *batch; ++b) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i < pivot_size; ++i) {
      const int64_t j = pivots.Get<int32_t>(b * pivot_size + i);
      if (j < 0 || j >= perm_size || i >= perm_size) continue;
      std::swap(perm[i], perm[j]);
    }
    for (int64_t i = 0; i < perm_size; ++i) out->Set<int32_t>(b * perm_size + i, perm[i]);
  }
  return out;
}

}  // namespace mltune::ir::eval
