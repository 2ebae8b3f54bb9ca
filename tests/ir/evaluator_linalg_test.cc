// Sort, topk, fft, the HLO linear-algebra ops and every custom-call target the evaluator
// implements (threefry, AWS Neuron, jaxlib's cuSOLVER/cuBLAS calls), checked against
// hand-computed values and by reconstruction (L L^T = A, P A = L U, Q R = A, A X = B).
#include <cmath>
#include <complex>
#include <random>

#include "gtest/gtest.h"
#include "tests/ir/evaluator_test_util.h"
#include "tests/support/corpus.h"
#include "tests/support/jaxlib_descriptor.h"

namespace mltune::ir {
namespace {

using eval_test::Eval;
using eval_test::EvalText;
using eval_test::kReducers;
using eval_test::MakeLiteral;
using eval_test::ModuleText;
using eval_test::Values;

using testing::JaxlibDescriptor;

Literal Element(const Literal& tuple, int i) { return tuple.elements()[i]; }

// --- sort and topk ---

TEST(EvaluatorSortTest, SortsStablyWithSimpleComparators) {
  EXPECT_EQ(Eval("a = f32[5] constant({3, 1, 2, -0, 0})\n"
                 " ROOT s = f32[5] sort(a), dimensions={0}, to_apply=lt_f32",
                 kReducers),
            "{-0, 0, 1, 2, 3}");
  constexpr char kKeyLess[] = R"(
key_less {
  key_less.a = s32[] parameter(0)
  key_less.b = s32[] parameter(1)
  key_less.c = f32[] parameter(2)
  key_less.d = f32[] parameter(3)
  ROOT key_less.r = pred[] compare(key_less.a, key_less.b), direction=LT
}
value_greater {
  value_greater.a = s32[] parameter(0)
  value_greater.b = s32[] parameter(1)
  value_greater.c = f32[] parameter(2)
  value_greater.d = f32[] parameter(3)
  ROOT value_greater.r = pred[] compare(value_greater.c, value_greater.d), direction=GT
}
)";
  const char* kv = "k = s32[4] constant({1, 0, 1, 0})\n v = f32[4] constant({10, 20, 30, 40})\n";
  EXPECT_EQ(Eval(absl::StrCat(kv,
                              "ROOT s = (s32[4], f32[4]) sort(k, v), dimensions={0},"
                              " is_stable=true, to_apply=key_less"),
                 kKeyLess),
            "({0, 0, 1, 1}, {20, 40, 10, 30})");
  EXPECT_EQ(Eval(absl::StrCat(kv,
                              "ROOT s = (s32[4], f32[4]) sort(k, v), dimensions={0},"
                              " to_apply=value_greater"),
                 kKeyLess),
            "({0, 1, 0, 1}, {40, 30, 20, 10})");
  EXPECT_EQ(Eval("a = f32[3,2] constant({{3, 1}, {2, 4}, {1, 0}})\n"
                 " ROOT s = f32[3,2] sort(a), dimensions={0}, to_apply=lt_f32",
                 kReducers),
            "{ {1, 0}, {2, 1}, {3, 4} }");
  EXPECT_EQ(Eval("a = f32[2,3] constant({{3, 1, 2}, {0, 5, -1}})\n"
                 " ROOT s = f32[2,3] sort(a), dimensions={1}, to_apply=lt_f32",
                 kReducers),
            "{ {1, 2, 3}, {-1, 0, 5} }");
}

TEST(EvaluatorSortTest, TotalOrderAndInterpretedComparators) {
  constexpr char kComparators[] = R"(
total_lt {
  total_lt.a = f32[] parameter(0)
  total_lt.b = f32[] parameter(1)
  ROOT total_lt.r = pred[] compare(total_lt.a, total_lt.b), direction=LT, type=TOTALORDER
}
descending {
  descending.a = f32[] parameter(0)
  descending.b = f32[] parameter(1)
  descending.na = f32[] negate(descending.a)
  descending.nb = f32[] negate(descending.b)
  ROOT descending.r = pred[] compare(descending.na, descending.nb), direction=LT
}
)";
  EXPECT_EQ(Eval("a = f32[5] constant({nan, 1, -nan, -inf, -0})\n"
                 " ROOT s = f32[5] sort(a), dimensions={0}, to_apply=total_lt",
                 kComparators),
            "{-nan, -inf, -0, 1, nan}");
  EXPECT_EQ(Eval("a = f32[5] constant({2, 5, 1, 5, 3})\n"
                 " ROOT s = f32[5] sort(a), dimensions={0}, to_apply=descending",
                 kComparators),
            "{5, 5, 3, 2, 1}");
}

