#include "costmodels/analytical/analytical.h"

#include <algorithm>
#include <unordered_set>

#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/opcode.h"
#include "ir/primitive_type.h"

namespace mltune::costmodels {
namespace {

using ir::Opcode;

double Elements(const ir::Shape& shape) {
  return shape.IsArray() ? static_cast<double>(shape.ElementCount()) : 0.0;
}

double ArrayBytes(const ir::Shape& shape) { return static_cast<double>(shape.ByteSize()); }

bool IsFree(Opcode op) {
  switch (op) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kAfterAll:
    case Opcode::kOptimizationBarrier:
      return true;
    default:
      return false;
  }
}

bool IsTranscendental(Opcode op) {
  switch (op) {
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kTanh:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kTan:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kCbrt:
    case Opcode::kPower:
    case Opcode::kAtan2:
    case Opcode::kErf:
      return true;
    default:
      return false;
  }
}

bool IsControlFlow(Opcode op) {
  return op == Opcode::kWhile || op == Opcode::kConditional || op == Opcode::kCall ||
         op == Opcode::kFusion || op == Opcode::kCustomCall || op == Opcode::kMap ||
         op == Opcode::kSort || op == Opcode::kScatter || op == Opcode::kReduce ||
         op == Opcode::kReduceWindow || op == Opcode::kSelectAndScatter ||
         op == Opcode::kAllReduce || op == Opcode::kReduceScatter;
}

double DotFlops(const ir::Instruction& dot) {
  double contracted = 1;
  if (dot.dot_dnums.has_value()) {
    const ir::Shape& lhs = dot.operand(0)->shape();
    for (int64_t d : (*dot.dot_dnums).lhs_contracting_dimensions) {
      contracted *= static_cast<double>(lhs.dimensions()[d]);
    }
  }
  return 2.0 * Elements(dot.shape()) * contracted;
}

double ConvolutionFlops(const ir::Instruction& conv) {
  if (!conv.conv_dnums.has_value()) return 0;
  const ir::ConvolutionDimensionNumbers& d = *conv.conv_dnums;
  const ir::Shape& kernel = conv.operand(1)->shape();
  double per_output = static_cast<double>(kernel.dimensions()[d.kernel_input_feature_dimension]);
  for (int64_t s : d.kernel_spatial_dimensions) {
    per_output *= static_cast<double>(kernel.dimensions()[s]);
  }
  // kernel_input_feature already is input features / feature_group_count.
  return 2.0 * Elements(conv.shape()) * per_output;
}

std::string TypeName(const ir::Shape& shape) {
  return std::string(
      ir::PrimitiveTypeName(shape.IsArray() ? shape.element_type() : ir::PrimitiveType::kF32));
}

// Computations that run per element inside another op: their cost is the caller's.
std::unordered_set<const ir::Computation*> ElementComputations(const ir::Module& module) {
  std::unordered_set<const ir::Computation*> inner;
  for (const ir::Computation* c : module.MakeComputationPostOrder()) {
    for (const ir::Instruction* instr : c->instructions()) {
      switch (instr->opcode()) {
        case Opcode::kReduce:
        case Opcode::kReduceWindow:
        case Opcode::kScatter:
        case Opcode::kSelectAndScatter:
        case Opcode::kSort:
        case Opcode::kMap:
        case Opcode::kAllReduce:
        case Opcode::kReduceScatter:
          for (const ir::Computation* called : instr->called_computations()) inner.insert(called);
          break;
        default:
          break;
      }
    }
  }
  return inner;
}

template <typename Fn>
void ForEachCountedInstruction(const ir::Module& module, Fn fn) {
  const std::unordered_set<const ir::Computation*> inner = ElementComputations(module);
  for (const ir::Computation* c : module.MakeComputationPostOrder()) {
    if (inner.contains(c)) continue;
    for (const ir::Instruction* instr : c->instructions()) fn(*instr);
  }
}

}  // namespace

OpCost& OpCost::operator+=(const OpCost& o) {
  flops += o.flops;
  transcendentals += o.transcendentals;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  matrix_flops += o.matrix_flops;
  return *this;
}

OpCost InstructionCost(const ir::Instruction& instr) {
  OpCost cost;
  const Opcode op = instr.opcode();
  if (IsFree(op)) return cost;
  for (const ir::Instruction* operand : instr.operands()) {
    cost.bytes_read += ArrayBytes(operand->shape());
  }
  if (op == Opcode::kWhile || op == Opcode::kConditional || op == Opcode::kCall) {
    return cost;  // the called computations are counted where they are
  }
  cost.bytes_written = ArrayBytes(instr.shape());
  if (op == Opcode::kDot) {
    cost.flops = cost.matrix_flops = DotFlops(instr);
  } else if (op == Opcode::kConvolution) {
    cost.flops = cost.matrix_flops = ConvolutionFlops(instr);
  } else if (op == Opcode::kReduce || op == Opcode::kReduceWindow || op == Opcode::kAllReduce ||
             op == Opcode::kReduceScatter) {
    // One application of the reducer per input element.
    double inputs = 0;
    for (size_t i = 0; i < instr.operands().size() / 2 + (op == Opcode::kAllReduce ? 1 : 0); ++i) {
      inputs += Elements(instr.operand(static_cast<int64_t>(i))->shape());
    }
    cost.flops = inputs;
  } else if (ir::IsElementwise(op)) {
    cost.flops = Elements(instr.shape());
    if (IsTranscendental(op)) cost.transcendentals = Elements(instr.shape());
  } else if (IsControlFlow(op)) {
    cost.flops = Elements(instr.shape());
  }
  return cost;
}

OpCost ModuleCost(const ir::Module& module) {
  OpCost total;
  ForEachCountedInstruction(module,
                            [&](const ir::Instruction& instr) { total += InstructionCost(instr); });
  return total;
}

double RooflineSeconds(const OpCost& cost, const backends::TargetSpec& spec,
                       const std::string& element_type) {
  const double peak = spec.PeakOps(element_type);
  const double bandwidth = spec.memory.empty() ? 0 : spec.memory.front().bandwidth;
  const double compute = peak > 0 ? (cost.flops + cost.transcendentals) / peak : 0;
  const double memory = bandwidth > 0 ? cost.bytes() / bandwidth : 0;
  return std::max(compute, memory) + spec.kernel_overhead_s;
}

double ModuleRooflineSeconds(const ir::Module& module, const backends::TargetSpec& spec) {
  double seconds = 0;
  ForEachCountedInstruction(module, [&](const ir::Instruction& instr) {
    if (IsFree(instr.opcode())) return;
    seconds += RooflineSeconds(InstructionCost(instr), spec, TypeName(instr.shape()));
  });
  return seconds;
}

}  // namespace mltune::costmodels
