// map-inline: XLA's MapInliner. A map whose computation is a single op on its parameters becomes
// that op applied to the map's operands: map(x, y, to_apply={p0 + p1}) => add(x, y). A computation
// returning a parameter becomes that operand; one returning a constant becomes a broadcast of it.
// Only elementwise root ops are inlined (a map computation is scalar to scalar, so the op applies
// per element exactly as the map did). The called computation is left for dce.
#include <memory>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

// What the map computes instead, or nullptr when it cannot be inlined.
Instruction* Inline(Computation& c, Instruction* map) {
  const Computation* f = map->to_apply();
  if (f == nullptr || f->root() == nullptr || f->parameter_count() != map->operand_count()) {
    return nullptr;
  }
  const Instruction* root = f->root();
  if (!root->shape().IsScalar() || root->shape().element_type() != map->shape().element_type()) {
    return nullptr;
  }
  if (root->opcode() == Opcode::kParameter) return map->operand(root->parameter_number);
  if (root->opcode() == Opcode::kConstant) {
    if (!root->literal.has_value()) return nullptr;
    Instruction* constant = MakeConstant(c, *root->literal);
    if (map->shape().rank() == 0) return constant;
    return MakeBroadcast(c, constant, map->shape().dimensions(), {});
  }
  if (!ir::IsElementwise(root->opcode()) || root->HasSideEffect() ||
      !root->called_computations().empty()) {
    return nullptr;
  }
  std::vector<Instruction*> operands;
  for (const Instruction* op : root->operands()) {
    if (op->opcode() != Opcode::kParameter || !op->shape().IsScalar()) return nullptr;
    operands.push_back(map->operand(op->parameter_number));
  }
  Instruction* inlined = CloneInstruction(*root, c, operands, ir::OpcodeName(root->opcode()));
  inlined->set_shape(Shape(map->shape().element_type(), map->shape().dimensions()));
  return inlined;
}

class MapInliner : public Pass {
 public:
  std::string_view name() const override { return "map-inline"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* map : c->MakePostOrder()) {
        if (map->opcode() != Opcode::kMap || !map->shape().IsArray() ||
            !map->control_predecessors().empty() || !map->control_successors().empty()) {
          continue;
        }
        Instruction* replacement = Inline(*c, map);
        if (replacement == nullptr) continue;
        map->ReplaceAllUsesWith(replacement);
        RemoveInstructionAndUnusedOperands(map);
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterMapInliner(Registry& registry) {
  registry.Register({"map-inline", "replaces a map of a single elementwise op by that op",
                     [] { return std::make_unique<MapInliner>(); }});
}

}  // namespace mltune::passes
