// dot_decomposer: XLA's DotDecomposer. Rewrites every non-canonical dot into the canonical form
//   lhs [batch..., (non-contracting), contracting] x rhs [batch..., contracting, (non-contracting)]
// with batch dimensions leading and in order, and all contracting (and all non-contracting)
// dimensions of an operand flattened into one (omitted when of size 1): a transpose and a reshape
// per operand, the dot, and a reshape back to the original result. A dot is canonical when it has
// one contracting dimension, at most one non-contracting dimension per operand, and batch
// dimensions 0..n-1 (so [contracting, non-contracting] operands count as canonical too). Dots with
// dynamic dimensions or sparsity operands are left alone.
#include <algorithm>
#include <memory>
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

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool IsCanonical(const Shape& operand, const std::vector<int64_t>& contracting,
                 const std::vector<int64_t>& batch) {
  if (contracting.size() != 1) return false;
  if (static_cast<int64_t>(batch.size()) + 2 < operand.rank()) return false;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// transpose(operand) to [batch, non-contracting, contracting] (or [batch, contracting,
// non-contracting]), then a reshape merging each group. Returns the reshape and the position of
// its contracting dimension.
std::pair<Instruction*, int64_t> CanonicalizeOperand(Computation& c, Instruction* operand,
                                                     const std::vector<int64_t>& batch,
                                                     const std::vector<int64_t>& contracting,
                                                     bool contracting_most_minor) {
  const Shape& shape = operand->shape();
  std::vector<int64_t> non_contracting;
  int64_t contracting_size = 1;
  int64_t non_contracting_size = 1;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (Contains(contracting, i)) {
      contracting_size *= shape.dimensions(i);
    } else if (!Contains(batch, i)) {
      non_contracting.push_back(i);
      non_contracting_size *= shape.dimensions(i);
    }
  }
  std::vector<int64_t> permutation = batch;
  const std::vector<int64_t>& first = contracting_most_minor ? non_contracting : contracting;
  const std::vector<int64_t>& second = contracting_most_minor ? contracting : non_contracting;
  permutation.insert(permutation.end(), first.begin(), first.end());
  permutation.insert(permutation.end(), second.begin(), second.end());
  Instruction* transpose = MakeTranspose(c, operand, permutation);

  std::vector<int64_t> dims;
  for (int64_t b : batch) dims.push_back(shape.dimensions(b));
  int64_t contracting_dim;
  if (contracting_most_minor) {
    if (non_contracting_size != 1) dims.push_back(non_contracting_size);
    contracting_dim = static_cast<int64_t>(dims.size());
    dims.push_back(contracting_size);
  } else {
    contracting_dim = static_cast<int64_t>(dims.size());
    dims.push_back(contracting_size);
    if (non_contracting_size != 1) dims.push_back(non_contracting_size);
  }
  return {MakeReshape(c, transpose, dims), contracting_dim};
}

void CanonicalizeDot(Instruction* dot) {
  Computation& c = *dot->parent();
  const ir::DotDimensionNumbers dnums = dot->dot_dnums.value_or(ir::DotDimensionNumbers{});
  const int64_t num_batch = static_cast<int64_t>(dnums.lhs_batch_dimensions.size());
  ir::DotDimensionNumbers canonical;
  for (int64_t i = 0; i < num_batch; ++i) {
    canonical.lhs_batch_dimensions.push_back(i);
    canonical.rhs_batch_dimensions.push_back(i);
  }
  auto [lhs, lhs_contracting] =
      CanonicalizeOperand(c, dot->operand(0), dnums.lhs_batch_dimensions,
                          dnums.lhs_contracting_dimensions, /*contracting_most_minor=*/true);
  auto [rhs, rhs_contracting] =
      CanonicalizeOperand(c, dot->operand(1), dnums.rhs_batch_dimensions,
                          dnums.rhs_contracting_dimensions, /*contracting_most_minor=*/false);
  canonical.lhs_contracting_dimensions = {lhs_contracting};
  canonical.rhs_contracting_dimensions = {rhs_contracting};
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < num_batch; ++i) dims.push_back(lhs->shape().dimensions(i));
  if (lhs->shape().rank() == num_batch + 2) dims.push_back(lhs->shape().dimensions(num_batch));
  if (rhs->shape().rank() == num_batch + 2) dims.push_back(rhs->shape().dimensions(num_batch + 1));
  Instruction* new_dot = CloneInstruction(*dot, c, {lhs, rhs});
  new_dot->set_shape(Shape(dot->shape().element_type(), dims));
  new_dot->dot_dnums = canonical;
  Instruction* reshape = AddInstr(c, Opcode::kReshape, dot->shape(), {new_dot});
  ReplaceInstruction(dot, reshape);
}

class DotDecomposer : public Pass {
 public:
  std::string_view name() const override { return "dot_decomposer"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> non_canonical;
      for (Instruction* i : c->instructions()) {
        if (i->opcode() != Opcode::kDot || i->operand_count() != 2 || !i->shape().is_static() ||
            !i->operand(0)->shape().is_static() || !i->operand(1)->shape().is_static()) {
          continue;
        }
        const ir::DotDimensionNumbers d = i->dot_dnums.value_or(ir::DotDimensionNumbers{});
        if (!IsCanonical(i->operand(0)->shape(), d.lhs_contracting_dimensions,
                         d.lhs_batch_dimensions) ||
            !IsCanonical(i->operand(1)->shape(), d.rhs_contracting_dimensions,
                         d.rhs_batch_dimensions)) {
          non_canonical.push_back(i);
        }
      }
      for (Instruction* dot : non_canonical) CanonicalizeDot(dot);
      changed |= !non_canonical.empty();
    }
    return changed;
  }
};

}  // namespace

void RegisterDotDecomposer(Registry& registry) {
  registry.Register({"dot_decomposer",
                     "canonicalizes dots to [batch, m, k] x [batch, k, n] with transposes and "
                     "reshapes",
                     [] { return std::make_unique<DotDecomposer>(); }});
}

}  // namespace mltune::passes
