// SyntheticProgram: a text builder that tracks each value's shape, and one function per block.
// Blocks take the previous block's result when its rank fits, so their ops meet in one graph the
// way layers do (and fusion decisions cross block boundaries); otherwise they start from fresh
// parameters and the previous result becomes a program output.
#include "costmodels/synthetic/synthetic_programs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mltune::costmodels::synthetic {
namespace {

using Dims = std::vector<int64_t>;

struct Value {
  std::string name;
  Dims dims;
  std::string type = "f32";
  int rank() const { return static_cast<int>(dims.size()); }
};

std::string ShapeText(const Dims& d, std::string_view type = "f32") {
  std::vector<int64_t> layout(d.size());
  for (size_t i = 0; i < d.size(); ++i) layout[i] = static_cast<int64_t>(d.size() - 1 - i);
  return absl::StrCat(std::string(type), "[", absl::StrJoin(d, ","), "]{",
                      absl::StrJoin(layout, ","), "}");
}

std::string List(const std::vector<int64_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

class Builder {
 public:
  Builder(uint64_t seed, const SyntheticOptions& options) : rng_(seed), o_(options) {}

  const SyntheticOptions& options() const { return o_; }

  // Random helpers.
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi))(rng_);
  }
  // Log-uniform in [lo, hi]; above 16, often a multiple of 8 as real layer sizes are.
  int64_t Size(int64_t lo, int64_t hi) {
    hi = std::max(lo, hi);
    const double v = std::exp(std::uniform_real_distribution<double>(
        std::log(static_cast<double>(lo)), std::log(static_cast<double>(hi) + 1))(rng_));
    int64_t s = std::clamp<int64_t>(static_cast<int64_t>(v), lo, hi);
    if (s > 16 && Chance(0.6)) s = std::max<int64_t>(lo, std::min(hi, s / 8 * 8));
    return s;
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(0, static_cast<int64_t>(v.size()) - 1))];
  }
  // A random shape of `rank` dimensions with at most `max_elements` elements.
  Dims Shape(int rank, int64_t max_elements) {
    Dims d;
    int64_t budget = std::max<int64_t>(1, max_elements);
    for (int i = 0; i < rank; ++i) {
      // Leave each later dimension room for at least a few elements.
      const int64_t cap = std::max<int64_t>(
          1, static_cast<int64_t>(std::pow(static_cast<double>(budget), 1.0 / (rank - i)) * 2));
      const int64_t s = Size(1, std::min(budget, cap));
      d.push_back(s);
      budget = std::max<int64_t>(1, budget / s);
    }
    std::shuffle(d.begin(), d.end(), rng_);
    return d;
  }

  // Emitters.
  // A parameter of random shape: rank in [min_rank, max_rank], at most max_elements elements.
  // Sometimes a degenerate one: a minor dimension of 1-4 elements and a unit dimension, as JAX
  // programs have ([2048,1,2]); loops over them vectorize differently from log-uniform shapes.
  Value RandomParam(int min_rank, int max_rank, std::string_view type = "f32") {
    Dims d = Shape(static_cast<int>(Uniform(min_rank, max_rank)), o_.max_elements);
    if (Chance(0.15)) {
      d.back() = Uniform(1, 4);
      if (d.size() >= 3) d[d.size() - 2] = 1;
    }
    return Param(std::move(d), type);
  }
  Value Param(Dims dims, std::string_view type = "f32") {
    Value v{absl::StrCat("p", params_.size()), std::move(dims), std::string(type)};
    params_.push_back(absl::StrCat("  ", v.name, " = ", ShapeText(v.dims, type), " parameter(",
                                   params_.size(), ")"));
    return v;
  }
  Value Constant(double value, std::string_view type = "f32") {
    Value v{Name("constant"), {}, std::string(type)};
    const std::string text =
        type == "f32" ? absl::StrCat(value) : absl::StrCat(static_cast<int64_t>(value));
    body_.push_back(
        absl::StrCat("  ", v.name, " = ", std::string(type), "[] constant(", text, ")"));
    return v;
  }
  // `type`: the result's element type where the operands do not tell (convert).
  Value Op(std::string_view opcode, Dims dims, const std::vector<Value>& operands,
           std::string_view attributes = "", std::string_view type = "") {
    Value v{Name(opcode), std::move(dims)};
    // The result's element type: a comparison's is pred, a select's its branches', the rest
    // (elementwise, dot, reduce, layout ops) their first operand's.
    if (!type.empty()) {
      v.type = std::string(type);
    } else if (opcode == "compare") {
      v.type = "pred";
    } else if (opcode == "select") {
      v.type = operands.at(1).type;
    } else if (!operands.empty()) {
      v.type = operands[0].type;
    }
    std::vector<std::string> names;
    for (const Value& o : operands) {
      names.push_back(o.name);
      used_.push_back(o.name);
    }
    body_.push_back(absl::StrCat("  ", v.name, " = ", ShapeText(v.dims, v.type), " ",
                                 std::string(opcode), "(", absl::StrJoin(names, ", "), ")",
                                 attributes.empty() ? "" : ", ", std::string(attributes)));
    return v;
  }
  Value Broadcast(const Value& v, Dims dims, const std::vector<int64_t>& dimensions) {
    return Op("broadcast", std::move(dims), {v}, absl::StrCat("dimensions=", List(dimensions)));
  }
  Value Splat(double value, const Dims& dims, std::string_view type = "f32") {
    return Broadcast(Constant(value, type), dims, {});
  }
  Value Convert(const Value& v, std::string_view type) {
    return Op("convert", v.dims, {v}, "", type);
  }
  Value Binary(std::string_view opcode, const Value& a, const Value& b) {
    return Op(opcode, a.dims, {a, b});
  }
  Value Unary(std::string_view opcode, const Value& a) { return Op(opcode, a.dims, {a}); }
  // Whether any op reads `v`.
  bool Used(const Value& v) const {
    return std::find(used_.begin(), used_.end(), v.name) != used_.end();
  }
  // Reduces `dims` of `v` with add or maximum.
  Value Reduce(const Value& v, std::vector<int64_t> dims, bool max) {
    std::sort(dims.begin(), dims.end());
    Dims out;
    for (int i = 0; i < v.rank(); ++i) {
      if (!std::binary_search(dims.begin(), dims.end(), i)) out.push_back(v.dims[i]);
    }
    const Value init = Constant(max ? -1e30 : 0);
    return Op(
        "reduce", out, {v, init},
        absl::StrCat("dimensions=", List(dims), ", to_apply=", max ? "region_max" : "region_add"));
  }
  // `v` (reduced over its last dimension) broadcast back to `dims`.
  Value BroadcastBack(const Value& v, const Dims& dims) {
    std::vector<int64_t> kept(v.dims.size());
    std::iota(kept.begin(), kept.end(), 0);
    return Broadcast(v, dims, kept);
  }

  std::string Finish(uint64_t seed, const std::vector<Value>& outputs) {
    std::string root;
    if (outputs.size() == 1) {
      root = absl::StrCat("  ROOT result = ", ShapeText(outputs[0].dims, outputs[0].type), " copy(",
                          outputs[0].name, ")");
    } else {
      std::vector<std::string> shapes, names;
      for (const Value& o : outputs) {
        shapes.push_back(ShapeText(o.dims, o.type));
        names.push_back(o.name);
      }
      root = absl::StrCat("  ROOT result = (", absl::StrJoin(shapes, ", "), ") tuple(",
                          absl::StrJoin(names, ", "), ")");
    }
    return absl::StrCat("HloModule ", std::string(kModulePrefix), seed, "\n\n",
                        "region_add {\n  add_lhs = f32[] parameter(0)\n"
                        "  add_rhs = f32[] parameter(1)\n"
                        "  ROOT add_sum = f32[] add(add_lhs, add_rhs)\n}\n\n",
                        "region_max {\n  max_lhs = f32[] parameter(0)\n"
                        "  max_rhs = f32[] parameter(1)\n"
                        "  ROOT max_max = f32[] maximum(max_lhs, max_rhs)\n}\n\n",
                        "ENTRY main {\n", absl::StrJoin(params_, "\n"), "\n",
                        absl::StrJoin(body_, "\n"), "\n", root, "\n}\n");
  }

 private:
  std::string Name(std::string_view opcode) {
    std::string base(opcode);
    std::replace(base.begin(), base.end(), '-', '_');
    return absl::StrCat(base, ".", next_++);
  }

  std::mt19937_64 rng_;
  SyntheticOptions o_;
  std::vector<std::string> params_, body_, used_;
  int next_ = 0;
};

