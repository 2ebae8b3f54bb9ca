// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the target class picked by a one-hot
// compare, with weights, ignore_index and the three reductions.
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

// log(softmax(x)) over dimension `dim`.
Instruction* LogSoftmax(Emitter& b, Instruction* x, int64_t dim) {
  Instruction* max = ReduceKeep(b, x, {dim}, Opcode::kMaximum, Lowest(x->shape().element_type()));
  Instruction* shifted = Bin(b, Opcode::kSubtract, x, max);
  Instruction* sum = ReduceKeep(b, b.Unary(Opcode::kExp, shifted), {dim}, Opcode::kAdd, 0);
  return Bin(b, Opcode::kSubtract, shifted, b.Unary(Opcode::kLog, sum));
}

// The negative log-likelihood of log-probabilities `logp` (N, C, d...) at `target` (N, d...).
absl::StatusOr<Instruction*> NllLoss(NodeContext& n, Instruction* logp, Instruction* target,
                                     Instruction* weight) {
  MLTUNE_ASSIGN(reduction, n.attr_string("reduction", "mean"));
  Emitter& b = n.b();
  const auto& ld = logp->shape().dimensions();
  const auto& td = target->shape().dimensions();
  const int64_t rank = logp->shape().rank();
  if (rank < 2)
    return n.Error(absl::StrCat("input ", logp->shape().ToString(false), " must have rank >= 2"));
  std::vector<int64_t> expected = {ld[0]};
  expected.insert(expected.end(), ld.begin() + 2, ld.end());
  if (td != expected) {
    return n.Error(absl::StrCat("target ", target->shape().ToString(false),
                                " must have the input's shape without dimension 1"));
  }
  if (!IsIntegral(target->shape().element_type())) return n.Error("target must be integers");
  if (weight != nullptr &&
      (weight->shape().rank() != 1 || weight->shape().dimensions(0) != ld[1])) {
    return n.Error(
        absl::StrCat("weight ", weight->shape().ToString(false), " must have shape [", ld[1], "]"));
  }
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return n.Error(absl::StrCat("reduction '", reduction, "' is not none, sum or mean"));
  }
  // One-hot selection of each target's class.
  std::vector<int64_t> not_class = {0};
  for (int64_t i = 2; i < rank; ++i) not_class.push_back(i);
  const PrimitiveType tt = target->shape().element_type();
  Instruction* classes = b.Iota(tt, ld, 1);
  MLTUNE_ASSIGN(onehot,
                b.Compare(ComparisonDirection::kEq, classes, b.Broadcast(target, ld, not_class)));
  Instruction* zero = b.Full(logp, 0);
  MLTUNE_ASSIGN(picked_all, b.Select(onehot, logp, zero));
  Instruction* loss = b.Unary(Opcode::kNegate, b.Reduce(picked_all, {1}, Opcode::kAdd, 0));
  const PrimitiveType t = logp->shape().element_type();
  Instruction* w = nullptr;  // per-element weight, when there is one
  if (weight != nullptr) {
    MLTUNE_ASSIGN(w_all, b.Select(onehot, b.Broadcast(b.Convert(weight, t), ld, {1}), zero));
    w = b.Reduce(w_all, {1}, Opcode::kAdd, 0);
  }
  if (n.has_attr("ignore_index")) {
    MLTUNE_ASSIGN(ignore, n.attr_int("ignore_index"));
    MLTUNE_ASSIGN(valid, b.Compare(ComparisonDirection::kNe, target,
                                   b.Full(tt, td, static_cast<double>(ignore))));
    Instruction* ones = b.Full(t, td, 1);
    MLTUNE_ASSIGN(vw, b.Select(valid, w != nullptr ? w : ones, b.Full(t, td, 0)));
    w = vw;
  }
  if (w != nullptr) loss = Bin(b, Opcode::kMultiply, loss, w);
  if (reduction == "none") return loss;
  const std::vector<int64_t> all = Range(0, loss->shape().rank());
  Instruction* sum = b.Reduce(loss, all, Opcode::kAdd, 0);
  if (reduction == "sum") return sum;
  Instruction* denom = w != nullptr
                           ? b.Reduce(w, all, Opcode::kAdd, 0)
                           : b.Scalar(t, static_cast<double>(loss->shape().ElementCount()));
  return b.Add(Opcode::kDivide, {sum, denom});
}

Outputs NegativeLogLikelihoodLoss(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(target, n.required_input(1));
  return One(NllLoss(n, x, target, n.input(2)));
}

Outputs SoftmaxCrossEntropyLoss(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(target, n.required_input(1));
  if (x->shape().rank() < 2) {
    return n.Error(absl::StrCat("scores ", x->shape().ToString(false), " must have rank >= 2"));
  }
  Instruction* logp = LogSoftmax(n.b(), x, 1);
  MLTUNE_ASSIGN(loss, NllLoss(n, logp, target, n.input(2)));
  std::vector<Instruction*> outs = {loss};
  if (n.output_count() > 1) outs.push_back(logp);
  return outs;
}

}  // namespace

void RegisterLossOps(OpRegistry& r) {
  r.Register("NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss);
  r.Register("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss);
}

}  // namespace mltune::ir::onnx
