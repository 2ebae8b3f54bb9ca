// The index algebra's simplified expressions evaluate, for every value of their variables, to what
// the unsimplified division and remainder arithmetic gives: checked by evaluating the emitted text.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/index_algebra.h"

namespace mltune::backends::cpu {
namespace {

// Evaluates the C++ integer expressions the algebra writes: identifiers, literals with an LL
// suffix, + - * / % with C's precedence and truncating division, parentheses.
class TextEvaluator {
 public:
  TextEvaluator(const std::string& text, const std::map<std::string, int64_t>& vars)
      : s_(text), vars_(vars) {}
  int64_t Run() {
    const int64_t v = Sum();
    Skip();
    EXPECT_EQ(pos_, s_.size()) << "trailing text in " << s_;
    return v;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  int64_t Sum() {
    int64_t v = Product();
    for (Skip(); pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-'); Skip()) {
      const char op = s_[pos_++];
      const int64_t r = Product();
      v = op == '+' ? v + r : v - r;
    }
    return v;
  }
  int64_t Product() {
    int64_t v = Unary();
    for (Skip(); pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/' || s_[pos_] == '%');
         Skip()) {
      const char op = s_[pos_++];
      const int64_t r = Unary();
      v = op == '*' ? v * r : op == '/' ? v / r : v % r;
    }
    return v;
  }
  int64_t Unary() {
    Skip();
    if (s_[pos_] == '-') {
      ++pos_;
      return -Unary();
    }
    if (s_[pos_] == '(') {
      ++pos_;
      const int64_t v = Sum();
      Skip();
      EXPECT_EQ(s_[pos_], ')') << s_;
      ++pos_;
      return v;
    }
    const size_t start = pos_;
    if (std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      const int64_t v = std::stoll(s_.substr(start, pos_ - start));
      if (s_.compare(pos_, 2, "LL") == 0) pos_ += 2;
      return v;
    }
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      ++pos_;
    }
    const std::string name = s_.substr(start, pos_ - start);
    auto it = vars_.find(name);
    EXPECT_NE(it, vars_.end()) << "unknown name '" << name << "' in " << s_;
    return it == vars_.end() ? 0 : it->second;
  }

