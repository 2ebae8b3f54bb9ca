#include "ir/opcode.h"

#include <array>
#include <string_view>

namespace mltune::ir {
namespace {

constexpr std::string_view kOpcodeNames[] = {
#define MLTUNE_OPCODE_NAME(e, n) n,
    MLTUNE_HLO_OPCODES(MLTUNE_OPCODE_NAME)
#undef MLTUNE_OPCODE_NAME
};

}  // namespace

int OpcodeCount() { return static_cast<int>(std::size(kOpcodeNames)); }

std::string_view OpcodeName(Opcode op) { return kOpcodeNames[static_cast<int>(op)]; }

std::optional<Opcode> ParseOpcode(std::string_view name) {
  for (int i = 0; i < OpcodeCount(); ++i) {
    if (kOpcodeNames[i] == name) return static_cast<Opcode>(i);
  }
  // Older XLA printed the optimization barrier under its long name.
  if (name == "optimization-barrier") return Opcode::kOptimizationBarrier;
  return std::nullopt;
}

bool IsElementwiseUnary(Opcode op) {
  switch (op) {
    case Opcode::kAbs:
    case Opcode::kBitcastConvert:  // same-width only; shape inference checks that
    case Opcode::kCbrt:
    case Opcode::kCeil:
    case Opcode::kClz:
    case Opcode::kConvert:
    case Opcode::kCopy:
    case Opcode::kCos:
    case Opcode::kErf:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kFloor:
    case Opcode::kImag:
    case Opcode::kIsFinite:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kNegate:
    case Opcode::kNot:
    case Opcode::kPopulationCount:
    case Opcode::kReal:
    case Opcode::kReducePrecision:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kRsqrt:
    case Opcode::kSign:
    case Opcode::kSin:
    case Opcode::kSqrt:
    case Opcode::kTan:
    case Opcode::kTanh:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseBinary(Opcode op) {
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kAtan2:
    case Opcode::kCompare:
    case Opcode::kComplex:
    case Opcode::kDivide:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
    case Opcode::kMultiply:
    case Opcode::kOr:
    case Opcode::kPower:
    case Opcode::kRemainder:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
    case Opcode::kStochasticConvert:
    case Opcode::kSubtract:
    case Opcode::kXor:
      return true;
    default:
      return false;
  }
}

bool IsElementwise(Opcode op) {
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == Opcode::kSelect ||
         op == Opcode::kClamp;
}

bool IsCollective(Opcode op) {
  switch (op) {
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
    case Opcode::kAllToAll:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
    case Opcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

bool HasSideEffect(Opcode op) {
  switch (op) {
    case Opcode::kAfterAll:
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kRng:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kOptimizationBarrier:
      return true;
    default:
      return IsCollective(op);
  }
}

}  // namespace mltune::ir
