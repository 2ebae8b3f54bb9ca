#include "bench/op_suite.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace mltune::bench {
namespace {

using nlohmann::json;

std::string F32(const std::vector<int64_t>& dims) {
  return absl::StrCat("f32[", absl::StrJoin(dims, ","), "]");
}

std::string DimsText(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, "x"); }

constexpr const char* kAdd = R"(
add_f32 {
  add_lhs = f32[] parameter(0)
  add_rhs = f32[] parameter(1)
  ROOT add_sum = f32[] add(add_lhs, add_rhs)
}
)";
constexpr const char* kMax = R"(
max_f32 {
  max_lhs = f32[] parameter(0)
  max_rhs = f32[] parameter(1)
  ROOT max_max = f32[] maximum(max_lhs, max_rhs)
}
)";

OpCase Mul(std::vector<int64_t> d) {
  const std::string s = F32(d);
  return {"mul", DimsText(d),
          absl::StrCat("HloModule mul\nENTRY e {\n  x = ", s, " parameter(0)\n  y = ", s,
                       " parameter(1)\n  ROOT r = ", s, " multiply(x, y)\n}\n"),
          json{{"kind", "mul"}, {"shape", d}}};
}

OpCase AddRelu(std::vector<int64_t> d) {
  const std::string s = F32(d);
  return {"add_relu", DimsText(d),
          absl::StrCat("HloModule add_relu\nENTRY e {\n  x = ", s, " parameter(0)\n  y = ", s,
                       " parameter(1)\n  z = ", s, " parameter(2)\n  zero = f32[] constant(0)\n",
                       "  zeros = ", s, " broadcast(zero), dimensions={}\n  a = ", s,
                       " add(x, y)\n  r1 = ", s, " maximum(a, zeros)\n  b = ", s,
                       " add(r1, z)\n  ROOT r2 = ", s, " maximum(b, zeros)\n}\n"),
          json{{"kind", "add_relu"}, {"shape", d}}};
}

OpCase Softmax(int64_t rows, int64_t cols) {
  const std::string s = F32({rows, cols}), v = F32({rows});
  return {"softmax", DimsText({rows, cols}),
          absl::StrCat("HloModule softmax\n", kAdd, kMax, "ENTRY e {\n  x = ", s,
                       " parameter(0)\n  ninf = f32[] constant(-inf)\n  mx = ", v,
                       " reduce(x, ninf), dimensions={1}, to_apply=max_f32\n  mxb = ", s,
                       " broadcast(mx), dimensions={0}\n  sh = ", s, " subtract(x, mxb)\n  ex = ",
                       s, " exponential(sh)\n  zero = f32[] constant(0)\n  sum = ", v,
                       " reduce(ex, zero), dimensions={1}, to_apply=add_f32\n  sb = ", s,
                       " broadcast(sum), dimensions={0}\n  ROOT y = ", s, " divide(ex, sb)\n}\n"),
          json{{"kind", "softmax"}, {"shape", {rows, cols}}}};
}

// Mean and variance written as reductions, as JAX and PyTorch/XLA lower layer_norm.
OpCase LayerNorm(int64_t rows, int64_t cols) {
  const std::string s = F32({rows, cols}), v = F32({rows}), c = F32({cols});
  return {"layernorm", DimsText({rows, cols}),
          absl::StrCat(
              "HloModule layernorm\n", kAdd, "ENTRY e {\n  x = ", s, " parameter(0)\n  w = ", c,
              " parameter(1)\n  b = ", c, " parameter(2)\n  zero = f32[] constant(0)\n  n = f32[] ",
              "constant(", cols, ")\n  nb = ", v, " broadcast(n), dimensions={}\n  sum = ", v,
              " reduce(x, zero), dimensions={1}, to_apply=add_f32\n  mean = ", v,
              " divide(sum, nb)\n  meanb = ", s, " broadcast(mean), dimensions={0}\n  xc = ", s,
              " subtract(x, meanb)\n  sq = ", s, " multiply(xc, xc)\n  ssq = ", v,
              " reduce(sq, zero), dimensions={1}, to_apply=add_f32\n  var = ", v,
              " divide(ssq, nb)\n  eps = f32[] constant(1e-05)\n  epsb = ", v,
              " broadcast(eps), dimensions={}\n  ve = ", v, " add(var, epsb)\n  rs = ", v,
              " rsqrt(ve)\n  rsb = ", s, " broadcast(rs), dimensions={0}\n  nrm = ", s,
              " multiply(xc, rsb)\n  wb = ", s, " broadcast(w), dimensions={1}\n  bb = ", s,
              " broadcast(b), dimensions={1}\n  sc = ", s, " multiply(nrm, wb)\n  ROOT y = ", s,
              " add(sc, bb)\n}\n"),
          json{{"kind", "layernorm"}, {"shape", {rows, cols}}}};
}

