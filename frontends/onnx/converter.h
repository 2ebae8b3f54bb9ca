// What an op converter sees (internal to mltune_frontend_onnx): an Emitter that adds IR
// instructions with inferred shapes, and the NodeContext of the node being converted. Each ops_*.cc
// file adds its converters to the OpRegistry through one Register*Ops function called from
// all_ops.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/literal.h"
#include "ir/module.h"
#include "onnx/onnx_pb.h"

// `auto lhs = value of expr`, returning expr's error from the enclosing function.
#define MLTUNE_ASSIGN(lhs, expr)                \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = std::move(*lhs##_or)

namespace mltune::ir::onnx {

// Adds instructions to one computation. Helpers that cannot fail on consistent operands return
// the instruction; Add() infers the shape and returns the inference error for anything else.
class Emitter {
 public:
  Emitter(Module& module, Computation& computation) : module_(module), c_(computation) {}
  Module& module() { return module_; }
  Computation& computation() { return c_; }

  // A new instruction whose shape comes from shape inference (or `shape` when given).
  absl::StatusOr<Instruction*> Add(Opcode opcode, const std::vector<Instruction*>& operands,
                                   const std::function<void(Instruction&)>& set_attributes = {},
                                   std::optional<Shape> shape = std::nullopt);
  Instruction* Parameter(int64_t number, const Shape& shape, std::string_view name);
  Instruction* Constant(Literal value);
  // A scalar of `type` holding `value`, converted as a convert op would.
  Instruction* Scalar(PrimitiveType type, double value);
  // `value` in x's type, broadcast to x's dimensions.
  Instruction* Full(Instruction* like, double value);
  Instruction* Full(PrimitiveType type, const std::vector<int64_t>& dims, double value);
  // A rank-1 s64 constant.
  Instruction* Int64s(const std::vector<int64_t>& values);

  Instruction* Broadcast(Instruction* x, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& mapping);
  // Numpy's unidirectional broadcast of x to `dims` (x's dimensions aligned to the right).
  absl::StatusOr<Instruction*> BroadcastTo(Instruction* x, const std::vector<int64_t>& dims);
  // Numpy's multidirectional broadcast of all operands to one shape.
  absl::StatusOr<std::vector<Instruction*>> BroadcastAll(const std::vector<Instruction*>& xs);
  Instruction* Reshape(Instruction* x, const std::vector<int64_t>& dims);
  Instruction* Transpose(Instruction* x, const std::vector<int64_t>& permutation);
  Instruction* Convert(Instruction* x, PrimitiveType type);
  Instruction* Unary(Opcode opcode, Instruction* x);
  // Elementwise, after numpy broadcasting of the operands.
  absl::StatusOr<Instruction*> Binary(Opcode opcode, Instruction* a, Instruction* b);
  absl::StatusOr<Instruction*> Compare(ComparisonDirection direction, Instruction* a,
                                       Instruction* b);
  absl::StatusOr<Instruction*> Select(Instruction* pred, Instruction* a, Instruction* b);
  Instruction* Slice(Instruction* x, const std::vector<SliceDim>& slice);
  // The slice [start, limit) of one dimension.
  Instruction* SliceDim(Instruction* x, int64_t dim, int64_t start, int64_t limit,
                        int64_t stride = 1);
  absl::StatusOr<Instruction*> Concatenate(const std::vector<Instruction*>& xs, int64_t dim);
  Instruction* Iota(PrimitiveType type, const std::vector<int64_t>& dims, int64_t iota_dim);
  // reduce(x, init) over `dims` with the scalar computation `combiner` (add, multiply, maximum,
  // minimum, and, or).
  Instruction* Reduce(Instruction* x, const std::vector<int64_t>& dims, Opcode combiner,
                      double init);
  // reduce-window with `combiner` over `window` (one WindowDim per dimension of x).
  absl::StatusOr<Instruction*> ReduceWindow(Instruction* x, const Window& window, Opcode combiner,
                                            double init);
  absl::StatusOr<Instruction*> Dot(Instruction* lhs, Instruction* rhs,
                                   const DotDimensionNumbers& dnums);
  Instruction* Tuple(const std::vector<Instruction*>& xs);
  Instruction* GetTupleElement(Instruction* tuple, int64_t index);
  // x with dimensions of extent 1 inserted at `axes` of the result.
  Instruction* InsertUnitDims(Instruction* x, const std::vector<int64_t>& axes);