// ---- Blocks: each returns its result; `x` is the previous result when its rank fits. ----

Value Activation(Builder& b, const Value& x) {
  switch (b.Uniform(0, 3)) {
    case 0:
      return b.Binary("maximum", x, b.Splat(0, x.dims));  // relu
    case 1:
      return b.Unary("tanh", x);
    case 2: {  // sigmoid as 1 / (1 + exp(-x))
      const Value e = b.Unary("exponential", b.Unary("negate", x));
      return b.Binary("divide", b.Splat(1, x.dims), b.Binary("add", b.Splat(1, x.dims), e));
    }
    default:
      return x;
  }
}

Value AddBias(Builder& b, const Value& x) {
  const Value bias = b.Param({x.dims.back()});
  return b.Binary("add", x, b.Broadcast(bias, x.dims, {x.rank() - 1}));
}

// A random width n for a contraction of an [m, k] operand: the [m, n] result and an [n, k] or
// [k, n] operand stay within --max-elements, 2 * m * n * k within --max-flops.
int64_t ContractionWidth(Builder& b, int64_t m, int64_t k) {
  const int64_t cap = b.options().max_elements;
  const int64_t by_flops = b.options().max_flops / std::max<int64_t>(1, 2 * m * k);
  return b.Size(1, std::max<int64_t>(1, std::min({cap / m, cap / k, by_flops, 4096L})));
}

