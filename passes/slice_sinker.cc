// slice-sinker: XLA's SliceSinker. When elementwise ops each apply to slices of the same arrays
// (op_k(slice_k(a), slice_k(b)), one slice configuration per op) and together read at least as
// many elements as the arrays hold, the op runs once on the whole arrays and each op_k becomes a
// slice of that result:
//   op(a, b) computed once; op_k => slice_k(op(a, b)).
// Elementwise ops commute with slicing, so this is exact. Like XLA, ops are grouped by opcode,
// element type and slice sources; side-effecting ops are never grouped. The pass repeats until
// nothing sinks (a sunk op can expose the next one in a chain).
#include <memory>
#include <unordered_set>
#include <vector>

#include "ir/fingerprint.h"
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

bool SameSliceConfiguration(const Instruction* a, const Instruction* b) {
  return a->slice == b->slice && a->shape().SameDimensions(b->shape());
}

bool IsPlainElementwise(const Instruction* i) {
  if (!ir::IsElementwise(i->opcode()) || i->HasSideEffect() || i->operand_count() == 0 ||
      i->opcode() == Opcode::kStochasticConvert || !i->shape().IsArray() ||
      !i->control_predecessors().empty() || !i->control_successors().empty()) {
    return false;
  }
  for (const Instruction* op : i->operands()) {
    if (op->shape().dimensions() != i->shape().dimensions()) return false;
  }
  return true;
}

// All operands are slices with one configuration, of arrays with the same dimensions.
bool IsElementwiseOperationOnSimilarSlices(const Instruction* i) {
  if (!IsPlainElementwise(i)) return false;
  const Instruction* slice0 = i->operand(0);
  for (const Instruction* op : i->operands()) {
    if (op->opcode() != Opcode::kSlice || !op->operand(0)->shape().is_static() ||
        !op->operand(0)->shape().SameDimensions(slice0->operand(0)->shape()) ||
        !SameSliceConfiguration(op, slice0)) {
      return false;
    }
  }
  return true;
}

// `candidate` does what `op` does on slices of the same sources (possibly other slices).
bool IsSimilarOperationOnSlices(const Instruction* op, const Instruction* candidate) {
  if (candidate->opcode() != op->opcode() || candidate->operand_count() != op->operand_count() ||
      candidate->shape().element_type() != op->shape().element_type() ||
      !IsElementwiseOperationOnSimilarSlices(candidate)) {
    return false;
  }
  // Same attributes (compare direction, reduce-precision bits, ...).
  if (ir::InstructionAttributesKey(*op) != ir::InstructionAttributesKey(*candidate)) return false;
  for (int64_t k = 0; k < op->operand_count(); ++k) {
    if (candidate->operand(k)->operand(0) != op->operand(k)->operand(0)) return false;
  }
  return true;
}

// The ops on slices of `op`'s sources that can sink with it, when they cover the sources.
std::vector<Instruction*> FindElementwiseOperationGroup(Instruction* op) {
  std::vector<Instruction*> group;
  std::unordered_set<Instruction*> seen;
  const Instruction* source0 = op->operand(0)->operand(0);
  for (const Instruction* slice : source0->users()) {
    if (slice->opcode() != Opcode::kSlice) continue;
    for (Instruction* user : slice->users()) {
      if (seen.insert(user).second && IsSimilarOperationOnSlices(op, user)) group.push_back(user);
    }
  }
  int64_t covered = 0;
  for (const Instruction* i : group) covered += i->shape().ElementCount();
  if (covered < source0->shape().ElementCount()) group.clear();
  return group;
}

bool SinkOnce(Computation& c) {
  bool changed = false;
  std::unordered_set<const Instruction*> sunk;
  for (Instruction* i : c.MakePostOrder()) {
    if (sunk.count(i) || !IsElementwiseOperationOnSimilarSlices(i)) continue;
    std::vector<Instruction*> group = FindElementwiseOperationGroup(i);
    if (group.empty()) continue;
    std::vector<Instruction*> sources;
    for (Instruction* slice : i->operands()) sources.push_back(slice->operand(0));
    Instruction* whole = CloneInstruction(*i, c, sources, ir::OpcodeName(i->opcode()));
    whole->set_shape(Shape(i->shape().element_type(), sources[0]->shape().dimensions()));
    for (Instruction* op : group) {
      Instruction* piece = MakeSlice(c, whole, op->operand(0)->slice);
      op->ReplaceAllUsesWith(piece);
      sunk.insert(op);
    }
    changed = true;
  }
  // Sunk ops (and the slices feeding only them) are dead now; they come after or before the
  // current position, so they are removed only here.
  for (Instruction* i : c.MakePostOrder()) {
    if (sunk.count(i)) RemoveInstructionAndUnusedOperands(i);
  }
  return changed;
}

class SliceSinker : public Pass {
 public:
  static constexpr int kMaxRounds = 64;

  std::string_view name() const override { return "slice-sinker"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_set<const Computation*> fused = FusionComputations(module);
    bool changed = false;
    for (Computation* c : module.computations()) {
      if (fused.count(c)) continue;
      for (int round = 0; round < kMaxRounds && SinkOnce(*c); ++round) changed = true;
    }
    return changed;
  }
};

}  // namespace

void RegisterSliceSinker(Registry& registry) {
  registry.Register({"slice-sinker",
                     "runs elementwise ops on sliced arrays once, before the slices",
                     [] { return std::make_unique<SliceSinker>(); }});
}

}  // namespace mltune::passes
