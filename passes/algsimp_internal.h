// Internal to the algsimp pass (algsimp.cc, algsimp_shapes.cc): the rewrite entry points of each
// file and the matching helpers they share. reshape-decomposer also uses CommonFactors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/literal.h"

namespace mltune::passes::algsimp {

// Each tries the rewrites for its opcodes on `instr` and returns true when it changed the graph
// (usually by replacing `instr`, which is then deleted: callers must not touch it again).
bool SimplifyArithmetic(ir::Instruction* instr);    // algsimp.cc: elementwise ops and constants
bool SimplifyDataMovement(ir::Instruction* instr);  // algsimp_shapes.cc: shapes, slices, reduce

// Replaces every use of `old` by `replacement` (same element type and dimensions) and deletes
// `old` and whatever becomes dead with it. Returns false, changing nothing, when the shapes
// differ.
bool ReplaceWith(ir::Instruction* old, ir::Instruction* replacement);

// The single value of a constant whose elements are all equal (bitwise), or of a broadcast of
// such a constant, as a rank-0 literal; nullopt otherwise (and for elided or empty literals).
std::optional<ir::Literal> SplatValue(const ir::Instruction* instr);
// Every element of `instr` is known to equal `value` (numerically; -0 == 0).
bool IsAll(const ir::Instruction* instr, double value);
// Every element is all ones in its bit width (true for pred, -1 for signed integers).
bool IsAllOnes(const ir::Instruction* instr);
bool IsScalarBroadcast(const ir::Instruction* instr);
// Every element is the lowest (or highest) value of its type: -inf/+inf for floats with
// infinities, the integer limits, false/true for pred.
bool IsAllExtreme(const ir::Instruction* instr, bool lowest);

// broadcast(constant(value)) of `type` to `dims` (value converted as MakeScalarConstant does).
ir::Instruction* MakeFilled(ir::Computation& c, ir::PrimitiveType type,
                            const std::vector<int64_t>& dims, double value);
// broadcast(scalar) to `dims`, or `scalar` itself when `dims` is empty.
ir::Instruction* BroadcastScalar(ir::Computation& c, ir::Instruction* scalar,
                                 const std::vector<int64_t>& dims);

// XLA's CommonFactors: bounds (i, j) splitting `a` and `b` into consecutive groups of equal
// product, as fine as possible; a 1-sized dimension gets its own group where it can.
std::vector<std::pair<int64_t, int64_t>> CommonFactors(const std::vector<int64_t>& a,
                                                       const std::vector<int64_t>& b);
// For a reshape from `from` to `to`: output dimension of each input dimension that the reshape
// leaves unmodified (same size, not merged or split), or -1.
std::vector<int64_t> UnmodifiedDimensions(const std::vector<int64_t>& from,
                                          const std::vector<int64_t>& to);

}  // namespace mltune::passes::algsimp
