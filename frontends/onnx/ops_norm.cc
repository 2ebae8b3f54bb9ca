// Normalizations (batch, instance, layer, mean-variance, LRN) and inference-mode Dropout.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/nn_util.h"

namespace mltune::ir::onnx {
namespace {

// (x - mean) / sqrt(var + eps) * scale + bias, the per-channel operands along dimension 1.
Instruction* NormalizeChannels(Emitter& b, Instruction* x, Instruction* mean, Instruction* var,
                               Instruction* scale, Instruction* bias, double eps) {
  Instruction* centered = Bin(b, Opcode::kSubtract, x, mean);
  Instruction* inv = b.Unary(Opcode::kRsqrt, Bin(b, Opcode::kAdd, var, b.Full(var, eps)));
  Instruction* y = Bin(b, Opcode::kMultiply, centered, inv);
  const PrimitiveType t = x->shape().element_type();
  y = Bin(b, Opcode::kMultiply, y, AlongDim(b, b.Convert(scale, t), x, 1));
  return Bin(b, Opcode::kAdd, y, AlongDim(b, b.Convert(bias, t), x, 1));
}

Outputs BatchNormalization(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(scale, n.required_input(1));
  MLTUNE_ASSIGN(bias, n.required_input(2));
  MLTUNE_ASSIGN(mean, n.required_input(3));
  MLTUNE_ASSIGN(var, n.required_input(4));
  MLTUNE_ASSIGN(eps, n.attr_float("epsilon", 1e-5f));
  MLTUNE_ASSIGN(momentum, n.attr_float("momentum", 0.9f));
  MLTUNE_ASSIGN(training, n.attr_int("training_mode", 0));
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank();
  if (rank < 2) return n.Error(absl::StrCat("input ", x->shape().ToString(false), " has rank < 2"));
  const int64_t c = x->shape().dimensions(1);
  for (Instruction* p : {scale, bias, mean, var}) {
    if (p->shape().rank() != 1 || p->shape().dimensions(0) != c) {
      return n.Error(absl::StrCat("scale, B, mean and var must have shape [", c, "], got ",
                                  p->shape().ToString(false)));
    }
  }
  // Before opset 14, extra outputs exist only in training, which those opsets chose by is_test.
  if (n.opset() < 14 && n.output_count() > 1) {
    return n.Unsupported("training-mode outputs of BatchNormalization before opset 14");
  }
  if (training == 0) {
    if (n.output_count() > 1) return n.Error("extra outputs need training_mode=1");
    const PrimitiveType t = x->shape().element_type();
    return One(NormalizeChannels(b, x, AlongDim(b, b.Convert(mean, t), x, 1),
                                 AlongDim(b, b.Convert(var, t), x, 1), scale, bias, eps));
  }
  std::vector<int64_t> axes = {0};
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  Instruction* batch_mean = MeanKeep(b, x, axes);
  Instruction* centered = Bin(b, Opcode::kSubtract, x, batch_mean);
  Instruction* batch_var = MeanKeep(b, Bin(b, Opcode::kMultiply, centered, centered), axes);
  Instruction* y = NormalizeChannels(b, x, batch_mean, batch_var, scale, bias, eps);
  const double count = static_cast<double>(Count(x, axes));
  auto running = [&](Instruction* old_stat, Instruction* xsq) {
    Instruction* old = b.Convert(old_stat, x->shape().element_type());
    Instruction* cur = b.Reduce(xsq, axes, Opcode::kAdd, 0);
    cur = Bin(b, Opcode::kDivide, cur, b.Full(cur, count));
    return Bin(b, Opcode::kAdd, Bin(b, Opcode::kMultiply, old, b.Full(old, momentum)),
               Bin(b, Opcode::kMultiply, cur, b.Full(cur, 1.0 - momentum)));
  };
  std::vector<Instruction*> outs = {y};
  if (n.wants_output(1) || n.wants_output(2)) {
    outs.push_back(running(mean, x));
    outs.push_back(running(var, Bin(b, Opcode::kMultiply, centered, centered)));
  }
  outs.resize(n.output_count(), nullptr);
  return outs;
}

Outputs InstanceNormalization(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(scale, n.required_input(1));
  MLTUNE_ASSIGN(bias, n.required_input(2));
  MLTUNE_ASSIGN(eps, n.attr_float("epsilon", 1e-5f));
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank();
  if (rank < 3) return n.Error(absl::StrCat("input ", x->shape().ToString(false), " has rank < 3"));
  const std::vector<int64_t> axes = Range(2, rank);
  Instruction* mean = MeanKeep(b, x, axes);
  Instruction* centered = Bin(b, Opcode::kSubtract, x, mean);
  Instruction* var = MeanKeep(b, Bin(b, Opcode::kMultiply, centered, centered), axes);
  return One(NormalizeChannels(b, x, mean, var, scale, bias, eps));
}

Outputs LayerNormalization(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(scale, n.required_input(1));
  MLTUNE_ASSIGN(axis_attr, n.attr_int("axis", -1));
  MLTUNE_ASSIGN(eps, n.attr_float("epsilon", 1e-5f));
  MLTUNE_ASSIGN(stash_type, n.attr_int("stash_type", 1));
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank();
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, rank));
  const PrimitiveType t = x->shape().element_type();
  PrimitiveType stash = t;
  if (stash_type == 1) {
    stash = PrimitiveType::kF32;
  } else if (stash_type == 11) {
    stash = PrimitiveType::kF64;
  } else if (stash_type == 10) {
    stash = PrimitiveType::kF16;
  } else if (stash_type == 16) {
    stash = PrimitiveType::kBF16;
  } else {
    return n.Error(absl::StrCat("stash_type ", stash_type, " is not a floating-point type"));
  }
  const std::vector<int64_t> axes = Range(axis, rank);
  // Mean and InvStdDev keep the normalized dimensions with extent 1.
  std::vector<int64_t> reduced_dims = x->shape().dimensions();
  for (int64_t a : axes) reduced_dims[a] = 1;
  const std::vector<int64_t> kept = Range(0, axis);
  const double count = static_cast<double>(Count(x, axes));
  Instruction* xs = b.Convert(x, stash);
  Instruction* mean = b.Reduce(xs, axes, Opcode::kAdd, 0);
  mean = Bin(b, Opcode::kDivide, mean, b.Full(mean, count));
  Instruction* centered =
      Bin(b, Opcode::kSubtract, xs, b.Broadcast(mean, xs->shape().dimensions(), kept));
  Instruction* var = b.Reduce(Bin(b, Opcode::kMultiply, centered, centered), axes, Opcode::kAdd, 0);
  var = Bin(b, Opcode::kDivide, var, b.Full(var, count));
  Instruction* inv = b.Unary(Opcode::kRsqrt, Bin(b, Opcode::kAdd, var, b.Full(var, eps)));
  Instruction* y = b.Convert(
      Bin(b, Opcode::kMultiply, centered, b.Broadcast(inv, xs->shape().dimensions(), kept)), t);
  MLTUNE_ASSIGN(scaled, b.Binary(Opcode::kMultiply, y, scale));
  y = scaled;
  if (n.has_input(2)) {
    MLTUNE_ASSIGN(biased, b.Binary(Opcode::kAdd, y, n.input(2)));
    y = biased;
  }
  if (y->shape().dimensions() != x->shape().dimensions()) {
    return n.Error(absl::StrCat("Scale and B broadcast the result to ", y->shape().ToString(false),
                                ", not the input's shape"));
  }
  std::vector<Instruction*> outs = {y};
  if (n.output_count() > 1) outs.push_back(b.Reshape(mean, reduced_dims));
  if (n.output_count() > 2) outs.push_back(b.Reshape(inv, reduced_dims));
  return outs;
}

