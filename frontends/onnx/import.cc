// The model walk: opsets, initializers, graph inputs (bound or parameters), nodes in order
// through the op registry, outputs as the root tuple.
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/onnx/tensor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_builder.h"
#include "ir/verifier.h"
#include "passes/registry.h"

namespace mltune::ir::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::ValueInfoProto;

// Ops whose outputs depend only on their input's shape: the binding walk stops at them.
bool ReadsOnlyShape(const NodeProto& node) {
  return node.domain().empty() && (node.op_type() == "Shape" || node.op_type() == "Size");
}

std::string DomainKey(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

absl::StatusOr<ModelProto> ParseModel(std::string_view bytes, int64_t max_bytes,
                                      const std::string& display) {
  if (static_cast<int64_t>(bytes.size()) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(display, ": ", bytes.size(), " bytes is over the limit of ", max_bytes));
  }
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(static_cast<int>(std::min<int64_t>(max_bytes, INT32_MAX)));
  // Subgraphs nest messages; protobuf's default depth (100) would refuse deep but valid models.
  in.SetRecursionLimit(1000);
  ModelProto model;
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(
        absl::StrCat(display, ": not a valid ONNX ModelProto (protobuf parsing failed)"));
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": the model has no graph"));
  }
  return model;
}

class ImporterImpl : public Importer {
 public:
  ImporterImpl(const ModelProto& model, const OnnxImportOptions& options)
      : model_(model), options_(options), display_(options.display_name) {}