  // The instruction of a helper result that cannot fail on a valid model; on an error (operands a
  // malformed model made inconsistent) records it, for the node to fail with, and returns
  // `fallback` so the converter can finish without crashing.
  Instruction* Must(absl::StatusOr<Instruction*> result, Instruction* fallback);
  // The first error Must recorded since the last call, and clears it.
  absl::Status TakeError();

  // The computation `(a, b) -> combiner(a, b)` on scalars of `type`, made once per module.
  Computation* ScalarComputation(Opcode combiner, PrimitiveType type);

 private:
  Module& module_;
  Computation& c_;
  absl::Status error_;
};

// Value names visible at a node: graph inputs, initializers, earlier outputs, and those of the
// enclosing graphs for a subgraph.
using Scope = std::unordered_map<std::string, Instruction*>;

// The import in progress, as converters see it.
class Importer {
 public:
  virtual ~Importer() = default;
  // Converts a subgraph's initializers and nodes into `emitter`'s computation, with `scope` holding
  // its inputs and the outer values it uses; returns its outputs.
  virtual absl::StatusOr<std::vector<Instruction*>> ConvertGraph(const ::onnx::GraphProto& graph,
                                                                 Emitter& emitter, Scope scope) = 0;
  // The value of `x` at import time: `x` must not depend on a parameter (a graph input that was
  // not bound). `what` names x in the error ("input 1 ('shape')").
  virtual absl::StatusOr<Literal> Fold(Instruction* x, const std::string& what) = 0;
  // A zero-filled literal for a constant the converter computes, within the import's budget.
  virtual absl::StatusOr<Literal> NewLiteral(const Shape& shape) = 0;
};

// The node being converted: its inputs as instructions, its attributes, and errors that name it.
class NodeContext {
 public:
  NodeContext(Importer& importer, Emitter& emitter, const ::onnx::NodeProto& node, int64_t opset,
              std::vector<Instruction*> inputs, std::string location, const Scope& scope)
      : scope_(scope),
        importer_(importer),
        emitter_(emitter),
        node_(node),
        opset_(opset),
        inputs_(std::move(inputs)),
        location_(std::move(location)) {}

  Emitter& b() { return emitter_; }
  Importer& importer() { return importer_; }
  // The names visible at this node (for the outer values a subgraph uses).
  const Scope& scope() const { return scope_; }
  const ::onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  // The opset version of the node's domain that the model imports.
  int64_t opset() const { return opset_; }

  int64_t input_count() const { return static_cast<int64_t>(inputs_.size()); }
  // False for an input that is absent or given as "" (an omitted optional input).
  bool has_input(int64_t i) const { return i < input_count() && inputs_[i] != nullptr; }
  Instruction* input(int64_t i) const { return has_input(i) ? inputs_[i] : nullptr; }
  // The input, or an error naming it when it is missing.
  absl::StatusOr<Instruction*> required_input(int64_t i) const;
  int64_t output_count() const { return node_.output_size(); }
  // False for an output that is absent or named "".
  bool wants_output(int64_t i) const {
    return i < output_count() && !node_.output(static_cast<int>(i)).empty();
  }

