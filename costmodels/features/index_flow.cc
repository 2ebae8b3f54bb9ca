// How often each op of a fused kernel runs, and how its loads walk memory. A fused kernel computes
// its producers inline, per output element, at the index each consumer asks for (the CPU
// backend's KernelEmitter does exactly that, backends/cpu/codegen.cc), and a value that does not
// depend on the inner loops is hoisted out of them. So an op's cost in a fusion is not its own
// element count: exp(broadcast(x)) runs once per row, a producer read through two slices runs
// twice, and a parameter read through a transpose walks memory with a stride. The analysis follows
// symbolic indices from each output back through the kernel: per index component, which loops it
// depends on and whether it is one loop's variable plus a constant (unit stride).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodels/features/internal.h"
#include "costmodels/features/kernel_graph.h"
#include "ir/opcode.h"
#include "ir/shape.h"

namespace mltune::costmodels::features {
namespace {

using ir::Instruction;
using ir::Opcode;

// Past this many distinct (op, index) visits the analysis stops: what it counted so far stays.
// Codegen's own recursion is as large; this bounds the features' cost on pathological kernels.
constexpr int64_t kMaxVisits = 200000;
constexpr int kMaxLoops = 63;

// One component of an op's index: the loops it depends on (bits of the nest's positions), the
// loop it equals up to a constant offset (-1 if none: scaled, reversed, mixed or data-dependent),
// and its text, which tells two indices apart as codegen's memo does.
struct Ix {
  uint64_t mask = 0;
  int exact = -1;
  std::string key = "0";
};
using Idx = std::vector<Ix>;

// A loop nest: extents outermost first. Reductions and windows extend a nest with inner loops.
struct Nest {
  std::vector<int64_t> extents;
  std::vector<std::string> names;
};

// Whether the op does arithmetic in generated code; the others only remap indices.
bool DoesWork(Opcode op) {
  switch (op) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kSlice:
    case Opcode::kReverse:
    case Opcode::kCopy:
    case Opcode::kDynamicSlice:
      return false;
    default:
      return true;
  }
}

class IndexFlowAnalysis {
 public:
  explicit IndexFlowAnalysis(const KernelView& view) : view_(view) {
    const size_t n = static_cast<size_t>(view.size());
    flow_.evaluations.assign(n, 0);
    flow_.element_ns.assign(n, 0);
    flow_.inner.assign(n, 0);
    flow_.strided_reads.assign(n, 0);
    flow_.contiguous_reads.assign(n, 0);
    for (int32_t i = 0; i < view.size(); ++i) {
      if (const Instruction* instr = view.instrs[static_cast<size_t>(i)]; instr != nullptr) {
        local_[instr] = i;
      }
    }
  }

  IndexFlow Run() {
    // Outputs of one shape share a loop nest, as codegen's StoreOutputs groups them.
    std::vector<std::vector<int64_t>> order;
    std::unordered_map<std::string, std::vector<const Instruction*>> groups;
    for (int32_t i = 0; i < view_.size(); ++i) {
      const Instruction* instr = view_.instrs[static_cast<size_t>(i)];
      if (instr == nullptr || !view_.is_output[static_cast<size_t>(i)]) continue;
      const ir::Shape* shape = FirstArray(instr->shape());
      if (shape == nullptr) continue;
      const std::string key = absl::StrJoin(shape->dimensions(), ",");
      auto& g = groups[key];
      if (g.empty()) order.push_back(shape->dimensions());
      g.push_back(instr);
    }
    for (const std::vector<int64_t>& dims : order) {
      Idx idx;
      const int nest = NewNest(dims, &idx);
      for (const Instruction* out : groups[absl::StrJoin(dims, ",")]) Visit(out, idx, nest, -1);
    }
    for (int32_t i = 0; i < view_.size(); ++i) {
      const Instruction* instr = view_.instrs[static_cast<size_t>(i)];
      const double evals = flow_.evaluations[static_cast<size_t>(i)];
      if (instr == nullptr || !DoesWork(instr->opcode())) continue;
      flow_.compute_evaluations += evals;
      if (view_.node(i).cost.transcendentals > 0) flow_.transcendental_evaluations += evals;
      if (!ir::IsElementwise(instr->opcode())) continue;
      const ir::PrimitiveType type = instr->shape().element_type();
      flow_.element_ns[static_cast<size_t>(i)] = evals * ElementCostNs(instr->opcode(), type);
      flow_.total_element_ns += flow_.element_ns[static_cast<size_t>(i)];
      if (flow_.inner[static_cast<size_t>(i)] && CallsScalarLibm(instr->opcode(), type)) {
        flow_.scalar_call_inner = true;
      }
    }
    return flow_;
  }

