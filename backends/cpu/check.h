// Comparing the CPU backend's results with the reference evaluator's: floats within a relative
// and absolute tolerance (generated code may contract to FMA and reassociate reductions),
// integers and preds exactly, NaN equal to NaN. Where an output is ill-conditioned (a square root
// of the difference of two nearly equal dot products, say), rounding differences grow past any
// fixed tolerance; such elements may differ by a multiple of how far the reference itself moves
// under rounding noise (RoundingSpread), and a NaN or infinity may stand against a finite value
// where the noise alone makes the reference's element one or the other.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::backends::cpu {

struct Tolerance {
  double relative = 1e-4;
  double absolute = 1e-5;
  // An element may also differ by this many times its rounding spread, where one is given.
  double spread_factor = 8;
};

// Per result leaf, per element, the largest distance of a noisy reference evaluation from the
// exact one; an empty vector for a leaf that is not floating-point.
using RoundingSpreads = std::vector<std::vector<double>>;

// Evaluates `module` on `arguments` `pairs` times twice, with rounding noise of `ulps` units in
// the last place on every op that rounds (EvalOptions::rounding_noise_ulps; each pair draws one
// set of errors with both signs), and measures each element's distance from `exact` (the
// flattened leaves of the noiseless evaluation).
absl::StatusOr<RoundingSpreads> RoundingSpread(const ir::Module& module,
                                               const std::vector<ir::Literal>& arguments,
                                               const std::vector<ir::Literal>& exact, int pairs = 3,
                                               double ulps = 2);

// The array leaves of a literal, in order (a tuple's elements flattened).
std::vector<ir::Literal> FlattenLeaves(const ir::Literal& literal);

// OK, or DataLoss naming the first mismatching result and element, and how many differ.
// With `spreads`, a float element also passes when within tolerance.spread_factor times its
// spread; `within_spread` receives how many passed only so.
absl::Status CompareLeaves(const std::vector<ir::Literal>& expected,
                           const std::vector<ir::Literal>& actual, const Tolerance& tolerance,
                           const RoundingSpreads* spreads = nullptr,
                           int64_t* within_spread = nullptr);

// `actual` (a backend's result leaves on `arguments`) against `exact` (the evaluator's): OK where
// they match within `tolerance`, or where the elements that differ differ by no more than the
// reference moves under rounding noise (3 noisy pairs, then 10); `ill_conditioned` receives how
// many passed only so. DataLoss naming the first mismatch otherwise.
absl::Status CompareWithRoundingSpread(const ir::Module& module,
                                       const std::vector<ir::Literal>& arguments,
                                       const std::vector<ir::Literal>& exact,
                                       const std::vector<ir::Literal>& actual,
                                       const Tolerance& tolerance,
                                       int64_t* ill_conditioned = nullptr);

}  // namespace mltune::backends::cpu
