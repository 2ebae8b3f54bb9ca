// Helpers shared by the control-flow passes (simplify-while-loops,
// while-loop-invariant-code-motion, while-loop-constant-sinking, while-loop-trip-count-annotator,
// simplify-conditional, ...): XLA's while_loop_analysis (induction variable, trip count) and
// while_util (invariant GTEs, widening a loop's state), plus inlining a computation and cloning
// loop computations with a new parameter.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::passes {

using InstructionMap = std::unordered_map<const ir::Instruction*, ir::Instruction*>;

// A new parameter `number` of `shape` in `c`, named uniquely after `name_hint`.
ir::Instruction* MakeParameter(ir::Computation& c, int64_t number, const ir::Shape& shape,
                               std::string_view name_hint);

// Element `index` of tuple-valued `tuple`: its operand when it is a tuple instruction, else a new
// get-tuple-element.
ir::Instruction* TupleElement(ir::Computation& c, ir::Instruction* tuple, int64_t index);

// Copies the instructions of `callee` into `into`, with parameter i replaced by arguments[i]
// (XLA's CallInliner::Inline). Control edges inside the callee are copied. Returns the copy of the
// callee's root; `map` (optional) receives old -> new for every copied instruction.
ir::Instruction* InlineComputation(const ir::Computation& callee, ir::Computation& into,
                                   const std::vector<ir::Instruction*>& arguments,
                                   InstructionMap* map = nullptr);

// Replaces `old` (users and root) by `replacement`; when that is a tuple instruction, the
// get-tuple-element users of `old` read its operands directly (the local half of tuple-simplifier,
// so the analyses of the passes that run next see plain values). Then removes `old` even when it
// has a side effect (the replacement carries it). Operands that become dead stay for dce, so no
// instruction other than `old` (and forwarded get-tuple-elements) is freed.
void ReplaceAndForward(ir::Instruction* old, ir::Instruction* replacement);

// Options for CloneLoopComputation.
struct LoopCloneOptions {
  // Parameter 0 of the copy has this shape.
  ir::Shape param_shape;
  // Given the copy's new parameter, the instructions (in the copy) holding each element of the
  // source's old parameter tuple. A nullptr element is removed: get-tuple-elements of it and
  // everything depending on them are not copied (the caller proves that nothing live does).
  std::function<std::vector<ir::Instruction*>(ir::Computation&, ir::Instruction*)> elements;
  // Source instructions to map to a given copy instruction instead of copying them; called with
  // the copy and its new parameter, before anything is copied.
  std::function<InstructionMap(ir::Computation&, ir::Instruction*)> preset;
  // Builds the copy's root from the copy's map (old -> new, nullptr when not copied). Default:
  // the copy of the source's root.
  std::function<ir::Instruction*(ir::Computation&, const InstructionMap&)> root;
};

// Copies `src` into a new computation of `module` named after it, with parameter 0 replaced as
// `options` says. get-tuple-elements of the old parameter become the element instructions
// directly; other uses of it get a tuple of the elements. Dead instructions of the copy are removed
// (their map entries become nullptr). Returns the copy and fills `map` (optional); returns nullptr
// (adding nothing) when the root comes out nullptr.
ir::Computation* CloneLoopComputation(const ir::Computation& src, ir::Module& module,
                                      const LoopCloneOptions& options,
                                      InstructionMap* map = nullptr);

// Removes the dead, side-effect-free instructions of `c` (a local dce); returns how many.
int64_t RemoveDeadCode(ir::Computation& c);

// Removes `c` from its module when no instruction calls it and it is not the entry.
void RemoveComputationIfUnused(ir::Module& module, ir::Computation* c);

// How many instructions of the module call `c` (as any of their called computations).
int64_t CallerCount(const ir::Module& module, const ir::Computation* c);

// --- XLA's while_loop_analysis ---

// Evaluates `instr` when everything it depends on is constant (no parameters, side effects or
// loops), within a small instruction budget; nullopt otherwise.
std::optional<ir::Literal> EvaluateConstantExpression(const ir::Instruction* instr);

// The tuple index of the loop's induction variable: the condition's root reads only constants and
// gte(param, i) (possibly through a copy), the body's root is a tuple whose element i does the
// same for the same i, and the init is a tuple instruction (XLA's GetLoopInductionVarTupleIdx).
std::optional<int64_t> GetLoopInductionVarTupleIdx(const ir::Instruction* while_op);

