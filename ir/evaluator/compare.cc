#include "ir/evaluator/compare.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace mltune::ir {
namespace {

bool Close(double a, double b, const Tolerance& t) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= t.absolute + t.relative * std::max(std::fabs(a), std::fabs(b));
}

void Track(double a, double b, LiteralDifference& d) {
  if (!std::isfinite(a) || !std::isfinite(b)) return;
  const double abs = std::fabs(a - b);
  d.max_abs = std::max(d.max_abs, abs);
  const double scale = std::max(std::fabs(a), std::fabs(b));
  if (scale > 0) d.max_rel = std::max(d.max_rel, abs / scale);
}

void Compare(const Literal& a, const Literal& b, const std::string& path, const Tolerance& t,
             LiteralDifference& d) {
  if (!a.shape().Compatible(b.shape())) {
    d.shapes_match = false;
    ++d.violations;
    if (d.first_violation.empty()) {
      d.first_violation = absl::StrCat("output ", path, ": shape ", a.shape().ToString(false),
                                       " became ", b.shape().ToString(false));
    }
    return;
  }
  if (a.shape().IsTuple()) {
    for (size_t i = 0; i < a.elements().size(); ++i) {
      Compare(a.elements()[i], b.elements()[i],
              path == "{}" ? absl::StrCat("{", i, "}") : absl::StrCat(path, "/", i), t, d);
    }
    return;
  }
  const PrimitiveType type = a.element_type();
  const bool floating = IsFloatingPoint(type) || IsComplex(type);
  for (int64_t k = 0; k < a.element_count(); ++k) {
    ++d.elements;
    bool same;
    std::string va, vb;
    if (floating) {
      const std::complex<double> x = a.GetAsComplex(k), y = b.GetAsComplex(k);
      Track(x.real(), y.real(), d);
      Track(x.imag(), y.imag(), d);
      same = Close(x.real(), y.real(), t) && Close(x.imag(), y.imag(), t);
      if (!same) {
        va = IsComplex(type) ? absl::StrCat(x.real(), "+", x.imag(), "i") : absl::StrCat(x.real());
        vb = IsComplex(type) ? absl::StrCat(y.real(), "+", y.imag(), "i") : absl::StrCat(y.real());
      }
    } else {
      same = a.GetAsUint64(k) == b.GetAsUint64(k);
      if (!same) {
        va = absl::StrCat(a.GetAsInt64(k));
        vb = absl::StrCat(b.GetAsInt64(k));
      }
    }
    if (!same) {
      ++d.violations;
      if (d.first_violation.empty()) {
        d.first_violation = absl::StrCat("output ", path, " element ", k, " of ",
                                         a.shape().ToString(false), ": ", va, " became ", vb);
      }
    }
  }
}

}  // namespace

LiteralDifference CompareLiterals(const Literal& expected, const Literal& actual,
                                  const Tolerance& tolerance) {
  LiteralDifference d;
  Compare(expected, actual, "{}", tolerance, d);
  return d;
}

}  // namespace mltune::ir
