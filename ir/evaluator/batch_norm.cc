// batch-norm-training, batch-norm-inference and batch-norm-grad, computed in double per feature
// and rounded once to the element type. Statistics are over every dimension but feature_index;
// the variance is the biased (population) one, as XLA defines it.
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/eval_internal.h"

namespace mltune::ir::eval {
namespace {

// Feature index of each element of a [.., F, ..] array.
struct FeatureView {
  int64_t features = 0;
  int64_t inner = 1;  // elements after the feature dimension
  int64_t count = 0;  // elements per feature
  int64_t Feature(int64_t i) const { return (i / inner) % features; }
};

absl::StatusOr<FeatureView> View(const Instruction& instr, const Literal& x) {
  const int64_t f = instr.feature_index;
  if (!IsFloatingPoint(x.element_type()) || f < 0 || f >= x.shape().rank()) {
    return Invalid(instr, "needs a float operand and a feature_index within its rank");
  }
  FeatureView v;
  v.features = x.shape().dimensions(f);
  for (int64_t d = f + 1; d < x.shape().rank(); ++d) v.inner *= x.shape().dimensions(d);
  v.count = v.features == 0 ? 0 : x.element_count() / v.features;
  return v;
}

absl::Status CheckVector(const Instruction& instr, const Literal& l, const FeatureView& v) {
  if (l.element_count() != v.features || l.shape().rank() != 1) {
    return Invalid(instr, absl::StrCat("per-feature operand must have ", v.features, " elements"));
  }
  return absl::OkStatus();
}

void Moments(const Literal& x, const FeatureView& v, std::vector<double>& mean,
             std::vector<double>& var) {
  mean.assign(v.features, 0);
  var.assign(v.features, 0);
  for (int64_t i = 0; i < x.element_count(); ++i) mean[v.Feature(i)] += x.GetAsDouble(i);
  for (double& m : mean) m /= static_cast<double>(v.count);
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const double d = x.GetAsDouble(i) - mean[v.Feature(i)];
    var[v.Feature(i)] += d * d;
  }
  for (double& s : var) s /= static_cast<double>(v.count);
}

}  // namespace

absl::StatusOr<Literal> HandleBatchNormTraining(Evaluator& ev, const Instruction& instr,
                                                Operands& ops) {
  if (ops.size() != 3) return Invalid(instr, "needs operand, scale and offset");
  const Literal& x = ops[0];
  absl::StatusOr<FeatureView> v = View(instr, x);
  if (!v.ok()) return v.status();
  for (int k = 1; k < 3; ++k) {
    if (absl::Status s = CheckVector(instr, ops[k], *v); !s.ok()) return s;
  }
  const Shape& shape = instr.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 3 || !shape.tuple_shapes(0).Compatible(x.shape()) ||
      shape.tuple_shapes(1).ElementCount() != v->features ||
      shape.tuple_shapes(2).ElementCount() != v->features) {
    return Invalid(instr, "result must be (output, mean, variance)");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(shape);
  if (!out.ok()) return out.status();
  std::vector<double> mean, var;
  Moments(x, *v, mean, var);
  Literal& y = out->mutable_elements()[0];
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const int64_t f = v->Feature(i);
    y.SetFromDouble(i, (x.GetAsDouble(i) - mean[f]) / std::sqrt(var[f] + instr.epsilon) *
                               ops[1].GetAsDouble(f) +
                           ops[2].GetAsDouble(f));
  }
  for (int64_t f = 0; f < v->features; ++f) {
    out->mutable_elements()[1].SetFromDouble(f, mean[f]);
    out->mutable_elements()[2].SetFromDouble(f, var[f]);
  }
  return out;
}

absl::StatusOr<Literal> HandleBatchNormInference(Evaluator& ev, const Instruction& instr,
                                                 Operands& ops) {
  if (ops.size() != 5) return Invalid(instr, "needs operand, scale, offset, mean and variance");
  const Literal& x = ops[0];
  absl::StatusOr<FeatureView> v = View(instr, x);
  if (!v.ok()) return v.status();
  for (int k = 1; k < 5; ++k) {
    if (absl::Status s = CheckVector(instr, ops[k], *v); !s.ok()) return s;
  }
  if (!instr.shape().Compatible(x.shape())) return Invalid(instr, "result must match operand");
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const int64_t f = v->Feature(i);
    const double scale = ops[1].GetAsDouble(f), offset = ops[2].GetAsDouble(f);
    const double mean = ops[3].GetAsDouble(f), var = ops[4].GetAsDouble(f);
    out->SetFromDouble(i,
                       (x.GetAsDouble(i) - mean) / std::sqrt(var + instr.epsilon) * scale + offset);
  }
  return out;
}

absl::StatusOr<Literal> HandleBatchNormGrad(Evaluator& ev, const Instruction& instr,
                                            Operands& ops) {
  if (ops.size() != 5) return Invalid(instr, "needs operand, scale, mean, variance, grad");
  const Literal& x = ops[0];
  const Literal& dy = ops[4];
  absl::StatusOr<FeatureView> v = View(instr, x);
  if (!v.ok()) return v.status();
  for (int k = 1; k < 4; ++k) {
    if (absl::Status s = CheckVector(instr, ops[k], *v); !s.ok()) return s;
  }
  const Shape& shape = instr.shape();
  if (!dy.shape().Compatible(x.shape()) || !shape.IsTuple() || shape.tuple_size() != 3 ||
      !shape.tuple_shapes(0).Compatible(x.shape()) ||
      shape.tuple_shapes(1).ElementCount() != v->features ||
      shape.tuple_shapes(2).ElementCount() != v->features) {
    return Invalid(instr, "result must be (grad_operand, grad_scale, grad_offset)");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(shape);
  if (!out.ok()) return out.status();
  // sum(dy) and sum(dy * (x - mean)) per feature.
  std::vector<double> sum_dy(v->features, 0), sum_dy_xc(v->features, 0);
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const int64_t f = v->Feature(i);
    sum_dy[f] += dy.GetAsDouble(i);
    sum_dy_xc[f] += dy.GetAsDouble(i) * (x.GetAsDouble(i) - ops[2].GetAsDouble(f));
  }
  const double n = static_cast<double>(v->count);
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const int64_t f = v->Feature(i);
    const double var_eps = ops[3].GetAsDouble(f) + instr.epsilon;
    const double xc = x.GetAsDouble(i) - ops[2].GetAsDouble(f);
    const double g = ops[1].GetAsDouble(f) / std::sqrt(var_eps) *
                     (dy.GetAsDouble(i) - sum_dy[f] / n - xc * sum_dy_xc[f] / (n * var_eps));
    out->mutable_elements()[0].SetFromDouble(i, g);
  }
  for (int64_t f = 0; f < v->features; ++f) {
    const double var_eps = ops[3].GetAsDouble(f) + instr.epsilon;
    out->mutable_elements()[1].SetFromDouble(f, sum_dy_xc[f] / std::sqrt(var_eps));
    out->mutable_elements()[2].SetFromDouble(f, sum_dy[f]);
  }
  return out;
}

}  // namespace mltune::ir::eval
