// reshape-mover: XLA's ReshapeMover. Sinks reshapes and transposes ("rearranges") below
// elementwise ops: op(reshape(a), reshape(b)) => reshape(op(a, b)) when every operand is an
// equivalent rearrange (same input dimensions, same permutation) or trivially rearrangeable (a
// constant, or a broadcast that stays a broadcast). A move is made only when every user of the
// rearranges it consumes moves too, so no rearrange is duplicated. Moved rearranges meet each
// other and algsimp folds them; elementwise work then happens on the original shape.
//
// Differences from XLA, both cosmetic: the inverse rearrange of a constant is folded into a new
// constant here (XLA emits reshape(constant) for constant folding), and of a rearrange operand
// is its input (XLA emits rearrange'(rearrange(x)) for algsimp). The pass repeats until nothing
// moves, as XLA's pipelines do by running it inside HloPassFix.
#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_set>
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

bool IsRearrange(const Instruction* i) {
  return i->opcode() == Opcode::kReshape || i->opcode() == Opcode::kTranspose;
}

bool IsIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t k = 0; k < perm.size(); ++k) {
    if (perm[k] != static_cast<int64_t>(k)) return false;
  }
  return true;
}

std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[perm[k]] = static_cast<int64_t>(k);
  return inv;
}

bool AreEquivalentRearranges(const Instruction* a, const Instruction* b) {
  if (a->opcode() != b->opcode() || !a->shape().SameDimensions(b->shape())) return false;
  if (a->opcode() == Opcode::kTranspose) return a->dimensions == b->dimensions;
  return a->operand(0)->shape().SameDimensions(b->operand(0)->shape());
}

// Where the broadcast dimensions of `instr` land under the inverse of transpose `perm`.
std::vector<int64_t> InverseTransposedBroadcastDims(const std::vector<int64_t>& dims,
                                                    const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(perm[d]);
  return out;
}

// `instr` (an operand of the elementwise op) can take the shape before `rearrange` for free.
bool CanTriviallyRearrange(const Instruction* instr, const Instruction* rearrange) {
  if (rearrange->opcode() == Opcode::kReshape &&
      rearrange->shape().SameDimensions(rearrange->operand(0)->shape())) {
    return true;
  }
  if (rearrange->opcode() == Opcode::kTranspose && IsIdentityPermutation(rearrange->dimensions)) {
    return true;
  }
  if (instr->opcode() == Opcode::kConstant) return instr->literal.has_value();
  if (instr->opcode() == Opcode::kBroadcast) {
    if (!std::is_sorted(instr->dimensions.begin(), instr->dimensions.end())) return false;
    if (rearrange->opcode() == Opcode::kReshape) return instr->operand(0)->shape().IsScalar();
    const std::vector<int64_t> moved =
        InverseTransposedBroadcastDims(instr->dimensions, rearrange->dimensions);
    return std::is_sorted(moved.begin(), moved.end());
  }
  return false;
}

const Instruction* FirstNontrivialRearrange(const Instruction* instr) {
  for (const Instruction* op : instr->operands()) {
    if (IsRearrange(op) && !CanTriviallyRearrange(op->operand(0), op)) return op;
  }
  return nullptr;
}

bool IsCandidate(const Instruction* instr) {
  if (!ir::IsElementwise(instr->opcode()) || instr->HasSideEffect() ||
      instr->opcode() == Opcode::kStochasticConvert || !instr->shape().IsArray() ||
      !instr->control_predecessors().empty() || !instr->control_successors().empty()) {
    return false;
  }
  // Every operand must have the result's dimensions (not select's scalar predicate or clamp's
  // scalar bounds) and a static shape.
  for (const Instruction* op : instr->operands()) {
    if (!op->shape().IsArray() || !op->shape().is_static() ||
        op->shape().dimensions() != instr->shape().dimensions()) {
      return false;
    }
  }
  const Instruction* rearrange = FirstNontrivialRearrange(instr);
  if (rearrange == nullptr || !rearrange->operand(0)->shape().is_static()) return false;
  return std::all_of(instr->operands().begin(), instr->operands().end(),
                     [&](const Instruction* op) {
                       return IsRearrange(op) ? AreEquivalentRearranges(op, rearrange)
                                              : CanTriviallyRearrange(op, rearrange);
                     });
}