TEST(EvaluatorSortTest, TopK) {
  EXPECT_EQ(Eval("a = f32[4] constant({1, 3, 2, 3})\n"
                 " ROOT t = (f32[2], s32[2]) topk(a), k=2, largest=true"),
            "({3, 3}, {1, 3})");
  EXPECT_EQ(Eval("a = s32[2,3] constant({{5, 1, 4}, {0, 9, 9}})\n"
                 " ROOT t = (s32[2,1], s32[2,1]) topk(a), k=1, largest=true"),
            "({ {5}, {9} }, { {0}, {1} })");
}

// --- fft ---

TEST(EvaluatorFftTest, ForwardInverseAndReal) {
  absl::StatusOr<Literal> f =
      EvalText(ModuleText("x = c64[4] constant({(0, 0), (1, 0), (0, 0), (0, 0)})\n"
                          " ROOT f = c64[4] fft(x), fft_type=FFT, fft_length={4}"));
  ASSERT_TRUE(f.ok()) << f.status();
  const std::complex<double> expect[] = {{1, 0}, {0, -1}, {-1, 0}, {0, 1}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(f->GetAsComplex(i).real(), expect[i].real(), 1e-6) << i;
    EXPECT_NEAR(f->GetAsComplex(i).imag(), expect[i].imag(), 1e-6) << i;
  }
  absl::StatusOr<Literal> r = EvalText(
      ModuleText("x = f32[4] constant({1, 2, 3, 4})\n"
                 " r = c64[3] fft(x), fft_type=RFFT, fft_length={4}\n"
                 " b = f32[4] fft(r), fft_type=IRFFT, fft_length={4}\n"
                 " c = c64[4] convert(x)\n d = c64[4] fft(c), fft_type=FFT, fft_length={4}\n"
                 " e = c64[4] fft(d), fft_type=IFFT, fft_length={4}\n"
                 " ROOT t = (c64[3], f32[4], c64[4]) tuple(r, b, e)"));
  ASSERT_TRUE(r.ok()) << r.status();
  const std::complex<double> rfft[] = {{10, 0}, {-2, 2}, {-2, 0}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(r->elements()[0].GetAsComplex(i).real(), rfft[i].real(), 1e-5);
    EXPECT_NEAR(r->elements()[0].GetAsComplex(i).imag(), rfft[i].imag(), 1e-5);
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(r->elements()[1].GetAsDouble(i), i + 1, 1e-5);
    EXPECT_NEAR(r->elements()[2].GetAsComplex(i).real(), i + 1, 1e-5);
  }
}

// --- HLO linear algebra ---

// A = L L^T with L = {{2, 0, 0}, {6, 1, 0}, {-8, 5, 3}}: every step is exact.
constexpr char kSpd[] = "a = f64[3,3] constant({{4, 12, -16}, {12, 37, -43}, {-16, -43, 98}})\n";

TEST(EvaluatorLinalgTest, Cholesky) {
  EXPECT_EQ(Eval(absl::StrCat(kSpd, "ROOT c = f64[3,3] cholesky(a), lower=true")),
            "{ {2, 0, 0}, {6, 1, 0}, {-8, 5, 3} }");
  EXPECT_EQ(Eval(absl::StrCat(kSpd, "ROOT c = f64[3,3] cholesky(a), lower=false")),
            "{ {2, 6, -8}, {0, 1, 5}, {0, 0, 3} }");
  EXPECT_EQ(Eval("a = f32[2,2] constant({{1, 2}, {2, 1}})\n"
                 " ROOT c = f32[2,2] cholesky(a), lower=true"),
            "{ {nan, nan}, {nan, nan} }");
}

// Lower-triangular A (the 99s above the diagonal must never be read) and B.
constexpr char kTri[] =
    "a = f64[3,3] constant({{2, 99, 99}, {1, 1, 99}, {3, -1, 4}})\n"
    " b = f64[3,2] constant({{2, 4}, {3, 5}, {10, 0}})\n";

