// The order the HLO printer writes a module in: every name defined before its first use, as XLA's
// parser requires, while passes append new instructions (and computations) at the end of lists.
#pragma once

#include <vector>

#include "ir/module.h"

namespace mltune::ir {

// A computation's instructions with operands and control predecessors before their users, the
// root last unless an instruction uses it. Where the stored order already is such an order, it
// is returned unchanged, so printing an unmodified module gives back its text.
std::vector<const Instruction*> DefinitionOrder(const Computation& computation);

// The module's computations with every called computation before its callers, the entry last;
// the stored order where it already is one. Computations nothing calls are kept.
std::vector<const Computation*> CalleesFirstOrder(const Module& module);

}  // namespace mltune::ir
