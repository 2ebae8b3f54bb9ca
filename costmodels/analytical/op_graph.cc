#include "costmodels/analytical/op_graph.h"

#include <algorithm>
#include <unordered_map>

#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/opcode.h"
#include "ir/primitive_type.h"

namespace mltune::costmodels {
namespace {

using ir::Opcode;

// Plumbing: not an op, data passes through it to the real producer.
bool IsPlumbing(Opcode op) {
  return op == Opcode::kTuple || op == Opcode::kGetTupleElement || op == Opcode::kBitcast ||
         op == Opcode::kAfterAll || op == Opcode::kOptimizationBarrier;
}

bool IsWeight(Opcode op) { return op == Opcode::kParameter || op == Opcode::kConstant; }

bool IsElementwiseLike(Opcode op) {
  if (ir::IsElementwise(op)) return true;
  switch (op) {
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kConcatenate:
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
    case Opcode::kPad:
    case Opcode::kIota:
    case Opcode::kReverse:
    case Opcode::kCopy:
      return true;
    default:
      return false;
  }
}

bool IsOpaque(Opcode op) {
  switch (op) {
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
    case Opcode::kCustomCall:
    case Opcode::kFusion:
    case Opcode::kSort:
    case Opcode::kScatter:
    case Opcode::kSelectAndScatter:
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
    case Opcode::kTriangularSolve:
    case Opcode::kCholesky:
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
      return true;
    default:
      return ir::IsCollective(op);
  }
}

// Every array of a shape, flattened.
void Arrays(const ir::Shape& shape, std::vector<const ir::Shape*>* out) {
  if (shape.IsTuple()) {
    for (const ir::Shape& s : shape.tuple_shapes()) Arrays(s, out);
  } else if (shape.IsArray()) {
    out->push_back(&shape);
  }
}

double Bytes(const ir::Shape& shape) {
  std::vector<const ir::Shape*> arrays;
  Arrays(shape, &arrays);
  double bytes = 0;
  for (const ir::Shape* s : arrays) bytes += static_cast<double>(s->ByteSize());
  return bytes;
}

// The largest array of a shape (tuples: of its elements), or nullptr when it has none.
const ir::Shape* LargestArray(const ir::Shape& shape) {
  std::vector<const ir::Shape*> arrays;
  Arrays(shape, &arrays);
  const ir::Shape* largest = nullptr;
  for (const ir::Shape* s : arrays) {
    if (largest == nullptr || s->ElementCount() > largest->ElementCount()) largest = s;
  }
  return largest;
}

// An array as a 2-D iteration space: cols = the minor-most dimension (the vector lanes), rows =
// the product of the others.
int64_t Cols(const ir::Shape& array) {
  const std::vector<int64_t>& dims = array.dimensions();
  return dims.empty() ? 1 : std::max<int64_t>(1, dims.back());
}
int64_t Rows(const ir::Shape& array) {
  return std::max<int64_t>(1, array.ElementCount() / Cols(array));
}

OpCost CalledCost(const ir::Computation& computation);

bool CallsComputations(Opcode op) {
  return op == Opcode::kWhile || op == Opcode::kConditional || op == Opcode::kCall ||
         op == Opcode::kFusion;
}

// Adds what `instr`'s called computations run to `cost`. A fusion's memory traffic is its own
// operands and result only, so its body adds work but no bytes.
void AddCalledCosts(const ir::Instruction& instr, OpCost* cost) {
  for (const ir::Computation* called : instr.called_computations()) {
    const OpCost inner = CalledCost(*called);
    cost->flops += inner.flops;
    cost->transcendentals += inner.transcendentals;
    cost->matrix_flops += inner.matrix_flops;
    if (instr.opcode() != Opcode::kFusion) {
      cost->bytes_read += inner.bytes_read;
      cost->bytes_written += inner.bytes_written;
    }
  }
}

// Costs of everything a computation runs, nested control flow included (reducers are inside
// their reduce's cost already).
OpCost CalledCost(const ir::Computation& computation) {
  OpCost total;
  for (const ir::Instruction* instr : computation.instructions()) {
    total += InstructionCost(*instr);
    if (CallsComputations(instr->opcode())) AddCalledCosts(*instr, &total);
  }
  return total;
}

OpCost NodeCost(const ir::Instruction& instr) {
  OpCost cost = InstructionCost(instr);
  if (CallsComputations(instr.opcode())) {
    // A fusion's work is its body's, not one op per result element.
    if (instr.opcode() == Opcode::kFusion) cost.flops = 0;
    AddCalledCosts(instr, &cost);
  }
  return cost;
}

int64_t Product(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[static_cast<size_t>(d)];
  return p;
}

void FillMatmul(const ir::Instruction& instr, OpNode* node) {
  if (instr.opcode() == Opcode::kDot && instr.dot_dnums.has_value()) {
    const ir::DotDimensionNumbers& d = *instr.dot_dnums;
    const std::vector<int64_t>& lhs = instr.operand(0)->shape().dimensions();
    node->matmul = true;
    node->mm.batch = Product(lhs, d.lhs_batch_dimensions);
    node->mm.k = Product(lhs, d.lhs_contracting_dimensions);
    const int64_t bk = std::max<int64_t>(1, node->mm.batch * node->mm.k);
    node->mm.m = instr.operand(0)->shape().ElementCount() / bk;
    node->mm.n = instr.operand(1)->shape().ElementCount() / bk;
  } else if (instr.opcode() == Opcode::kConvolution && instr.conv_dnums.has_value()) {
    const ir::ConvolutionDimensionNumbers& d = *instr.conv_dnums;
    const std::vector<int64_t>& kernel = instr.operand(1)->shape().dimensions();
    const std::vector<int64_t>& out = instr.shape().dimensions();
    node->matmul = true;
    node->mm.n = out[static_cast<size_t>(d.output_feature_dimension)];
    node->mm.m = instr.shape().ElementCount() / std::max<int64_t>(1, node->mm.n);
    node->mm.k = kernel[static_cast<size_t>(d.kernel_input_feature_dimension)] *
                 Product(kernel, d.kernel_spatial_dimensions);
  }
}

}  // namespace

void OpGraph::LinkUsers() {
  for (OpNode& node : nodes) node.users.clear();
  for (int32_t i = 0; i < size(); ++i) {
    for (const OpInput& in : nodes[static_cast<size_t>(i)].inputs) {
      std::vector<int32_t>& users = nodes[static_cast<size_t>(in.node)].users;
      if (users.empty() || users.back() != i) users.push_back(i);
    }
  }
}

OpGraph BuildOpGraph(const ir::Module& module) { return BuildOpGraph(module, *module.entry()); }

OpGraph BuildOpGraph(const ir::Module& module, const ir::Computation& entry) {
  OpGraph graph;
  graph.module_name = module.name();

  // The ops and weights an operand's data comes from, through plumbing.
  struct Source {
    std::vector<int32_t> nodes;
    std::vector<int32_t> weights;
  };
  std::unordered_map<const ir::Instruction*, Source> source_of;
  auto sources = [&](const ir::Instruction* operand) -> const Source& {
    return source_of[operand];
  };

  for (const ir::Instruction* instr : entry.MakePostOrder()) {
    const Opcode op = instr->opcode();
    if (IsWeight(op)) {
      const int32_t id = graph.weight_count++;
      graph.weight_bytes.push_back(Bytes(instr->shape()));
      const ir::Shape* largest = LargestArray(instr->shape());
      graph.weight_rows.push_back(largest != nullptr ? Rows(*largest) : 1);
      graph.weight_cols.push_back(largest != nullptr ? Cols(*largest) : 1);
      source_of[instr].weights.push_back(id);
      continue;
    }
    if (IsPlumbing(op)) {
      Source merged;
      for (const ir::Instruction* operand : instr->operands()) {
        const Source& s = sources(operand);
        merged.nodes.insert(merged.nodes.end(), s.nodes.begin(), s.nodes.end());
        merged.weights.insert(merged.weights.end(), s.weights.begin(), s.weights.end());
      }
      source_of[instr] = std::move(merged);
      continue;
    }
    OpNode node;
    node.name = instr->name();
    node.opcode = std::string(ir::OpcodeName(op));
    if (const ir::Shape* largest = LargestArray(instr->shape()); largest != nullptr) {
      node.element_type = std::string(ir::PrimitiveTypeName(largest->element_type()));
      node.element_bytes = std::max<int64_t>(1, ir::BitWidth(largest->element_type()) / 8);
      node.cols = Cols(*largest);
      node.rows = Rows(*largest);
    } else {
      node.element_type = "f32";
    }
    node.cost = NodeCost(*instr);
    node.output_bytes = Bytes(instr->shape());
    FillMatmul(*instr, &node);
    node.elementwise_like = IsElementwiseLike(op);
    node.opaque = IsOpaque(op);
    const int32_t id = graph.size();
    for (const ir::Instruction* operand : instr->operands()) {
      const Source& s = sources(operand);
      const double bytes = Bytes(operand->shape());
      for (int32_t producer : s.nodes) {
        auto it = std::find_if(node.inputs.begin(), node.inputs.end(),
                               [&](const OpInput& in) { return in.node == producer; });
        // One operand through a tuple names several producers: each sends at most its result.
        const double sent =
            std::min(bytes, graph.nodes[static_cast<size_t>(producer)].output_bytes);
        if (it == node.inputs.end()) {
          node.inputs.push_back({producer, sent});
        } else {
          it->bytes =
              std::min(it->bytes + sent, graph.nodes[static_cast<size_t>(producer)].output_bytes);
        }
      }
      for (int32_t w : s.weights) {
        const bool seen = std::any_of(node.weights.begin(), node.weights.end(),
                                      [&](const OpWeight& x) { return x.id == w; });
        if (!seen) node.weights.push_back({w, graph.weight_bytes[static_cast<size_t>(w)]});
      }
    }
    source_of[instr].nodes.push_back(id);
    graph.nodes.push_back(std::move(node));
  }
  for (int32_t out : sources(entry.root()).nodes)
    graph.nodes[static_cast<size_t>(out)].is_output = true;
  graph.LinkUsers();
  return graph;
}

}  // namespace mltune::costmodels
