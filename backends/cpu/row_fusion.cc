#include "backends/cpu/row_fusion.h"

#include <algorithm>
#include <functional>

#include "backends/cpu/lowering.h"

namespace mltune::backends::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

bool HasRowShape(const Instruction& m, const std::vector<int64_t>& outer) {
  if (!m.shape().IsArray()) return false;
  const std::vector<int64_t>& d = m.shape().dimensions();
  if (d.size() != outer.size() && d.size() != outer.size() + 1) return false;
  return std::equal(outer.begin(), outer.end(), d.begin());
}

// Whether `m`, which reads a value computed from one of the group's reduces, computes row r from
// row r only: an elementwise op on rows, a broadcast of per-row values along the row, or another
// reduce of the row.
bool RowLocal(const Instruction& m, const std::vector<int64_t>& outer) {
  if (!HasRowShape(m, outer)) return false;
  if (m.opcode() == Opcode::kReduce) {
    std::vector<int64_t> o;
    return RowReduce(m, &o) && o == outer;
  }
  if (m.opcode() == Opcode::kBroadcast) {
    const Instruction& x = *m.operand(0);
    if (!x.shape().IsArray() || x.shape().dimensions() != outer) return false;
    for (size_t i = 0; i < m.dimensions.size(); ++i) {
      if (m.dimensions[i] != static_cast<int64_t>(i)) return false;
    }
    return m.dimensions.size() == outer.size();
  }
  if (!ir::IsElementwise(m.opcode())) return false;
  for (const Instruction* o : m.operands()) {
    if (!o->shape().IsArray() || o->shape().dimensions() != m.shape().dimensions()) return false;
  }
  return true;
}