Value Dense(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() != 2) x = b.Param(b.Shape(2, b.options().max_elements));
  const int64_t batch = x->dims[0], k = x->dims[1];
  const int64_t n = ContractionWidth(b, batch, k);
  const Value w = b.Param({k, n});
  Value y = b.Op("dot", {batch, n}, {*x, w}, "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  if (b.Chance(0.8)) y = AddBias(b, y);
  return Activation(b, y);
}

// The contractions dense layers and attention do not make, and real programs do: row-wise dot
// products (squared norms, a Gram matrix's diagonal: a batch of 1x1 products), Gram matrices x y^T
// (the rhs contracted on its minor dimension), matrix-vector products, batched ones, and x^T y.
// Which of the generated GEMM and oneDNN wins turns on these shapes in ways square-ish matmuls do
// not show (measured: oneDNN 1.6-14x faster on most synthetic row dots, 3-4x slower on
// neural-tangents' 1,000 row dots of length 3,072, where it computes one 1x1 product per call).
Value Contraction(Builder& b, std::optional<Value> x) {
  const int64_t cap = b.options().max_elements;
  if (!x || x->rank() != 2) x = b.Param(b.Shape(2, cap));
  const int64_t m = x->dims[0], k = x->dims[1];
  switch (b.Uniform(0, 4)) {
    case 0: {  // row dots of x with itself (a squared norm) or with another [m, k]
      const Value y = b.Chance(0.5) ? *x : b.Param({m, k});
      return b.Op("dot", {m}, {*x, y},
                  "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
                  "rhs_contracting_dims={1}");
    }
    case 1: {  // Gram matrix x y^T; y = x now and then, as kernel methods compute it
      const int64_t n = ContractionWidth(b, m, k);
      const Value y = n == m && b.Chance(0.5) ? *x : b.Param({n, k});
      return b.Op("dot", {m, n}, {*x, y}, "lhs_contracting_dims={1}, rhs_contracting_dims={1}");
    }
    case 2:  // matrix-vector
      return b.Op("dot", {m}, {*x, b.Param({k})},
                  "lhs_contracting_dims={1}, rhs_contracting_dims={0}");
    case 3: {  // a batch of m matrix-vector products, x's rows the vectors
      const int64_t r =
          b.Size(1, std::max<int64_t>(1, std::min<int64_t>(64, cap / std::max<int64_t>(1, m * k))));
      return b.Op("dot", {m, r}, {b.Param({m, r, k}), *x},
                  "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                  "rhs_contracting_dims={1}");
    }
    default: {  // x^T y: both contracted on their major dimension
      const int64_t n = ContractionWidth(b, m, k);
      return b.Op("dot", {k, n}, {*x, b.Param({m, n})},
                  "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
    }
  }
}

// A kernel method's layer recursion, as NNGP and neural-tangents code writes it for an infinitely
// wide network: a Gram matrix K = x x^T and its diagonal D (row dots), then per layer the erf
// network's map K' = (2 / pi) atan2(2 K, sqrt(max((1 + 2 D_i)(1 + 2 D_j) - 4 K^2, 0))) + s, or
// the ReLU network's arc-cosine map with theta = atan2(sqrt(max(D_i D_j - K^2, 0)), K). The
// diagonal goes through the same map as its own [n] vector and enters the [n, n] loop broadcast
// along both dimensions, so a plan that fuses its chain into the matrix's recomputes its atan2 per
// element: scalar libm calls in a dot's epilogue, which decide Scale-Mixtures' fusion and which no
// other block makes.
Value KernelMethod(Builder& b, std::optional<Value> x) {
  // n^2 within --max-elements, the Gram matrix's 2 n^2 d within --max-flops.
  const SyntheticOptions& o = b.options();
  const int64_t side = std::clamp<int64_t>(
      static_cast<int64_t>(std::sqrt(static_cast<double>(o.max_elements))), 2, 256);
  auto depth_cap = [&](int64_t n) {
    return std::clamp<int64_t>(std::min(o.max_elements / n, o.max_flops / (2 * n * n)), 1, 64);
  };
  if (!x || x->rank() != 2 || x->dims[0] > side || x->dims[1] > depth_cap(x->dims[0])) {
    const int64_t n = b.Size(std::min<int64_t>(8, side), side);
    x = b.Param({n, b.Size(1, depth_cap(n))});
  }
  const int64_t n = x->dims[0];
  const Dims nn = {n, n};
  auto splat = [&](double v, const Dims& d) { return b.Splat(v, d); };
  const double bias = b.Pick(std::vector<double>{0.0025, 0.01, 0.1});
  Value k = b.Op("dot", nn, {*x, *x}, "lhs_contracting_dims={1}, rhs_contracting_dims={1}");
  Value d = b.Op("dot", {n}, {*x, *x},
                 "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, "
                 "rhs_contracting_dims={1}");
  const double weight = 1.0 / static_cast<double>(x->dims[1]);
  k = b.Binary("add", b.Binary("multiply", k, splat(weight, nn)), splat(bias, nn));
  d = b.Binary("add", b.Binary("multiply", d, splat(weight, {n})), splat(bias, {n}));
  const bool erf = b.Chance(0.5);
  // One layer of the map on a value `v` whose normaliser's factors are `di` and `dj`.
  auto layer = [&](const Value& v, const Value& di, const Value& dj) {
    const Dims& dims = v.dims;
    if (erf) {
      const Value two_v = b.Binary("multiply", v, splat(2, dims));
      const Value den = b.Binary(
          "multiply", b.Binary("add", b.Binary("multiply", di, splat(2, dims)), splat(1, dims)),
          b.Binary("add", b.Binary("multiply", dj, splat(2, dims)), splat(1, dims)));
      const Value gap = b.Binary("subtract", den, b.Binary("multiply", two_v, two_v));
      const Value root = b.Unary("sqrt", b.Binary("maximum", gap, splat(0, dims)));
      const Value theta = b.Binary("atan2", two_v, root);
      return b.Binary("add", b.Binary("multiply", theta, splat(2 / M_PI, dims)), splat(bias, dims));
    }
    const Value gap =
        b.Binary("subtract", b.Binary("multiply", di, dj), b.Binary("multiply", v, v));
    const Value root = b.Unary("sqrt", b.Binary("maximum", gap, splat(0, dims)));
    const Value theta = b.Binary("atan2", root, v);
    const Value rest = b.Binary("multiply", b.Binary("subtract", splat(M_PI, dims), theta), v);
    return b.Binary("add",
                    b.Binary("multiply", b.Binary("add", root, rest), splat(0.5 / M_PI, dims)),
                    splat(bias, dims));
  };
  const int64_t layers = b.Uniform(1, 3);
  for (int64_t l = 0; l < layers; ++l) {
    const Value di = b.Broadcast(d, nn, {0}), dj = b.Broadcast(d, nn, {1});
    k = layer(k, di, dj);
    d = layer(d, d, d);
  }
  return k;
}

// A fresh NHWC image: up to `max_channels` channels, square sides in [min_side, max_side], a
// batch of up to 16, within --max-elements.
Value ImageParam(Builder& b, int64_t max_channels, int64_t min_side, int64_t max_side) {
  const int64_t cap = b.options().max_elements;
  const int64_t c = b.Size(1, max_channels);
  const int64_t hw =
      b.Size(min_side,
             std::max<int64_t>(
                 min_side, std::min<int64_t>(max_side, static_cast<int64_t>(std::sqrt(cap / c)))));
  const int64_t n = b.Size(1, std::max<int64_t>(1, std::min<int64_t>(16, cap / (hw * hw * c))));
  return b.Param({n, hw, hw, c});
}

Value Convolution(Builder& b, std::optional<Value> x) {
  const int64_t cap = b.options().max_elements;
  if (!x || x->rank() != 4) x = ImageParam(b, 64, 4, 96);
  const int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], c = x->dims[3];
  int64_t k = b.Pick(std::vector<int64_t>{1, 3, 3, 5});
  k = std::min({k, h, w});
  const int64_t stride = b.Chance(0.25) && h >= 4 && w >= 4 ? 2 : 1;
  const int64_t pad = (k - 1) / 2;
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  const int64_t per_out = 2 * n * oh * ow * k * k * c;
  const int64_t o =
      b.Size(1, std::max<int64_t>(1, std::min({b.options().max_flops / per_out, cap / (n * oh * ow),
                                               cap / (k * k * c), int64_t{256}})));
  const Value filter = b.Param({k, k, c, o});
  Value y =
      b.Op("convolution", {n, oh, ow, o}, {*x, filter},
           absl::StrCat("window={size=", k, "x", k, stride > 1 ? " stride=2x2" : "",
                        pad > 0 ? absl::StrCat(" pad=", pad, "_", pad, "x", pad, "_", pad) : "",
                        "}, dim_labels=b01f_01io->b01f"));
  if (b.Chance(0.7)) y = AddBias(b, y);
  y = Activation(b, y);
  if (b.Chance(0.35) && oh >= 2 && ow >= 2) {  // 2x2 max pooling
    const Value init = b.Constant(-1e30);
    y = b.Op("reduce-window", {n, oh / 2, ow / 2, o}, {y, init},
             "window={size=1x2x2x1 stride=1x2x2x1}, to_apply=region_max");
  }
  return y;
}

// A stride-1 convolution layer's backward pass, as JAX writes it (the corpus's training steps
// do): the weight gradient contracts the input with the output gradient over batch and space
// (a window as large as the image, a [k, k, c, o] result: dim_labels f01b_i01o->01bf), the input
// gradient convolves the output gradient with the spatially reversed filter (b01f_01oi->b01f).
// Their loops and memory traffic differ from a forward convolution's of the same flops, and a
// model trained on forward ones only mispredicted them 5-16x (see docs/cost_models.md).
Value ConvolutionGradient(Builder& b, std::optional<Value> x) {
  const int64_t cap = b.options().max_elements;
  if (!x || x->rank() != 4) x = ImageParam(b, 32, 2, 64);
  const int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2];
  int64_t k = std::min({b.Pick(std::vector<int64_t>{1, 3, 3, 5}), h, w});
  if (k % 2 == 0) --k;              // odd, so "same" padding is symmetric
  const int64_t pad = (k - 1) / 2;  // "same" padding: the output gradient is [n, h', w', o]
  const int64_t oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
  const std::string padding =
      pad > 0 ? absl::StrCat(" pad=", pad, "_", pad, "x", pad, "_", pad) : std::string();
  if (b.Chance(0.5)) {  // weight gradient: x is the layer's input
    const int64_t c = x->dims[3];
    const int64_t per_out = 2 * n * oh * ow * k * k * c;
    const int64_t o = b.Size(
        1, std::max<int64_t>(1, std::min({b.options().max_flops / per_out, cap / (n * oh * ow),
                                          cap / (k * k * c), int64_t{128}})));
    Value dy = b.Param({n, oh, ow, o});
    // The output gradient arrives through the activation's derivative, fused into the operand.
    if (b.Chance(0.6)) dy = b.Binary("multiply", dy, b.Param(dy.dims));
    // The window spans the output gradient, so sliding it over the padded input gives k x k.
    return b.Op(
        "convolution", {k, k, c, o}, {*x, dy},
        absl::StrCat("window={size=", oh, "x", ow, padding, "}, dim_labels=f01b_i01o->01bf"));
  }
  // Input gradient: x is the output gradient [n, h, w, o]; the result is the layer's input
  // gradient [n, h, w, c] (same padding keeps the spatial size).
  const int64_t o = x->dims[3];
  const int64_t per_out = 2 * n * h * w * k * k * o;
  const int64_t c =
      b.Size(1, std::max<int64_t>(1, std::min({b.options().max_flops / per_out, cap / (n * h * w),
                                               cap / (k * k * o), int64_t{128}})));
  Value filter = b.Param({k, k, c, o});
  if (k > 1) filter = b.Op("reverse", filter.dims, {filter}, "dimensions={0,1}");
  Value dx =
      b.Op("convolution", {n, h, w, c}, {*x, filter},
           absl::StrCat("window={size=", k, "x", k, padding, "}, dim_labels=b01f_01oi->b01f"));
  // Back through the previous layer's relu: the gradient where its input was positive.
  if (b.Chance(0.5)) {
    const Value mask =
        b.Op("compare", dx.dims, {b.Param(dx.dims), b.Splat(0, dx.dims)}, "direction=GT");
    dx = b.Op("select", dx.dims, {mask, dx, b.Splat(0, dx.dims)});
  }
  return dx;
}