TEST(EvaluatorLinalgTest, TriangularSolve) {
  // L X = B by forward substitution.
  EXPECT_EQ(Eval(absl::StrCat(kTri,
                              "ROOT x = f64[3,2] triangular-solve(a, b), left_side=true,"
                              " lower=true, transpose_a=NO_TRANSPOSE")),
            "{ {1, 2}, {2, 3}, {2.25, -0.75} }");
  // L^T X = B by back substitution.
  EXPECT_EQ(Eval(absl::StrCat(kTri,
                              "ROOT x = f64[3,2] triangular-solve(a, b), left_side=true,"
                              " lower=true, transpose_a=TRANSPOSE")),
            "{ {-5.5, -0.5}, {5.5, 5}, {2.5, 0} }");
  // Unit diagonal: the 2, 1, 4 on the diagonal are taken as 1.
  EXPECT_EQ(Eval(absl::StrCat(kTri,
                              "ROOT x = f64[3,2] triangular-solve(a, b), left_side=true,"
                              " lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE")),
            "{ {2, 4}, {1, 1}, {5, -11} }");
  // X A = B for the 2x2 lower block: x = b A^-1.
  EXPECT_EQ(Eval("a = f64[2,2] constant({{2, 99}, {1, 1}})\n b = f64[1,2] constant({{4, 1}})\n"
                 " ROOT x = f64[1,2] triangular-solve(a, b), left_side=false, lower=true,"
                 " transpose_a=NO_TRANSPOSE"),
            "{ {1.5, 1} }");
}

// --- custom-calls ---

TEST(EvaluatorCustomCallTest, Threefry2x32KnownAnswers) {
  // Random123's known-answer tests, also used by jax.random's tests.
  absl::StatusOr<Literal> r =
      EvalText(ModuleText(absl::StrCat("k0 = u32[3] constant({0, 4294967295, 320440878})\n"
                                       " k1 = u32[3] constant({0, 4294967295, 57701188})\n"
                                       " x0 = u32[3] constant({0, 4294967295, 608135816})\n"
                                       " x1 = u32[3] constant({0, 4294967295, 2242054355})\n"
                                       " ROOT r = (u32[3], u32[3]) custom-call(k0, k1, x0, x1),"
                                       " custom_call_target=\"cuda_threefry2x32\", backend_config=",
                                       JaxlibDescriptor({{3, 8}}))));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Element(*r, 0).ToString(), "{1797259609, 481924860, 3297917596}");
  EXPECT_EQ(Element(*r, 1).ToString(), "{2579123966, 3137350631, 1212020640}");
}

TEST(EvaluatorCustomCallTest, Threefry2x32ChecksTheDescriptor) {
  absl::StatusOr<Literal> r =
      EvalText(ModuleText(absl::StrCat("k = u32[2] constant({0, 0})\n"
                                       " ROOT r = (u32[2], u32[2]) custom-call(k, k, k, k),"
                                       " custom_call_target=\"cuda_threefry2x32\", backend_config=",
                                       JaxlibDescriptor({{5, 8}}))));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

TEST(EvaluatorCustomCallTest, AwsNeuronOps) {
  absl::StatusOr<Literal> r = EvalText(ModuleText(
      "a = f32[3] constant({0, 1, -1})\n"
      " t = f32[3] custom-call(a), custom_call_target=\"AwsNeuronTransferWithStaticRing\"\n"
      " ROOT g = f32[3] custom-call(t), custom_call_target=\"AwsNeuronGelu\""));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetAsDouble(0), 0.0);
  EXPECT_NEAR(r->GetAsDouble(1), 0.8413447460685429, 1e-7);  // erf form, not tanh (0.841192)
  EXPECT_NEAR(r->GetAsDouble(2), -0.15865525393145707, 1e-7);
}

std::string Potrf(const std::string& a_shape, int64_t batch, int64_t n, int64_t uplo,
                  const std::string& info_shape) {
  return absl::StrCat(" ROOT c = (", a_shape, ", ", info_shape,
                      ", s8[128]) custom-call(a), custom_call_target=\"cusolver_potrf\","
                      " backend_config=",
                      JaxlibDescriptor({{1, 4}, {uplo, 4}, {batch, 8}, {n, 8}, {0, 4}, {0, 4}}));
}

