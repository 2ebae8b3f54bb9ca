// Comparing the CPU backend's results with the reference evaluator's: floats within a relative
// and absolute tolerance (generated code may contract to FMA and reassociate reductions),
// integers and preds exactly, NaN equal to NaN.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/literal.h"

namespace mltune::backends::cpu {

struct Tolerance {
  double relative = 1e-4;
  double absolute = 1e-5;
};

// The array leaves of a literal, in order (a tuple's elements flattened).
std::vector<ir::Literal> FlattenLeaves(const ir::Literal& literal);

// OK, or DataLoss naming the first mismatching result and element, and how many differ.
absl::Status CompareLeaves(const std::vector<ir::Literal>& expected,
                           const std::vector<ir::Literal>& actual, const Tolerance& tolerance);

}  // namespace mltune::backends::cpu