  // The value of input i, which must be known at import time: a constant, an expression of
  // constants (folded with the reference evaluator), or a bound graph input.
  absl::StatusOr<Literal> constant_input(int64_t i);
  absl::StatusOr<std::vector<int64_t>> constant_ints(int64_t i);
  absl::StatusOr<std::vector<double>> constant_doubles(int64_t i);
  // A zero-filled literal of `shape` for a constant the converter computes (bounded by
  // OnnxImportOptions::max_constant_bytes).
  absl::StatusOr<Literal> NewLiteral(const Shape& shape);

  bool has_attr(const std::string& name) const { return FindAttr(name) != nullptr; }
  absl::StatusOr<int64_t> attr_int(const std::string& name, std::optional<int64_t> def = {}) const;
  absl::StatusOr<float> attr_float(const std::string& name, std::optional<float> def = {}) const;
  absl::StatusOr<std::string> attr_string(const std::string& name,
                                          std::optional<std::string> def = {}) const;
  absl::StatusOr<std::vector<int64_t>> attr_ints(
      const std::string& name, std::optional<std::vector<int64_t>> def = {}) const;
  absl::StatusOr<std::vector<float>> attr_floats(const std::string& name,
                                                 std::optional<std::vector<float>> def = {}) const;
  absl::StatusOr<Literal> attr_tensor(const std::string& name) const;
  const ::onnx::GraphProto* attr_graph(const std::string& name) const;
  const ::onnx::AttributeProto* FindAttr(const std::string& name) const;
  // Marks attributes the conversion does not need to read (redundant with the operands, as
  // Conv's kernel_shape, or without effect on the result).
  void IgnoreAttrs(std::initializer_list<const char*> names) const;
  // The first attribute of the node that the conversion never read: it may change the result,
  // so the node is refused rather than imported without it.
  std::optional<std::string> UnreadAttr() const;

  // InvalidArgument "FILE: node N 'name' (OpType, opset V): message".
  absl::Status Error(const std::string& message) const;
  // Unimplemented, same form.
  absl::Status Unsupported(const std::string& message) const;
  // Adds the node's location to an error from a helper.
  absl::Status Annotate(const absl::Status& status) const;

  // An axis attribute in [-rank, rank) made non-negative, or an error.
  absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) const;
  // Each of `axes` normalized as above, in their order; an error where one repeats.
  absl::StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int64_t rank) const;

 private:
  const Scope& scope_;
  mutable std::set<std::string> read_attrs_;
  Importer& importer_;
  Emitter& emitter_;
  const ::onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<Instruction*> inputs_;
  std::string location_;
};

// A converter returns one instruction per node output (nullptr for an output it does not make,
// allowed only where the node does not ask for it).
using Outputs = absl::StatusOr<std::vector<Instruction*>>;
using OpConverter = std::function<absl::StatusOr<std::vector<Instruction*>>(NodeContext&)>;

struct OpInfo {
  std::string domain;  // "" for the default ai.onnx domain
  std::string op_type;
  OpConverter convert;
  // Inputs whose value (not only shape) the conversion needs at import time; graph inputs they
  // depend on are folded from OnnxImportOptions::input_values.
  std::vector<int64_t> constant_inputs;
};

class OpRegistry {
 public:
  static const OpRegistry& Global();
  void Register(std::string op_type, OpConverter convert, std::vector<int64_t> constant_inputs = {},
                std::string domain = "");
  const OpInfo* Find(std::string_view domain, std::string_view op_type) const;
  std::vector<const OpInfo*> List() const;

 private:
  std::map<std::pair<std::string, std::string>, OpInfo, std::less<>> ops_;
};

// a * b, or nullopt when it overflows int64 (shapes from a model are not trusted to fit).
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The single output `x` (or its error).
inline Outputs One(absl::StatusOr<Instruction*> x) {
  if (!x.ok()) return x.status();
  return std::vector<Instruction*>{*x};
}

// Defined in all_ops.cc: calls every ops file's Register*Ops.
void RegisterAllOps(OpRegistry& registry);

}  // namespace mltune::ir::onnx
