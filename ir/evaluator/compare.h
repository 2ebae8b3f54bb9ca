// Element-by-element comparison of two evaluation results: the largest differences seen, and the
// elements outside a tolerance. Integers and predicates must match exactly; floats (and complex
// parts) within `absolute + relative * max(|a|, |b|)`; NaN matches only NaN, inf only itself.
#pragma once

#include <cstdint>
#include <string>

#include "ir/literal.h"

namespace mltune::ir {

struct Tolerance {
  double relative = 1e-5;
  double absolute = 1e-6;
};

struct LiteralDifference {
  bool shapes_match = true;
  int64_t elements = 0;          // elements compared
  int64_t violations = 0;        // elements outside the tolerance (or unequal integers)
  double max_abs = 0;            // largest |a - b| over finite float elements
  double max_rel = 0;            // largest |a - b| / max(|a|, |b|) over finite float elements
  std::string first_violation;   // "output {1} element 7 of f32[8]: 0.5 became 0.25"
};

LiteralDifference CompareLiterals(const Literal& expected, const Literal& actual,
                                  const Tolerance& tolerance = {});

}  // namespace mltune::ir