TEST(EvaluatorCustomCallTest, PotrfFactorsAndLeavesTheOtherTriangle) {
  absl::StatusOr<Literal> lower =
      EvalText(ModuleText(absl::StrCat(kSpd, Potrf("f64[3,3]{0,1}", 1, 3, 0, "s32[]"))));
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(Element(*lower, 0).ToString(), "{ {2, 12, -16}, {6, 1, -43}, {-8, 5, 3} }");
  EXPECT_EQ(Element(*lower, 1).ToString(), "0");
  absl::StatusOr<Literal> upper =
      EvalText(ModuleText(absl::StrCat(kSpd, Potrf("f64[3,3]{0,1}", 1, 3, 1, "s32[]"))));
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(Element(*upper, 0).ToString(), "{ {2, 6, -8}, {12, 1, 5}, {-16, -43, 3} }");
  // Not positive definite at order 2: LAPACK's info is 2.
  absl::StatusOr<Literal> bad = EvalText(ModuleText(absl::StrCat(
      "a = f64[2,2] constant({{1, 2}, {2, 1}})\n", Potrf("f64[2,2]{0,1}", 1, 2, 0, "s32[]"))));
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(Element(*bad, 1).ToString(), "2");
  // A descriptor that disagrees with the shapes is refused.
  absl::StatusOr<Literal> mismatch =
      EvalText(ModuleText(absl::StrCat(kSpd, Potrf("f64[3,3]{0,1}", 1, 4, 0, "s32[]"))));
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EvaluatorCustomCallTest, PotrfReconstructsBatchedRandomSpdMatrices) {
  // A = M M^T + n I for random M, factored in a batch of 2; L L^T must give A back.
  const int n = 5;
  std::mt19937_64 gen(3);
  std::vector<double> a(2 * n * n);
  for (int b = 0; b < 2; ++b) {
    std::vector<double> m(n * n);
    for (double& x : m) x = static_cast<double>(gen() >> 11) * 0x1.0p-53 - 0.5;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = i == j ? n : 0;
        for (int k = 0; k < n; ++k) s += m[i * n + k] * m[j * n + k];
        a[b * n * n + i * n + j] = s;
      }
    }
  }
  std::vector<Literal> args;
  args.push_back(MakeLiteral("f64[2,5,5]", a));
  absl::StatusOr<Literal> r =
      EvalText(ModuleText(absl::StrCat("a = f64[2,5,5] parameter(0)\n",
                                       Potrf("f64[2,5,5]{1,2,0}", 2, 5, 0, "s32[2]"))),
               std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Element(*r, 1).ToString(), "{0, 0}");
  const std::vector<double> l = Values(Element(*r, 0));
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k <= std::min(i, j); ++k)
          s += l[b * 25 + i * n + k] * l[b * 25 + j * n + k];
        EXPECT_NEAR(s, a[b * 25 + i * n + j], 1e-12) << b << " " << i << " " << j;
      }
    }
  }
}

// P A = L U for each matrix of `lu` (pivots 1-based, LAPACK style).
void ExpectLuReconstructs(const std::vector<double>& a, const std::vector<double>& lu,
                          const std::vector<double>& pivots, int batch, int n, double tol) {
  for (int b = 0; b < batch; ++b) {
    std::vector<double> pa(a.begin() + b * n * n, a.begin() + (b + 1) * n * n);
    for (int j = 0; j < n; ++j) {
      const int p = static_cast<int>(pivots[b * n + j]) - 1;
      ASSERT_GE(p, j);
      ASSERT_LT(p, n);
      for (int c = 0; c < n; ++c) std::swap(pa[j * n + c], pa[p * n + c]);
    }
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k <= std::min(i, j); ++k) {
          const double lik = k == i ? 1.0 : lu[b * n * n + i * n + k];
          s += lik * lu[b * n * n + k * n + j];
        }
        EXPECT_NEAR(s, pa[i * n + j], tol) << b << " " << i << " " << j;
      }
    }
  }
}

TEST(EvaluatorCustomCallTest, GetrfPivotsLikeLapack) {
  const std::string getrf = absl::StrCat(
      " ROOT c = (f64[2,2]{0,1}, s32[2], s32[], f64[16]) custom-call(a),"
      " custom_call_target=\"cusolver_getrf\", backend_config=",
      JaxlibDescriptor({{1, 4}, {1, 4}, {2, 4}, {2, 4}}));
  absl::StatusOr<Literal> r =
      EvalText(ModuleText(absl::StrCat("a = f64[2,2] constant({{1, 2}, {3, 4}})\n", getrf)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Element(*r, 0).ToString(), "{ {3, 4}, {0.3333333333333333, 0.6666666666666667} }");
  EXPECT_EQ(Element(*r, 1).ToString(), "{2, 2}");
  EXPECT_EQ(Element(*r, 2).ToString(), "0");
  // An exactly singular column: info names it (1-based), the factorization goes on.
  absl::StatusOr<Literal> s =
      EvalText(ModuleText(absl::StrCat("a = f64[2,2] constant({{0, 5}, {0, 1}})\n", getrf)));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Element(*s, 1).ToString(), "{1, 2}");
  EXPECT_EQ(Element(*s, 2).ToString(), "1");
}