 private:
  // A nest over `dims`: one loop per dimension above 1; `idx` gets the loops' variables (and 0
  // for unit dimensions).
  int NewNest(const std::vector<int64_t>& dims, Idx* idx) {
    Nest nest;
    idx->clear();
    for (int64_t d : dims) {
      if (d == 1 || static_cast<int>(nest.extents.size()) >= kMaxLoops) {
        idx->push_back(Ix{});
        continue;
      }
      idx->push_back(Loop(&nest, d));
    }
    nests_.push_back(std::move(nest));
    return static_cast<int>(nests_.size()) - 1;
  }

  // `parent` with inner loops of `extents` appended; `vars` gets their variables.
  int ExtendNest(int parent, const std::vector<int64_t>& extents, std::vector<Ix>* vars) {
    Nest nest = nests_[static_cast<size_t>(parent)];
    vars->clear();
    for (int64_t e : extents) {
      vars->push_back(
          e == 1 || static_cast<int>(nest.extents.size()) >= kMaxLoops ? Ix{} : Loop(&nest, e));
    }
    nests_.push_back(std::move(nest));
    return static_cast<int>(nests_.size()) - 1;
  }

  Ix Loop(Nest* nest, int64_t extent) {
    const int pos = static_cast<int>(nest->extents.size());
    nest->extents.push_back(extent);
    nest->names.push_back(absl::StrCat("i", next_loop_++));
    return Ix{uint64_t{1} << pos, pos, nest->names.back()};
  }

  // How many times a value depending on `mask` is computed: hoisted to the innermost loop it
  // depends on, so the product of the extents down to that loop.
  double Evaluations(uint64_t mask, int nest) const {
    const Nest& n = nests_[static_cast<size_t>(nest)];
    double count = 1;
    for (size_t p = 0; p < n.extents.size() && (mask >> p) != 0; ++p) {
      count *= static_cast<double>(n.extents[p]);
    }
    return count;
  }

  uint64_t InnerBit(int nest) const {
    const size_t loops = nests_[static_cast<size_t>(nest)].extents.size();
    return loops == 0 ? 0 : uint64_t{1} << (loops - 1);
  }

  static uint64_t Mask(const Idx& idx) {
    uint64_t m = 0;
    for (const Ix& x : idx) m |= x.mask;
    return m;
  }

  static Ix Offset(const Ix& x, const std::string& what) {
    return Ix{x.mask, x.exact, absl::StrCat(x.key, "+", what)};
  }
  static Ix Strided(const Ix& x, const std::string& what) {
    return Ix{x.mask, -1, absl::StrCat(what, "(", x.key, ")")};
  }
  static Ix Mixed(const std::vector<Ix>& parts, const std::string& what) {
    Ix x{0, -1, what + "("};
    for (const Ix& p : parts) {
      x.mask |= p.mask;
      absl::StrAppend(&x.key, p.key, ",");
    }
    x.key += ")";
    // A chain of reshapes nests every component's text in each of the next ones: past this
    // length the text is replaced by its hash, so keys stay short (a collision merges two indices,
    // as codegen's memo would not, and only undercounts).
    if (x.key.size() > 96) x.key = absl::StrCat("h", std::hash<std::string>{}(x.key));
    return x;
  }