Outputs MeanVarianceNormalization(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(axes_attr, n.attr_ints("axes", std::vector<int64_t>{0, 2, 3}));
  Emitter& b = n.b();
  std::vector<int64_t> axes;
  for (int64_t a : axes_attr) {
    MLTUNE_ASSIGN(v, n.NormalizeAxis(a, x->shape().rank()));
    axes.push_back(v);
  }
  Instruction* mean = MeanKeep(b, x, axes);
  Instruction* mean_sq = MeanKeep(b, Bin(b, Opcode::kMultiply, x, x), axes);
  Instruction* var = Bin(b, Opcode::kSubtract, mean_sq, Bin(b, Opcode::kMultiply, mean, mean));
  Instruction* stddev = b.Unary(Opcode::kSqrt, var);
  return One(b.Add(Opcode::kDivide, {Bin(b, Opcode::kSubtract, x, mean),
                                     Bin(b, Opcode::kAdd, stddev, b.Full(stddev, 1e-9))}));
}

Outputs Lrn(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(size, n.attr_int("size"));
  MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 1e-4f));
  MLTUNE_ASSIGN(beta, n.attr_float("beta", 0.75f));
  MLTUNE_ASSIGN(bias, n.attr_float("bias", 1.0f));
  Emitter& b = n.b();
  if (x->shape().rank() < 2) return n.Error("input must have rank >= 2");
  if (size < 1) return n.Error(absl::StrCat("size must be positive, got ", size));
  // Channels c - floor((size-1)/2) .. c + ceil((size-1)/2).
  Window window;
  window.dims.resize(x->shape().rank());
  window.dims[1].size = size;
  window.dims[1].padding_low = (size - 1) / 2;
  window.dims[1].padding_high = size - 1 - (size - 1) / 2;
  absl::StatusOr<Instruction*> sq_sum =
      b.ReduceWindow(Bin(b, Opcode::kMultiply, x, x), window, Opcode::kAdd, 0);
  if (!sq_sum.ok()) return n.Error(std::string(sq_sum.status().message()));
  Instruction* s = *sq_sum;
  Instruction* d = Bin(b, Opcode::kAdd, b.Full(s, bias),
                       Bin(b, Opcode::kMultiply, s, b.Full(s, alpha / static_cast<double>(size))));
  d = Bin(b, Opcode::kPower, d, b.Full(d, beta));
  return One(b.Add(Opcode::kDivide, {x, d}));
}