TEST(EvaluatorCustomCallTest, GetrfBatchedReconstructsRandomMatrices) {
  const int n = 4, batch = 3;
  std::mt19937_64 gen(5);
  std::vector<double> a(batch * n * n);
  for (double& x : a) x = std::ldexp(static_cast<double>(gen() >> 40), -24) * 2 - 1;
  std::vector<Literal> args;
  args.push_back(MakeLiteral("f32[3,4,4]", a));
  absl::StatusOr<Literal> r = EvalText(
      ModuleText(absl::StrCat("a = f32[3,4,4] parameter(0)\n"
                              " ROOT c = (f32[3,4,4]{1,2,0}, s32[3,4], s32[3], s8[96])"
                              " custom-call(a), custom_call_target=\"cublas_getrf_batched\","
                              " backend_config=",
                              JaxlibDescriptor({{0, 4}, {batch, 4}, {n, 4}}))),
      std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Element(*r, 2).ToString(), "{0, 0, 0}");
  ExpectLuReconstructs(a, Values(Element(*r, 0)), Values(Element(*r, 1)), batch, n, 1e-5);
}

TEST(EvaluatorCustomCallTest, GeqrfAndOrgqrReconstruct) {
  const int m = 5, n = 3;
  std::mt19937_64 gen(7);
  std::vector<double> a(2 * m * n);
  for (double& x : a) x = static_cast<double>(gen() >> 11) * 0x1.0p-53 - 0.5;
  std::vector<Literal> args;
  args.push_back(MakeLiteral("f64[2,5,3]", a));
  absl::StatusOr<Literal> r =
      EvalText(ModuleText(absl::StrCat(
                   "a = f64[2,5,3] parameter(0)\n"
                   " q = (f64[2,5,3]{1,2,0}, f64[2,3], s32[2], f64[64]) custom-call(a),"
                   " custom_call_target=\"cusolver_geqrf\", backend_config=",
                   JaxlibDescriptor({{1, 4}, {2, 4}, {m, 4}, {n, 4}, {64, 4}}),
                   "\n r = f64[2,5,3]{1,2,0} get-tuple-element(q), index=0\n"
                   " tau = f64[2,3] get-tuple-element(q), index=1\n"
                   " info = s32[2] get-tuple-element(q), index=2\n"
                   " o = (f64[2,5,3]{1,2,0}, s32[2], f64[64]) custom-call(r, tau),"
                   " custom_call_target=\"cusolver_orgqr\", backend_config=",
                   JaxlibDescriptor({{1, 4}, {2, 4}, {m, 4}, {n, 4}, {n, 4}, {64, 4}}),
                   "\n qq = f64[2,5,3]{1,2,0} get-tuple-element(o), index=0\n"
                   " ROOT t = (f64[2,5,3], f64[2,5,3], s32[2], f64[2,3]) tuple(r, qq, info, tau)")),
               std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<double> rr = Values(Element(*r, 0));
  const std::vector<double> q = Values(Element(*r, 1));
  const std::vector<double> tau = Values(Element(*r, 3));
  EXPECT_EQ(Element(*r, 2).ToString(), "{0, 0}");
  for (int b = 0; b < 2; ++b) {
    const int o = b * m * n;
    // Q has orthonormal columns.
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k < m; ++k) s += q[o + k * n + i] * q[o + k * n + j];
        EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-12);
      }
    }
    // Q R = A with R the upper triangle of geqrf's output.
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k <= j; ++k) s += q[o + i * n + k] * rr[o + k * n + j];
        EXPECT_NEAR(s, a[o + i * n + j], 1e-12);
      }
    }
    // LAPACK's sign convention: R(0,0) = -sign(A(0,0)) |A(:,0)|, and tau in [1, 2].
    double norm = 0;
    for (int i = 0; i < m; ++i) norm += a[o + i * n] * a[o + i * n];
    EXPECT_NEAR(rr[o], -std::copysign(std::sqrt(norm), a[o]), 1e-12);
    EXPECT_GE(tau[b * n], 1.0);
    EXPECT_LE(tau[b * n], 2.0);
  }
}