  absl::StatusOr<OnnxImport> Run() {
    OnnxImport result;
    for (const auto& op : model_.opset_import()) {
      opsets_[DomainKey(op.domain())] = op.version();
      result.opsets[op.domain().empty() ? "ai.onnx" : op.domain()] = op.version();
    }
    if (model_.opset_import_size() == 0) {
      // IR version 2 models may omit it; they are opset 1.
      opsets_[""] = 1;
      result.opsets["ai.onnx"] = 1;
    }
    const GraphProto& graph = model_.graph();
    std::string name = graph.name().empty() ? "onnx_model" : graph.name();
    auto module = std::make_unique<Module>(SanitizeName(name));
    Computation* entry = module->AddComputation(std::make_unique<Computation>("main"));
    module->set_entry(entry);
    Emitter b(*module, *entry);
    module_ = module.get();

    if (absl::Status s = ImportInitializers(graph, b); !s.ok()) return s;
    if (absl::Status s = ImportInputs(graph, b, result); !s.ok()) return s;
    for (int i = 0; i < graph.node_size(); ++i) {
      if (absl::Status s = ConvertNode(graph.node(i), i, b, scope_); !s.ok()) return s;
    }
    std::vector<Instruction*> outputs;
    for (const ValueInfoProto& out : graph.output()) {
      auto it = scope_.find(out.name());
      if (it == scope_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(display_, ": graph output '", out.name(),
                                                       "' is not produced by any node"));
      }
      outputs.push_back(it->second);
      result.output_names.push_back(out.name());
    }
    entry->set_root(b.Tuple(outputs));
    // What folding and inlined branches left unused: XLA's DCE, computations included.
    absl::StatusOr<std::unique_ptr<passes::Pass>> dce = passes::Registry::Global().Create("dce");
    if (!dce.ok()) return dce.status();
    if (absl::StatusOr<bool> ran = (*dce)->Run(*module); !ran.ok()) return ran.status();
    if (absl::Status s = VerifyModule(*module); !s.ok()) {
      return absl::InternalError(
          absl::StrCat(display_, ": the imported module does not verify: ", s.message()));
    }
    result.module = std::move(module);
    return result;
  }

  absl::StatusOr<Literal> Fold(Instruction* x, const std::string& what) override {
    if (x->opcode() == Opcode::kConstant && x->literal.has_value()) return *x->literal;
    std::unordered_set<const Instruction*> seen;
    if (const Instruction* p = FindParameter(x, seen)) {
      auto it = parameter_inputs_.find(p);
      std::string input = it == parameter_inputs_.end() ? p->name() : it->second;
      return absl::InvalidArgumentError(
          absl::StrCat(what,
                       " must be known at import time (mltune's shapes are static), but it depends "
                       "on graph input '",
                       input,
                       "': give its value (OnnxImportOptions::input_values) or "
                       "make it an initializer"));
    }
    Module scratch("onnx_fold");
    Computation* entry = scratch.AddComputation(std::make_unique<Computation>("fold"));
    scratch.set_entry(entry);
    std::unordered_map<const Instruction*, Instruction*> copies;
    entry->set_root(CloneTree(x, *entry, copies));
    EvalOptions eval;
    eval.max_array_bytes = options_.max_constant_bytes;
    eval.max_loop_iterations = 100'000;
    absl::StatusOr<Literal> value = Evaluate(scratch, {}, eval);
    if (!value.ok()) {
      return absl::Status(value.status().code(),
                          absl::StrCat(what, ": folding it failed: ", value.status().message()));
    }
    return value;
  }

  absl::StatusOr<Literal> NewLiteral(const Shape& shape) override {
    if (!shape.is_static() || shape.ByteSize() > options_.max_constant_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a constant of ", shape.ToString(false), " is over the limit of ",
          options_.max_constant_bytes, " bytes (OnnxImportOptions::max_constant_bytes)"));
    }
    return Literal::Create(shape, options_.max_constant_bytes);
  }

  absl::StatusOr<std::vector<Instruction*>> ConvertGraph(const GraphProto& graph, Emitter& b,
                                                         Scope scope) override {
    for (const auto& t : graph.initializer()) {
      absl::StatusOr<Literal> value = LiteralFromTensor(t);
      if (!value.ok()) return value.status();
      scope[t.name()] = b.Constant(std::move(*value));
    }
    for (int i = 0; i < graph.node_size(); ++i) {
      if (absl::Status s = ConvertNode(graph.node(i), i, b, scope, graph.name()); !s.ok()) {
        return s;
      }
    }
    std::vector<Instruction*> outputs;
    for (const ValueInfoProto& out : graph.output()) {
      auto it = scope.find(out.name());
      if (it == scope.end()) {
        return absl::InvalidArgumentError(absl::StrCat(display_, ": subgraph '", graph.name(),
                                                       "' output '", out.name(),
                                                       "' is not produced by any node"));
      }
      outputs.push_back(it->second);
    }
    return outputs;
  }

  // Converts one node, binding its outputs in `scope`.
  absl::Status ConvertNode(const NodeProto& node, int index, Emitter& b, Scope& scope,
                           const std::string& subgraph = "") {
    const std::string domain = DomainKey(node.domain());
    auto opset_it = opsets_.find(domain);
    const int64_t opset = opset_it == opsets_.end() ? -1 : opset_it->second;
    std::string location =
        absl::StrCat(display_, subgraph.empty() ? "" : absl::StrCat(": subgraph '", subgraph, "'"),
                     ": node ", index);
    if (!node.name().empty()) absl::StrAppend(&location, " '", node.name(), "'");
    absl::StrAppend(&location, " (", domain.empty() ? "" : domain + ":", node.op_type(), ", opset ",
                    opset, ")");
    if (opset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(location, ": the model does not import domain '", node.domain(), "'"));
    }
    const OpInfo* info = OpRegistry::Global().Find(domain, node.op_type());
    if (info == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(location, ": op type '", node.op_type(), "' is not supported"));
    }
    std::vector<Instruction*> inputs;
    for (const std::string& in : node.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = scope.find(in);
      if (it == scope.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(location, ": input '", in,
                         "' is not a graph input, an initializer or an earlier node's output"));
      }
      inputs.push_back(it->second);
    }
    NodeContext ctx(*this, b, node, opset, std::move(inputs), location, scope);
    absl::StatusOr<std::vector<Instruction*>> outputs = info->convert(ctx);
    absl::Status helper_error = b.TakeError();
    if (!outputs.ok()) return ctx.Annotate(outputs.status());
    if (!helper_error.ok()) return ctx.Annotate(helper_error);
    if (std::optional<std::string> unread = ctx.UnreadAttr()) {
      return ctx.Unsupported(absl::StrCat("attribute '", *unread, "' is not supported"));
    }
    if (module_->instruction_count() > options_.max_instructions) {
      return ctx.Annotate(absl::ResourceExhaustedError(
          absl::StrCat("the module has grown past ", options_.max_instructions,
                       " instructions (OnnxImportOptions::max_instructions)")));
    }
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty()) continue;
      if (i >= static_cast<int>(outputs->size()) || (*outputs)[i] == nullptr) {
        return ctx.Unsupported(
            absl::StrCat("output ", i, " ('", node.output(i), "') is not supported"));
      }
      const Shape& shape = (*outputs)[i]->shape();
      if (shape.IsArray() && shape.ElementCount() == INT64_MAX) {
        return ctx.Error(absl::StrCat("output ", i, " (", shape.ToString(false),
                                      ") has more elements than int64 can count"));
      }
      scope[node.output(i)] = (*outputs)[i];
    }
    return absl::OkStatus();
  }

 private:
  static std::string SanitizeName(const std::string& name) {
    std::string out;
    for (char ch : name) {
      out.push_back(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
                            ch == '-'
                        ? ch
                        : '_');
    }
    return out.empty() ? "onnx_model" : out;
  }

  absl::Status ImportInitializers(const GraphProto& graph, Emitter& b) {
    if (graph.sparse_initializer_size() > 0) {
      return absl::UnimplementedError(absl::StrCat(display_, ": sparse initializer '",
                                                   graph.sparse_initializer(0).values().name(),
                                                   "' is not supported"));
    }
    for (const auto& t : graph.initializer()) {
      absl::StatusOr<Literal> value = LiteralFromTensor(t);
      if (!value.ok()) {
        return absl::Status(value.status().code(),
                            absl::StrCat(display_, ": initializer: ", value.status().message()));
      }
      initializer_names_.insert(t.name());
      if (options_.initializers_as_parameters) {
        deferred_initializers_.push_back({t.name(), value->shape()});
        continue;
      }
      scope_[t.name()] = b.Constant(std::move(*value));
    }
    return absl::OkStatus();
  }

  // The graph inputs that a node's value-operand depends on (through any chain of nodes, stopping
  // at Shape and Size), which are bound from the options where a value is given.
  std::set<std::string> InputsNeededAsValues(const GraphProto& graph) const {
    std::unordered_map<std::string, const NodeProto*> producer;
    for (const NodeProto& n : graph.node()) {
      for (const std::string& o : n.output()) producer[o] = &n;
    }
    std::set<std::string> needed;
    std::unordered_set<std::string> visited;
    std::vector<std::string> stack;
    for (const NodeProto& n : graph.node()) {
      const OpInfo* info = OpRegistry::Global().Find(DomainKey(n.domain()), n.op_type());
      if (info == nullptr) continue;
      for (int64_t i : info->constant_inputs) {
        if (i < n.input_size() && !n.input(i).empty()) stack.push_back(n.input(i));
      }
    }
    while (!stack.empty()) {
      std::string v = std::move(stack.back());
      stack.pop_back();
      if (!visited.insert(v).second) continue;
      auto it = producer.find(v);
      if (it == producer.end()) {
        needed.insert(v);
        continue;
      }
      if (ReadsOnlyShape(*it->second)) continue;
      for (const std::string& in : it->second->input()) {
        if (!in.empty()) stack.push_back(in);
      }
    }
    return needed;
  }

  absl::StatusOr<Shape> InputShape(const ValueInfoProto& in, const Literal* value) const {
    if (!in.type().has_tensor_type()) {
      return absl::UnimplementedError(absl::StrCat(display_, ": graph input '", in.name(),
                                                   "' is a ",
                                                   in.type().has_sequence_type()   ? "sequence"
                                                   : in.type().has_optional_type() ? "optional"
                                                   : in.type().has_map_type()      ? "map"
                                                                                   : "non-tensor",
                                                   "; only tensors are supported"));
    }
    const auto& tt = in.type().tensor_type();
    absl::StatusOr<PrimitiveType> type = ElementTypeFromOnnx(tt.elem_type());
    if (!type.ok()) {
      return absl::Status(type.status().code(), absl::StrCat(display_, ": graph input '", in.name(),
                                                             "': ", type.status().message()));
    }
    if (value != nullptr) {
      if (value->element_type() != *type) {
        return absl::InvalidArgumentError(
            absl::StrCat(display_, ": the value given for graph input '", in.name(), "' is ",
                         std::string(PrimitiveTypeName(value->element_type())), ", the input is ",
                         std::string(PrimitiveTypeName(*type))));
      }
      return Shape(*type, value->shape().dimensions());
    }
    if (!tt.has_shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(display_, ": graph input '", in.name(),
                       "' has no shape; give its value (input_values) to bind it"));
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) {
          return absl::InvalidArgumentError(absl::StrCat(display_, ": graph input '", in.name(),
                                                         "' dimension ", i, " is negative"));
        }
        dims.push_back(d.dim_value());
        continue;
      }
      if (d.has_dim_param()) {
        auto it = options_.dim_values.find(d.dim_param());
        if (it != options_.dim_values.end()) {
          dims.push_back(it->second);
          continue;
        }
      }
      return absl::InvalidArgumentError(
          absl::StrCat(display_, ": graph input '", in.name(), "' dimension ", i,
                       d.has_dim_param() ? absl::StrCat(" ('", d.dim_param(), "')") : std::string(),
                       " is dynamic: bind it (MLTUNE_ONNX_DIMS=",
                       d.has_dim_param() ? d.dim_param() : std::string("NAME"),
                       "=N for the CLI, OnnxImportOptions::dim_values) or give the input's value"));
    }
    int64_t elements = 1;
    for (int64_t d : dims) {
      std::optional<int64_t> e = CheckedMul(elements, d);
      if (!e.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(display_, ": graph input '", in.name(),
                                                       "' has more elements than int64 can count"));
      }
      elements = *e;
    }
    return Shape(*type, dims);
  }

  absl::Status ImportInputs(const GraphProto& graph, Emitter& b, OnnxImport& result) {
    const std::set<std::string> needed = InputsNeededAsValues(graph);
    int64_t number = 0;
    for (const ValueInfoProto& in : graph.input()) {
      // Before IR version 4, initializers were listed as inputs too; the initializer wins.
      if (initializer_names_.count(in.name()) > 0) continue;
      auto value_it = options_.input_values.find(in.name());
      const Literal* value = value_it == options_.input_values.end() ? nullptr : &value_it->second;
      absl::StatusOr<Shape> shape = InputShape(in, value);
      if (!shape.ok()) return shape.status();
      if (value != nullptr && needed.count(in.name()) > 0) {
        scope_[in.name()] = b.Constant(*value);
        result.bound_inputs.push_back(in.name());
        continue;
      }
      Instruction* p = b.Parameter(number++, *shape, SanitizeName(in.name()));
      parameter_inputs_[p] = in.name();
      scope_[in.name()] = p;
      result.parameter_names.push_back(in.name());
    }
    for (const auto& [name, shape] : deferred_initializers_) {
      Instruction* p = b.Parameter(number++, shape, SanitizeName(name));
      parameter_inputs_[p] = name;
      scope_[name] = p;
      result.parameter_names.push_back(name);
    }
    return absl::OkStatus();
  }

  static const Instruction* FindParameter(const Instruction* x,
                                          std::unordered_set<const Instruction*>& seen) {
    if (!seen.insert(x).second) return nullptr;
    if (x->opcode() == Opcode::kParameter) return x;
    for (const Instruction* op : x->operands()) {
      if (const Instruction* p = FindParameter(op, seen)) return p;
    }
    return nullptr;
  }

  static Instruction* CloneTree(const Instruction* x, Computation& into,
                                std::unordered_map<const Instruction*, Instruction*>& copies) {
    if (auto it = copies.find(x); it != copies.end()) return it->second;
    std::vector<Instruction*> operands;
    for (const Instruction* op : x->operands()) operands.push_back(CloneTree(op, into, copies));
    Instruction* copy = ir::CloneInstruction(*x, into, operands);
    copies[x] = copy;
    return copy;
  }

  const ModelProto& model_;
  const OnnxImportOptions& options_;
  std::string display_;
  Module* module_ = nullptr;
  std::unordered_map<std::string, int64_t> opsets_;
  Scope scope_;
  std::unordered_set<std::string> initializer_names_;
  std::vector<std::pair<std::string, Shape>> deferred_initializers_;
  std::unordered_map<const Instruction*, std::string> parameter_inputs_;
};

}  // namespace