// batch-norm-inference, which XLA's cpu pipeline expands (batchnorm_expander). The variance
// parameter goes through abs + 0.5 (64 elements, negligible) so that random inputs in [-1, 1)
// give a positive variance, as the PyTorch peer's does, and finite outputs.
OpCase BatchNorm(std::vector<int64_t> d) {
  const std::string s = F32(d), c = F32({d[1]});
  return {"batchnorm", DimsText(d),
          absl::StrCat("HloModule batchnorm\nENTRY e {\n  x = ", s, " parameter(0)\n  scale = ", c,
                       " parameter(1)\n  offset = ", c, " parameter(2)\n  mean = ", c,
                       " parameter(3)\n  v = ", c, " parameter(4)\n  av = ", c,
                       " abs(v)\n  half = f32[] constant(0.5)\n  halfb = ", c,
                       " broadcast(half), dimensions={}\n  var = ", c,
                       " add(av, halfb)\n  ROOT y = ", s,
                       " batch-norm-inference(x, scale, offset, mean, var), epsilon=1e-05, "
                       "feature_index=1\n}\n"),
          json{{"kind", "batchnorm"}, {"shape", d}}};
}

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
OpCase Gelu(std::vector<int64_t> d) {
  const std::string s = F32(d);
  auto scalar = [&](const char* name, const char* value) {
    return absl::StrCat("  ", name, "0 = f32[] constant(", value, ")\n  ", name, " = ", s,
                        " broadcast(", name, "0), dimensions={}\n");
  };
  return {"gelu", DimsText(d),
          absl::StrCat("HloModule gelu\nENTRY e {\n  x = ", s, " parameter(0)\n",
                       scalar("half", "0.5"), scalar("one", "1"), scalar("c", "0.7978845608028654"),
                       scalar("k", "0.044715"), "  x2 = ", s, " multiply(x, x)\n  x3 = ", s,
                       " multiply(x2, x)\n  kx3 = ", s, " multiply(k, x3)\n  in = ", s,
                       " add(x, kx3)\n  sc = ", s, " multiply(c, in)\n  t = ", s,
                       " tanh(sc)\n  onep = ", s, " add(one, t)\n  hx = ", s,
                       " multiply(half, x)\n  ROOT y = ", s, " multiply(hx, onep)\n}\n"),
          json{{"kind", "gelu"}, {"shape", d}}};
}

OpCase Reduce(const std::string& name, const std::string& kind, int64_t rows, int64_t cols,
              int64_t dim) {
  const bool sum = kind == "reduce_sum";
  const std::string s = F32({rows, cols}), o = F32({dim == 1 ? rows : cols});
  return {name, absl::StrCat(DimsText({rows, cols}), " dim ", dim),
          absl::StrCat("HloModule ", kind, "\n", sum ? kAdd : kMax, "ENTRY e {\n  x = ", s,
                       " parameter(0)\n  init = f32[] constant(", sum ? "0" : "-inf",
                       ")\n  ROOT r = ", o, " reduce(x, init), dimensions={", dim,
                       "}, to_apply=", sum ? "add_f32" : "max_f32", "\n}\n"),
          json{{"kind", kind}, {"shape", {rows, cols}}, {"dim", dim}}};
}

OpCase Matmul(int64_t n) {
  const std::string s = F32({n, n});
  OpCase op{absl::StrCat("matmul_", n), absl::StrCat(n, "x", n, "x", n),
            absl::StrCat("HloModule matmul\nENTRY e {\n  a = ", s, " parameter(0)\n  b = ", s,
                         " parameter(1)\n  ROOT d = ", s,
                         " dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"),
            json{{"kind", "matmul"}, {"m", n}, {"n", n}, {"k", n}}};
  op.flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  op.matmul_n = n;
  op.gemm_m = op.gemm_n = op.gemm_k = n;
  return op;
}

