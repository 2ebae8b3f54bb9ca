// stable-sort-expander: XLA's StableSortExpander. A sort marked is_stable becomes an unstable
// sort whose comparator breaks ties by position: an s32 iota along the sort dimension is added as
// an extra operand (or an existing one is reused, as JAX's argsort has), and the comparator
// becomes
//   select(less(a, b) == less(b, a), iota_a < iota_b, less(a, b))
// i.e. when neither element orders before the other, the one that came first wins. For a
// comparator that is a strict weak order this is exactly the stable order. The new comparator is a
// fresh computation (the old one may be shared); sorts that gained an operand are wrapped so their
// users see the old shape.
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

int64_t IotaOperandIndex(const Instruction* sort, int64_t dimension) {
  for (int64_t k = 0; k < sort->operand_count(); ++k) {
    const Instruction* op = sort->operand(k);
    if (op->opcode() == Opcode::kIota && op->iota_dimension == dimension &&
        op->shape().element_type() == PrimitiveType::kS32) {
      return k;
    }
  }
  return -1;
}

Instruction* AddParameter(Computation& c, int64_t number, const Shape& shape,
                          const std::string& name) {
  auto p = std::make_unique<Instruction>(Opcode::kParameter, shape,
                                         c.parent()->UniqueInstructionName(name));
  p->parameter_number = number;
  return c.AddInstruction(std::move(p));
}

// Copies `comparator`'s body into `into` with parameter k read from params[swap ? k ^ 1 : k];
// returns the copied root.
Instruction* CopyBody(const Computation& comparator, Computation& into,
                      const std::vector<Instruction*>& params, bool swap) {
  std::unordered_map<const Instruction*, Instruction*> map;
  for (Instruction* i : comparator.MakePostOrder()) {
    if (i->opcode() == Opcode::kParameter) {
      map[i] = params[swap ? (i->parameter_number ^ 1) : i->parameter_number];
      continue;
    }
    std::vector<Instruction*> operands;
    for (const Instruction* op : i->operands()) operands.push_back(map.at(op));
    map[i] = CloneInstruction(*i, into, operands);
  }
  return map.at(comparator.root());
}

// The tie-breaking comparator for operands of `sort` (the iota at `iota_index`).
Computation* MakeStableComparator(ir::Module& module, const Instruction* sort, int64_t iota_index) {
  const Computation& old = *sort->to_apply();
  Computation* c = module.AddComputation(
      std::make_unique<Computation>(UniqueComputationName(module, old.name() + ".stable")));
  std::vector<Instruction*> params;
  for (int64_t k = 0; k < 2 * sort->operand_count(); ++k) {
    const Shape scalar = Shape::Scalar(sort->operand(k / 2)->shape().element_type());
    const Shape& shape = k < old.parameter_count() ? old.parameter(k)->shape() : scalar;
    params.push_back(
        AddParameter(*c, k, shape, absl::StrCat("p.", k / 2, k % 2 == 0 ? ".lhs" : ".rhs")));
  }
  Instruction* less = CopyBody(old, *c, params, /*swap=*/false);
  Instruction* greater = CopyBody(old, *c, params, /*swap=*/true);
  Instruction* tie = MakeCompare(*c, ir::ComparisonDirection::kEq, less, greater);
  Instruction* first = MakeCompare(*c, ir::ComparisonDirection::kLt, params[2 * iota_index],
                                   params[2 * iota_index + 1]);
  c->set_root(
      AddInstr(*c, Opcode::kSelect, Shape::Scalar(PrimitiveType::kPred), {tie, first, less}));
  return c;
}

bool Matches(const Instruction* sort) {
  if (sort->opcode() != Opcode::kSort || !sort->is_stable || sort->dimensions.size() != 1 ||
      sort->to_apply() == nullptr || !sort->control_predecessors().empty() ||
      !sort->control_successors().empty() ||
      sort->to_apply()->parameter_count() != 2 * sort->operand_count() ||
      sort->to_apply()->root() == nullptr || ComputationHasSideEffect(sort->to_apply())) {
    return false;
  }
  for (const Instruction* op : sort->operands()) {
    if (!op->shape().IsArray() || !op->shape().is_static()) return false;
  }
  return true;
}

class StableSortExpander : public Pass {
 public:
  std::string_view name() const override { return "stable-sort-expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* sort : c->MakePostOrder()) {
        if (!Matches(sort)) continue;
        const int64_t dimension = sort->dimensions[0];
        int64_t iota_index = IotaOperandIndex(sort, dimension);
        Instruction* expanded = sort;
        Instruction* wrapper = nullptr;
        if (iota_index < 0) {
          const Shape& first = sort->operand(0)->shape();
          const PrimitiveType type =
              first.dimensions(dimension) > std::numeric_limits<int32_t>::max()
                  ? PrimitiveType::kS64
                  : PrimitiveType::kS32;
          Instruction* iota = AddInstr(*c, Opcode::kIota, Shape(type, first.dimensions()), {});
          iota->iota_dimension = dimension;
          std::vector<Instruction*> operands = sort->operands();
          operands.push_back(iota);
          std::vector<Shape> shapes;
          for (const Instruction* op : operands) shapes.push_back(op->shape());
          expanded = CloneInstruction(*sort, *c, operands);
          expanded->set_shape(Shape::Tuple(shapes));
          const int64_t n = sort->operand_count();
          std::vector<Instruction*> elements;
          for (int64_t k = 0; k < n; ++k) elements.push_back(MakeGetTupleElement(*c, expanded, k));
          wrapper = n == 1 ? elements[0] : MakeTuple(*c, elements);
          iota_index = n;
        }
        expanded->mutable_called_computations()[0] =
            MakeStableComparator(module, expanded, iota_index);
        expanded->is_stable = false;
        if (wrapper != nullptr) {
          sort->ReplaceAllUsesWith(wrapper);
          RemoveInstructionAndUnusedOperands(sort);
        }
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterStableSortExpander(Registry& registry) {
  registry.Register({"stable-sort-expander",
                     "makes stable sorts unstable with a position tie-break in the comparator",
                     [] { return std::make_unique<StableSortExpander>(); }});
}

}  // namespace mltune::passes
