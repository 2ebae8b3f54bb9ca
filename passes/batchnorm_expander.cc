// batchnorm_expander: XLA's BatchNormExpander (training, inference and grad all rewritten, as the
// CPU and GPU pipelines configure it). Each batch-norm op becomes XLA's elementwise ops and
// add-reductions over every dimension but the feature one:
//   training:  mean = E[X], var = E[X^2] - E[X]^2,
//              Y = (X - mean) * rsqrt(var + eps) * scale + offset
//   inference: s = scale * rsqrt(var + eps), Y = X * s + (offset - mean * s)
//   grad:      dX = scale * rsqrt(var + eps) / N * (N * dY - sum(dY) - (X - mean) *
//                   sum(dY * (X - mean)) / (var + eps)),
//              dscale = sum(dY * (X - mean)) * rsqrt(var + eps), doffset = sum(dY)
// One deliberate difference: XLA computes in the operand type; here operands narrower than f64
// are converted to f64, computed, and rounded back once. Batch-norm is defined (and evaluated by
// the reference evaluator) as one rounding of the exact result; in f32 the forms above lose more
// than the float tolerance when the variance is small (X * s and mean * s cancel), and in bf16 far
// more. Element counts are constants since shapes are static.
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

constexpr PrimitiveType kCompute = PrimitiveType::kF64;

// Builds the expansion of one batch-norm op in its computation.
class Expansion {
 public:
  // `add` caches the scalar add computation across the expansions of one pass run.
  Expansion(ir::Module& module, Instruction* bn, Computation*& add)
      : module_(module), c_(*bn->parent()), bn_(bn), feature_(bn->feature_index), add_(add) {
    const Shape& x = bn->operand(0)->shape();
    dims_ = x.dimensions();
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d != feature_) {
        reduce_dims_.push_back(d);
        count_ *= dims_[d];
      }
    }
    features_ = {dims_[feature_]};
  }

  Instruction* Training() {
    Instruction* x = Operand(0);
    Instruction* scale = Operand(1);
    Instruction* offset = Operand(2);
    Instruction* sum = Sum(x);
    Instruction* squared_sum = Sum(Mul(x, x));
    Instruction* mean = Div(sum, FeatureScalar(count_));
    Instruction* square_mean = Div(squared_sum, FeatureScalar(count_));
    Instruction* var = Sub(square_mean, Mul(mean, mean));
    Instruction* rsqrt = Unary(Opcode::kRsqrt, Add(ToX(var), XScalar(Epsilon())));
    Instruction* normalized = Mul(Sub(x, ToX(mean)), rsqrt);
    Instruction* y = Add(Mul(normalized, ToX(scale)), ToX(offset));
    return MakeTuple(c_, {Result(y, 0), Result(mean, 1), Result(var, 2)});
  }

  Instruction* Inference() {
    Instruction* x = Operand(0);
    Instruction* scale = Operand(1);
    Instruction* offset = Operand(2);
    Instruction* mean = Operand(3);
    Instruction* var = Operand(4);
    Instruction* true_scale = Mul(scale, Unary(Opcode::kRsqrt, Add(var, FeatureScalar(Epsilon()))));
    Instruction* true_shift = Sub(offset, Mul(mean, true_scale));
    Instruction* y = Add(Mul(x, ToX(true_scale)), ToX(true_shift));
    return Result(y, -1);
  }

  Instruction* Grad() {
    Instruction* x = Operand(0);
    Instruction* scale = Operand(1);
    Instruction* mean = Operand(2);
    Instruction* var = Operand(3);
    Instruction* dy = Operand(4);
    Instruction* var_eps = Add(ToX(var), XScalar(Epsilon()));
    Instruction* rsqrt_feature = Unary(Opcode::kRsqrt, Add(var, FeatureScalar(Epsilon())));
    Instruction* centered = Sub(x, ToX(mean));
    Instruction* sum_dy_centered = Sum(Mul(dy, centered));
    Instruction* grad_offset = Sum(dy);
    Instruction* grad_scale = Mul(sum_dy_centered, rsqrt_feature);
    Instruction* i4 = Mul(ToX(sum_dy_centered), centered);
    Instruction* i5 = Div(i4, var_eps);
    Instruction* factor = Div(Mul(scale, rsqrt_feature), FeatureScalar(count_));
    Instruction* i1 = Mul(dy, XScalar(count_));
    Instruction* i6 = Sub(Sub(i1, ToX(grad_offset)), i5);
    Instruction* grad_x = Mul(ToX(factor), i6);
    return MakeTuple(c_, {Result(grad_x, 0), Result(grad_scale, 1), Result(grad_offset, 2)});
  }

 private:
  double Epsilon() const { return static_cast<double>(bn_->epsilon); }

  Instruction* Operand(int64_t k) {
    Instruction* op = bn_->operand(k);
    if (op->shape().element_type() == kCompute) return op;
    return MakeConvert(c_, op, kCompute);
  }

  // `v` rounded to the type of result element `k` (-1: the array result).
  Instruction* Result(Instruction* v, int64_t k) {
    const Shape& shape = k < 0 ? bn_->shape() : bn_->shape().tuple_shapes(k);
    if (shape.element_type() == kCompute) return v;
    return MakeConvert(c_, v, shape.element_type());
  }

  Instruction* Scalar(double value, const std::vector<int64_t>& dims) {
    return MakeBroadcast(c_, MakeScalarConstant(c_, kCompute, value), dims, {});
  }
  Instruction* XScalar(double value) { return Scalar(value, dims_); }
  Instruction* FeatureScalar(double value) { return Scalar(value, features_); }
  Instruction* ToX(Instruction* per_feature) {
    return MakeBroadcast(c_, per_feature, dims_, {feature_});
  }

  Instruction* Add(Instruction* a, Instruction* b) { return MakeBinary(c_, Opcode::kAdd, a, b); }
  Instruction* Sub(Instruction* a, Instruction* b) {
    return MakeBinary(c_, Opcode::kSubtract, a, b);
  }
  Instruction* Mul(Instruction* a, Instruction* b) {
    return MakeBinary(c_, Opcode::kMultiply, a, b);
  }
  Instruction* Div(Instruction* a, Instruction* b) { return MakeBinary(c_, Opcode::kDivide, a, b); }
  Instruction* Unary(Opcode op, Instruction* a) { return MakeUnary(c_, op, a); }

  Instruction* Sum(Instruction* v) {
    Instruction* zero = MakeScalarConstant(c_, kCompute, 0);
    Instruction* r = AddInstr(c_, Opcode::kReduce, Shape(kCompute, features_), {v, zero});
    r->dimensions = reduce_dims_;
    r->mutable_called_computations().push_back(AddComputation());
    return r;
  }

  // A scalar f64 add computation, made once per pass run.
  Computation* AddComputation() {
    if (add_ != nullptr) return add_;
    add_ = module_.AddComputation(
        std::make_unique<Computation>(UniqueComputationName(module_, "batchnorm_expander.add")));
    auto param = [&](int64_t n) {
      auto p = std::make_unique<Instruction>(Opcode::kParameter, Shape::Scalar(kCompute),
                                             module_.UniqueInstructionName(absl::StrCat("x", n)));
      p->parameter_number = n;
      return add_->AddInstruction(std::move(p));
    };
    Instruction* a = param(0);
    Instruction* b = param(1);
    add_->set_root(MakeBinary(*add_, Opcode::kAdd, a, b));
    return add_;
  }

  ir::Module& module_;
  Computation& c_;
  Instruction* bn_;
  int64_t feature_;
  std::vector<int64_t> dims_, features_, reduce_dims_;
  double count_ = 1;
  Computation*& add_;
};

