// Internal to the evaluator: the ops that get rounding noise under
// EvalOptions::rounding_noise_ulps, and how much.
#pragma once

#include <cstdint>
#include <functional>

#include "ir/instruction.h"
#include "ir/literal.h"

namespace mltune::ir::eval {

class Operands;

enum class NoiseKind {
  kNone,         // exact (data movement, comparisons, integers) or not modelled
  kElementwise,  // one rounding: noise relative to the result
  kSum,          // a sum of terms: noise relative to the sum of their magnitudes
};
NoiseKind RoundingNoiseKind(const Instruction& instr);

// The number of terms each result element of a kSum op adds up.
int64_t TermsPerElement(const Instruction& instr, const Operands& ops);

// A copy of `literal` with every real floating-point element replaced by its absolute value;
// running a kSum op on such operands gives the magnitudes of its sums' terms.
Literal AbsoluteValues(const Literal& literal);

// Adds u * ulps * eps * sqrt(terms) * size to each finite element, u from `next_uniform` in
// [-1, 1], size the element's `magnitude` (or its own absolute value when null).
void AddRoundingNoise(double ulps, int64_t terms, const Literal* magnitude,
                      const std::function<double()>& next_uniform, Literal& result);

}  // namespace mltune::ir::eval
