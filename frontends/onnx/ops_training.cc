// The training-preview domain's optimizers (ai.onnx.preview.training): Adagrad, Momentum and
// Adam over any number of tensors, as the spec's update formulas.
#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {
namespace {

constexpr char kTrainingDomain[] = "ai.onnx.preview.training";

// Inputs R, T, then `groups` lists of n tensors each: returns n, or an error.
absl::StatusOr<int64_t> GroupSize(NodeContext& n, int64_t groups) {
  const int64_t rest = n.input_count() - 2;
  if (rest <= 0 || rest % groups != 0) {
    return n.Error(absl::StrCat("expects R, T and ", groups, " lists of tensors of one length"));
  }
  return rest / groups;
}

// Tensor i of each of the `groups` lists (X, G, then the optimizer's states), each present and of
// X's shape.
absl::StatusOr<std::vector<Instruction*>> Tensors(NodeContext& n, int64_t count, int64_t groups,
                                                  int64_t i) {
  std::vector<Instruction*> out;
  for (int64_t k = 0; k < groups; ++k) {
    Instruction* t = n.input(2 + k * count + i);
    if (t == nullptr) return n.Error(absl::StrCat("input ", 2 + k * count + i, " is missing"));
    if (!out.empty() && !t->shape().Compatible(out[0]->shape())) {
      return n.Error(absl::StrCat("input ", 2 + k * count + i, " ", t->shape().ToString(false),
                                  " differs from its tensor's ", out[0]->shape().ToString(false)));
    }
    out.push_back(t);
  }
  return out;
}

// T > 0, as a pred scalar: the updates before the first (T = 0) skip their corrections.
absl::StatusOr<Instruction*> Started(Emitter& b, Instruction* t) {
  return b.Compare(ComparisonDirection::kGt, b.Reshape(t, {}),
                   b.Scalar(t->shape().element_type(), 0));
}

// a * x + y, elementwise, with a a scalar of x's type.
Instruction* Axpy(Emitter& b, double a, Instruction* x, Instruction* y) {
  Instruction* ax = b.Must(b.Binary(Opcode::kMultiply, b.Full(x, a), x), x);
  return b.Must(b.Binary(Opcode::kAdd, ax, y), x);
}

Outputs Adagrad(NodeContext& n) {
  MLTUNE_ASSIGN(count, GroupSize(n, 3));
  MLTUNE_ASSIGN(decay, n.attr_float("decay_factor", 0.0f));
  MLTUNE_ASSIGN(epsilon, n.attr_float("epsilon", 1e-6f));
  MLTUNE_ASSIGN(norm, n.attr_float("norm_coefficient", 0.0f));
  Emitter& b = n.b();
  MLTUNE_ASSIGN(r, n.required_input(0));
  MLTUNE_ASSIGN(t, n.required_input(1));
  const PrimitiveType ft = r->shape().element_type();
  Instruction* rs = b.Reshape(r, {});
  // r / (1 + t * decay)
  Instruction* tf = b.Reshape(b.Convert(t, ft), {});
  MLTUNE_ASSIGN(rate, b.Binary(Opcode::kDivide, rs, Axpy(b, decay, tf, b.Scalar(ft, 1))));
  std::vector<Instruction*> xs, hs;
  for (int64_t i = 0; i < count; ++i) {
    MLTUNE_ASSIGN(ts, Tensors(n, count, 3, i));
    Instruction *x = ts[0], *g = ts[1], *h = ts[2];
    Instruction* greg = Axpy(b, norm, x, g);
    MLTUNE_ASSIGN(g2, b.Binary(Opcode::kMultiply, greg, greg));
    MLTUNE_ASSIGN(h_new, b.Binary(Opcode::kAdd, h, g2));
    MLTUNE_ASSIGN(denom,
                  b.Binary(Opcode::kAdd, b.Unary(Opcode::kSqrt, h_new), b.Full(h_new, epsilon)));
    MLTUNE_ASSIGN(step, b.Binary(Opcode::kDivide, greg, denom));
    MLTUNE_ASSIGN(
        scaled, b.Binary(Opcode::kMultiply, b.Broadcast(rate, x->shape().dimensions(), {}), step));
    MLTUNE_ASSIGN(x_new, b.Binary(Opcode::kSubtract, x, scaled));
    xs.push_back(x_new);
    hs.push_back(h_new);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

Outputs Momentum(NodeContext& n) {
  MLTUNE_ASSIGN(count, GroupSize(n, 3));
  MLTUNE_ASSIGN(alpha, n.attr_float("alpha"));
  MLTUNE_ASSIGN(beta, n.attr_float("beta"));
  MLTUNE_ASSIGN(mode, n.attr_string("mode"));
  MLTUNE_ASSIGN(norm, n.attr_float("norm_coefficient"));
  if (mode != "standard" && mode != "nesterov") {
    return n.Error(absl::StrCat("mode must be standard or nesterov, got '", mode, "'"));
  }
  Emitter& b = n.b();
  MLTUNE_ASSIGN(r, n.required_input(0));
  MLTUNE_ASSIGN(t, n.required_input(1));
  const PrimitiveType ft = r->shape().element_type();
  // The first update (T = 0) takes the gradient unscaled by beta.
  MLTUNE_ASSIGN(started, Started(b, t));
  MLTUNE_ASSIGN(beta_t, b.Select(started, b.Scalar(ft, beta), b.Scalar(ft, 1)));
  Instruction* rs = b.Reshape(r, {});
  std::vector<Instruction*> xs, vs;
  for (int64_t i = 0; i < count; ++i) {
    MLTUNE_ASSIGN(ts, Tensors(n, count, 3, i));
    Instruction *x = ts[0], *g = ts[1], *v = ts[2];
    const auto& dims = x->shape().dimensions();
    Instruction* greg = Axpy(b, norm, x, g);
    MLTUNE_ASSIGN(bg, b.Binary(Opcode::kMultiply, b.Broadcast(beta_t, dims, {}), greg));
    Instruction* v_new = Axpy(b, alpha, v, bg);
    Instruction* dir = v_new;
    if (mode == "nesterov") dir = Axpy(b, alpha, v_new, greg);
    MLTUNE_ASSIGN(step, b.Binary(Opcode::kMultiply, b.Broadcast(rs, dims, {}), dir));
    MLTUNE_ASSIGN(x_new, b.Binary(Opcode::kSubtract, x, step));
    xs.push_back(x_new);
    vs.push_back(v_new);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

Outputs Adam(NodeContext& n) {
  MLTUNE_ASSIGN(count, GroupSize(n, 4));
  MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 0.9f));
  MLTUNE_ASSIGN(beta, n.attr_float("beta", 0.999f));
  MLTUNE_ASSIGN(epsilon, n.attr_float("epsilon", 1e-6f));
  MLTUNE_ASSIGN(norm, n.attr_float("norm_coefficient", 0.0f));
  MLTUNE_ASSIGN(norm_post, n.attr_float("norm_coefficient_post", 0.0f));
  Emitter& b = n.b();
  MLTUNE_ASSIGN(r, n.required_input(0));
  MLTUNE_ASSIGN(t, n.required_input(1));
  const PrimitiveType ft = r->shape().element_type();
  Instruction* rs = b.Reshape(r, {});
  Instruction* tf = b.Reshape(b.Convert(t, ft), {});
  // Bias correction once T > 0: R * sqrt(1 - beta^T) / (1 - alpha^T).
  MLTUNE_ASSIGN(beta_t, b.Binary(Opcode::kPower, b.Scalar(ft, beta), tf));
  MLTUNE_ASSIGN(alpha_t, b.Binary(Opcode::kPower, b.Scalar(ft, alpha), tf));
  MLTUNE_ASSIGN(num, b.Binary(Opcode::kSubtract, b.Scalar(ft, 1), beta_t));
  MLTUNE_ASSIGN(den, b.Binary(Opcode::kSubtract, b.Scalar(ft, 1), alpha_t));
  MLTUNE_ASSIGN(corr, b.Binary(Opcode::kDivide, b.Unary(Opcode::kSqrt, num), den));
  MLTUNE_ASSIGN(r_corr, b.Binary(Opcode::kMultiply, rs, corr));
  MLTUNE_ASSIGN(started, Started(b, t));
  MLTUNE_ASSIGN(rate, b.Select(started, r_corr, rs));
  std::vector<Instruction*> xs, vs, hs;
  for (int64_t i = 0; i < count; ++i) {
    MLTUNE_ASSIGN(ts, Tensors(n, count, 4, i));
    Instruction *x = ts[0], *g = ts[1], *v = ts[2], *h = ts[3];
    const auto& dims = x->shape().dimensions();
    Instruction* greg = Axpy(b, norm, x, g);
    MLTUNE_ASSIGN(v_part, b.Binary(Opcode::kMultiply, b.Full(greg, 1 - alpha), greg));
    Instruction* v_new = Axpy(b, alpha, v, v_part);
    MLTUNE_ASSIGN(g2, b.Binary(Opcode::kMultiply, greg, greg));
    MLTUNE_ASSIGN(h_part, b.Binary(Opcode::kMultiply, b.Full(g2, 1 - beta), g2));
    Instruction* h_new = Axpy(b, beta, h, h_part);
    MLTUNE_ASSIGN(denom,
                  b.Binary(Opcode::kAdd, b.Unary(Opcode::kSqrt, h_new), b.Full(h_new, epsilon)));
    MLTUNE_ASSIGN(ratio, b.Binary(Opcode::kDivide, v_new, denom));
    MLTUNE_ASSIGN(step, b.Binary(Opcode::kMultiply, b.Broadcast(rate, dims, {}), ratio));
    MLTUNE_ASSIGN(x_new, b.Binary(Opcode::kSubtract, x, step));
    MLTUNE_ASSIGN(x_final, b.Binary(Opcode::kMultiply, b.Full(x_new, 1 - norm_post), x_new));
    xs.push_back(x_final);
    vs.push_back(v_new);
    hs.push_back(h_new);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

void RegisterTrainingOps(OpRegistry& r) {
  r.Register("Adagrad", Adagrad, {}, kTrainingDomain);
  r.Register("Momentum", Momentum, {}, kTrainingDomain);
  r.Register("Adam", Adam, {}, kTrainingDomain);
}

}  // namespace mltune::ir::onnx
