// Reference evaluator: runs a module on concrete inputs. Written to be obviously right rather
// than fast; it is the oracle that proves passes preserve semantics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::ir {

struct EvalOptions {
  // Refuse any intermediate array larger than this, rather than allocating it.
  int64_t max_array_bytes = int64_t{1} << 30;
  // Refuse after this many while-loop iterations in total (guards against non-terminating loops).
  int64_t max_loop_iterations = 1'000'000;
  // Seed of the `rng` op's deterministic stream (uniform and normal distributions).
  uint64_t rng_seed = 0;
};

// Evaluates the entry computation on `arguments` (one per entry parameter, shapes must match).
absl::StatusOr<Literal> Evaluate(const Module& module, const std::vector<Literal>& arguments,
                                 const EvalOptions& options = {});

// Seeded random arguments for the entry parameters: floats uniform in [-1, 1), integers in a
// small range, preds fair coins. The same seed gives the same arguments.
absl::StatusOr<std::vector<Literal>> MakeRandomArguments(const Module& module, uint64_t seed);

// OK when the evaluator supports every instruction the module can reach; otherwise an
// Unimplemented error naming the first one it cannot run and why.
absl::Status CheckEvaluable(const Module& module);

}  // namespace mltune::ir