TEST(EvaluatorCustomCallTest, TrsmBatchedSolves) {
  const auto trsm = [](int64_t side, int64_t trans, int64_t diag) {
    return absl::StrCat(
        "a0 = f64[3,3] constant({{2, 99, 99}, {1, 1, 99}, {3, -1, 4}})\n"
        " b0 = f64[3,2] constant({{2, 4}, {3, 5}, {10, 0}})\n"
        " a = f64[1,3,3] reshape(a0)\n b = f64[1,3,2] reshape(b0)\n"
        " c = (f64[1,3,2]{1,2,0}, s8[8], s8[8]) custom-call(a, b),"
        " custom_call_target=\"cublas_trsm_batched\", backend_config=",
        JaxlibDescriptor(
            {{1, 4}, {1, 4}, {3, 4}, {2, 4}, {side, 4}, {0, 4}, {trans, 4}, {diag, 4}}),
        "\n x = f64[1,3,2]{1,2,0} get-tuple-element(c), index=0\n"
        " ROOT r = f64[3,2] reshape(x)");
  };
  EXPECT_EQ(Eval(trsm(0, 0, 0)), "{ {1, 2}, {2, 3}, {2.25, -0.75} }");
  EXPECT_EQ(Eval(trsm(0, 1, 0)), "{ {-5.5, -0.5}, {5.5, 5}, {2.5, 0} }");
  EXPECT_EQ(Eval(trsm(0, 0, 1)), "{ {2, 4}, {1, 1}, {5, -11} }");
  // Right side needs a 2x2 a for a 3x2 b: the descriptor no longer matches and is refused.
  EXPECT_NE(Eval(trsm(1, 0, 0)).find("error"), std::string::npos);
}

TEST(EvaluatorCustomCallTest, LuPivotsToPermutation) {
  const auto perm = [](const std::string& pivots) {
    return Eval(absl::StrCat("p = s32[3] constant(", pivots,
                             ")\n ROOT r = s32[3] custom-call(p),"
                             " custom_call_target=\"cuda_lu_pivots_to_permutation\","
                             " backend_config=",
                             JaxlibDescriptor({{1, 8}, {3, 4}, {3, 4}})));
  };
  EXPECT_EQ(perm("{2, 2, 2}"), "{2, 0, 1}");
  EXPECT_EQ(perm("{0, 1, 2}"), "{0, 1, 2}");
  EXPECT_EQ(perm("{5, 0, 1}"), "{1, 2, 0}");  // out-of-range pivots are skipped
}

// --- corpus modules, checked through their own outputs ---

std::string CorpusFile(const std::string& part) {
  for (const std::string& f : testing::CorpusFiles()) {
    if (f.find(std::string(part)) != std::string::npos) return f;
  }
  return "";
}

TEST(EvaluatorCorpusLinalgTest, JaxQrReconstructs) {
  const std::string path = CorpusFile("jaxrl__module_0140.jit_qr.53");
  if (path.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Literal>> args = MakeRandomArguments(**module, 11);
  ASSERT_TRUE(args.ok());
  absl::StatusOr<Literal> r = Evaluate(**module, *args);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<double> a = Values((*args)[0]);  // [2, 256, 23]
  const std::vector<double> q = Values(Element(*r, 0));
  const std::vector<double> rr = Values(Element(*r, 1));  // [2, 23, 23], upper triangular
  const int m = 256, n = 23;
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) EXPECT_EQ(rr[b * n * n + i * n + j], 0.0);
    }
    for (int i = 0; i < m; i += 17) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k <= j; ++k) s += q[b * m * n + i * n + k] * rr[b * n * n + k * n + j];
        EXPECT_NEAR(s, a[b * m * n + i * n + j], 1e-5);
      }
    }
  }
}

