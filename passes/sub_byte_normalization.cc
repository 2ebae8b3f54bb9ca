// sub-byte-size-setter / sub-byte-size-removal: XLA's SubByteNormalization in its two modes.
// The setter records the packed element size of sub-byte types in layouts (s4[8]{0:E(4)}) and
// clears it elsewhere; the removal clears it everywhere. Only shapes that carry a layout change,
// on every instruction (tuple elements included) and in the module's entry_computation_layout.
// Layouts do not affect values, so results are unchanged by construction.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Instruction;
using ir::PrimitiveType;
using ir::Shape;

enum class Mode { kSet, kRemove };

bool UpdateShape(Shape& shape, Mode mode) {
  bool changed = false;
  if (shape.IsTuple()) {
    for (Shape& element : shape.mutable_tuple_shapes()) changed |= UpdateShape(element, mode);
    return changed;
  }
  if (!shape.IsArray() || !shape.layout().has_value()) return false;
  const PrimitiveType t = shape.element_type();
  const bool sub_byte = t != PrimitiveType::kPred && ir::BitWidth(t) < 8;
  const int64_t size = mode == Mode::kSet && sub_byte ? ir::BitWidth(t) : 0;
  ir::Layout& layout = *shape.mutable_layout();
  if (layout.element_size_in_bits == size) return false;
  layout.element_size_in_bits = size;
  return true;
}

// entry_computation_layout is kept as text, "{(param shapes)->result shape}": rewrite the shapes
// in it. Text that does not parse is left as it is.
bool UpdateEntryLayout(std::string& text, Mode mode) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return false;
  const std::string body = text.substr(1, text.size() - 2);
  // The arrow separating parameters from the result is the last one at nesting depth 0.
  int depth = 0;
  size_t arrow = std::string::npos;
  for (size_t k = 0; k + 1 < body.size(); ++k) {
    const char ch = body[k];
    if (ch == '(' || ch == '[' || ch == '{') ++depth;
    if (ch == ')' || ch == ']' || ch == '}') --depth;
    if (depth == 0 && ch == '-' && body[k + 1] == '>') arrow = k;
  }
  if (arrow == std::string::npos) return false;
  absl::StatusOr<Shape> params = ir::ParseShape(body.substr(0, arrow));
  absl::StatusOr<Shape> result = ir::ParseShape(body.substr(arrow + 2));
  if (!params.ok() || !result.ok() || !params->IsTuple()) return false;
  bool changed = UpdateShape(*params, mode);
  changed |= UpdateShape(*result, mode);
  if (!changed) return false;
  text = absl::StrCat("{", params->ToString(true), "->", result->ToString(true), "}");
  return true;
}

class SubByteNormalization : public Pass {
 public:
  explicit SubByteNormalization(Mode mode) : mode_(mode) {}

  std::string_view name() const override {
    return mode_ == Mode::kSet ? "sub-byte-size-setter" : "sub-byte-size-removal";
  }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (ir::Computation* c : module.computations()) {
      for (Instruction* i : c->instructions()) changed |= UpdateShape(i->mutable_shape(), mode_);
    }
    changed |= UpdateEntryLayout(module.entry_computation_layout, mode_);
    return changed;
  }

 private:
  Mode mode_;
};

}  // namespace

void RegisterSubByteNormalization(Registry& registry) {
  registry.Register({"sub-byte-size-setter",
                     "sets the element size of sub-byte types (s4, u4) in layouts",
                     [] { return std::make_unique<SubByteNormalization>(Mode::kSet); }});
  registry.Register({"sub-byte-size-removal", "clears element sizes from layouts",
                     [] { return std::make_unique<SubByteNormalization>(Mode::kRemove); }});
}

}  // namespace mltune::passes