Value LayerNorm(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() < 2) x = b.RandomParam(2, 3);
  const int last = x->rank() - 1;
  const double inv_n = 1.0 / static_cast<double>(x->dims[last]);
  Value mean = b.Reduce(*x, {last}, false);
  mean = b.Binary("multiply", mean, b.Splat(inv_n, mean.dims));
  const Value centered = b.Binary("subtract", *x, b.BroadcastBack(mean, x->dims));
  Value var = b.Reduce(b.Binary("multiply", centered, centered), {last}, false);
  var = b.Binary("multiply", var, b.Splat(inv_n, var.dims));
  const Value rstd = b.Unary("rsqrt", b.Binary("add", var, b.Splat(1e-5, var.dims)));
  Value y = b.Binary("multiply", centered, b.BroadcastBack(rstd, x->dims));
  const Value gamma = b.Param({x->dims[last]});
  y = b.Binary("multiply", y, b.Broadcast(gamma, x->dims, {last}));
  return b.Chance(0.7) ? AddBias(b, y) : y;
}

Value Softmax(Builder& b, const Value& x) {
  const int last = x.rank() - 1;
  const Value max = b.Reduce(x, {last}, true);
  const Value e = b.Unary("exponential", b.Binary("subtract", x, b.BroadcastBack(max, x.dims)));
  const Value sum = b.Reduce(e, {last}, false);
  return b.Binary("divide", e, b.BroadcastBack(sum, x.dims));
}

