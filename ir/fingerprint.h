// Structural fingerprint (SHA-256 hex) and structural equality of modules. Both ignore names,
// unique ids, metadata and instruction order among independent instructions; any change to
// opcodes, shapes, layouts, attributes, literals or graph edges changes the fingerprint.
#pragma once

#include <string>

#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::ir {

std::string Fingerprint(const Module& module);

// SHA-256 (hex) of a literal's shape and bytes: identical values give identical digests.
std::string LiteralDigest(const Literal& literal);

// Canonical text of an instruction's attributes (everything but opcode, shape, operands, called
// computations, name and metadata; constants keyed by their value's digest). Two instructions
// with equal keys have identical attributes: passes such as CSE use it to compare instructions.
std::string InstructionAttributesKey(const Instruction& instr);

// True when the two modules have the same structure in the sense above. On a difference,
// `why` (if given) names the first differing computation/instruction.
bool StructurallyEqual(const Module& a, const Module& b, std::string* why = nullptr);

}  // namespace mltune::ir
