// dot-merger: XLA's DotMerger with XLA's default threshold (xla_gpu_dot_merger_threshold_mb = 32).
// Two canonical dots (batch dimensions first, then one non-contracting and one contracting
// dimension per operand, in either order) that share an operand, with equal dimension numbers,
// element types and operand precisions, neither depending on the other, and at least one of them
// at most 32 MiB (result plus operands), become one dot over the shared operand and the
// concatenation of the other operands along their non-contracting dimension; each original result
// is a slice of it. Each output element sums the same products in the same order, so results are
// bit-identical. Dots with control edges or dynamic shapes are skipped. As in XLA, a merged dot can
// merge again in a later run (through its other operand), so the pass is not idempotent.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "passes/while_util.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

constexpr int64_t kMaxSizeToMerge = int64_t{32} << 20;

bool IsPermutationOfIota(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

bool IsCanonicalDot(const Instruction* dot) {
  if (dot->opcode() != Opcode::kDot || dot->operand_count() != 2 || !dot->dot_dnums.has_value() ||
      !dot->shape().is_static() || !dot->operand(0)->shape().is_static() ||
      !dot->operand(1)->shape().is_static()) {
    return false;
  }
  const ir::DotDimensionNumbers& d = *dot->dot_dnums;
  const int64_t batch = static_cast<int64_t>(d.lhs_batch_dimensions.size());
  return d.rhs_batch_dimensions.size() == d.lhs_batch_dimensions.size() &&
         IsPermutationOfIota(d.lhs_batch_dimensions) && d.lhs_contracting_dimensions.size() == 1 &&
         dot->operand(0)->shape().rank() == batch + 2 &&
         IsPermutationOfIota(d.rhs_batch_dimensions) && d.rhs_contracting_dimensions.size() == 1 &&
         dot->operand(1)->shape().rank() == batch + 2;
}

// Result plus operand bytes (ByteSize saturates, so the sum cannot overflow with min).
int64_t Bytes(const Instruction* dot) {
  int64_t bytes = std::min(dot->shape().ByteSize(), kMaxSizeToMerge + 1);
  for (const Instruction* op : dot->operands()) {
    bytes += std::min(op->shape().ByteSize(), kMaxSizeToMerge + 1);
  }
  return bytes;
}

bool IsMergeCandidate(const Instruction* dot) { return Bytes(dot) <= kMaxSizeToMerge; }

std::string RawAttribute(const Instruction* i, std::string_view name) {
  const ir::RawAttribute* a = i->FindExtraAttribute(name);
  return a == nullptr ? "" : a->value;
}

// True when `from` is `to` or one of its (transitive) operands or control predecessors.
bool Reaches(const Instruction* from, const Instruction* to) {
  std::unordered_set<const Instruction*> seen = {to};
  std::vector<const Instruction*> stack = {to};
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (i == from) return true;
    for (const Instruction* op : i->operands()) {
      if (seen.insert(op).second) stack.push_back(op);
    }
    for (const Instruction* op : i->control_predecessors()) {
      if (seen.insert(op).second) stack.push_back(op);
    }
  }
  return false;
}

