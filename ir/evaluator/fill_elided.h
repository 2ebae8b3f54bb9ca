// Elided constants (printed `constant({...})`, as XLA's own benchmark modules ship their weights)
// have no value; this fills them with seeded stand-ins so such a module can run at all. The
// results are then not the model's, so callers say that they filled some (mltune run
// --fill-elided SEED, MLTUNE_FILL_ELIDED=SEED).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::ir {

// Gives every elided constant of `module` a value drawn like the runner's random inputs
// (MakeRandomArguments): floats uniform in [-1, 1) on their type's grid, integers in [0, 8), preds
// 0 or 1. Each constant's values depend on `seed` and its name alone, so they do not change when
// other instructions are added or removed. Returns how many constants were filled, or the error
// of a constant whose shape cannot hold a literal.
absl::StatusOr<int64_t> FillElidedConstants(Module& module, uint64_t seed);

}  // namespace mltune::ir