Outputs Dropout(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  // The seed of the random mask: no effect where the mask is all ones.
  n.IgnoreAttrs({"seed"});
  Emitter& b = n.b();
  bool training = false;
  double ratio = 0.5;
  if (n.opset() < 7) {
    MLTUNE_ASSIGN(is_test, n.attr_int("is_test", 0));
    MLTUNE_ASSIGN(r, n.attr_float("ratio", 0.5f));
    training = is_test == 0;
    ratio = r;
  } else if (n.opset() < 12) {
    MLTUNE_ASSIGN(r, n.attr_float("ratio", 0.5f));
    ratio = r;
  } else {
    if (n.has_input(2)) {
      MLTUNE_ASSIGN(t, n.constant_input(2));
      if (t.element_count() != 1) return n.Error("training_mode must be a scalar");
      training = t.GetAsBool(0);
    }
    if (training && n.has_input(1)) {
      MLTUNE_ASSIGN(r, n.constant_doubles(1));
      if (r.size() != 1) return n.Error("ratio must be a scalar");
      ratio = r[0];
    }
  }
  if (training && ratio > 0) {
    return n.Unsupported("Dropout in training mode with a nonzero ratio is random");
  }
  std::vector<Instruction*> outs = {x};
  if (n.wants_output(1)) {
    const PrimitiveType mask_type =
        n.opset() >= 10 ? PrimitiveType::kPred : x->shape().element_type();
    outs.push_back(b.Full(mask_type, x->shape().dimensions(), 1));
  }
  outs.resize(n.output_count(), nullptr);
  return outs;
}

}  // namespace

void RegisterNormOps(OpRegistry& r) {
  r.Register("BatchNormalization", BatchNormalization);
  r.Register("InstanceNormalization", InstanceNormalization);
  r.Register("LayerNormalization", LayerNormalization);
  r.Register("MeanVarianceNormalization", MeanVarianceNormalization);
  r.Register("LRN", Lrn);
  r.Register("Dropout", Dropout, {1, 2});
}

}  // namespace mltune::ir::onnx