// Merges `a` and `b` if they share an operand: returns the merged dot (users of a and b now read
// slices of it), or nullptr.
Instruction* TryMergeSameOperand(Instruction* a, Instruction* b) {
  if (a->operand(0) != b->operand(0) && a->operand(1) != b->operand(1)) return nullptr;
  if (a->operand(0)->shape().element_type() != b->operand(0)->shape().element_type() ||
      a->operand(1)->shape().element_type() != b->operand(1)->shape().element_type() ||
      a->shape().element_type() != b->shape().element_type()) {
    return nullptr;
  }
  if (!(*a->dot_dnums == *b->dot_dnums)) return nullptr;
  if (RawAttribute(a, "operand_precision") != RawAttribute(b, "operand_precision") ||
      RawAttribute(a, "algorithm") != RawAttribute(b, "algorithm")) {
    return nullptr;
  }
  const ir::DotDimensionNumbers& d = *a->dot_dnums;
  const bool lhs_same = a->operand(0) == b->operand(0);
  Instruction* shared = a->operand(lhs_same ? 0 : 1);
  Instruction* diff_a = a->operand(lhs_same ? 1 : 0);
  Instruction* diff_b = b->operand(lhs_same ? 1 : 0);
  const int64_t batch = static_cast<int64_t>(d.lhs_batch_dimensions.size());
  const int64_t contracting =
      (lhs_same ? d.rhs_contracting_dimensions : d.lhs_contracting_dimensions)[0];
  const int64_t outer = contracting == batch ? contracting + 1 : contracting - 1;
  for (int64_t i = 0; i < diff_a->shape().rank(); ++i) {
    if (i != outer && diff_a->shape().dimensions(i) != diff_b->shape().dimensions(i))
      return nullptr;
  }
  Computation& c = *a->parent();
  std::vector<int64_t> concat_dims = diff_a->shape().dimensions();
  concat_dims[outer] += diff_b->shape().dimensions(outer);
  Instruction* concat =
      AddInstr(c, Opcode::kConcatenate, Shape(diff_a->shape().element_type(), concat_dims),
               {diff_a, diff_b});
  concat->dimensions = {outer};
  Instruction* lhs = lhs_same ? shared : concat;
  Instruction* rhs = lhs_same ? concat : shared;
  std::vector<int64_t> dims = a->shape().dimensions();
  const int64_t slice_dim = a->shape().rank() - (lhs_same ? 1 : 2);
  dims[slice_dim] += b->shape().dimensions(slice_dim);
  Instruction* merged = CloneInstruction(*a, c, {lhs, rhs});
  merged->set_shape(Shape(a->shape().element_type(), dims));
  if (merged->metadata.empty()) merged->metadata = b->metadata;

  std::vector<ir::SliceDim> slice;
  for (int64_t v : dims) slice.push_back({0, v, 1});
  slice[slice_dim].limit = a->shape().dimensions(slice_dim);
  Instruction* new_a = MakeSlice(c, merged, slice);
  new_a->set_shape(a->shape());
  a->ReplaceAllUsesWith(new_a);
  slice[slice_dim].start = slice[slice_dim].limit;
  slice[slice_dim].limit = dims[slice_dim];
  Instruction* new_b = MakeSlice(c, merged, slice);
  new_b->set_shape(b->shape());
  b->ReplaceAllUsesWith(new_b);
  return merged;
}

bool MergeDots(Computation& c) {
  // operand -> canonical dots using it, in instruction order.
  std::map<int64_t, std::vector<Instruction*>> classes;  // keyed by the operand's position
  std::unordered_map<const Instruction*, int64_t> position;
  const std::vector<Instruction*> instructions = c.instructions();
  for (size_t k = 0; k < instructions.size(); ++k)
    position[instructions[k]] = static_cast<int64_t>(k);
  for (Instruction* i : instructions) {
    if (!IsCanonicalDot(i) || !i->control_predecessors().empty() ||
        !i->control_successors().empty()) {
      continue;
    }
    for (Instruction* op : i->operands()) {
      std::vector<Instruction*>& list = classes[position.at(op)];
      if (std::find(list.begin(), list.end(), i) == list.end()) list.push_back(i);
    }
  }
  std::unordered_set<Instruction*> dead;
  for (auto& [key, dots] : classes) {
    if (dots.size() < 2 || std::none_of(dots.begin(), dots.end(), IsMergeCandidate)) continue;
    for (size_t i = 0; i < dots.size(); ++i) {
      for (size_t j = i + 1; j < dots.size(); ++j) {
        Instruction* a = dots[i];
        Instruction* b = dots[j];
        if (a == nullptr || b == nullptr || dead.count(a) || dead.count(b)) continue;
        if (!IsMergeCandidate(a) && !IsMergeCandidate(b)) continue;
        if (Reaches(a, b) || Reaches(b, a)) continue;
        Instruction* merged = TryMergeSameOperand(a, b);
        if (merged == nullptr) continue;
        dead.insert(a);
        dead.insert(b);
        dots[i] = merged;
        dots[j] = nullptr;
      }
    }
  }
  for (Instruction* i : dead) (void)c.RemoveInstruction(i);
  return !dead.empty();
}

class DotMerger : public Pass {
 public:
  std::string_view name() const override { return "dot-merger"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) changed |= MergeDots(*c);
    return changed;
  }
};

}  // namespace

void RegisterDotMerger(Registry& registry) {
  registry.Register({"dot-merger",
                     "merges dots sharing an operand into one dot plus slices (up to 32 MiB)",
                     [] { return std::make_unique<DotMerger>(); }});
}

}  // namespace mltune::passes