// The exact trip count when the induction variable starts at a constant and either matches the
// `i = c0; i < n; i += step` family (any integer type, no overflow) or reaches a false condition
// within `max_brute_force_iters` evaluated steps (XLA's ComputeWhileLoopTripCount).
std::optional<int64_t> ComputeWhileLoopTripCount(const ir::Instruction* while_op,
                                                 int64_t max_brute_force_iters = 128);

// The exact trip count when known; otherwise 1 when the body sets the only state element the
// condition reads to a constant for which the condition is false (XLA's
// ComputeWhileLoopTripCountUpperBound).
std::optional<int64_t> ComputeWhileLoopTripCountUpperBound(const ir::Instruction* while_op);

// --- XLA's while_util ---

// The operands of the body's root tuple that are gte(param, i) at position i: state elements the
// body passes through unchanged.
std::vector<ir::Instruction*> GetInvariantGTEsForWhileBody(const ir::Computation& body);

// get-tuple-element users of the condition's parameter, by tuple index.
std::unordered_map<int64_t, std::vector<ir::Instruction*>> GetGTEsMapForWhileConditional(
    const ir::Computation& condition);

// --- Editing a loop's state in place ---

// True when the loop's condition and body are its own (no other caller) and their parameters feed
// only get-tuple-elements, so the state tuple can be reshaped without copying them.
bool LoopStateEditableInPlace(const ir::Instruction* while_op);

// True when `values` of `c`, its side-effecting instructions and those with control edges read
// parameter 0 only through get-tuple-elements of elements that `old_to_new` keeps (>= 0).
bool ReadsOnlyKeptElements(const ir::Computation& c,
                           const std::vector<const ir::Instruction*>& values,
                           const std::vector<int64_t>& old_to_new);

// Renumbers the get-tuple-elements of `c`'s parameter by `old_to_new` and gives the parameter
// `new_shape`. When elements are dropped, the caller has set the root, checked
// ReadsOnlyKeptElements and removed dead code, so no get-tuple-element of a dropped element is
// left. Returns the parameter.
ir::Instruction* RemapParameterInPlace(ir::Computation& c, const std::vector<int64_t>& old_to_new,
                                       const ir::Shape& new_shape);

struct LiveInResult {
  ir::Instruction* new_while = nullptr;
  // True when the loop's condition and body were widened in place (they had no other caller and
  // their parameters only feed get-tuple-elements): body instructions keep their identity.
  bool in_place = false;
  // Old body instruction -> its copy in the new body (empty when in_place).
  InstructionMap body_map;
  // Per value made live in: the instruction reading it inside the new body.
  std::vector<ir::Instruction*> live_in_values;
};

// Appends `values` (instructions of the while's computation) to the loop state: a new while whose
// body passes them through, replacing the old one (whose users get the old state's prefix). XLA's
// WhileUtil::MakeInstructionsLiveIn. When the condition and body are the loop's own, they are
// widened in place rather than copied (copying dominated the pass pipeline on large loop bodies);
// otherwise the old condition and body stay in the module (callers run dce), so pointers into
// them remain valid.
LiveInResult MakeInstructionsLiveIn(ir::Instruction* while_op,
                                    const std::vector<ir::Instruction*>& values);

// A new while like `old` (attributes copied) over `init`, `condition` and `body`.
ir::Instruction* MakeWhileLike(const ir::Instruction& old, ir::Instruction* init,
                               ir::Computation* condition, ir::Computation* body);

// Runs `rewrite` on every while loop of the module (callees first); it returns whether it changed
// the loop and sets `*replaced_computations` when it replaced the loop's condition and body by
// copies, whose loops are then skipped. When anything changed, dce and tuple-simplifier run, as
// XLA's loop passes do after a rewrite.
absl::StatusOr<bool> RewriteWhileLoops(
    ir::Module& module,
    const std::function<bool(ir::Instruction* while_op, bool* replaced_computations)>& rewrite);

// Computations of the module that are not fusion bodies (XLA's MakeNonfusionComputations),
// restricted to those reachable from the entry, callees first.
std::vector<ir::Computation*> NonFusionComputations(const ir::Module& module);

}  // namespace mltune::passes
