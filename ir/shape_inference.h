// Shape inference per opcode, as XLA's ShapeInference: the result shape an instruction must
// have given its operands, attributes and called computations.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "ir/instruction.h"

namespace mltune::ir {

// The inferred result shape (layout not set), or an error naming what is inconsistent.
// Returns nullopt for opcodes whose result shape is declared rather than derived (parameter,
// constant, custom-call, infeed, rng-bit-generator, ...), after checking what can be checked.
absl::StatusOr<std::optional<Shape>> InferShape(const Instruction& instr);

}  // namespace mltune::ir
