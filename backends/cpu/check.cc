#include "backends/cpu/check.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/evaluator.h"

namespace mltune::backends::cpu {
namespace {

void Flatten(const ir::Literal& l, std::vector<ir::Literal>* out) {
  if (l.shape().IsTuple()) {
    for (const ir::Literal& e : l.elements()) Flatten(e, out);
    return;
  }
  ir::Literal copy = *ir::Literal::Create(l.shape());
  std::memcpy(copy.untyped_data(), l.untyped_data(), static_cast<size_t>(l.size_bytes()));
  out->push_back(std::move(copy));
}

// How far a noisy value lies from the exact one. Equal NaNs and equal infinities do not move;
// a NaN or an infinity on one side only is an infinite move: rounding decided whether a square
// root's argument went negative or a quotient's divisor reached zero.
double Deviation(double noisy, double exact) {
  if (std::isnan(noisy) || std::isnan(exact)) {
    return std::isnan(noisy) && std::isnan(exact) ? 0 : std::numeric_limits<double>::infinity();
  }
  if (std::isinf(noisy) || std::isinf(exact)) {
    return noisy == exact ? 0 : std::numeric_limits<double>::infinity();
  }
  return std::fabs(noisy - exact);
}

}  // namespace

std::vector<ir::Literal> FlattenLeaves(const ir::Literal& literal) {
  std::vector<ir::Literal> out;
  Flatten(literal, &out);
  return out;
}

absl::StatusOr<RoundingSpreads> RoundingSpread(const ir::Module& module,
                                               const std::vector<ir::Literal>& arguments,
                                               const std::vector<ir::Literal>& exact, int pairs,
                                               double ulps) {
  RoundingSpreads spreads(exact.size());
  for (size_t r = 0; r < exact.size(); ++r) {
    if (ir::IsFloatingPoint(exact[r].element_type())) {
      spreads[r].assign(static_cast<size_t>(exact[r].element_count()), 0.0);
    }
  }
  for (int run = 0; run < 2 * pairs; ++run) {
    ir::EvalOptions options;
    options.rounding_noise_ulps = ulps;
    options.noise_seed = static_cast<uint64_t>(run / 2) + 1;
    options.noise_negated = run % 2 == 1;
    absl::StatusOr<ir::Literal> noisy = ir::Evaluate(module, arguments, options);
    if (!noisy.ok()) return noisy.status();
    const std::vector<ir::Literal> leaves = FlattenLeaves(*noisy);
    if (leaves.size() != exact.size()) {
      return absl::InternalError("a noisy evaluation returned a different number of results");
    }
    for (size_t r = 0; r < exact.size(); ++r) {
      for (size_t i = 0; i < spreads[r].size(); ++i) {
        const double d = Deviation(leaves[r].GetAsDouble(static_cast<int64_t>(i)),
                                   exact[r].GetAsDouble(static_cast<int64_t>(i)));
        spreads[r][i] = std::max(spreads[r][i], d);
      }
    }
  }
  return spreads;
}

absl::Status CompareLeaves(const std::vector<ir::Literal>& expected,
                           const std::vector<ir::Literal>& actual, const Tolerance& tolerance,
                           const RoundingSpreads* spreads, int64_t* within_spread) {
  if (within_spread != nullptr) *within_spread = 0;
  if (expected.size() != actual.size()) {
    return absl::DataLossError(
        absl::StrCat("expected ", expected.size(), " results; got ", actual.size()));
  }
  for (size_t r = 0; r < expected.size(); ++r) {
    const ir::Literal& e = expected[r];
    const ir::Literal& a = actual[r];
    if (!e.shape().Compatible(a.shape())) {
      return absl::DataLossError(absl::StrCat("result ", r, " is ", a.shape().ToString(false),
                                              "; expected ", e.shape().ToString(false)));
    }
    const bool is_float = ir::IsFloatingPoint(e.element_type());
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < e.element_count(); ++i) {
      bool ok;
      if (is_float) {
        const double x = e.GetAsDouble(i), y = a.GetAsDouble(i);
        const double spread =
            spreads != nullptr && r < spreads->size() && i < std::ssize((*spreads)[r])
                ? (*spreads)[r][static_cast<size_t>(i)]
                : 0;
        if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
          ok = (std::isnan(x) && std::isnan(y)) || x == y;
          // Where rounding noise alone turns the reference's element into a NaN or an
          // infinity or back, either outcome is one that float arithmetic may give.
          if (!ok && std::isinf(spread)) {
            ok = true;
            if (within_spread != nullptr) ++*within_spread;
          }
        } else {
          const double err = std::fabs(x - y);
          // 16-bit floats are checked at two units in their last place (bf16: 8 significant
          // bits, f16: 11): rounding each op to them moves results that far from the evaluator's.
          const ir::PrimitiveType t = e.element_type();
          const double floor = t == ir::PrimitiveType::kBF16  ? 1.0 / 64
                               : t == ir::PrimitiveType::kF16 ? 1.0 / 512
                                                              : 0;
          const double allowed = std::max(tolerance.absolute, floor / 16) +
                                 std::max(tolerance.relative, floor) * std::fabs(x);
          ok = err <= allowed;
          if (!ok && spread > 0) {
            ok = err <= allowed + tolerance.spread_factor * spread;
            if (ok && within_spread != nullptr) ++*within_spread;
          }
          worst = std::max(worst, err);
        }
      } else {
        ok = e.GetAsInt64(i) == a.GetAsInt64(i) && e.GetAsUint64(i) == a.GetAsUint64(i);
      }
      if (!ok) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad > 0) {
      return absl::DataLossError(absl::StrCat(
          "result ", r, " (", e.shape().ToString(false), "): ", bad, " of ", e.element_count(),
          " elements differ; first at ", first, ": expected ",
          is_float ? absl::StrCat(e.GetAsDouble(first)) : absl::StrCat(e.GetAsInt64(first)),
          ", got ",
          is_float ? absl::StrCat(a.GetAsDouble(first)) : absl::StrCat(a.GetAsInt64(first))));
    }
  }
  return absl::OkStatus();
}

