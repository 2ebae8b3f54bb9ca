// while-loop-invariant-code-motion: XLA's WhileLoopInvariantCodeMotion with its default options
// (constants and reshapes are not hoisted on their own, everything else side-effect free is).
// An instruction of a while body whose operands are all loop invariant (state elements the body
// passes through unchanged, constants, or instructions already found invariant) is computed once
// before the loop and threaded into it as a new state element. Instructions not worth hoisting
// alone (constants, reshapes, broadcasts, iotas, reverses, slices, transposes, tuples, bitcasts,
// Sharding custom-calls) are hoisted only as operands of something that is. Loops that run at most
// once, loops containing domains or SPMD/host-offloading custom-calls, and loops marked
// _xla_disable_loop_instr_hoisting are left alone. dce and tuple-simplifier run after a change, as
// in XLA. Dead body instructions are not hoisted (XLA would thread them into the state until dce).
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "passes/while_util.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

bool IsCustomCall(const Instruction* i, std::string_view target) {
  return i->opcode() == Opcode::kCustomCall && i->custom_call_target == target;
}

bool NotWorthHoistingIndividually(const Instruction* i) {
  if (IsCustomCall(i, "Sharding")) return true;
  switch (i->opcode()) {
    case Opcode::kConstant:  // hoist_constants = false
    case Opcode::kReshape:   // hoist_reshapes = false
    case Opcode::kBitcast:
    case Opcode::kBroadcast:
    case Opcode::kIota:
    case Opcode::kReverse:
    case Opcode::kSlice:
    case Opcode::kTranspose:
    case Opcode::kTuple:
      return true;
    default:
      return false;
  }
}

// Copies `to_hoist` and the operands it needs (depth first) before `while_op`; the body's
// parameter stands for the loop's init. Records every copy in `hoisted`.
void CreateLoopInvariantCopy(Instruction* to_hoist, Instruction* while_op,
                             std::unordered_map<Instruction*, Instruction*>& hoisted) {
  Computation& parent = *while_op->parent();
  const Instruction* body_param = while_op->while_body()->parameter(0);
  Instruction* while_operand = while_op->operand(0);
  struct Frame {
    Instruction* instr;
    int64_t next;
  };
  std::vector<Frame> stack = {{to_hoist, 0}};
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.next == frame.instr->operand_count()) {
      Instruction* old = frame.instr;
      std::vector<Instruction*> operands;
      for (Instruction* op : old->operands()) {
        operands.push_back(op == body_param ? while_operand : hoisted.at(op));
      }
      hoisted[old] = CloneInstruction(*old, parent, operands);
      stack.pop_back();
      continue;
    }
    Instruction* next = frame.instr->operand(frame.next++);
    if (hoisted.count(next) || next == body_param) continue;
    stack.push_back({next, 0});
  }
}

// Sets `replaced_computations` when the loop's condition and body were replaced by copies.
bool TryHoistingFromWhileBody(Instruction* while_op, bool* replaced_computations) {
  if (!while_op->shape().IsTuple() || !while_op->control_predecessors().empty() ||
      !while_op->control_successors().empty()) {
    return false;
  }
  Computation* body = while_op->while_body();
  if (body->parameter_count() != 1 || while_op->while_condition()->parameter_count() != 1) {
    return false;
  }
  std::optional<int64_t> upper_bound = ComputeWhileLoopTripCountUpperBound(while_op);
  if (upper_bound.has_value() && *upper_bound <= 1) return false;

  std::unordered_map<Instruction*, Instruction*> hoisted;
  std::unordered_set<const Instruction*> unhoisted_invariant;
  for (Instruction* gte : GetInvariantGTEsForWhileBody(*body)) {
    if (gte->shape().IsArray()) unhoisted_invariant.insert(gte);
  }
  if (unhoisted_invariant.empty()) return false;

  for (const Instruction* i : body->instructions()) {
    if (i->opcode() == Opcode::kDomain || IsCustomCall(i, "SPMDFullToShardShape") ||
        IsCustomCall(i, "SPMDShardShapeToFull") || IsCustomCall(i, "MoveToDevice") ||
        IsCustomCall(i, "MoveToHost")) {
      return false;
    }
  }
  auto is_invariant = [&](Instruction* op) {
    return op->opcode() == Opcode::kConstant || hoisted.count(op) || unhoisted_invariant.count(op);
  };
  std::vector<Instruction*> to_replace;
  std::vector<Instruction*> replacements;
  for (Instruction* instr : body->MakePostOrder()) {
    if (instr->opcode() == Opcode::kParameter || instr->opcode() == Opcode::kAfterAll ||
        !instr->control_predecessors().empty() || !instr->control_successors().empty() ||
        IsDead(instr) || HasSideEffectRecursive(instr)) {
      continue;
    }
    bool all_invariant = true;
    for (Instruction* op : instr->operands()) all_invariant &= is_invariant(op);
    if (!all_invariant) continue;
    if (NotWorthHoistingIndividually(instr)) {
      if (instr->opcode() != Opcode::kConstant) unhoisted_invariant.insert(instr);
      continue;
    }
    CreateLoopInvariantCopy(instr, while_op, hoisted);
    to_replace.push_back(instr);
    replacements.push_back(hoisted.at(instr));
  }
  if (to_replace.empty()) return false;

  LiveInResult live_in = MakeInstructionsLiveIn(while_op, replacements);
  for (size_t k = 0; k < to_replace.size(); ++k) {
    Instruction* in_body = to_replace[k];
    if (!live_in.in_place) {
      auto it = live_in.body_map.find(in_body);
      if (it == live_in.body_map.end()) continue;
      in_body = it->second;
    }
    if (in_body != nullptr) ReplaceInstruction(in_body, live_in.live_in_values[k]);
  }
  *replaced_computations = !live_in.in_place;
  return true;
}

class WhileLoopInvariantCodeMotion : public Pass {
 public:
  std::string_view name() const override { return "while-loop-invariant-code-motion"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    return RewriteWhileLoops(module, [](Instruction* while_op, bool* replaced) {
      return while_op->frontend_attributes.find("_xla_disable_loop_instr_hoisting") ==
                 std::string::npos &&
             TryHoistingFromWhileBody(while_op, replaced);
    });
  }
};

}  // namespace

void RegisterWhileLoopInvariantCodeMotion(Registry& registry) {
  registry.Register({"while-loop-invariant-code-motion",
                     "hoists loop-invariant side-effect-free computations out of while bodies",
                     [] { return std::make_unique<WhileLoopInvariantCodeMotion>(); }});
}

}  // namespace mltune::passes
