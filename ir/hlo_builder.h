// Small helpers to create, clone, match and remove instructions, for passes and frontends alike,
// so every rewrite names its new instructions uniquely and keeps shapes consistent (layouts
// default to descending).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::ir {

// Adds a new instruction to `c` with a module-unique name derived from `name_hint` (default: the
// opcode's name). Operands are appended in order.
ir::Instruction* AddInstr(ir::Computation& c, ir::Opcode opcode, ir::Shape shape,
                          const std::vector<ir::Instruction*>& operands,
                          std::string_view name_hint = "");

ir::Instruction* MakeConstant(ir::Computation& c, ir::Literal literal);
// A scalar constant of `type` holding `value` (converted as a convert op would).
ir::Instruction* MakeScalarConstant(ir::Computation& c, ir::PrimitiveType type, double value);
// broadcast(operand) to `dims` (element type from operand); `mapping[i]` is the output dimension
// of operand dimension i.
ir::Instruction* MakeBroadcast(ir::Computation& c, ir::Instruction* operand,
                               const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& mapping);
ir::Instruction* MakeReshape(ir::Computation& c, ir::Instruction* operand,
                             const std::vector<int64_t>& dims);
ir::Instruction* MakeTranspose(ir::Computation& c, ir::Instruction* operand,
                               const std::vector<int64_t>& permutation);
ir::Instruction* MakeConvert(ir::Computation& c, ir::Instruction* operand, ir::PrimitiveType type);
// Elementwise binary op; the result has lhs's dimensions (pred for compare).
ir::Instruction* MakeBinary(ir::Computation& c, ir::Opcode opcode, ir::Instruction* lhs,
                            ir::Instruction* rhs);
ir::Instruction* MakeUnary(ir::Computation& c, ir::Opcode opcode, ir::Instruction* operand);
ir::Instruction* MakeCompare(ir::Computation& c, ir::ComparisonDirection direction,
                             ir::Instruction* lhs, ir::Instruction* rhs);
ir::Instruction* MakeGetTupleElement(ir::Computation& c, ir::Instruction* tuple, int64_t index);
ir::Instruction* MakeTuple(ir::Computation& c, const std::vector<ir::Instruction*>& elements);
ir::Instruction* MakeSlice(ir::Computation& c, ir::Instruction* operand,
                           const std::vector<ir::SliceDim>& slice);

// The computations that are bodies of fusion instructions. Passes leave them to the fusion
// emitter, as XLA's passes skip fusion computations.
std::unordered_set<const ir::Computation*> FusionComputations(const ir::Module& module);

// Replaces `old` by `replacement` everywhere (users and root) and removes `old` if it is then
// dead and side-effect free. Returns true (so passes can `changed |= Replace(...)`).
bool ReplaceInstruction(ir::Instruction* old, ir::Instruction* replacement);

// The scalar value of a constant, or of a broadcast of a scalar constant (effective scalar), as
// double; nullopt otherwise.
std::optional<double> ScalarConstantValue(const ir::Instruction* instr);
// True when `instr` is a constant or broadcast-of-constant whose every element equals `value`.
bool IsConstantWithValue(const ir::Instruction* instr, double value);

// --- Side effects, liveness and removal (XLA's HasSideEffect / IsDead / IsSafelyRemovable) ---

// True when `instr` has a side effect itself or any computation it calls (transitively) contains
// a side-effecting instruction, as XLA's HloInstruction::HasSideEffect.
bool HasSideEffectRecursive(const ir::Instruction* instr);
// True when `c` (or anything it calls) contains a side-effecting instruction.
bool ComputationHasSideEffect(const ir::Computation* c);
// No users and not its computation's root.
bool IsDead(const ir::Instruction* instr);
// Dead, not a parameter, no control dependencies and no (recursive) side effect: removing it
// cannot change what the module computes.
bool IsSafelyRemovable(const ir::Instruction* instr);
// Removes `instr` if it is safely removable, then every operand that becomes so, transitively.
// Returns how many instructions were removed.
int64_t RemoveInstructionAndUnusedOperands(ir::Instruction* instr);

// --- Cloning ---

// A copy of `src` (opcode, shape, attributes, called computations) added to `into` with
// `operands`, named uniquely after `name_hint` (default: src's name). Control edges are not copied.
ir::Instruction* CloneInstruction(const ir::Instruction& src, ir::Computation& into,
                                  const std::vector<ir::Instruction*>& operands,
                                  std::string_view name_hint = "");
// `base` or `base.N`, not yet the name of a computation of `module`.
std::string UniqueComputationName(const ir::Module& module, std::string_view base);
// Deep copy of `c` (instructions, root, control edges) added to `module` under a unique name
// derived from `c`'s name and `suffix`; called computations are shared, not copied.
ir::Computation* CloneComputation(const ir::Computation& c, ir::Module& module,
                                  std::string_view suffix = "clone");

// --- Structural comparison ---

// Compares two called computations; used for the callees of instructions being compared.
using ComputationEq = std::function<bool(const ir::Computation*, const ir::Computation*)>;
// True when `a` and `b` compute the same thing the same way: the same instructions (opcode,
// shape with layout, attributes, operand structure, parameter numbers) reachable from their roots
// and parameters, no other instruction, and callees equal under `callee_eq` (default: identical
// pointers or, recursively, ComputationsEqual). Names and metadata are ignored.
bool ComputationsEqual(const ir::Computation& a, const ir::Computation& b,
                       const ComputationEq& callee_eq = nullptr);

// --- Element types ---

// True when converting any value of `from` to `to` is exact, so converting back restores it
// (XLA's primitive_util::CastPreservesValues): pred to anything, widening integer casts that keep
// signed values signed, integers into floats wide enough to hold them, and floats into floats
// with at least their precision, range and special values. Complex types only to themselves.
bool CastPreservesValues(ir::PrimitiveType from, ir::PrimitiveType to);

}  // namespace mltune::ir
