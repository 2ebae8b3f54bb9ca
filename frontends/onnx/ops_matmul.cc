// MatMul, Gemm and Einsum as dots with batch and contracting dimensions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/nn_util.h"

namespace mltune::ir::onnx {

absl::StatusOr<Instruction*> NumpyMatMul(NodeContext& n, Instruction* a, Instruction* c) {
  Emitter& b = n.b();
  if (a->shape().rank() == 0 || c->shape().rank() == 0) {
    return n.Error("MatMul operands must have rank >= 1");
  }
  // 1-D operands get a unit dimension that the result drops again.
  const bool a_vec = a->shape().rank() == 1, c_vec = c->shape().rank() == 1;
  if (a_vec) a = b.Reshape(a, {1, a->shape().dimensions(0)});
  if (c_vec) c = b.Reshape(c, {c->shape().dimensions(0), 1});
  const auto& ad = a->shape().dimensions();
  const auto& cd = c->shape().dimensions();
  const int64_t ar = a->shape().rank(), cr = c->shape().rank();
  if (ad[ar - 1] != cd[cr - 2]) {
    return n.Error(absl::StrCat("MatMul operands ", a->shape().ToString(false), " and ",
                                c->shape().ToString(false),
                                " do not agree on the inner dimension"));
  }
  // A matrix on the right (the weights of a linear layer): one dot contracting the last
  // dimension, with no batch dimensions and no copy of the weights per batch.
  if (cr == 2 && !c_vec) {
    DotDimensionNumbers dn;
    dn.lhs_contracting_dimensions = {ar - 1};
    dn.rhs_contracting_dimensions = {0};
    MLTUNE_ASSIGN(y, b.Dot(a, c, dn));
    if (!a_vec) return y;
    std::vector<int64_t> out = y->shape().dimensions();
    out.erase(out.end() - 2);
    return b.Reshape(y, out);
  }

  const int64_t nb = std::max(ar, cr) - 2;
  std::vector<int64_t> batch(nb, 1);
  for (int64_t side = 0; side < 2; ++side) {
    const auto& d = side == 0 ? ad : cd;
    const int64_t r = static_cast<int64_t>(d.size()) - 2;
    for (int64_t i = 0; i < r; ++i) {
      int64_t& out = batch[nb - r + i];
      if (d[i] == out || d[i] == 1) continue;
      if (out != 1) {
        return n.Error(absl::StrCat("MatMul batch dimensions of ", a->shape().ToString(false),
                                    " and ", c->shape().ToString(false), " do not broadcast"));
      }
      out = d[i];
    }
  }
  std::vector<int64_t> a_to = batch, c_to = batch;
  a_to.push_back(ad[ar - 2]);
  a_to.push_back(ad[ar - 1]);
  c_to.push_back(cd[cr - 2]);
  c_to.push_back(cd[cr - 1]);
  const int64_t m = ad[ar - 2], k = cd[cr - 1];
  MLTUNE_ASSIGN(a2, b.BroadcastTo(a, a_to));
  MLTUNE_ASSIGN(c2, b.BroadcastTo(c, c_to));
  DotDimensionNumbers dn;
  dn.lhs_batch_dimensions = dn.rhs_batch_dimensions = Range(0, nb);
  dn.lhs_contracting_dimensions = {nb + 1};
  dn.rhs_contracting_dimensions = {nb};
  MLTUNE_ASSIGN(y, b.Dot(a2, c2, dn));
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(m);
  if (!c_vec) out.push_back(k);
  return b.Reshape(y, out);
}

namespace {

Outputs MatMul(NodeContext& n) {
  MLTUNE_ASSIGN(a, n.required_input(0));
  MLTUNE_ASSIGN(c, n.required_input(1));
  return One(NumpyMatMul(n, a, c));
}

Outputs Gemm(NodeContext& n) {
  MLTUNE_ASSIGN(a, n.required_input(0));
  MLTUNE_ASSIGN(c, n.required_input(1));
  MLTUNE_ASSIGN(alpha, n.attr_float("alpha", 1.0f));
  MLTUNE_ASSIGN(beta, n.attr_float("beta", 1.0f));
  MLTUNE_ASSIGN(trans_a, n.attr_int("transA", 0));
  MLTUNE_ASSIGN(trans_b, n.attr_int("transB", 0));
  Emitter& b = n.b();
  if (a->shape().rank() != 2 || c->shape().rank() != 2) {
    return n.Error(absl::StrCat("Gemm operands must be matrices, got ", a->shape().ToString(false),
                                " and ", c->shape().ToString(false)));
  }
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {trans_a ? 0 : 1};
  dn.rhs_contracting_dimensions = {trans_b ? 1 : 0};
  absl::StatusOr<Instruction*> dot = b.Dot(a, c, dn);
  if (!dot.ok()) return n.Error(std::string(dot.status().message()));
  Instruction* y = *dot;
  if (alpha != 1.0f) y = Bin(b, Opcode::kMultiply, y, b.Full(y, alpha));
  if (n.has_input(2) && beta != 0.0f) {
    Instruction* bias = n.input(2);
    if (beta != 1.0f) bias = Bin(b, Opcode::kMultiply, bias, b.Full(bias, beta));
    absl::StatusOr<Instruction*> bb = b.BroadcastTo(bias, y->shape().dimensions());
    if (!bb.ok()) return n.Error(absl::StrCat("C: ", std::string(bb.status().message())));
    y = Bin(b, Opcode::kAdd, y, b.Convert(*bb, y->shape().element_type()));
  }
  return One(y);
}

// An operand of an einsum with one label per dimension.
struct Labeled {
  Instruction* x;
  std::string labels;
};

// Sums the dimensions whose labels are not in `keep`.
Labeled SumOut(Emitter& b, Labeled t, const std::set<char>& keep) {
  std::vector<int64_t> dims;
  std::string rest;
  for (size_t i = 0; i < t.labels.size(); ++i) {
    if (keep.count(t.labels[i]) == 0) {
      dims.push_back(static_cast<int64_t>(i));
    } else {
      rest.push_back(t.labels[i]);
    }
  }
  if (dims.empty()) return t;
  return {b.Reduce(t.x, dims, Opcode::kAdd, 0), rest};
}

// Takes the diagonal of a label that repeats within one operand.
absl::StatusOr<Labeled> Diagonals(NodeContext& n, Labeled t) {
  Emitter& b = n.b();
  for (;;) {
    int64_t first = -1, second = -1;
    for (size_t i = 0; i < t.labels.size() && first < 0; ++i) {
      size_t j = t.labels.find(t.labels[i], i + 1);
      if (j != std::string::npos) {
        first = static_cast<int64_t>(i);
        second = static_cast<int64_t>(j);
      }
    }
    if (first < 0) return t;
    const auto& d = t.x->shape().dimensions();
    if (d[first] != d[second]) {
      return n.Error(absl::StrCat("einsum label '", std::string(1, t.labels[first]),
                                  "' has extents ", d[first], " and ", d[second]));
    }
    Instruction* i1 = b.Iota(PrimitiveType::kS64, d, first);
    Instruction* i2 = b.Iota(PrimitiveType::kS64, d, second);
    MLTUNE_ASSIGN(eq, b.Compare(ComparisonDirection::kEq, i1, i2));
    MLTUNE_ASSIGN(masked, b.Select(eq, t.x, b.Full(t.x, 0)));
    t.x = b.Reduce(masked, {second}, Opcode::kAdd, 0);
    t.labels.erase(second, 1);
  }
}

Outputs Einsum(NodeContext& n) {
  MLTUNE_ASSIGN(equation_attr, n.attr_string("equation"));
  Emitter& b = n.b();
  std::string eq;
  for (char ch : equation_attr) {
    if (ch != ' ') eq.push_back(ch);
  }
  std::string lhs = eq, rhs;
  const bool explicit_out = eq.find("->") != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, eq.find("->"));
    rhs = eq.substr(eq.find("->") + 2);
  }
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<Instruction*> xs;
  for (int64_t i = 0; i < n.input_count(); ++i) {
    if (n.has_input(i)) xs.push_back(n.input(i));
  }
  if (xs.size() != terms.size()) {
    return n.Error(absl::StrCat("equation '", equation_attr, "' has ", terms.size(),
                                " operands, the node has ", xs.size(), " inputs"));
  }
  // Labels are letters, with at most one "..." per term.
  for (const std::string& term : terms) {
    const size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (char ch : letters) {
      if (!std::isalpha(static_cast<unsigned char>(ch))) {
        return n.Error(absl::StrCat("equation '", equation_attr, "' has the label '",
                                    std::string(1, ch), "' in term '", term, "'"));
      }
    }
  }
  // Ellipsis dimensions get labels below every letter, aligned to the right across operands.
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string::npos) continue;
    const int64_t named = static_cast<int64_t>(terms[i].size()) - 3;
    ellipsis_rank = std::max(ellipsis_rank, xs[i]->shape().rank() - named);
  }
  if (ellipsis_rank > 31) return n.Unsupported("einsum ellipsis of more than 31 dimensions");
  auto ellipsis_label = [](int64_t i) { return static_cast<char>(1 + i); };
  auto expand = [&](const std::string& term, int64_t rank) -> absl::StatusOr<std::string> {
    const size_t dots = term.find("...");
    if (dots == std::string::npos) return term;
    const int64_t k = rank < 0 ? ellipsis_rank : rank - static_cast<int64_t>(term.size()) + 3;
    if (k < 0) return n.Error(absl::StrCat("einsum term '", term, "' has too many labels"));
    std::string e;
    for (int64_t i = ellipsis_rank - k; i < ellipsis_rank; ++i) e.push_back(ellipsis_label(i));
    return term.substr(0, dots) + e + term.substr(dots + 3);
  };
  std::vector<Labeled> ops;
  std::map<char, int64_t> uses;
  for (size_t i = 0; i < terms.size(); ++i) {
    MLTUNE_ASSIGN(labels, expand(terms[i], xs[i]->shape().rank()));
    for (char ch : labels) ++uses[ch];
    if (static_cast<int64_t>(labels.size()) != xs[i]->shape().rank()) {
      return n.Error(absl::StrCat("einsum term '", terms[i], "' does not match the rank of ",
                                  xs[i]->shape().ToString(false)));
    }
    ops.push_back({xs[i], labels});
  }
  std::string out;
  if (explicit_out) {
    MLTUNE_ASSIGN(o, expand(rhs, -1));
    out = o;
  } else {
    // Implicit output: the ellipsis, then the letters used once, in ASCII order.
    for (int64_t i = 0; i < ellipsis_rank; ++i) out.push_back(ellipsis_label(i));
    for (const auto& [ch, count] : uses) {
      if (count == 1 && std::isalpha(static_cast<unsigned char>(ch))) out.push_back(ch);
    }
  }
  for (Labeled& t : ops) {
    MLTUNE_ASSIGN(d, Diagonals(n, t));
    t = d;
  }
  // Fold the operands left to right, keeping the labels that the output or a later operand uses.
  Labeled acc = ops[0];
  for (size_t i = 0; i <= ops.size(); ++i) {
    std::set<char> keep(out.begin(), out.end());
    for (size_t j = i + 1; j < ops.size(); ++j)
      keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    if (i == 0) {
      acc = SumOut(b, acc, keep);
      continue;
    }
    if (i == ops.size()) break;
    std::set<char> keep_l = keep, keep_r = keep;
    keep_l.insert(ops[i].labels.begin(), ops[i].labels.end());
    keep_r.insert(acc.labels.begin(), acc.labels.end());
    acc = SumOut(b, acc, keep_l);
    Labeled r = SumOut(b, ops[i], keep_r);
    DotDimensionNumbers dn;
    std::string batch, lfree, rfree;
    for (size_t l = 0; l < acc.labels.size(); ++l) {
      const char ch = acc.labels[l];
      const size_t rpos = r.labels.find(ch);
      if (rpos == std::string::npos) {
        lfree.push_back(ch);
      } else if (keep.count(ch)) {
        batch.push_back(ch);
        dn.lhs_batch_dimensions.push_back(static_cast<int64_t>(l));
        dn.rhs_batch_dimensions.push_back(static_cast<int64_t>(rpos));
      } else {
        dn.lhs_contracting_dimensions.push_back(static_cast<int64_t>(l));
        dn.rhs_contracting_dimensions.push_back(static_cast<int64_t>(rpos));
      }
    }
    for (char ch : r.labels) {
      if (acc.labels.find(ch) == std::string::npos) rfree.push_back(ch);
    }
    absl::StatusOr<Instruction*> dot = b.Dot(acc.x, r.x, dn);
    if (!dot.ok()) return n.Error(absl::StrCat("einsum: ", std::string(dot.status().message())));
    acc = {*dot, batch + lfree + rfree};
  }
  acc = SumOut(b, acc, std::set<char>(out.begin(), out.end()));
  std::vector<int64_t> perm;
  for (char ch : out) {
    const size_t p = acc.labels.find(ch);
    if (p == std::string::npos) {
      return n.Error(absl::StrCat("output label '", std::string(1, ch), "' is not in any operand"));
    }
    perm.push_back(static_cast<int64_t>(p));
  }
  if (perm.size() != acc.labels.size()) return n.Error("output repeats a label");
  return One(b.Transpose(acc.x, perm));
}

}  // namespace

void RegisterMatMulOps(OpRegistry& r) {
  r.Register("MatMul", MatMul);
  r.Register("Gemm", Gemm);
  r.Register("Einsum", Einsum);
}

}  // namespace mltune::ir::onnx
