// Simplification of the integer index arithmetic that fused kernels read their operands through:
// sums of atoms (loop indices, variables, quotients and remainders) times constants, with each
// atom's range, so that a reshape's division and remainder fold away where the ranges allow
// (XLA's indexing maps and TVM's arithmetic analyzer do the same). A 64-bit division by a
// constant in an inner loop stops GCC's vectorizer: Swin's fused GELU ran scalar through two
// reshapes whose indices were the identity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mltune::backends::cpu {

class IndexAlgebra {
 public:
  // `expr` (as the algebra writes it, or any C++ integer expression) lies in [lo, hi]; facts
  // stated twice keep the tighter bounds.
  void Bound(const std::string& expr, int64_t lo, int64_t hi);
  // sum(coefficient * term) + constant, simplified.
  std::string Sum(const std::vector<std::pair<std::string, int64_t>>& terms, int64_t constant);
  // floor(expr / divisor) and expr mod divisor, for divisor > 0. Simplified when `expr` is known
  // to be non-negative; otherwise C++'s `/` and `%`, as written.
  std::string Div(const std::string& expr, int64_t divisor);
  std::string Mod(const std::string& expr, int64_t divisor);
  // Gives variable `name` the range of `expr`, where that is known.
  void BoundLike(const std::string& name, const std::string& expr);

 private:
  struct Range {
    int64_t lo = 0, hi = 0;
  };
  // sum of coefficient * atom, plus constant; atoms in order of first appearance.
  struct Affine {
    std::vector<std::pair<std::string, int64_t>> terms;
    int64_t constant = 0;
  };
  // An atom that is a quotient or remainder of an affine expression by a constant.
  struct Derived {
    Affine inner;
    int64_t divisor;
    bool remainder;
  };

  Affine Parse(const std::string& expr) const;
  static void Canonicalize(Affine* a);
  static void AddTerm(Affine* a, const std::string& atom, int64_t coefficient);
  static void AddScaled(Affine* a, const Affine& b, int64_t scale);
  // Quotient and remainder atoms of one inner expression recombined into it:
  // c*d*floor(x/d) + c*(x mod d) = c*x.
  void Recombine(Affine* a) const;
  std::optional<Range> RangeOf(const Affine& a) const;
  std::optional<Range> AtomRange(const std::string& atom) const;
  std::string Render(const Affine& a);
  // floor(a / d) and a mod d, with a >= 0 known; nullopt where no rule applies.
  std::optional<std::pair<Affine, Affine>> DivMod(const Affine& a, int64_t d);
  std::string DerivedAtom(const Affine& inner, int64_t divisor, bool remainder);

  std::unordered_map<std::string, Range> bounds_;
  std::unordered_map<std::string, Affine> forms_;  // rendered text -> its form
  std::unordered_map<std::string, Derived> derived_;
};

}  // namespace mltune::backends::cpu