Value SoftmaxBlock(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() < 2) x = b.RandomParam(2, 3);
  return Softmax(b, *x);
}

Value Attention(Builder& b, std::optional<Value> q) {
  const int64_t cap = b.options().max_elements;
  if (!q || q->rank() != 3) {
    const int64_t d = b.Size(4, 128);
    const int64_t s = b.Size(
        2, std::max<int64_t>(2, std::min<int64_t>(512, static_cast<int64_t>(std::sqrt(cap)))));
    const int64_t batch =
        b.Size(1, std::max<int64_t>(1, std::min<int64_t>(32, cap / (s * std::max(s, d)))));
    q = b.Param({batch, s, d});
  }
  const int64_t batch = q->dims[0], s = q->dims[1], d = q->dims[2];
  if (batch * s * s > cap || 2 * batch * s * s * d > b.options().max_flops) {
    return Softmax(b, *q);  // too long a sequence for the score matrix: normalise instead
  }
  const Value k = b.Param({batch, s, d}), v = b.Param({batch, s, d});
  Value scores = b.Op("dot", {batch, s, s}, {*q, k},
                      "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                      "rhs_contracting_dims={2}");
  scores =
      b.Binary("multiply", scores, b.Splat(1.0 / std::sqrt(static_cast<double>(d)), scores.dims));
  const Value p = Softmax(b, scores);
  return b.Op("dot", {batch, s, d}, {p, v},
              "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
              "rhs_contracting_dims={1}");
}

Value Elementwise(Builder& b, std::optional<Value> x) {
  if (!x) x = b.RandomParam(1, 4);
  Value y = *x;
  const int64_t ops = b.Uniform(1, 8);
  for (int64_t i = 0; i < ops; ++i) {
    switch (b.Uniform(0, 7)) {
      case 0:
        y = b.Unary(b.Pick(std::vector<std::string>{"exponential", "tanh", "negate", "abs"}), y);
        break;
      case 1:  // log or sqrt of a positive value
        y = b.Unary(b.Chance(0.5) ? "log" : "sqrt",
                    b.Binary("add", b.Unary("abs", y), b.Splat(1, y.dims)));
        break;
      case 2:
        y = b.Binary(
            b.Pick(std::vector<std::string>{"add", "subtract", "multiply", "maximum", "minimum"}),
            y, b.Param(y.dims));
        break;
      case 3:
        y = b.Binary(b.Pick(std::vector<std::string>{"add", "multiply", "divide"}), y,
                     b.Splat(b.Chance(0.5) ? 0.5 : 2.0, y.dims));
        break;
      case 4:
        if (y.rank() > 0) {
          const Value row = b.Param({y.dims.back()});
          y = b.Binary(b.Chance(0.5) ? "add" : "multiply", y,
                       b.Broadcast(row, y.dims, {y.rank() - 1}));
        }
        break;
      case 5: {  // the rest of the math library: each call costs its own, unlike add
        static const std::vector<std::string> kAnyInput = {
            "sine",  "cosine", "logistic", "exponential-minus-one", "cbrt", "erf",
            "floor", "ceil",   "sign",     "round-nearest-even"};
        if (b.Chance(0.7)) {
          y = b.Unary(b.Pick(kAnyInput), y);
        } else {  // of a positive value
          y = b.Unary(b.Chance(0.5) ? "log-plus-one" : "rsqrt",
                      b.Binary("add", b.Unary("abs", y), b.Splat(1, y.dims)));
        }
        break;
      }
      case 6: {  // binary math: power of a positive base, atan2, remainder
        switch (b.Uniform(0, 2)) {
          case 0:
            y = b.Binary(
                "power", b.Binary("add", b.Unary("abs", y), b.Splat(1, y.dims)),
                b.Chance(0.5) ? b.Splat(b.Chance(0.5) ? 0.5 : 1.5, y.dims) : b.Param(y.dims));
            break;
          case 1:
            y = b.Binary("atan2", y, b.Param(y.dims));
            break;
          default:
            y = b.Binary("remainder", y, b.Splat(0.75, y.dims));
            break;
        }
        break;
      }
      default: {  // select(y > 0, y, other): a leaky or masked activation
        const Value other = b.Chance(0.5) ? b.Param(y.dims) : b.Splat(0.1, y.dims);
        const Value positive = b.Op("compare", y.dims, {y, b.Splat(0, y.dims)}, "direction=GT");
        y = b.Op("select", y.dims, {positive, y, other});
        break;
      }
    }
  }
  return y;
}

// Index and mask arithmetic in s32 and pred, as JAX emits it around random bits, gathers and
// counts (jit_slogdet's sign from pivot counts): such loops vectorise to a few cycles per 16
// elements, far below the math library's calls, and a model that never saw them prices them
// like f32 math. The result goes back to f32 so the next block can use it.
Value IntegerElementwise(Builder& b, std::optional<Value> x) {
  Value y = x ? b.Convert(*x, "s32") : b.RandomParam(1, 4, "s32");
  const int64_t ops = b.Uniform(1, 8);
  for (int64_t i = 0; i < ops; ++i) {
    switch (b.Uniform(0, 5)) {
      case 0:
        y = b.Binary(
            b.Pick(std::vector<std::string>{"add", "subtract", "multiply", "maximum", "minimum"}),
            y, b.Chance(0.5) ? b.Param(y.dims, "s32") : b.Splat(b.Uniform(-3, 3), y.dims, "s32"));
        break;
      case 1:  // by a constant: the compiler turns it into multiplies and shifts
        y = b.Binary(b.Chance(0.5) ? "remainder" : "divide", y,
                     b.Splat(b.Uniform(2, 7), y.dims, "s32"));
        break;
      case 2:
        y = b.Binary(b.Pick(std::vector<std::string>{"and", "or", "xor"}), y,
                     b.Param(y.dims, "s32"));
        break;
      case 3:
        y = b.Binary(b.Chance(0.5) ? "shift-left" : "shift-right-logical", y,
                     b.Splat(b.Uniform(1, 4), y.dims, "s32"));
        break;
      case 4: {  // a mask of two comparisons picks between y and another value
        const std::vector<std::string> directions = {"EQ", "NE", "LT", "GE"};
        Value mask = b.Op("compare", y.dims, {y, b.Splat(b.Uniform(-1, 1), y.dims, "s32")},
                          absl::StrCat("direction=", b.Pick(directions)));
        if (b.Chance(0.5)) {
          const Value other = b.Op("compare", y.dims, {y, b.Splat(b.Uniform(2, 5), y.dims, "s32")},
                                   absl::StrCat("direction=", b.Pick(directions)));
          mask = b.Binary(b.Chance(0.5) ? "and" : "or", mask, other);
        }
        y = b.Op("select", y.dims,
                 {mask, y, b.Chance(0.5) ? b.Param(y.dims, "s32") : b.Splat(1, y.dims, "s32")});
        break;
      }
      default:  // a 0/1 count of where y is nonzero
        y = b.Convert(b.Op("compare", y.dims, {y, b.Splat(0, y.dims, "s32")}, "direction=NE"),
                      "s32");
        break;
    }
  }
  return b.Convert(y, "f32");
}

Value ReduceBlock(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() < 1) x = b.RandomParam(1, 4);
  std::vector<int64_t> dims;
  for (int i = 0; i < x->rank(); ++i) {
    if (b.Chance(0.5)) dims.push_back(i);
  }
  if (dims.empty()) dims.push_back(b.Uniform(0, x->rank() - 1));
  return b.Reduce(*x, dims, b.Chance(0.3));
}