// `literal` transposed by `perm` (result dimension k is operand dimension perm[k]).
ir::Literal TransposeLiteral(const ir::Literal& literal, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& in_dims = literal.shape().dimensions();
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(in_dims[p]);
  ir::Literal out = *ir::Literal::Create(Shape(literal.element_type(), out_dims));
  const std::vector<int64_t> in_strides = ir::RowMajorStrides(in_dims);
  const size_t size = static_cast<size_t>(ir::StorageBytes(literal.element_type()));
  std::vector<int64_t> index(out_dims.size(), 0);
  for (int64_t o = 0; o < out.element_count(); ++o) {
    int64_t in = 0;
    for (size_t k = 0; k < index.size(); ++k) in += index[k] * in_strides[perm[k]];
    std::memcpy(out.untyped_data() + o * size, literal.untyped_data() + in * size, size);
    for (int64_t k = static_cast<int64_t>(index.size()) - 1; k >= 0; --k) {
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

// `operand` in the shape before `rearrange` (dimensions of rearrange's input, own element type).
Instruction* ApplyInverseRearrange(Computation& c, const Instruction* rearrange,
                                   Instruction* operand) {
  const std::vector<int64_t>& dims = rearrange->operand(0)->shape().dimensions();
  if (IsRearrange(operand)) return operand->operand(0);  // an equivalent rearrange
  // Only an identity rearrange leaves an operand as it is: a transpose of a square array keeps
  // the dimensions but moves the elements (a broadcast along columns must then run along rows).
  const bool identity = rearrange->opcode() == Opcode::kReshape
                            ? rearrange->shape().SameDimensions(rearrange->operand(0)->shape())
                            : IsIdentityPermutation(rearrange->dimensions);
  if (identity) return operand;
  if (operand->opcode() == Opcode::kConstant) {
    ir::Literal literal;
    if (rearrange->opcode() == Opcode::kReshape) {
      // Row-major data is unchanged by a reshape: same bytes, new dimensions.
      literal = *ir::Literal::Create(Shape(operand->shape().element_type(), dims));
      std::memcpy(literal.untyped_data(), operand->literal->untyped_data(),
                  static_cast<size_t>(literal.size_bytes()));
    } else {
      literal = TransposeLiteral(*operand->literal, InversePermutation(rearrange->dimensions));
    }
    return MakeConstant(c, std::move(literal));
  }
  // A broadcast (see CanTriviallyRearrange).
  std::vector<int64_t> mapping;
  if (rearrange->opcode() == Opcode::kTranspose) {
    mapping = InverseTransposedBroadcastDims(operand->dimensions, rearrange->dimensions);
  }
  return MakeBroadcast(c, operand->operand(0), dims, mapping);
}

void Sink(Computation& c, Instruction* instr) {
  const Instruction* rearrange = FirstNontrivialRearrange(instr);
  std::vector<Instruction*> operands;
  for (Instruction* op : instr->operands()) {
    operands.push_back(ApplyInverseRearrange(c, rearrange, op));
  }
  Instruction* inner = CloneInstruction(*instr, c, operands, ir::OpcodeName(instr->opcode()));
  inner->set_shape(
      Shape(instr->shape().element_type(), rearrange->operand(0)->shape().dimensions()));
  inner->sharding.clear();  // the shape changed; a sharding may no longer fit
  Instruction* outer;
  if (rearrange->opcode() == Opcode::kReshape) {
    outer = MakeReshape(c, inner, instr->shape().dimensions());
  } else {
    outer = MakeTranspose(c, inner, rearrange->dimensions);
  }
  instr->ReplaceAllUsesWith(outer);
  RemoveInstructionAndUnusedOperands(instr);
}

// One round over `c`; true when something moved.
bool MoveOnce(Computation& c) {
  std::vector<Instruction*> order;
  std::unordered_set<Instruction*> candidates;
  for (Instruction* i : c.MakePostOrder()) {
    if (IsCandidate(i)) {
      candidates.insert(i);
      order.push_back(i);
    }
  }
  // Drop candidates whose rearrange operands have users that would keep the rearrange alive, to a
  // fixed point. A worklist revisits only the candidates sharing a rearrange with a dropped one
  // (a full rescan per drop was quadratic on long chains).
  auto keeps_rearrange_alive = [&](const Instruction* i) {
    for (const Instruction* op : i->operands()) {
      if (!IsRearrange(op)) continue;
      if (c.root() == op) return true;
      if (std::any_of(op->users().begin(), op->users().end(),
                      [&](Instruction* u) { return !candidates.count(u); })) {
        return true;
      }
    }
    return false;
  };
  std::vector<Instruction*> work(order.rbegin(), order.rend());
  while (!work.empty()) {
    Instruction* i = work.back();
    work.pop_back();
    if (!candidates.count(i) || !keeps_rearrange_alive(i)) continue;
    candidates.erase(i);
    for (const Instruction* op : i->operands()) {
      if (!IsRearrange(op)) continue;
      for (Instruction* u : op->users()) {
        if (u != i && candidates.count(u)) work.push_back(u);
      }
    }
  }
  if (candidates.empty()) return false;
  for (Instruction* i : order) {
    if (candidates.count(i)) Sink(c, i);
  }
  return true;
}

class ReshapeMover : public Pass {
 public:
  static constexpr int kMaxRounds = 64;

  std::string_view name() const override { return "reshape-mover"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_set<const Computation*> fused = FusionComputations(module);
    bool changed = false;
    for (Computation* c : module.computations()) {
      if (fused.count(c)) continue;
      for (int round = 0; round < kMaxRounds && MoveOnce(*c); ++round) changed = true;
    }
    return changed;
  }
};

}  // namespace

void RegisterReshapeMover(Registry& registry) {
  registry.Register({"reshape-mover",
                     "sinks reshapes and transposes below elementwise ops when all operands agree",
                     [] { return std::make_unique<ReshapeMover>(); }});
}

}  // namespace mltune::passes
