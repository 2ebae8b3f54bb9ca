#include <cstdlib>
#include <cstring>
#include <functional>

#include "backends/cpu/lowering.h"
#include "ir/computation.h"
#include "ir/instruction.h"

namespace mltune::backends::cpu {

namespace {

using ir::Instruction;
using ir::Opcode;

// Ops that move, select or convert elements without computing new ones: a weight read through
// them is still only a weight. Slices and concatenates are how ONNX exports reorder an LSTM's
// gate weights (computed on every call, they took 8 of 38 ms of an LSTM LM).
bool MovesOnly(Opcode op) {
  return op == Opcode::kBitcast || op == Opcode::kReshape || op == Opcode::kTranspose ||
         op == Opcode::kConvert || op == Opcode::kCopy || op == Opcode::kSlice ||
         op == Opcode::kConcatenate;
}

// Every use of `value` (through MovesOnly ops) is operand 1 of a dot or a convolution.
bool ReadOnlyAsWeight(const Instruction* value) {
  if (value->users().empty()) return false;
  for (const Instruction* user : value->users()) {
    if (MovesOnly(user->opcode())) {
      if (!ReadOnlyAsWeight(user)) return false;
      continue;
    }
    const bool matrix = user->opcode() == Opcode::kDot || user->opcode() == Opcode::kConvolution;
    if (!matrix || user->operand_count() != 2 || user->operand(0) == value) return false;
  }
  return true;
}

}  // namespace

bool FrozenWeightsEnabled() {
  const char* off = std::getenv("MLTUNE_NO_FROZEN_WEIGHTS");
  return off == nullptr || off[0] == '\0' || std::strcmp(off, "0") == 0;
}

std::unordered_set<const Instruction*> FrozenWeights(const ir::Computation& entry) {
  std::unordered_set<const Instruction*> frozen;
  if (!FrozenWeightsEnabled()) return frozen;
  for (const Instruction* p : entry.parameters()) {
    if (p->shape().IsArray() && ReadOnlyAsWeight(p)) frozen.insert(p);
  }
  return frozen;
}

}  // namespace mltune::backends::cpu
