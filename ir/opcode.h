// The HLO opcode set, with XLA's printed names. One X-macro keeps the enum and names in step.
#pragma once

#include <optional>
#include <string_view>

namespace mltune::ir {

// V(enumerator, "printed-name")
#define MLTUNE_HLO_OPCODES(V)                                 \
  V(kAbs, "abs")                                              \
  V(kAdd, "add")                                              \
  V(kAddDependency, "add-dependency")                         \
  V(kAfterAll, "after-all")                                   \
  V(kAllGather, "all-gather")                                 \
  V(kAllGatherDone, "all-gather-done")                        \
  V(kAllGatherStart, "all-gather-start")                      \
  V(kAllReduce, "all-reduce")                                 \
  V(kAllReduceDone, "all-reduce-done")                        \
  V(kAllReduceStart, "all-reduce-start")                      \
  V(kAllToAll, "all-to-all")                                  \
  V(kAnd, "and")                                              \
  V(kAsyncDone, "async-done")                                 \
  V(kAsyncStart, "async-start")                               \
  V(kAsyncUpdate, "async-update")                             \
  V(kAtan2, "atan2")                                          \
  V(kBatchNormGrad, "batch-norm-grad")                        \
  V(kBatchNormInference, "batch-norm-inference")              \
  V(kBatchNormTraining, "batch-norm-training")                \
  V(kBitcast, "bitcast")                                      \
  V(kBitcastConvert, "bitcast-convert")                       \
  V(kBroadcast, "broadcast")                                  \
  V(kCall, "call")                                            \
  V(kCbrt, "cbrt")                                            \
  V(kCeil, "ceil")                                            \
  V(kCholesky, "cholesky")                                    \
  V(kClamp, "clamp")                                          \
  V(kClz, "count-leading-zeros")                              \
  V(kCollectiveBroadcast, "collective-broadcast")             \
  V(kCollectivePermute, "collective-permute")                 \
  V(kCollectivePermuteDone, "collective-permute-done")        \
  V(kCollectivePermuteStart, "collective-permute-start")      \
  V(kCompare, "compare")                                      \
  V(kComplex, "complex")                                      \
  V(kConcatenate, "concatenate")                              \
  V(kConditional, "conditional")                              \
  V(kConstant, "constant")                                    \
  V(kConvert, "convert")                                      \
  V(kConvolution, "convolution")                              \
  V(kCopy, "copy")                                            \
  V(kCopyDone, "copy-done")                                   \
  V(kCopyStart, "copy-start")                                 \
  V(kCos, "cosine")                                           \
  V(kCustomCall, "custom-call")                               \
  V(kDivide, "divide")                                        \
  V(kDomain, "domain")                                        \
  V(kDot, "dot")                                              \
  V(kDynamicReshape, "dynamic-reshape")                       \
  V(kDynamicSlice, "dynamic-slice")                           \
  V(kDynamicUpdateSlice, "dynamic-update-slice")              \
  V(kErf, "erf")                                              \
  V(kExp, "exponential")                                      \
  V(kExpm1, "exponential-minus-one")                          \
  V(kFft, "fft")                                              \
  V(kFloor, "floor")                                          \
  V(kFusion, "fusion")                                        \
  V(kGather, "gather")                                        \
  V(kGetDimensionSize, "get-dimension-size")                  \
  V(kGetTupleElement, "get-tuple-element")                    \
  V(kImag, "imag")                                            \
  V(kInfeed, "infeed")                                        \
  V(kIota, "iota")                                            \
  V(kIsFinite, "is-finite")                                   \
  V(kLog, "log")                                              \
  V(kLog1p, "log-plus-one")                                   \
  V(kLogistic, "logistic")                                    \
  V(kMap, "map")                                              \
  V(kMaximum, "maximum")                                      \
  V(kMinimum, "minimum")                                      \
  V(kMultiply, "multiply")                                    \
  V(kNegate, "negate")                                        \
  V(kNot, "not")                                              \
  V(kOptimizationBarrier, "opt-barrier")                      \
  V(kOr, "or")                                                \
  V(kOutfeed, "outfeed")                                      \
  V(kPad, "pad")                                              \
  V(kParameter, "parameter")                                  \
  V(kPartitionId, "partition-id")                             \
  V(kPopulationCount, "popcnt")                               \
  V(kPower, "power")                                          \
  V(kReal, "real")                                            \
  V(kRecv, "recv")                                            \
  V(kRecvDone, "recv-done")                                   \
  V(kReduce, "reduce")                                        \
  V(kReducePrecision, "reduce-precision")                     \
  V(kReduceScatter, "reduce-scatter")                         \
  V(kReduceWindow, "reduce-window")                           \
  V(kRemainder, "remainder")                                  \
  V(kReplicaId, "replica-id")                                 \
  V(kReshape, "reshape")                                      \
  V(kReverse, "reverse")                                      \
  V(kRng, "rng")                                              \
  V(kRngBitGenerator, "rng-bit-generator")                    \
  V(kRngGetAndUpdateState, "rng-get-and-update-state")        \
  V(kRoundNearestAfz, "round-nearest-afz")                    \
  V(kRoundNearestEven, "round-nearest-even")                  \
  V(kRsqrt, "rsqrt")                                          \
  V(kScatter, "scatter")                                      \
  V(kSelect, "select")                                        \
  V(kSelectAndScatter, "select-and-scatter")                  \
  V(kSend, "send")                                            \
  V(kSendDone, "send-done")                                   \
  V(kSetDimensionSize, "set-dimension-size")                  \
  V(kShiftLeft, "shift-left")                                 \
  V(kShiftRightArithmetic, "shift-right-arithmetic")          \
  V(kShiftRightLogical, "shift-right-logical")                \
  V(kSign, "sign")                                            \
  V(kSin, "sine")                                             \
  V(kSlice, "slice")                                          \
  V(kSort, "sort")                                            \
  V(kSqrt, "sqrt")                                            \
  V(kStochasticConvert, "stochastic-convert")                 \
  V(kSubtract, "subtract")                                    \
  V(kTan, "tan")                                              \
  V(kTanh, "tanh")                                            \
  V(kTopK, "topk")                                            \
  V(kTranspose, "transpose")                                  \
  V(kTriangularSolve, "triangular-solve")                     \
  V(kTuple, "tuple")                                          \
  V(kWhile, "while")                                          \
  V(kXor, "xor")

enum class Opcode {
#define MLTUNE_OPCODE_ENUM(e, n) e,
  MLTUNE_HLO_OPCODES(MLTUNE_OPCODE_ENUM)
#undef MLTUNE_OPCODE_ENUM
};

std::string_view OpcodeName(Opcode op);
std::optional<Opcode> ParseOpcode(std::string_view name);
int OpcodeCount();

// Element-wise unary ops (abs, exp, convert, ...), one operand, same dimensions as output.
bool IsElementwiseUnary(Opcode op);
// Element-wise binary ops (add, compare, shift-left, ...).
bool IsElementwiseBinary(Opcode op);
bool IsElementwise(Opcode op);  // unary, binary, select, clamp
// Ops with observable effects beyond their result (send, infeed, rng, collectives, ...); passes
// must not delete or merge them. Custom-calls decide per instruction: Instruction::HasSideEffect.
bool HasSideEffect(Opcode op);
bool IsCollective(Opcode op);

}  // namespace mltune::ir
