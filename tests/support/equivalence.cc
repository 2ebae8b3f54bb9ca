#include "tests/support/equivalence.h"

#include "absl/strings/str_cat.h"
#include "ir/evaluator/evaluator.h"

namespace mltune::testing {

absl::Status CheckEquivalent(const ir::Module& before, const ir::Module& after, int seeds,
                             Tolerance tolerance) {
  for (int seed = 1; seed <= seeds; ++seed) {
    absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(before, seed);
    if (!args.ok()) return absl::UnimplementedError(args.status().message());
    absl::StatusOr<ir::Literal> expected = ir::Evaluate(before, *args);
    if (!expected.ok()) return absl::UnimplementedError(expected.status().message());
    absl::StatusOr<ir::Literal> actual = ir::Evaluate(after, *args);
    if (!actual.ok()) {
      return absl::InternalError(absl::StrCat("the rewritten module no longer evaluates: ",
                                              std::string(actual.status().message())));
    }
    ir::LiteralDifference d = ir::CompareLiterals(*expected, *actual, tolerance);
    if (d.violations > 0) {
      return absl::InternalError(absl::StrCat("seed ", seed, ": ", d.first_violation, " (",
                                              d.violations, " of ", d.elements,
                                              " elements differ)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace mltune::testing
