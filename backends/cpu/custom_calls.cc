// The framework custom-calls the backend lowers as elementwise loop ops.
#include "backends/cpu/custom_calls.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/evaluator.h"

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

LibraryCall FindLibraryCall(const ir::Instruction& instr) {
  if (instr.opcode() != ir::Opcode::kCustomCall) return LibraryCall::kNone;
  const ir::Shape& shape = instr.shape();
  if (instr.custom_call_target == "cuda_threefry2x32") {
    if (instr.operand_count() != 4 || !shape.IsTuple() || shape.tuple_size() != 2) {
      return LibraryCall::kNone;
    }
    const int64_t n = shape.tuple_shapes(0).ElementCount();
    auto u32n = [n](const ir::Shape& s) {
      return s.IsArray() && s.element_type() == ir::PrimitiveType::kU32 && s.ElementCount() == n;
    };
    for (const ir::Instruction* op : instr.operands()) {
      if (!u32n(op->shape())) return LibraryCall::kNone;
    }
    if (!u32n(shape.tuple_shapes(0)) || !u32n(shape.tuple_shapes(1))) return LibraryCall::kNone;
    return LibraryCall::kThreefry2x32;
  }
  if (instr.custom_call_target == "cuda_lu_pivots_to_permutation") {
    const ir::Shape& pivots = instr.operand(0)->shape();
    if (instr.operand_count() != 1 || !shape.IsArray() || !pivots.IsArray() ||
        pivots.element_type() != ir::PrimitiveType::kS32 ||
        shape.element_type() != ir::PrimitiveType::kS32 || pivots.rank() < 1 ||
        shape.rank() != pivots.rank() || pivots.dimensions().back() == 0 ||
        shape.dimensions().back() == 0 ||
        pivots.ElementCount() / pivots.dimensions().back() !=
            shape.ElementCount() / shape.dimensions().back()) {
      return LibraryCall::kNone;
    }
    return LibraryCall::kLuPivotsToPermutation;
  }
  static const std::map<std::string, LibraryCall, std::less<>> kLinalg = {
      {"cusolver_potrf", LibraryCall::kPotrf},       {"cusolver_getrf", LibraryCall::kGetrf},
      {"cublas_getrf_batched", LibraryCall::kGetrf}, {"cusolver_geqrf", LibraryCall::kGeqrf},
      {"cusolver_orgqr", LibraryCall::kOrgqr},       {"cublas_trsm_batched", LibraryCall::kTrsm},
  };
  auto it = kLinalg.find(instr.custom_call_target);
  if (it == kLinalg.end() || !shape.IsTuple() || shape.tuple_size() < 1) return LibraryCall::kNone;
  absl::StatusOr<ir::LinalgCall> call = ir::DecodeLinalgCall(instr);
  const ir::PrimitiveType t = instr.operand(0)->shape().element_type();
  if (!call.ok() || (t != ir::PrimitiveType::kF32 && t != ir::PrimitiveType::kF64)) {
    return LibraryCall::kNone;
  }
  // The result's first leaf is the (last) matrix operand's shape; the small results' sizes are
  // the evaluator's (pivots and taus: batch x k, info: batch).
  const ir::Shape& matrix = instr.operand(it->second == LibraryCall::kTrsm ? 1 : 0)->shape();
  if (!shape.tuple_shapes(0).Compatible(matrix)) return LibraryCall::kNone;
  auto has = [&](int64_t leaf, ir::PrimitiveType type, int64_t count) {
    return shape.tuple_size() > leaf && shape.tuple_shapes(leaf).IsArray() &&
           shape.tuple_shapes(leaf).element_type() == type &&
           shape.tuple_shapes(leaf).ElementCount() == count;
  };
  const int64_t b = call->batch, k = call->k;
  switch (it->second) {
    case LibraryCall::kPotrf:
      return has(1, ir::PrimitiveType::kS32, b) ? it->second : LibraryCall::kNone;
    case LibraryCall::kGetrf:
      return has(1, ir::PrimitiveType::kS32, b * k) && has(2, ir::PrimitiveType::kS32, b)
                 ? it->second
                 : LibraryCall::kNone;
    case LibraryCall::kGeqrf:
      return has(1, t, b * k) && has(2, ir::PrimitiveType::kS32, b) ? it->second
                                                                    : LibraryCall::kNone;
    case LibraryCall::kOrgqr:
      return instr.operand_count() == 2 && instr.operand(1)->shape().element_type() == t &&
                     instr.operand(1)->shape().ElementCount() == b * k &&
                     has(1, ir::PrimitiveType::kS32, b)
                 ? it->second
                 : LibraryCall::kNone;
    default:
      return it->second;
  }
}

std::string KnownCustomCallExpr(KnownCustomCall call, const std::string& x, std::string_view ctype,
                                std::string_view std_ns) {
  const std::string t(ctype), ns(std_ns);
  switch (call) {
    case KnownCustomCall::kGeluErf:
      // 0.5 x (1 + erf(x / sqrt(2))), in the element type (the evaluator rounds once from double).
      return absl::StrCat("(", t, ")0.5 * ", x, " * ((", t, ")1 + ", ns, "erf(", x, " * (", t,
                          ")0.70710678118654752440))");
    case KnownCustomCall::kIdentity:
    case KnownCustomCall::kNone:
      break;
  }
  return x;
}

}  // namespace mltune::backends::cpu::internal
