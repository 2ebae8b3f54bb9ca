// Printer to canonical HLO text: `%`-free names, operand shapes omitted, attributes in a fixed
// order, so that ParseHloText(PrintModule(m)) is structurally identical to m. Every name is
// defined before its first use and called computations precede their callers (print_order.h),
// as XLA's parser requires, even after passes appended instructions out of order.
#pragma once

#include <string>

#include "ir/module.h"

namespace mltune::ir {

struct PrintOptions {
  bool print_metadata = true;         // metadata={...}
  bool print_operand_shapes = false;  // `add(f32[] x, f32[] y)` style
  bool print_layouts = true;
};

std::string PrintModule(const Module& module, const PrintOptions& options = {});
std::string PrintComputation(const Computation& computation, const PrintOptions& options = {});
// One line, without indentation or trailing newline: `name = shape opcode(operands), attrs`.
std::string PrintInstruction(const Instruction& instr, const PrintOptions& options = {});

}  // namespace mltune::ir