// Matrix-vector products (one side of the GEMM is a single row or column), as in a batch-1
// dense layer or a per-example kernel; PyTorch computes the same shapes with torch.mm.
OpCase Gemv(const std::string& name, int64_t m, int64_t n, int64_t k) {
  const std::string o = m == 1 ? F32({n}) : F32({m});
  const std::string a = m == 1 ? F32({k}) : F32({m, k});
  const std::string b = m == 1 ? F32({k, n}) : F32({k});
  OpCase op{name, absl::StrCat(m, "x", n, "x", k),
            absl::StrCat("HloModule ", name, "\nENTRY e {\n  a = ", a, " parameter(0)\n  b = ", b,
                         " parameter(1)\n  ROOT d = ", o, " dot(a, b), lhs_contracting_dims={",
                         m == 1 ? 0 : 1, "}, rhs_contracting_dims={0}\n}\n"),
            json{{"kind", "matmul"}, {"m", m}, {"n", n}, {"k", k}}};
  op.flops = 2.0 * static_cast<double>(m * n * k);
  return op;
}

// A materialised 2-D transpose (a layout change, as jit__cholesky.12 ends with): every read of
// the untiled walk strides across rows, which is what `block` is for.
OpCase Transpose(const std::string& name, int64_t rows, int64_t cols) {
  return {name, DimsText({rows, cols}),
          absl::StrCat("HloModule ", name, "\nENTRY e {\n  x = ", F32({rows, cols}),
                       " parameter(0)\n  ROOT t = ", F32({cols, rows}),
                       " transpose(x), dimensions={1,0}\n}\n"),
          json{{"kind", "transpose"}, {"shape", {rows, cols}}}};
}

// NCHW conv2d, batch 1, square input and kernel, no bias.
OpCase Conv(const std::string& name, int64_t c, int64_t hw, int64_t k, int64_t r, int64_t stride,
            int64_t pad) {
  const int64_t out = (hw + 2 * pad - r) / stride + 1;
  OpCase op{name, absl::StrFormat("%dx%d %d->%d @%d s%d p%d", r, r, c, k, hw, stride, pad),
            absl::StrCat("HloModule ", name, "\nENTRY e {\n  x = ", F32({1, c, hw, hw}),
                         " parameter(0)\n  w = ", F32({k, c, r, r}), " parameter(1)\n  ROOT y = ",
                         F32({1, k, out, out}), " convolution(x, w), window={size=", r, "x", r,
                         " stride=", stride, "x", stride, " pad=", pad, "_", pad, "x", pad, "_",
                         pad, "}, dim_labels=bf01_oi01->bf01\n}\n"),
            json{{"kind", "conv2d"},
                 {"n", 1},
                 {"c", c},
                 {"h", hw},
                 {"w", hw},
                 {"k", k},
                 {"r", r},
                 {"s", r},
                 {"stride", stride},
                 {"pad", pad}}};
  op.flops = 2.0 * static_cast<double>(k * c * r * r * out * out);
  op.gemm_m = k;
  op.gemm_n = out * out;
  op.gemm_k = c * r * r;
  return op;
}

}  // namespace

std::vector<OpCase> AllOps() {
  std::vector<OpCase> ops = {Mul({2048, 2048}), AddRelu({2048, 2048}), Softmax(4096, 1024),
                             LayerNorm(4096, 1024), BatchNorm({1, 64, 112, 112}),
                             Gelu({4096, 1024}), Reduce("reduce_sum", "reduce_sum", 4096, 1024, 1),
                             Reduce("reduce_max", "reduce_max", 4096, 1024, 0),
                             // Along rows: the fold by maximum that a scalar loop would branch.
                             Reduce("reduce_max_rows", "reduce_max", 4096, 1024, 1),
                             Transpose("transpose_1000", 1000, 1000),
                             Transpose("transpose_2048", 2048, 2048)};
  for (int64_t n : {256, 512, 1024, 2048}) ops.push_back(Matmul(n));
  ops.push_back(Gemv("gemv_matrix_vector", 4096, 1, 4096));
  ops.push_back(Gemv("gemv_vector_matrix", 1, 4096, 4096));
  // ResNet-50's conv2d layers, batch 1.
  ops.push_back(Conv("conv_c1_7x7", 3, 224, 64, 7, 2, 3));
  ops.push_back(Conv("conv_c2_3x3", 64, 56, 64, 3, 1, 1));
  ops.push_back(Conv("conv_c2_1x1", 64, 56, 256, 1, 1, 0));
  ops.push_back(Conv("conv_c3_3x3", 128, 28, 128, 3, 1, 1));
  ops.push_back(Conv("conv_c4_3x3", 256, 14, 256, 3, 1, 1));
  ops.push_back(Conv("conv_c5_3x3", 512, 7, 512, 3, 1, 1));
  for (OpCase& op : ops) op.torch["name"] = op.name;
  return ops;
}

}  // namespace mltune::bench