  std::string s_;
  size_t pos_ = 0;
  const std::map<std::string, int64_t>& vars_;
};

int64_t Eval(const std::string& text, const std::map<std::string, int64_t>& vars) {
  return TextEvaluator(text, vars).Run();
}

TEST(IndexAlgebraTest, ReshapeThereAndBackIsTheIdentity) {
  // [3136, 384] -> [56, 56, 384] -> [3136, 384], as Swin's fused GELU read its input.
  IndexAlgebra a;
  a.Bound("i", 0, 3135);
  a.Bound("j", 0, 383);
  const std::string lin = a.Sum({{"i", 384}, {"j", 1}}, 0);
  const std::string o0 = a.Div(lin, 21504);
  const std::string o1 = a.Mod(a.Div(lin, 384), 56);
  const std::string o2 = a.Mod(lin, 384);
  EXPECT_EQ(o1, "(i % 56)");
  EXPECT_EQ(o2, "j");
  const std::string back = a.Sum({{o0, 21504}, {o1, 384}, {o2, 1}}, 0);
  EXPECT_EQ(a.Div(back, 384), "i");
  EXPECT_EQ(a.Mod(back, 384), "j");
  EXPECT_EQ(back, "i*384LL + j");
}

TEST(IndexAlgebraTest, UnknownRangesKeepCDivision) {
  IndexAlgebra a;
  EXPECT_EQ(a.Div("x", 4), "(x) / 4");
  EXPECT_EQ(a.Mod("x", 4), "(x) % 4");
  a.Bound("y", -3, 10);  // may be negative: floor and C's truncation differ
  EXPECT_EQ(a.Div("y", 4), "(y) / 4");
  EXPECT_EQ(a.Div("x", 1), "x");
}

TEST(IndexAlgebraTest, OffsetsAndNegativeCoefficients) {
  IndexAlgebra a;
  a.Bound("i", 0, 9);
  const std::string rev = a.Sum({{"i", -1}}, 9);  // a reverse: 9 - i
  for (int64_t i = 0; i <= 9; ++i) {
    const std::map<std::string, int64_t> vars = {{"i", i}};
    EXPECT_EQ(Eval(a.Div(rev, 4), vars), (9 - i) / 4);
    EXPECT_EQ(Eval(a.Mod(rev, 4), vars), (9 - i) % 4);
    const std::string shifted = a.Sum({{"i", 3}}, 7);  // a strided slice from 7
    EXPECT_EQ(Eval(a.Div(shifted, 6), vars), (3 * i + 7) / 6);
    EXPECT_EQ(Eval(a.Mod(shifted, 6), vars), (3 * i + 7) % 6);
  }
}

// Random reshape chains: a row-major index over random loop extents, split into another shape,
// sliced or reversed, split again; every emitted index matches plain arithmetic everywhere.
TEST(IndexAlgebraTest, RandomReshapeChainsMatchPlainArithmetic) {
  std::mt19937_64 rng(7);
  auto factor = [&](int64_t n) {  // a random factorization of n into 1-4 dimensions
    std::vector<int64_t> dims;
    while (n > 1 && dims.size() < 3) {
      std::vector<int64_t> divisors;
      for (int64_t d = 2; d <= n; ++d) {
        if (n % d == 0) divisors.push_back(d);
      }
      const int64_t d = divisors[rng() % divisors.size()];
      dims.push_back(d);
      n /= d;
    }
    if (n > 1 || dims.empty()) dims.push_back(n);
    std::shuffle(dims.begin(), dims.end(), rng);
    return dims;
  };
  for (int trial = 0; trial < 300; ++trial) {
    IndexAlgebra a;
    const int64_t sizes[] = {6, 8, 12, 16, 24, 30, 36, 48, 60, 64};
    const int64_t total = sizes[rng() % 10] * sizes[rng() % 10];
    const std::vector<int64_t> loops = factor(total);
    std::vector<std::string> names;
    std::vector<std::pair<std::string, int64_t>> terms;
    int64_t stride = total;
    for (size_t d = 0; d < loops.size(); ++d) {
      names.push_back(absl::StrCat("i", d));
      a.Bound(names.back(), 0, loops[d] - 1);
      stride /= loops[d];
      terms.emplace_back(names.back(), stride);
    }
    // Two reshapes, with a reverse of one dimension between them half the time.
    std::string lin = a.Sum(terms, 0);
    std::vector<std::vector<std::string>> stages;
    std::vector<std::vector<int64_t>> stage_dims;
    std::vector<int64_t> reversed_dim;
    for (int stage = 0; stage < 2; ++stage) {
      const std::vector<int64_t> dims = factor(total);
      std::vector<std::string> idx;
      int64_t s = total;
      for (int64_t d : dims) {
        s /= d;
        idx.push_back(a.Mod(a.Div(lin, s), d));
      }
      int64_t reversed = -1;
      if (rng() % 2 == 0) {
        reversed = static_cast<int64_t>(rng() % dims.size());
        const size_t r = static_cast<size_t>(reversed);
        idx[r] = a.Sum({{idx[r], -1}}, dims[r] - 1);
      }
      reversed_dim.push_back(reversed);
      std::vector<std::pair<std::string, int64_t>> t;
      s = total;
      for (size_t d = 0; d < dims.size(); ++d) {
        a.Bound(idx[d], 0, dims[d] - 1);
        s /= dims[d];
        t.emplace_back(idx[d], s);
      }
      stages.push_back(idx);
      stage_dims.push_back(dims);
      lin = a.Sum(t, 0);
    }
    // Plain arithmetic of the same chain, at every point.
    for (int64_t flat = 0; flat < total; ++flat) {
      std::map<std::string, int64_t> vars;
      int64_t rem = flat;
      for (size_t d = loops.size(); d-- > 0;) {
        vars[names[d]] = rem % loops[d];
        rem /= loops[d];
      }
      int64_t plain = flat;
      for (size_t st = 0; st < stages.size(); ++st) {
        const std::vector<int64_t>& dims = stage_dims[st];
        std::vector<int64_t> idx(dims.size());
        int64_t r = plain;
        for (size_t d = dims.size(); d-- > 0;) {
          idx[d] = r % dims[d];
          r /= dims[d];
        }
        int64_t next = 0;
        for (size_t d = 0; d < dims.size(); ++d) {
          const int64_t want =
              reversed_dim[st] == static_cast<int64_t>(d) ? dims[d] - 1 - idx[d] : idx[d];
          ASSERT_EQ(Eval(stages[st][d], vars), want) << stages[st][d];
          next = next * dims[d] + want;
        }
        plain = next;
      }
      ASSERT_EQ(Eval(lin, vars), plain) << lin;
    }
  }
}

}  // namespace
}  // namespace mltune::backends::cpu
