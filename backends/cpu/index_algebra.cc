#include "backends/cpu/index_algebra.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace mltune::backends::cpu {
namespace {

bool IsIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

int64_t FloorDiv(int64_t a, int64_t d) {
  const int64_t q = a / d;
  return (a % d != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

// Terms by decreasing magnitude (outer dimensions first), so that equal sums built in different
// orders print alike and share memoized values.
void IndexAlgebra::Canonicalize(Affine* a) {
  std::stable_sort(a->terms.begin(), a->terms.end(), [](const auto& x, const auto& y) {
    const int64_t mx = x.second < 0 ? -x.second : x.second;
    const int64_t my = y.second < 0 ? -y.second : y.second;
    return mx != my ? mx > my : x.first < y.first;
  });
}

void IndexAlgebra::Bound(const std::string& expr, int64_t lo, int64_t hi) {
  auto [it, inserted] = bounds_.try_emplace(expr, Range{lo, hi});
  if (!inserted) {
    it->second.lo = std::max(it->second.lo, lo);
    it->second.hi = std::min(it->second.hi, hi);
  }
}

void IndexAlgebra::BoundLike(const std::string& name, const std::string& expr) {
  const std::optional<Range> r = RangeOf(Parse(expr));
  if (r.has_value()) Bound(name, r->lo, r->hi);
}

void IndexAlgebra::AddTerm(Affine* a, const std::string& atom, int64_t coefficient) {
  if (coefficient == 0) return;
  for (auto it = a->terms.begin(); it != a->terms.end(); ++it) {
    if (it->first == atom) {
      it->second += coefficient;
      if (it->second == 0) a->terms.erase(it);
      return;
    }
  }
  a->terms.emplace_back(atom, coefficient);
}

void IndexAlgebra::AddScaled(Affine* a, const Affine& b, int64_t scale) {
  for (const auto& [atom, c] : b.terms) AddTerm(a, atom, c * scale);
  a->constant += b.constant * scale;
}

IndexAlgebra::Affine IndexAlgebra::Parse(const std::string& expr) const {
  Affine a;
  int64_t literal = 0;
  if (absl::SimpleAtoi(expr, &literal)) {
    a.constant = literal;
    return a;
  }
  // A form is expanded only where all its atoms have ranges; otherwise its own bound (a valid
  // index of the shape it indexes) says more than its parts do.
  auto form = forms_.find(expr);
  if (form != forms_.end() && (RangeOf(form->second).has_value() || !bounds_.contains(expr))) {
    return form->second;
  }
  a.terms.emplace_back(expr, 1);
  return a;
}

std::optional<IndexAlgebra::Range> IndexAlgebra::AtomRange(const std::string& atom) const {
  auto it = bounds_.find(atom);
  if (it != bounds_.end()) return it->second;
  auto form = forms_.find(atom);
  if (form != forms_.end() &&
      !(form->second.terms.size() == 1 && form->second.terms[0].first == atom)) {
    return RangeOf(form->second);
  }
  return std::nullopt;
}

std::optional<IndexAlgebra::Range> IndexAlgebra::RangeOf(const Affine& a) const {
  Range r{a.constant, a.constant};
  for (const auto& [atom, c] : a.terms) {
    const std::optional<Range> t = AtomRange(atom);
    if (!t.has_value()) return std::nullopt;
    r.lo += c > 0 ? c * t->lo : c * t->hi;
    r.hi += c > 0 ? c * t->hi : c * t->lo;
  }
  return r;
}

void IndexAlgebra::Recombine(Affine* a) const {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < a->terms.size() && !changed; ++i) {
      auto qi = derived_.find(a->terms[i].first);
      if (qi == derived_.end() || qi->second.remainder) continue;
      for (size_t j = 0; j < a->terms.size() && !changed; ++j) {
        auto rj = derived_.find(a->terms[j].first);
        if (rj == derived_.end() || !rj->second.remainder) continue;
        const Derived& q = qi->second;
        const Derived& r = rj->second;
        const int64_t cq = a->terms[i].second, cr = a->terms[j].second;
        // Inner forms are canonical (DerivedAtom), so equal ones compare equal.
        if (q.divisor != r.divisor || cq != cr * q.divisor || q.inner.terms != r.inner.terms ||
            q.inner.constant != r.inner.constant) {
          continue;
        }
        const Affine inner = q.inner;
        const std::string qa = a->terms[i].first, ra = a->terms[j].first;
        AddTerm(a, qa, -cq);
        AddTerm(a, ra, -cr);
        AddScaled(a, inner, cr);
        changed = true;
      }
    }
  }
}

std::string IndexAlgebra::Render(const Affine& form) {
  Affine a = form;
  Recombine(&a);
  Canonicalize(&a);
  if (a.terms.empty()) return absl::StrCat(a.constant);
  if (a.terms.size() == 1 && a.terms[0].second == 1 && a.constant == 0) return a.terms[0].first;
  std::string text;
  for (const auto& [atom, c] : a.terms) {
    const std::string x =
        IsIdentifier(atom) || derived_.contains(atom) ? atom : absl::StrCat("(", atom, ")");
    const int64_t mag = c < 0 ? -c : c;
    const std::string term = mag == 1 ? x : absl::StrCat(x, "*", mag, "LL");
    if (text.empty()) {
      text = c < 0 ? absl::StrCat("-", term) : term;
    } else {
      absl::StrAppend(&text, c < 0 ? " - " : " + ", term);
    }
  }
  if (a.constant != 0) {
    absl::StrAppend(&text, a.constant < 0 ? " - " : " + ",
                    a.constant < 0 ? -a.constant : a.constant, "LL");
  }
  forms_.try_emplace(text, a);
  return text;
}

std::string IndexAlgebra::DerivedAtom(const Affine& inner, int64_t divisor, bool remainder) {
  const std::string x = Render(inner);
  const std::string text = absl::StrCat("(", IsIdentifier(x) ? x : absl::StrCat("(", x, ")"),
                                        remainder ? " % " : " / ", divisor, ")");
  if (!derived_.contains(text)) {
    Affine canonical = inner;
    Canonicalize(&canonical);
    derived_.emplace(text, Derived{canonical, divisor, remainder});
    const std::optional<Range> r = RangeOf(inner);
    if (r.has_value()) {
      Bound(text, remainder ? 0 : r->lo / divisor,
            remainder ? std::min(divisor - 1, r->hi) : r->hi / divisor);
    }
  }
  return text;
}

std::optional<std::pair<IndexAlgebra::Affine, IndexAlgebra::Affine>> IndexAlgebra::DivMod(
    const Affine& a, int64_t d) {
  const std::optional<Range> range = RangeOf(a);
  if (!range.has_value() || range->lo < 0) return std::nullopt;
  Affine q, r;
  if (d == 1) return std::make_pair(a, r);
  if (range->hi < d) return std::make_pair(q, a);
  // Terms whose coefficients d divides go to the quotient whole; the constant splits too.
  Affine small;
  for (const auto& [atom, c] : a.terms) {
    if (c % d == 0) {
      AddTerm(&q, atom, c / d);
    } else {
      AddTerm(&small, atom, c);
    }
  }
  q.constant = FloorDiv(a.constant, d);
  small.constant = a.constant - q.constant * d;
  const std::optional<Range> sr = RangeOf(small);
  if (!sr.has_value() || sr->lo < 0) return std::nullopt;
  if (sr->hi < d) return std::make_pair(q, small);
  // small = g*big + rest with 0 <= rest < g, g dividing d: floor(small / d) = floor(big / (d/g))
  // and small mod d = (big mod d/g)*g + rest. The largest such g leaves the least behind.
  std::vector<int64_t> candidates;
  for (const auto& [atom, c] : small.terms) {
    const int64_t g = std::gcd(c < 0 ? -c : c, d);
    if (g > 1 && g < d) candidates.push_back(g);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t g : candidates) {
    Affine big, rest;
    for (const auto& [atom, c] : small.terms) {
      if (c % g == 0) {
        AddTerm(&big, atom, c / g);
      } else {
        AddTerm(&rest, atom, c);
      }
    }
    rest.constant = small.constant;
    const std::optional<Range> rr = RangeOf(rest);
    const std::optional<Range> br = RangeOf(big);
    if (!rr.has_value() || rr->lo < 0 || rr->hi >= g || !br.has_value() || br->lo < 0) continue;
    std::optional<std::pair<Affine, Affine>> inner = DivMod(big, d / g);
    Affine iq, ir;
    if (inner.has_value()) {
      iq = inner->first;
      ir = inner->second;
    } else {
      AddTerm(&iq, DerivedAtom(big, d / g, false), 1);
      AddTerm(&ir, DerivedAtom(big, d / g, true), 1);
    }
    AddScaled(&q, iq, 1);
    AddScaled(&rest, ir, g);
    return std::make_pair(q, rest);
  }
  AddTerm(&q, DerivedAtom(small, d, false), 1);
  AddTerm(&r, DerivedAtom(small, d, true), 1);
  return std::make_pair(q, r);
}

std::string IndexAlgebra::Sum(const std::vector<std::pair<std::string, int64_t>>& terms,
                              int64_t constant) {
  Affine a;
  a.constant = constant;
  for (const auto& [expr, c] : terms) AddScaled(&a, Parse(expr), c);
  return Render(a);
}

std::string IndexAlgebra::Div(const std::string& expr, int64_t divisor) {
  const Affine a = Parse(expr);
  std::optional<std::pair<Affine, Affine>> qr = DivMod(a, divisor);
  if (qr.has_value()) return Render(qr->first);
  if (divisor == 1) return expr;
  return absl::StrCat("(", expr, ") / ", divisor);
}

std::string IndexAlgebra::Mod(const std::string& expr, int64_t divisor) {
  const Affine a = Parse(expr);
  std::optional<std::pair<Affine, Affine>> qr = DivMod(a, divisor);
  if (qr.has_value()) return Render(qr->second);
  if (divisor == 1) return "0";
  return absl::StrCat("(", expr, ") % ", divisor);
}

}  // namespace mltune::backends::cpu
