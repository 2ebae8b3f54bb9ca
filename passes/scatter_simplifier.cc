// scatter_simplifier: XLA's ScatterSimplifier (without the GPU-only operand reordering). Rewrites
// every scatter not already in the simplified form
//   scatter(operands, indices[N, K], updates[N, window...]) with index_vector_dim=1, no inserted
//   window dimensions and update_window_dims={1, ..., operand rank}
// into it: the indices are made 2-D (TransformStartIndices), each update has its scatter
// dimensions moved first and flattened into one (or a size-1 one added) and size-1 dimensions
// inserted for the inserted window dimensions. Updates are applied in the same order to the same
// places (out-of-bounds windows are still skipped whole), so results are bit-identical. A scatter
// into a scalar with a single scalar update becomes the combiner applied to them, inlined. Scatters
// with batching dimensions or dynamic shapes are skipped.
#include <algorithm>
#include <memory>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/gather_scatter_utils.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "passes/while_util.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

int64_t ScatterOperandCount(const Instruction* scatter) {
  return (scatter->operand_count() - 1) / 2;
}

bool IsSimplifiedScatter(const Instruction* scatter) {
  const ir::ScatterDimensionNumbers& d = *scatter->scatter_dnums;
  const int64_t n = ScatterOperandCount(scatter);
  if (scatter->operand(0)->shape().rank() == 0) return false;
  const Instruction* indices = scatter->operand(n);
  const Instruction* updates = scatter->operand(n + 1);
  const int64_t num_scatter_dims =
      updates->shape().rank() - static_cast<int64_t>(d.update_window_dims.size());
  return d.index_vector_dim + 1 == indices->shape().rank() && num_scatter_dims <= 1 &&
         std::find(d.update_window_dims.begin(), d.update_window_dims.end(), 0) ==
             d.update_window_dims.end() &&
         std::is_sorted(d.update_window_dims.begin(), d.update_window_dims.end()) &&
         d.inserted_window_dims.empty();
}

bool Matches(const Instruction* i) {
  if (i->opcode() != Opcode::kScatter || !i->scatter_dnums.has_value() || i->operand_count() < 3 ||
      i->operand_count() % 2 != 1 || i->to_apply() == nullptr) {
    return false;
  }
  const ir::ScatterDimensionNumbers& d = *i->scatter_dnums;
  if (!d.input_batching_dims.empty() || !d.scatter_indices_batching_dims.empty()) return false;
  for (const Instruction* op : i->operands()) {
    if (!op->shape().IsArray() || !op->shape().is_static()) return false;
  }
  if (IsSimplifiedScatter(i)) return false;
  const int64_t n = ScatterOperandCount(i);
  // A scalar operand takes the simple route only with one scalar update (XLA's rewrite would call
  // the combiner with whole update arrays otherwise).
  if (i->operand(0)->shape().rank() == 0) return i->operand(n + 1)->shape().rank() == 0;
  return true;
}

Instruction* FlattenAndTransposeUpdates(Computation& c, Instruction* updates,
                                        const std::vector<int64_t>& update_window_dims,
                                        std::vector<int64_t> inserted_window_dims) {
  const int64_t rank = updates->shape().rank();
  std::vector<int64_t> permutation;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(update_window_dims.begin(), update_window_dims.end(), i) ==
        update_window_dims.end()) {
      permutation.push_back(i);
    }
  }
  const int64_t num_scatter_dims = static_cast<int64_t>(permutation.size());
  permutation.insert(permutation.end(), update_window_dims.begin(), update_window_dims.end());
  updates = MaybeTranspose(c, updates, permutation);
  if (num_scatter_dims > 1) {
    updates = CollapseFirstNDims(c, updates, num_scatter_dims);
  } else if (num_scatter_dims == 0) {
    updates = InsertDegenerateDims(c, updates, {0});
  }
  if (!inserted_window_dims.empty()) {
    std::sort(inserted_window_dims.begin(), inserted_window_dims.end());
    for (int64_t& dim : inserted_window_dims) ++dim;
    updates = InsertDegenerateDims(c, updates, inserted_window_dims);
  }
  return updates;
}

Instruction* Expand(Instruction* scatter) {
  Computation& c = *scatter->parent();
  const ir::ScatterDimensionNumbers d = *scatter->scatter_dnums;
  const int64_t n = ScatterOperandCount(scatter);
  const int64_t operand_rank =
      static_cast<int64_t>(d.update_window_dims.size() + d.inserted_window_dims.size());
  if (operand_rank == 0) {
    std::vector<Instruction*> arguments;
    for (int64_t k = 0; k < n; ++k) arguments.push_back(scatter->operand(k));
    for (int64_t k = 0; k < n; ++k) arguments.push_back(scatter->operand(n + 1 + k));
    return InlineComputation(*scatter->to_apply(), c, arguments);
  }
  Instruction* indices = TransformStartIndices(c, scatter->operand(n), d.index_vector_dim);
  std::vector<Instruction*> operands;
  for (int64_t k = 0; k < n; ++k) operands.push_back(scatter->operand(k));
  operands.push_back(indices);
  for (int64_t k = 0; k < n; ++k) {
    operands.push_back(FlattenAndTransposeUpdates(c, scatter->operand(n + 1 + k),
                                                  d.update_window_dims, d.inserted_window_dims));
  }
  Instruction* result = CloneInstruction(*scatter, c, operands);
  ir::ScatterDimensionNumbers simplified;
  for (int64_t i = 0; i < operand_rank; ++i) simplified.update_window_dims.push_back(i + 1);
  simplified.scatter_dims_to_operand_dims = d.scatter_dims_to_operand_dims;
  simplified.index_vector_dim = 1;
  result->scatter_dnums = simplified;
  return result;
}

class ScatterSimplifier : public Pass {
 public:
  std::string_view name() const override { return "scatter_simplifier"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> scatters;
      for (Instruction* i : c->instructions()) {
        if (Matches(i)) scatters.push_back(i);
      }
      for (Instruction* scatter : scatters) {
        ReplaceInstruction(scatter, Expand(scatter));
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterScatterSimplifier(Registry& registry) {
  registry.Register({"scatter_simplifier",
                     "rewrites scatters into the simplified 2-D-indices form with reshaped and "
                     "transposed updates",
                     [] { return std::make_unique<ScatterSimplifier>(); }});
}

}  // namespace mltune::passes
