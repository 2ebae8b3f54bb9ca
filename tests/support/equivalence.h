// Semantic-equivalence check by execution: evaluates two modules on the same seeded random
// arguments and compares every output element. Integers and predicates must match bit for bit;
// floats within a tolerance documented in docs/passes.md (a pass may legitimately change the
// rounding of a fused or reassociated computation, never its value).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "ir/evaluator/compare.h"
#include "ir/module.h"

namespace mltune::testing {

using Tolerance = ir::Tolerance;

// OK when `after` computes what `before` does on `seeds` random argument sets (seeds 1..seeds).
// If `before` cannot be evaluated (collectives, elided constants, ...) returns Unimplemented, so
// callers can skip such modules. Otherwise a mismatch is an error naming the output index, element
// and values.
absl::Status CheckEquivalent(const ir::Module& before, const ir::Module& after, int seeds = 3,
                             Tolerance tolerance = {});

}  // namespace mltune::testing