Value TransposeBlock(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() < 2) x = b.RandomParam(2, 4);
  std::vector<int64_t> perm(x->dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[0], perm[perm.size() - 1]);
  if (perm.size() > 2 && b.Chance(0.5)) std::swap(perm[1], perm[perm.size() - 1]);
  Dims out;
  for (int64_t p : perm) out.push_back(x->dims[static_cast<size_t>(p)]);
  const Value t = b.Op("transpose", out, {*x}, absl::StrCat("dimensions=", List(perm)));
  return b.Chance(0.5) ? b.Binary("multiply", t, b.Splat(2.0, t.dims)) : t;
}

// Elements [lo, hi) of `x`'s last dimension.
Value SliceMinor(Builder& b, const Value& x, int64_t lo, int64_t hi) {
  const int last = x.rank() - 1;
  Dims d = x.dims;
  d[last] = hi - lo;
  std::vector<std::string> ranges;
  for (int i = 0; i < x.rank(); ++i) {
    ranges.push_back(i == last ? absl::StrCat("[", lo, ":", hi, "]")
                               : absl::StrCat("[0:", x.dims[i], "]"));
  }
  return b.Op("slice", d, {x}, absl::StrCat("slice={", absl::StrJoin(ranges, ", "), "}"));
}

Value SliceConcat(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() < 1 || x->dims.back() < 2) {
    Dims d = b.Shape(static_cast<int>(b.Uniform(1, 3)), b.options().max_elements / 2);
    d.back() = std::max<int64_t>(2, d.back());
    x = b.Param(d);
  }
  const int last = x->rank() - 1;
  const int64_t half = x->dims[last] / 2;
  auto slice = [&](int64_t lo, int64_t hi) { return SliceMinor(b, *x, lo, hi); };
  const Value lo = slice(0, half), hi = slice(half, 2 * half);
  switch (b.Uniform(0, 2)) {
    case 0:
      return b.Binary("add", lo, hi);
    case 1: {
      Dims d = lo.dims;
      d[0] *= 2;
      return b.Op("concatenate", d, {hi, lo}, "dimensions={0}");
    }
    default: {
      Dims d = lo.dims;
      std::vector<std::string> padding;
      for (int i = 0; i < lo.rank(); ++i) {
        const int64_t p = i == last ? 1 : 0;
        d[i] += 2 * p;
        padding.push_back(absl::StrCat(p, "_", p));
      }
      const Value zero = b.Constant(0);
      return b.Op("pad", d, {lo, zero}, absl::StrCat("padding=", absl::StrJoin(padding, "x")));
    }
  }
}