absl::StatusOr<OnnxImport> ImportOnnxModel(std::string_view bytes,
                                           const OnnxImportOptions& options) {
  absl::StatusOr<ModelProto> model =
      ParseModel(bytes, options.max_model_bytes, options.display_name);
  if (!model.ok()) return model.status();
  ImporterImpl importer(*model, options);
  return importer.Run();
}

absl::StatusOr<OnnxImport> ImportOnnxFile(const std::string& path, OnnxImportOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (options.display_name == OnnxImportOptions().display_name) options.display_name = path;
  return ImportOnnxModel(bytes.str(), options);
}

bool LooksLikeText(std::string_view bytes) {
  const size_t n = std::min<size_t>(bytes.size(), 64);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

bool LooksLikeOnnxModel(std::string_view bytes) {
  // HLO text starts with printable text; a ModelProto starts with a field tag (ir_version is
  // field 1, varint: 0x08). Parsing confirms it.
  if (bytes.empty()) return false;
  absl::StatusOr<ModelProto> model = ParseModel(bytes, INT32_MAX, "");
  return model.ok() && model->graph().node_size() + model->graph().output_size() > 0;
}

absl::StatusOr<NamedLiteral> ParseOnnxTensor(std::string_view bytes) {
  ::onnx::TensorProto tensor;
  if (!tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("not a valid ONNX TensorProto (protobuf parsing failed)");
  }
  absl::StatusOr<Literal> value = LiteralFromTensor(tensor);
  if (!value.ok()) return value.status();
  return NamedLiteral{tensor.name(), std::move(*value)};
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> out;
  for (const OpInfo* info : OpRegistry::Global().List()) {
    out.push_back(info->domain.empty() ? info->op_type : info->domain + ":" + info->op_type);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mltune::ir::onnx