class Grouper {
 public:
  Grouper(const std::vector<std::vector<const Instruction*>>& members,
          const std::unordered_map<const Instruction*, int32_t>& kernel_of,
          const std::unordered_set<const Instruction*>& results)
      : members_(members), kernel_of_(kernel_of), results_(results) {
    const size_t n = members.size();
    succ_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      for (const Instruction* m : members[k]) {
        for (const Instruction* o : m->operands()) {
          const int32_t p = Producer(o);
          if (p >= 0 && p != static_cast<int32_t>(k)) {
            succ_[static_cast<size_t>(p)].insert(static_cast<int32_t>(k));
          }
        }
      }
    }
  }

  std::vector<int32_t> Run() {
    std::vector<int32_t> group(members_.size());
    for (size_t k = 0; k < group.size(); ++k) group[k] = static_cast<int32_t>(k);
    std::vector<bool> taken(members_.size(), false);
    for (size_t k = 0; k < members_.size(); ++k) {
      if (taken[k]) continue;
      std::vector<int64_t> outer;
      if (!Seed(static_cast<int32_t>(k), &outer)) continue;
      std::unordered_set<int32_t> g = {static_cast<int32_t>(k)};
      std::unordered_set<const Instruction*> dependent;
      Absorb(static_cast<int32_t>(k), &dependent);
      for (bool grew = true; grew;) {
        grew = false;
        for (int32_t c : Successors(g)) {
          if (taken[static_cast<size_t>(c)] || !CanJoin(g, c, outer, dependent)) continue;
          g.insert(c);
          Absorb(c, &dependent);
          grew = true;
          break;
        }
      }
      if (g.size() < 2) continue;
      const int32_t id = *std::min_element(g.begin(), g.end());
      for (int32_t m : g) {
        group[static_cast<size_t>(m)] = id;
        taken[static_cast<size_t>(m)] = true;
      }
    }
    return group;
  }

 private:
  // The kernel computing operand `o`, -1 for parameters and constants, -2 for a view (bitcast,
  // tuple plumbing) of a kernel's value: a view may re-index, so it ends a row group.
  int32_t Producer(const Instruction* o) const {
    auto it = kernel_of_.find(o);
    if (it != kernel_of_.end()) return it->second;
    const Instruction* base = BaseValue(o);
    if (base != o && kernel_of_.count(base) != 0) return -2;
    return -1;
  }

  // A kernel whose only heavy op is a row reduce starts a group.
  bool Seed(int32_t k, std::vector<int64_t>* outer) const {
    const Instruction* reduce = nullptr;
    for (const Instruction* m : members_[static_cast<size_t>(k)]) {
      if (m->opcode() == Opcode::kReduce) {
        if (reduce != nullptr) return false;
        reduce = m;
      } else if (m->opcode() == Opcode::kReduceWindow || m->opcode() == Opcode::kDot ||
                 m->opcode() == Opcode::kConvolution) {
        return false;
      }
    }
    return reduce != nullptr && RowReduce(*reduce, outer);
  }

  // Adds kernel k's ops that depend on a row reduce (the reduces included) to `dependent`.
  void Absorb(int32_t k, std::unordered_set<const Instruction*>* dependent) const {
    for (const Instruction* m : members_[static_cast<size_t>(k)]) {
      bool dep = m->opcode() == Opcode::kReduce;
      for (const Instruction* o : m->operands()) dep = dep || dependent->count(o) != 0;
      if (dep) dependent->insert(m);
    }
  }

  std::vector<int32_t> Successors(const std::unordered_set<int32_t>& g) const {
    std::vector<int32_t> out;
    for (int32_t k : g) {
      for (int32_t s : succ_[static_cast<size_t>(k)]) {
        if (g.count(s) == 0 && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  bool CanJoin(const std::unordered_set<int32_t>& g, int32_t c, const std::vector<int64_t>& outer,
               const std::unordered_set<const Instruction*>& dependent) const {
    std::unordered_set<const Instruction*> dep = dependent;
    for (const Instruction* m : members_[static_cast<size_t>(c)]) {
      const Opcode op = m->opcode();
      if (op == Opcode::kReduceWindow || op == Opcode::kDot || op == Opcode::kConvolution) {
        return false;
      }
      bool d = false;
      for (const Instruction* o : m->operands()) {
        const int32_t p = Producer(o);
        if (p == -2) return false;
        if (p >= 0 && p != c && g.count(p) == 0 && ReachableFrom(g, p)) return false;
        d = d || dep.count(o) != 0;
      }
      if (op == Opcode::kReduce) {
        std::vector<int64_t> o;
        if (!RowReduce(*m, &o) || o != outer) return false;
        d = true;
      }
      if (d) {
        if (!RowLocal(*m, outer)) return false;
        dep.insert(m);
      }
    }
    // Every value leaving the merged kernel is written from inside the row loop.
    auto inside = [&](const Instruction* i) {
      auto it = kernel_of_.find(i);
      return it != kernel_of_.end() && (it->second == c || g.count(it->second) != 0);
    };
    for (int32_t k : g) {
      for (const Instruction* m : members_[static_cast<size_t>(k)]) {
        if (!Leaves(m, inside)) continue;
        if (!HasRowShape(*m, outer)) return false;
      }
    }
    for (const Instruction* m : members_[static_cast<size_t>(c)]) {
      if (Leaves(m, inside) && !HasRowShape(*m, outer)) return false;
    }
    return true;
  }

  bool Leaves(const Instruction* m, const std::function<bool(const Instruction*)>& inside) const {
    if (results_.count(m) != 0) return true;
    for (const Instruction* u : m->users()) {
      if (!inside(u)) return true;
    }
    return false;
  }

  // Whether kernel `k` depends on a kernel of `g` (a path g -> ... -> k).
  bool ReachableFrom(const std::unordered_set<int32_t>& g, int32_t k) const {
    std::vector<int32_t> stack(g.begin(), g.end());
    std::unordered_set<int32_t> seen(g.begin(), g.end());
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      for (int32_t s : succ_[static_cast<size_t>(x)]) {
        if (s == k) return true;
        if (seen.insert(s).second) stack.push_back(s);
      }
    }
    return false;
  }

  const std::vector<std::vector<const Instruction*>>& members_;
  const std::unordered_map<const Instruction*, int32_t>& kernel_of_;
  const std::unordered_set<const Instruction*>& results_;
  std::vector<std::unordered_set<int32_t>> succ_;  // consumer kernels
};

}  // namespace

bool RowReduce(const Instruction& reduce, std::vector<int64_t>* outer) {
  if (reduce.opcode() != Opcode::kReduce || reduce.operand_count() != 2 ||
      !reduce.shape().IsArray() || reduce.shape().element_type() == ir::PrimitiveType::kPred) {
    return false;
  }
  const std::vector<int64_t>& xd = reduce.operand(0)->shape().dimensions();
  if (xd.size() < 2 || reduce.dimensions.size() != 1 ||
      reduce.dimensions[0] != static_cast<int64_t>(xd.size()) - 1 || xd.back() > kMaxRowLength ||
      xd.back() < 1) {
    return false;
  }
  outer->assign(xd.begin(), xd.end() - 1);
  return true;
}

std::vector<int32_t> GroupRowKernels(
    const std::vector<std::vector<const Instruction*>>& members,
    const std::unordered_map<const Instruction*, int32_t>& kernel_of,
    const std::unordered_set<const Instruction*>& results) {
  return Grouper(members, kernel_of, results).Run();
}

}  // namespace mltune::backends::cpu