// A small minor (channel) dimension split and merged again, forward and backward, as JAX writes
// an affine coupling layer or a split of stacked heads: slices of the last dimension, a
// concatenate along it, and a slice's gradient, a pad that puts the part back in place, summed
// with the other part's pad or with a full-width gradient. Loops over such results have an
// innermost extent of 2-16 (2-8 when the block makes its own input) and select between operands
// along it; a model that had not seen them predicted NuX's [16,32,32,2] pad-and-add kernels 3-6x
// too slow.
Value ChannelSplit(Builder& b, std::optional<Value> x) {
  if (!x || x->rank() < 2 || x->type != "f32" || x->dims.back() < 2 || x->dims.back() > 16) {
    const int64_t channels = b.Uniform(2, 8);
    Dims d = b.Shape(static_cast<int>(b.Uniform(1, 3)),
                     std::max<int64_t>(1, b.options().max_elements / channels));
    d.push_back(channels);
    x = b.Param(d);
  }
  const int last = x->rank() - 1;
  const int64_t channels = x->dims[last];
  const int64_t k = b.Uniform(1, channels - 1);
  auto slice = [&](int64_t lo, int64_t hi) { return SliceMinor(b, *x, lo, hi); };
  // `v` widened back to the full channel count: `low` channels of zeros before it, the rest after.
  auto pad_back = [&](const Value& v, int64_t low) {
    std::vector<std::string> padding;
    for (int i = 0; i < x->rank(); ++i) {
      padding.push_back(i == last ? absl::StrCat(low, "_", channels - low - v.dims[last]) : "0_0");
    }
    return b.Op("pad", x->dims, {v, b.Constant(0)},
                absl::StrCat("padding=", absl::StrJoin(padding, "x")));
  };
  const Value head = slice(0, k);
  const Value a = b.Binary("multiply", head, b.Splat(0.5, head.dims));
  const Value r = slice(k, channels);
  const Value s = b.Unary(b.Chance(0.5) ? "tanh" : "exponential", r);
  switch (b.Uniform(0, 2)) {
    case 0:
      return b.Op("concatenate", x->dims, {a, s}, absl::StrCat("dimensions={", last, "}"));
    case 1:
      return b.Binary("add", pad_back(a, 0), pad_back(s, k));
    default:
      return b.Binary("add", *x, pad_back(a, 0));
  }
}