  // A load of `array` (outside the kernel) at `idx` by kernel op `consumer`: does it walk memory
  // contiguously along the nest's inner loop, with a stride, or not at all (hoisted)?
  void Load(const Instruction* array, const Idx& idx, int nest, int consumer) {
    if (consumer < 0 || idx.empty()) return;
    if (array->opcode() == Opcode::kConstant && array->shape().IsArray() &&
        array->shape().ElementCount() == 1) {
      return;  // a scalar constant is inlined
    }
    const uint64_t inner = InnerBit(nest);
    if ((Mask(idx) & inner) == 0) return;
    const ir::Shape* shape = FirstArray(array->shape());
    if (shape == nullptr || static_cast<size_t>(shape->rank()) != idx.size()) return;
    int minor = -1;  // the array's minor-most dimension above 1
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (shape->dimensions(d) > 1) {
        minor = d;
        break;
      }
    }
    int varying = 0;
    bool contiguous = minor >= 0;
    for (int d = 0; d < static_cast<int>(idx.size()); ++d) {
      if ((idx[static_cast<size_t>(d)].mask & inner) == 0) continue;
      ++varying;
      const int inner_pos = static_cast<int>(nests_[static_cast<size_t>(nest)].extents.size()) - 1;
      contiguous = contiguous && d == minor && idx[static_cast<size_t>(d)].exact == inner_pos;
    }
    contiguous = contiguous && varying == 1;
    const size_t c = static_cast<size_t>(consumer);
    const double count = Evaluations(Mask(idx), nest);
    if (contiguous) {
      flow_.contiguous_reads[c] = 1;
      flow_.contiguous_loads += count;
    } else {
      flow_.strided_reads[c] = 1;
      flow_.strided_loads += count;
    }
  }

  // Each operand computed on its own loop nest over its dimensions: the operand is packed or
  // materialised (matmul, convolution) or its indexing is not modelled.
  void Materialize(const Instruction* instr, int self) {
    for (const Instruction* operand : instr->operands()) {
      const ir::Shape* shape = FirstArray(operand->shape());
      if (shape == nullptr) continue;
      Idx idx;
      const int nest = NewNest(shape->dimensions(), &idx);
      Visit(operand, idx, nest, self);
    }
  }

  // Visits `operand` at `idx` when its rank matches, else materialises it.
  void VisitOperand(const Instruction* operand, const Idx& idx, int nest, int self) {
    const ir::Shape* shape = FirstArray(operand->shape());
    if (shape == nullptr) return;
    if (static_cast<size_t>(shape->rank()) == idx.size()) {
      Visit(operand, idx, nest, self);
      return;
    }
    Idx own;
    const int own_nest = NewNest(shape->dimensions(), &own);
    Visit(operand, own, own_nest, self);
  }

  void Visit(const Instruction* instr, const Idx& idx, int nest, int consumer) {
    if (++visits_ > kMaxVisits) return;
    auto found = local_.find(instr);
    if (found == local_.end()) {
      // A bitcast between two of the kernel's ops is plumbing, not a node: index through it.
      if (instr->opcode() == Opcode::kBitcast && instr->operand_count() == 1 &&
          ReachesKernel(instr->operand(0))) {
        VisitOperand(instr->operand(0), Reshaped(instr, idx), nest, consumer);
      } else {
        Load(instr, idx, nest, consumer);
      }
      return;
    }
    std::string key = absl::StrCat(reinterpret_cast<uintptr_t>(instr), ":");
    for (const Ix& x : idx) absl::StrAppend(&key, x.key, ",");
    if (!seen_.insert(std::move(key)).second) return;
    const int self = found->second;
    const size_t s = static_cast<size_t>(self);
    flow_.evaluations[s] += Evaluations(Mask(idx), nest);
    if ((Mask(idx) & InnerBit(nest)) != 0) flow_.inner[s] = 1;
    const ir::Shape* shape = FirstArray(instr->shape());
    if (shape == nullptr || static_cast<size_t>(shape->rank()) != idx.size()) {
      Materialize(instr, self);
      return;
    }
    MapOperands(instr, idx, nest, self);
  }

  bool ReachesKernel(const Instruction* instr) const {
    while (instr->opcode() == Opcode::kBitcast && instr->operand_count() == 1) {
      instr = instr->operand(0);
    }
    return local_.count(instr) != 0;
  }

