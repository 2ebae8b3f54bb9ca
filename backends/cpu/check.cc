#include "backends/cpu/check.h"

#include <cmath>

#include "absl/strings/str_cat.h"

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

}  // namespace

std::vector<ir::Literal> FlattenLeaves(const ir::Literal& literal) {
  std::vector<ir::Literal> out;
  Flatten(literal, &out);
  return out;
}

absl::Status CompareLeaves(const std::vector<ir::Literal>& expected,
                           const std::vector<ir::Literal>& actual, const Tolerance& tolerance) {
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
        if (std::isnan(x) || std::isnan(y)) {
          ok = std::isnan(x) && std::isnan(y);
        } else if (std::isinf(x) || std::isinf(y)) {
          ok = x == y;
        } else {
          const double err = std::fabs(x - y);
          ok = err <= tolerance.absolute + tolerance.relative * std::fabs(x);
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

}  // namespace mltune::backends::cpu
