// The framework custom-calls the backend lowers as elementwise loop ops.
#include "backends/cpu/custom_calls.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace mltune::backends::cpu::internal {

KnownCustomCall FindKnownCustomCall(const ir::Instruction& instr) {
  static const std::map<std::string, KnownCustomCall, std::less<>> kTargets = {
      {"AwsNeuronTransferWithStaticRing", KnownCustomCall::kIdentity},
      {"AwsNeuronGelu", KnownCustomCall::kGeluErf},
  };
  if (instr.opcode() != ir::Opcode::kCustomCall || instr.operand_count() != 1) {
    return KnownCustomCall::kNone;
  }
  auto it = kTargets.find(instr.custom_call_target);
  if (it == kTargets.end()) return KnownCustomCall::kNone;
  const ir::Shape& in = instr.operand(0)->shape();
  if (!instr.shape().IsArray() || !in.IsArray() || !in.Compatible(instr.shape())) {
    return KnownCustomCall::kNone;
  }
  if (it->second == KnownCustomCall::kGeluErf && !ir::IsFloatingPoint(in.element_type())) {
    return KnownCustomCall::kNone;
  }
  return it->second;
}

std::string KnownCustomCallExpr(KnownCustomCall call, const std::string& x,
                                std::string_view ctype) {
  const std::string t(ctype);
  switch (call) {
    case KnownCustomCall::kGeluErf:
      // 0.5 x (1 + erf(x / sqrt(2))), in the element type (the evaluator rounds once from double).
      return absl::StrCat("(", t, ")0.5 * ", x, " * ((", t, ")1 + std::erf(", x, " * (", t,
                          ")0.70710678118654752440))");
    case KnownCustomCall::kIdentity:
    case KnownCustomCall::kNone:
      break;
  }
  return x;
}

}  // namespace mltune::backends::cpu::internal