  // The operand index of a reshape or bitcast, as codegen computes it: unit dimensions dropped
  // and added map one to one; anything else goes through the linear index.
  static Idx Reshaped(const Instruction* instr, const Idx& idx) {
    const std::vector<int64_t>& dims = instr->shape().dimensions();
    const std::vector<int64_t>& od = instr->operand(0)->shape().dimensions();
    Idx o(od.size());
    if (ir::ReshapeMovesOnlyUnitDims(dims, od) && idx.size() == dims.size()) {
      size_t j = 0;
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == 1) continue;
        while (od[j] == 1) ++j;
        o[j++] = idx[i];
      }
      return o;
    }
    const Ix lin = Mixed(idx, "lin");
    // The linear index steps by one with the result's minor-most loop, and so does the operand's
    // minor-most dimension (away from its wrap-around).
    int minor_exact = -1;
    for (size_t i = dims.size(); i-- > 0;) {
      if (dims[i] == 1) continue;
      if (i < idx.size()) minor_exact = idx[i].exact;
      break;
    }
    bool last = true;
    for (size_t j = od.size(); j-- > 0;) {
      if (od[j] == 1) continue;
      o[j] = Ix{lin.mask, last ? minor_exact : -1, absl::StrCat(lin.key, "/", j)};
      last = false;
    }
    return o;
  }

  void MapOperands(const Instruction* instr, const Idx& idx, int nest, int self) {
    const Opcode op = instr->opcode();
    if (ir::IsElementwise(op)) {
      for (const Instruction* operand : instr->operands()) {
        VisitOperand(operand, operand->shape().rank() == 0 ? Idx{} : idx, nest, self);
      }
      return;
    }
    switch (op) {
      case Opcode::kBroadcast: {
        Idx o;
        for (int64_t d : instr->dimensions) {
          o.push_back(d >= 0 && static_cast<size_t>(d) < idx.size() ? idx[static_cast<size_t>(d)]
                                                                    : Ix{});
        }
        VisitOperand(instr->operand(0), o, nest, self);
        return;
      }
      case Opcode::kTranspose: {
        Idx o(idx.size());
        for (size_t j = 0; j < idx.size() && j < instr->dimensions.size(); ++j) {
          const int64_t d = instr->dimensions[j];
          if (d >= 0 && static_cast<size_t>(d) < o.size()) o[static_cast<size_t>(d)] = idx[j];
        }
        VisitOperand(instr->operand(0), o, nest, self);
        return;
      }
      case Opcode::kReshape:
      case Opcode::kBitcast:
        VisitOperand(instr->operand(0), Reshaped(instr, idx), nest, self);
        return;
      case Opcode::kSlice: {
        Idx o(idx.size());
        for (size_t d = 0; d < idx.size(); ++d) {
          const ir::SliceDim s = d < instr->slice.size() ? instr->slice[d] : ir::SliceDim{};
          o[d] = s.stride == 1 ? Offset(idx[d], absl::StrCat(s.start))
                               : Strided(idx[d], absl::StrCat("s", s.stride, "+", s.start));
        }
        VisitOperand(instr->operand(0), o, nest, self);
        return;
      }
      case Opcode::kReverse: {
        Idx o = idx;
        for (int64_t d : instr->dimensions) {
          if (d >= 0 && static_cast<size_t>(d) < o.size()) {
            o[static_cast<size_t>(d)] = Strided(idx[static_cast<size_t>(d)], "rev");
          }
        }
        VisitOperand(instr->operand(0), o, nest, self);
        return;
      }
      case Opcode::kConcatenate: {
        const size_t d = instr->dimensions.empty() ? 0 : static_cast<size_t>(instr->dimensions[0]);
        int64_t offset = 0;
        for (const Instruction* operand : instr->operands()) {
          Idx o = idx;
          if (d < o.size()) o[d] = Offset(idx[d], absl::StrCat("-", offset));
          VisitOperand(operand, o, nest, self);
          if (d < static_cast<size_t>(operand->shape().rank())) {
            offset += operand->shape().dimensions(static_cast<int64_t>(d));
          }
        }
        return;
      }
      case Opcode::kPad: {
        Idx o(idx.size());
        for (size_t d = 0; d < idx.size(); ++d) {
          const ir::PaddingDim p = d < instr->padding.size() ? instr->padding[d] : ir::PaddingDim{};
          o[d] = p.interior == 0 ? Offset(idx[d], absl::StrCat("-", p.low))
                                 : Strided(idx[d], absl::StrCat("p", p.interior + 1, "-", p.low));
        }
        VisitOperand(instr->operand(0), o, nest, self);
        if (instr->operand_count() > 1) VisitOperand(instr->operand(1), {}, nest, self);
        return;
      }
      case Opcode::kIota:
        return;
      case Opcode::kDynamicSlice:
      case Opcode::kDynamicUpdateSlice: {
        const int64_t first_start = op == Opcode::kDynamicSlice ? 1 : 2;
        for (int64_t j = first_start; j < instr->operand_count(); ++j) {
          VisitOperand(instr->operand(j), {}, nest, self);
        }
        Idx shifted(idx.size());
        for (size_t d = 0; d < idx.size(); ++d) shifted[d] = Offset(idx[d], "start");
        if (op == Opcode::kDynamicSlice) {
          VisitOperand(instr->operand(0), shifted, nest, self);
        } else {
          VisitOperand(instr->operand(0), idx, nest, self);
          VisitOperand(instr->operand(1), shifted, nest, self);
        }
        return;
      }
      case Opcode::kReduce:
        MapReduce(instr, idx, nest, self);
        return;
      case Opcode::kReduceWindow:
        MapReduceWindow(instr, idx, nest, self);
        return;
      default:
        Materialize(instr, self);
        return;
    }
  }

  // A reduce's inputs run on the nest extended by its reduced dimensions (inner loops, as
  // codegen's reductions fold them); its init values once.
  void MapReduce(const Instruction* instr, const Idx& idx, int nest, int self) {
    const int64_t inputs = instr->operand_count() / 2;
    if (inputs == 0) return Materialize(instr, self);
    const ir::Shape& in = instr->operand(0)->shape();
    std::vector<int64_t> reduced;
    for (int64_t d = 0; d < in.rank(); ++d) {
      if (std::find(instr->dimensions.begin(), instr->dimensions.end(), d) !=
          instr->dimensions.end()) {
        reduced.push_back(in.dimensions(d));
      }
    }
    std::vector<Ix> vars;
    const int inner = ExtendNest(nest, reduced, &vars);
    Idx o;
    size_t kept = 0, r = 0;
    for (int64_t d = 0; d < in.rank(); ++d) {
      const bool is_reduced = std::find(instr->dimensions.begin(), instr->dimensions.end(), d) !=
                              instr->dimensions.end();
      if (is_reduced) {
        o.push_back(vars[r++]);
      } else {
        o.push_back(kept < idx.size() ? idx[kept] : Ix{});
        ++kept;
      }
    }
    for (int64_t j = 0; j < inputs; ++j) VisitOperand(instr->operand(j), o, inner, self);
    for (int64_t j = inputs; j < instr->operand_count(); ++j) {
      VisitOperand(instr->operand(j), {}, nest, self);
    }
  }

  // A reduce-window's inputs: per dimension the output position (times the stride) plus the
  // window position, an inner loop per window dimension above 1.
  void MapReduceWindow(const Instruction* instr, const Idx& idx, int nest, int self) {
    const int64_t inputs = instr->operand_count() / 2;
    if (inputs == 0 || !instr->window || instr->window->dims.size() != idx.size()) {
      return Materialize(instr, self);
    }
    std::vector<int64_t> sizes;
    for (const ir::WindowDim& w : instr->window->dims) sizes.push_back(w.size);
    std::vector<Ix> vars;
    const int inner = ExtendNest(nest, sizes, &vars);
    Idx o(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) {
      const ir::WindowDim& w = instr->window->dims[d];
      const Ix base = w.stride == 1 && w.base_dilation == 1
                          ? Offset(idx[d], absl::StrCat("-", w.padding_low))
                          : Strided(idx[d], absl::StrCat("w", w.stride, "-", w.padding_low));
      o[d] = w.size == 1 ? base : Mixed({base, vars[d]}, "win");
    }
    for (int64_t j = 0; j < inputs; ++j) VisitOperand(instr->operand(j), o, inner, self);
    for (int64_t j = inputs; j < instr->operand_count(); ++j) {
      VisitOperand(instr->operand(j), {}, nest, self);
    }
  }

  const KernelView& view_;
  IndexFlow flow_;
  std::unordered_map<const Instruction*, int32_t> local_;
  std::vector<Nest> nests_;
  std::unordered_set<std::string> seen_;
  int64_t visits_ = 0;
  int64_t next_loop_ = 0;
};

}  // namespace

IndexFlow AnalyzeIndexFlow(const KernelView& view) { return IndexFlowAnalysis(view).Run(); }

}  // namespace mltune::costmodels::features