TEST(EvaluatorCorpusLinalgTest, JaxCholeskyOfSpdMatrixReconstructs) {
  const std::string path = CorpusFile("neural-tangents__module_0028.jit__cholesky.12");
  if (path.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
  ASSERT_TRUE(module.ok()) << module.status();
  // Symmetric and strictly diagonally dominant with a positive diagonal, hence SPD.
  const int n = 1000;
  std::mt19937_64 gen(13);
  std::vector<double> a(n * n);
  for (int i = 0; i < n; ++i) {
    a[i * n + i] = n;
    for (int j = 0; j < i; ++j) {
      a[i * n + j] = a[j * n + i] = std::ldexp(static_cast<double>(gen() >> 40), -24) - 0.5;
    }
  }
  std::vector<Literal> args;
  args.push_back(MakeLiteral("f32[1000,1000]", a));
  absl::StatusOr<Literal> r = Evaluate(**module, args);
  ASSERT_TRUE(r.ok()) << r.status();
  // The module returns L transposed back, i.e. upper U with U^T U = A.
  const std::vector<double> u = Values(*r);
  EXPECT_EQ(u[1 * n + 0], 0.0);
  for (int t = 0; t < 300; ++t) {
    const int i = static_cast<int>(gen() % n), j = static_cast<int>(gen() % n);
    double s = 0;
    for (int k = 0; k <= std::min(i, j); ++k) s += u[k * n + i] * u[k * n + j];
    EXPECT_NEAR(s, a[i * n + j], 1e-3) << i << " " << j;
  }
}

TEST(EvaluatorCorpusLinalgTest, JaxSlogdetMatchesDeterminant) {
  const std::string path = CorpusFile("deeperwin__module_0667.jit_slogdet.385");
  if (path.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Literal>> args = MakeRandomArguments(**module, 17);
  ASSERT_TRUE(args.ok());
  absl::StatusOr<Literal> r = Evaluate(**module, *args);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<double> a = Values((*args)[0]);  // [2048, 20, 4, 4]
  const std::vector<double> sign = Values(Element(*r, 0));
  const std::vector<double> logdet = Values(Element(*r, 1));
  // Leibniz formula over the 24 permutations of 4.
  std::vector<int> p = {0, 1, 2, 3};
  for (int mat = 0; mat < 2048 * 20; mat += 997) {
    double det = 0;
    std::sort(p.begin(), p.end());
    do {
      double term = 1;
      for (int i = 0; i < 4; ++i) term *= a[mat * 16 + i * 4 + p[i]];
      int inversions = 0;
      for (int i = 0; i < 4; ++i) {
        for (int j = i + 1; j < 4; ++j) inversions += p[i] > p[j];
      }
      det += inversions % 2 ? -term : term;
    } while (std::next_permutation(p.begin(), p.end()));
    EXPECT_NEAR(sign[mat] * std::exp(logdet[mat]), det, 1e-4 * (1 + std::abs(det))) << mat;
  }
}

TEST(EvaluatorCorpusLinalgTest, JaxChoSolveSolves) {
  const std::string path = CorpusFile("BayesNewton__1649161870141180.module_1898.jit__cho_solve");
  if (path.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
  ASSERT_TRUE(module.ok()) << module.status();
  // A well-conditioned lower-triangular factor L and a right-hand side B: X = (L L^T)^-1 B.
  const int n = 20;
  std::mt19937_64 gen(19);
  std::vector<double> l(n * n * n, 0), b(n * n * n);
  for (int m = 0; m < n; ++m) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) {
        l[m * n * n + i * n + j] = i == j ? 2.0 : std::ldexp(static_cast<double>(gen() >> 40), -26);
      }
    }
  }
  for (double& x : b) x = std::ldexp(static_cast<double>(gen() >> 40), -24) - 0.5;
  std::vector<Literal> args;
  args.push_back(MakeLiteral("f64[20,20,20]", l));
  args.push_back(MakeLiteral("f64[20,20,20]", b));
  absl::StatusOr<Literal> r = Evaluate(**module, args);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<double> x = Values(Element(*r, 0));
  for (int m = 0; m < n; m += 7) {
    const int o = m * n * n;
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < n; ++c) {
        // (L L^T X)(i, c)
        double s = 0;
        for (int k = 0; k <= i; ++k) {
          double ltx = 0;
          for (int j = k; j < n; ++j) ltx += l[o + j * n + k] * x[o + j * n + c];
          s += l[o + i * n + k] * ltx;
        }
        EXPECT_NEAR(s, b[o + i * n + c], 1e-12);
      }
    }
  }
}

}  // namespace
}  // namespace mltune::ir
