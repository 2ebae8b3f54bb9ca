#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/tensor.h"

namespace mltune::ir::onnx {

using ::onnx::AttributeProto;

absl::StatusOr<Instruction*> NodeContext::required_input(int64_t i) const {
  if (has_input(i)) return inputs_[i];
  return Error(absl::StrCat("input ", i, " is required"));
}

absl::StatusOr<Literal> NodeContext::constant_input(int64_t i) {
  if (!has_input(i)) return Error(absl::StrCat("input ", i, " is required"));
  absl::StatusOr<Literal> value =
      importer_.Fold(inputs_[i], absl::StrCat("input ", i, " ('", node_.input(i), "')"));
  if (!value.ok()) return Annotate(value.status());
  return value;
}

absl::StatusOr<std::vector<int64_t>> NodeContext::constant_ints(int64_t i) {
  absl::StatusOr<Literal> value = constant_input(i);
  if (!value.ok()) return value.status();
  if (IsFloatingPoint(value->element_type())) {
    return Error(absl::StrCat("input ", i, " must be integers, got ",
                              std::string(PrimitiveTypeName(value->element_type()))));
  }
  std::vector<int64_t> out(value->element_count());
  for (int64_t k = 0; k < value->element_count(); ++k) out[k] = value->GetAsInt64(k);
  return out;
}

absl::StatusOr<std::vector<double>> NodeContext::constant_doubles(int64_t i) {
  absl::StatusOr<Literal> value = constant_input(i);
  if (!value.ok()) return value.status();
  std::vector<double> out(value->element_count());
  for (int64_t k = 0; k < value->element_count(); ++k) out[k] = value->GetAsDouble(k);
  return out;
}

absl::StatusOr<Literal> NodeContext::NewLiteral(const Shape& shape) {
  absl::StatusOr<Literal> lit = importer_.NewLiteral(shape);
  if (!lit.ok()) return Annotate(lit.status());
  return lit;
}

void NodeContext::IgnoreAttrs(std::initializer_list<const char*> names) const {
  for (const char* name : names) read_attrs_.insert(name);
}

std::optional<std::string> NodeContext::UnreadAttr() const {
  for (const AttributeProto& a : node_.attribute()) {
    if (read_attrs_.count(a.name()) == 0) return a.name();
  }
  return std::nullopt;
}

const AttributeProto* NodeContext::FindAttr(const std::string& name) const {
  read_attrs_.insert(name);
  for (const AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

namespace {

std::string AttrTypeName(AttributeProto::AttributeType t) {
  return AttributeProto::AttributeType_Name(t);
}

}  // namespace

#define MLTUNE_ONNX_ATTR_PRELUDE(expected)                                               \
  const AttributeProto* a = FindAttr(name);                                              \
  if (a == nullptr) {                                                                    \
    if (def.has_value()) return *def;                                                    \
    return Error(absl::StrCat("attribute '", name, "' is required"));                    \
  }                                                                                      \
  if (a->type() != AttributeProto::expected && a->type() != AttributeProto::UNDEFINED) { \
    return Error(absl::StrCat("attribute '", name, "' must be ",                         \
                              AttrTypeName(AttributeProto::expected), ", got ",          \
                              AttrTypeName(a->type())));                                 \
  }

absl::StatusOr<int64_t> NodeContext::attr_int(const std::string& name,
                                              std::optional<int64_t> def) const {
  MLTUNE_ONNX_ATTR_PRELUDE(INT)
  return a->i();
}

absl::StatusOr<float> NodeContext::attr_float(const std::string& name,
                                              std::optional<float> def) const {
  MLTUNE_ONNX_ATTR_PRELUDE(FLOAT)
  return a->f();
}

absl::StatusOr<std::string> NodeContext::attr_string(const std::string& name,
                                                     std::optional<std::string> def) const {
  MLTUNE_ONNX_ATTR_PRELUDE(STRING)
  return a->s();
}

absl::StatusOr<std::vector<int64_t>> NodeContext::attr_ints(
    const std::string& name, std::optional<std::vector<int64_t>> def) const {
  MLTUNE_ONNX_ATTR_PRELUDE(INTS)
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

absl::StatusOr<std::vector<float>> NodeContext::attr_floats(
    const std::string& name, std::optional<std::vector<float>> def) const {
  MLTUNE_ONNX_ATTR_PRELUDE(FLOATS)
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

#undef MLTUNE_ONNX_ATTR_PRELUDE

absl::StatusOr<Literal> NodeContext::attr_tensor(const std::string& name) const {
  const AttributeProto* a = FindAttr(name);
  if (a == nullptr) return Error(absl::StrCat("attribute '", name, "' is required"));
  if (a->type() != AttributeProto::TENSOR) {
    return Error(
        absl::StrCat("attribute '", name, "' must be TENSOR, got ", AttrTypeName(a->type())));
  }
  absl::StatusOr<Literal> value = LiteralFromTensor(a->t());
  if (!value.ok()) return Annotate(value.status());
  return value;
}

const ::onnx::GraphProto* NodeContext::attr_graph(const std::string& name) const {
  const AttributeProto* a = FindAttr(name);
  return a != nullptr && a->has_g() ? &a->g() : nullptr;
}

absl::Status NodeContext::Error(const std::string& message) const {
  return absl::InvalidArgumentError(absl::StrCat(location_, ": ", message));
}

absl::Status NodeContext::Unsupported(const std::string& message) const {
  return absl::UnimplementedError(absl::StrCat(location_, ": ", message));
}

absl::Status NodeContext::Annotate(const absl::Status& status) const {
  // Errors from nested subgraphs already name their node, in the same file.
  const std::string file = location_.substr(0, location_.find(": "));
  if (status.ok() || absl::StartsWith(status.message(), file + ": ")) return status;
  return absl::Status(status.code(), absl::StrCat(location_, ": ", status.message()));
}

absl::StatusOr<int64_t> NodeContext::NormalizeAxis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank) {
    return Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> NodeContext::NormalizeAxes(std::vector<int64_t> axes,
                                                                int64_t rank) const {
  for (int64_t& a : axes) {
    MLTUNE_ASSIGN(v, NormalizeAxis(a, rank));
    a = v;
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return Error(absl::StrCat("axes [", absl::StrJoin(axes, ","), "] repeat an axis"));
  }
  return axes;
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(std::string op_type, OpConverter convert,
                          std::vector<int64_t> constant_inputs, std::string domain) {
  OpInfo info{domain, op_type, std::move(convert), std::move(constant_inputs)};
  ops_[{std::move(domain), std::move(op_type)}] = std::move(info);
}

const OpInfo* OpRegistry::Find(std::string_view domain, std::string_view op_type) const {
  auto it = ops_.find(std::pair<std::string, std::string>(domain, op_type));
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpInfo*> OpRegistry::List() const {
  std::vector<const OpInfo*> out;
  for (const auto& [key, info] : ops_) out.push_back(&info);
  return out;
}

}  // namespace mltune::ir::onnx
