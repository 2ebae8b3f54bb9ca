#include "optimizers/pass_order/observation.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "ir/computation.h"
#include "ir/fingerprint.h"
#include "ir/instruction.h"
#include "ir/opcode.h"
#include "ir/primitive_type.h"

namespace mltune::opt::pass_order {
namespace {

using ir::Opcode;

// Opcode families, one per op: their counts sum to the op count. Checked in this order.
enum Family {
  kConstant,
  kElementwiseUnary,
  kElementwiseBinary,
  kElementwiseOther,  // select, clamp
  kConvert,           // convert, bitcast-convert
  kBroadcast,
  kReshape,  // reshape, bitcast, dynamic-reshape
  kTranspose,
  kSlice,      // slice, dynamic-slice, dynamic-update-slice
  kConcatPad,  // concatenate, pad
  kGatherScatter,
  kDot,
  kConvolution,
  kReduce,
  kWindow,  // reduce-window, select-and-scatter
  kTuple,
  kGetTupleElement,
  kCall,
  kWhile,
  kConditional,
  kCustomCall,
  kCollective,
  kOtherSideEffect,
  kIota,
  kOther,
  kFamilyCount
};

constexpr const char* kFamilyNames[kFamilyCount] = {"constant",
                                                    "elementwise_unary",
                                                    "elementwise_binary",
                                                    "elementwise_other",
                                                    "convert",
                                                    "broadcast",
                                                    "reshape",
                                                    "transpose",
                                                    "slice",
                                                    "concatenate_pad",
                                                    "gather_scatter",
                                                    "dot",
                                                    "convolution",
                                                    "reduce",
                                                    "reduce_window",
                                                    "tuple",
                                                    "get_tuple_element",
                                                    "call",
                                                    "while",
                                                    "conditional",
                                                    "custom_call",
                                                    "collective",
                                                    "other_side_effect",
                                                    "iota",
                                                    "other"};

Family FamilyOf(const ir::Instruction& instr) {
  const Opcode op = instr.opcode();
  switch (op) {
    case Opcode::kConstant:
      return kConstant;
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
      return kConvert;
    case Opcode::kBroadcast:
      return kBroadcast;
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kDynamicReshape:
      return kReshape;
    case Opcode::kTranspose:
      return kTranspose;
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
      return kSlice;
    case Opcode::kConcatenate:
    case Opcode::kPad:
      return kConcatPad;
    case Opcode::kGather:
    case Opcode::kScatter:
      return kGatherScatter;
    case Opcode::kDot:
      return kDot;
    case Opcode::kConvolution:
      return kConvolution;
    case Opcode::kReduce:
      return kReduce;
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
      return kWindow;
    case Opcode::kTuple:
      return kTuple;
    case Opcode::kGetTupleElement:
      return kGetTupleElement;
    case Opcode::kCall:
      return kCall;
    case Opcode::kWhile:
      return kWhile;
    case Opcode::kConditional:
      return kConditional;
    case Opcode::kCustomCall:
      return kCustomCall;
    case Opcode::kIota:
      return kIota;
    default:
      break;
  }
  if (ir::IsCollective(op)) return kCollective;
  if (ir::IsElementwiseUnary(op)) return kElementwiseUnary;
  if (ir::IsElementwiseBinary(op)) return kElementwiseBinary;
  if (ir::IsElementwise(op)) return kElementwiseOther;
  if (instr.HasSideEffect()) return kOtherSideEffect;
  return kOther;
}

// Features after the op count and the families; the vector is
// [op_count, computations, entry_ops, entry_parameters, <families>, <these>].
enum Extra {
  kEdges,
  kDeadOps,
  kOneUserOps,
  kMultiUserOps,
  kMaxOperands,
  kMaxUsers,
  kMeanOperands,
  kCriticalPath,
  kScalarResults,
  kRank1Results,
  kRank2Results,
  kRank3PlusResults,
  kTupleResults,
  kFloatResults,
  kIntegerResults,
  kPredResults,
  kLog2TotalElements,
  kLog2MaxElements,
  kLog2TotalBytes,
  kExtraCount
};

constexpr const char* kExtraNames[kExtraCount] = {"edges",
                                                  "dead_ops",
                                                  "one_user_ops",
                                                  "multi_user_ops",
                                                  "max_operands",
                                                  "max_users",
                                                  "mean_operands",
                                                  "critical_path",
                                                  "scalar_results",
                                                  "rank1_results",
                                                  "rank2_results",
                                                  "rank3plus_results",
                                                  "tuple_results",
                                                  "float_results",
                                                  "integer_results",
                                                  "pred_results",
                                                  "log2_total_elements",
                                                  "log2_max_elements",
                                                  "log2_total_bytes"};

constexpr int kHead = 4;  // op_count, computations, entry_ops, entry_parameters

template <typename Fn>
void ForEachOp(const ir::Module& module, Fn fn) {
  for (const ir::Computation* c : module.MakeComputationPostOrder()) {
    for (const ir::Instruction* instr : c->instructions()) {
      if (instr->opcode() != Opcode::kParameter) fn(*c, *instr);
    }
  }
}

double Log2p1(double x) { return std::log2(1.0 + x); }

}  // namespace

int64_t OpCount(const ir::Module& module) {
  int64_t n = 0;
  for (const ir::Computation* c : module.MakeComputationPostOrder()) {
    n += c->instruction_count() - c->parameter_count();
  }
  return n;
}

std::vector<int64_t> OpcodeHistogram(const ir::Module& module) {
  std::vector<int64_t> h(static_cast<size_t>(ir::OpcodeCount()), 0);
  ForEachOp(module, [&](const ir::Computation&, const ir::Instruction& instr) {
    ++h[static_cast<size_t>(instr.opcode())];
  });
  return h;
}

const std::vector<std::string>& GraphFeatureNames() {
  static const std::vector<std::string>* const names = [] {
    auto* v =
        new std::vector<std::string>{"op_count", "computations", "entry_ops", "entry_parameters"};
    for (const char* f : kFamilyNames) v->push_back(std::string("ops_") + f);
    for (const char* e : kExtraNames) v->push_back(e);
    return v;
  }();
  return *names;
}

int GraphFeatureIndex(std::string_view name) {
  const std::vector<std::string>& names = GraphFeatureNames();
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

std::vector<double> GraphFeatures(const ir::Module& module) {
  std::vector<double> f(GraphFeatureNames().size(), 0.0);
  const std::vector<ir::Computation*> computations = module.MakeComputationPostOrder();
  double* family = f.data() + kHead;
  double* extra = family + kFamilyCount;
  double total_elements = 0, max_elements = 0, total_bytes = 0;
  int64_t ops = 0;
  for (const ir::Computation* c : computations) {
    for (const ir::Instruction* instr : c->instructions()) {
      if (instr->opcode() == Opcode::kParameter) continue;
      ++ops;
      ++family[FamilyOf(*instr)];
      const int64_t operands = instr->operand_count();
      const int64_t users = instr->user_count();
      extra[kEdges] += static_cast<double>(operands);
      extra[kMaxOperands] = std::max(extra[kMaxOperands], static_cast<double>(operands));
      extra[kMaxUsers] = std::max(extra[kMaxUsers], static_cast<double>(users));
      if (users == 0 && instr != c->root() && !instr->HasSideEffect()) ++extra[kDeadOps];
      if (users == 1) ++extra[kOneUserOps];
      if (users > 1) ++extra[kMultiUserOps];
      const ir::Shape& shape = instr->shape();
      if (shape.IsArray()) {
        const int64_t rank = shape.rank();
        ++extra[rank == 0   ? kScalarResults
                : rank == 1 ? kRank1Results
                : rank == 2 ? kRank2Results
                            : kRank3PlusResults];
        const ir::PrimitiveType t = shape.element_type();
        if (t == ir::PrimitiveType::kPred) {
          ++extra[kPredResults];
        } else if (ir::IsFloatingPoint(t) || ir::IsComplex(t)) {
          ++extra[kFloatResults];
        } else if (ir::IsIntegral(t)) {
          ++extra[kIntegerResults];
        }
        const double elements = static_cast<double>(shape.ElementCount());
        total_elements += elements;
        max_elements = std::max(max_elements, elements);
      } else {
        ++extra[kTupleResults];
      }
      total_bytes += static_cast<double>(shape.ByteSize());
    }
  }
  f[0] = static_cast<double>(ops);
  f[1] = static_cast<double>(computations.size());
  if (const ir::Computation* entry = module.entry(); entry != nullptr) {
    f[2] = static_cast<double>(entry->instruction_count() - entry->parameter_count());
    f[3] = static_cast<double>(entry->parameter_count());
    // Longest operand chain in the entry, in instructions (parameters included).
    std::unordered_map<const ir::Instruction*, int64_t> depth;
    int64_t longest = 0;
    for (const ir::Instruction* instr : entry->MakePostOrder()) {
      int64_t d = 0;
      for (const ir::Instruction* op : instr->operands()) d = std::max(d, depth[op]);
      depth[instr] = d + 1;
      longest = std::max(longest, d + 1);
    }
    extra[kCriticalPath] = static_cast<double>(longest);
  }
  extra[kMeanOperands] = ops > 0 ? extra[kEdges] / static_cast<double>(ops) : 0.0;
  extra[kLog2TotalElements] = Log2p1(total_elements);
  extra[kLog2MaxElements] = Log2p1(max_elements);
  extra[kLog2TotalBytes] = Log2p1(total_bytes);
  return f;
}

Observation Observe(const ir::Module& module, const ScoreFn& score_fn) {
  Observation o;
  o.op_count = OpCount(module);
  o.score = score_fn ? score_fn(module) : static_cast<double>(o.op_count);
  o.opcode_histogram = OpcodeHistogram(module);
  o.features = GraphFeatures(module);
  o.fingerprint = ir::Fingerprint(module);
  return o;
}

}  // namespace mltune::opt::pass_order