absl::Status CompareWithRoundingSpread(const ir::Module& module,
                                       const std::vector<ir::Literal>& arguments,
                                       const std::vector<ir::Literal>& exact,
                                       const std::vector<ir::Literal>& actual,
                                       const Tolerance& tolerance, int64_t* ill_conditioned) {
  if (ill_conditioned != nullptr) *ill_conditioned = 0;
  absl::Status strict = CompareLeaves(exact, actual, tolerance);
  if (strict.ok() || !absl::IsDataLoss(strict)) return strict;
  // Before calling it a mismatch, see whether the differing elements are ill-conditioned: ones
  // the reference itself moves on by a comparable amount under rounding noise. The spread is a
  // sample's maximum, so elements outside a small sample get a larger one (deep recurrent or
  // gated stacks with random weights, GNMT and WaveNet, amplify rounding chaotically: with 10
  // pairs 255,987 of GNMT's 256,000 logits are ill-conditioned, and 2 lay outside 3 pairs').
  absl::Status lenient = strict;
  for (int pairs : {3, 10}) {
    absl::StatusOr<RoundingSpreads> spreads = RoundingSpread(module, arguments, exact, pairs);
    if (!spreads.ok()) return strict;
    if (ill_conditioned != nullptr) *ill_conditioned = 0;
    lenient = CompareLeaves(exact, actual, tolerance, &*spreads, ill_conditioned);
    if (lenient.ok()) return lenient;
  }
  return absl::DataLossError(absl::StrCat(lenient.message(), " (beyond ", tolerance.spread_factor,
                                          "x how far rounding noise moves the reference)"));
}

}  // namespace mltune::backends::cpu