bool Matches(const Instruction* i) {
  if (i->opcode() != Opcode::kBatchNormTraining && i->opcode() != Opcode::kBatchNormInference &&
      i->opcode() != Opcode::kBatchNormGrad) {
    return false;
  }
  const Shape& x = i->operand(0)->shape();
  if (!x.IsArray() || !x.is_static() || !ir::IsFloatingPoint(x.element_type()) ||
      i->feature_index < 0 || i->feature_index >= x.rank() || !i->control_predecessors().empty() ||
      !i->control_successors().empty()) {
    return false;
  }
  for (const Instruction* op : i->operands()) {
    if (!op->shape().IsArray() || !ir::IsFloatingPoint(op->shape().element_type())) return false;
  }
  return true;
}

class BatchNormExpander : public Pass {
 public:
  std::string_view name() const override { return "batchnorm_expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    Computation* add = nullptr;
    for (Computation* c : module.computations()) {
      for (Instruction* bn : c->MakePostOrder()) {
        if (!Matches(bn)) continue;
        Expansion e(module, bn, add);
        Instruction* replacement = bn->opcode() == Opcode::kBatchNormTraining    ? e.Training()
                                   : bn->opcode() == Opcode::kBatchNormInference ? e.Inference()
                                                                                 : e.Grad();
        bn->ReplaceAllUsesWith(replacement);
        RemoveInstructionAndUnusedOperands(bn);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterBatchNormExpander(Registry& registry) {
  registry.Register({"batchnorm_expander",
                     "rewrites batch-norm training/inference/grad into elementwise ops and reduces",
                     [] { return std::make_unique<BatchNormExpander>(); }});
}

}  // namespace mltune::passes