using Block = Value (*)(Builder&, std::optional<Value>);
struct NamedBlock {
  const char* name;
  Block block;
  int weight;  // entries in the default mix's draw
};
// Matmuls and convolutions are weighted up: they hold most of a real program's time and most of
// the tile choices, and the corpus has few of them.
constexpr NamedBlock kBlocks[] = {
    {"dense", Dense, 2},
    {"contraction", Contraction, 1},
    {"kernel-method", KernelMethod, 1},
    {"convolution", Convolution, 2},
    {"convolution-gradient", ConvolutionGradient, 1},
    {"layer-norm", LayerNorm, 1},
    {"softmax", SoftmaxBlock, 1},
    {"attention", Attention, 1},
    {"elementwise", Elementwise, 2},
    {"integer", IntegerElementwise, 1},
    {"reduce", ReduceBlock, 1},
    {"transpose", TransposeBlock, 1},
    {"slice-concat", SliceConcat, 1},
    {"channel-split", ChannelSplit, 1},
};

}  // namespace

const std::vector<std::string>& SyntheticBlockNames() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>();
    for (const NamedBlock& b : kBlocks) v->push_back(b.name);
    return v;
  }();
  return *names;
}

absl::Status ValidateSyntheticOptions(const SyntheticOptions& options) {
  if (options.min_blocks < 1 || options.max_blocks < options.min_blocks) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic programs: blocks per program must be 1 <= min <= max, got ",
                     options.min_blocks, "..", options.max_blocks));
  }
  if (options.max_elements < 16 || options.max_flops < 16) {
    return absl::InvalidArgumentError(
        "synthetic programs: the largest array and matmul must allow at least 16 elements / flops");
  }
  const std::vector<std::string>& known = SyntheticBlockNames();
  for (const std::string& name : options.blocks) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("synthetic programs: unknown block '", name,
                                                     "' (blocks: ", absl::StrJoin(known, ", "),
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

std::string SyntheticProgram(uint64_t seed, const SyntheticOptions& options) {
  Builder b(seed, options);
  std::vector<Block> draw;  // one entry per unit of weight, of the chosen blocks
  for (const NamedBlock& nb : kBlocks) {
    if (!options.blocks.empty() &&
        std::find(options.blocks.begin(), options.blocks.end(), nb.name) == options.blocks.end()) {
      continue;
    }
    // Among a chosen few, each block counts once: the caller's choice is the weighting.
    for (int i = 0; i < (options.blocks.empty() ? nb.weight : 1); ++i) draw.push_back(nb.block);
  }
  if (draw.empty()) draw.push_back(Elementwise);  // only unknown names: callers validate first
  const int blocks = static_cast<int>(b.Uniform(options.min_blocks, options.max_blocks));
  std::vector<Value> outputs;
  std::optional<Value> x;
  for (int i = 0; i < blocks; ++i) {
    const Value y = b.Pick(draw)(b, x);
    // A block that did not build on x leaves x as an output of its own.
    if (x && !b.Used(*x)) outputs.push_back(*x);
    x = y;
  }
  outputs.push_back(*x);
  return b.Finish(seed, outputs);
}

}  // namespace mltune::costmodels::synthetic
