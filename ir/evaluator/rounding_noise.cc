// Monte Carlo arithmetic for the reference evaluator (EvalOptions::rounding_noise_ulps): random
// errors of rounding size on the results of the ops that round, so that evaluations differing
// only in the noise show which outputs are ill-conditioned. Generated code reassociates sums and
// contracts to FMA; where an output amplifies such differences (sqrt of a difference of nearly
// equal products, say) no fixed tolerance separates a correct backend from a wrong one.
#include "ir/evaluator/rounding_noise.h"

#include <cmath>

#include "ir/evaluator/eval_internal.h"

namespace mltune::ir::eval {
namespace {

// The spacing of the type's values just above 1 (machine epsilon); 0 where no noise applies.
double Epsilon(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16:
      return 0x1p-10;
    case PrimitiveType::kBF16:
      return 0x1p-7;
    case PrimitiveType::kF32:
      return 0x1p-23;
    case PrimitiveType::kF64:
      return 0x1p-52;
    default:
      return 0;  // integers, complex, f8: left exact
  }
}

bool RoundsElementwise(Opcode op) {
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kDivide:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kCbrt:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kPower:
    case Opcode::kAtan2:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kLogistic:
    case Opcode::kErf:
      return true;
    default:
      return false;
  }
}

bool ReducesWithAdd(const Instruction& instr) {
  if (instr.to_apply() == nullptr || !instr.shape().IsArray()) return false;
  std::optional<SimpleBinary> b = MatchSimpleBinary(*instr.to_apply());
  return b.has_value() && b->kind == SimpleBinary::kOp && b->op == Opcode::kAdd;
}

int64_t Product(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[d];
  return p;
}

}  // namespace

NoiseKind RoundingNoiseKind(const Instruction& instr) {
  if (!instr.shape().IsArray() || Epsilon(instr.shape().element_type()) == 0) {
    return NoiseKind::kNone;
  }
  if (RoundsElementwise(instr.opcode())) return NoiseKind::kElementwise;
  switch (instr.opcode()) {
    case Opcode::kDot:
    case Opcode::kConvolution:
      return NoiseKind::kSum;
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
      return ReducesWithAdd(instr) ? NoiseKind::kSum : NoiseKind::kNone;
    default:
      return NoiseKind::kNone;
  }
}

int64_t TermsPerElement(const Instruction& instr, const Operands& ops) {
  const std::vector<int64_t>& in = ops[0].shape().dimensions();
  switch (instr.opcode()) {
    case Opcode::kDot:
      return instr.dot_dnums.has_value() ? Product(in, instr.dot_dnums->lhs_contracting_dimensions)
                                         : 1;
    case Opcode::kConvolution: {
      if (ops.size() < 2 || !instr.conv_dnums.has_value()) return 1;
      const std::vector<int64_t>& kernel = ops[1].shape().dimensions();
      const int64_t out_features = kernel[instr.conv_dnums->kernel_output_feature_dimension];
      return out_features > 0 ? ops[1].element_count() / out_features : 1;
    }
    case Opcode::kReduce: {
      const int64_t out = instr.shape().ElementCount();
      return out > 0 ? ops[0].element_count() / out : 1;
    }
    case Opcode::kReduceWindow: {
      int64_t terms = 1;
      if (instr.window.has_value()) {
        for (const WindowDim& d : instr.window->dims) terms *= d.size;
      }
      return terms;
    }
    default:
      return 1;
  }
}

Literal AbsoluteValues(const Literal& literal) {
  if (!literal.shape().IsArray()) return literal;
  Literal out = literal;
  if (Epsilon(literal.element_type()) == 0) return out;
  for (int64_t i = 0; i < out.element_count(); ++i) {
    out.SetFromDouble(i, std::fabs(out.GetAsDouble(i)));
  }
  return out;
}

void AddRoundingNoise(double ulps, int64_t terms, const Literal* magnitude,
                      const std::function<double()>& next_uniform, Literal& result) {
  const double eps = Epsilon(result.element_type());
  if (eps == 0 || ulps <= 0) return;
  // A reassociated sum of K terms is off by about sqrt(K) roundings of the terms' magnitude.
  const double scale = ulps * eps * std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1)));
  for (int64_t i = 0; i < result.element_count(); ++i) {
    const double y = result.GetAsDouble(i);
    if (!std::isfinite(y)) continue;
    const double size = magnitude != nullptr ? magnitude->GetAsDouble(i) : std::fabs(y);
    result.SetFromDouble(i, y + next_uniform() * scale * size);
  }
}

}  // namespace mltune::ir::eval
