// gather_simplifier: XLA's GatherSimplifier. Rewrites every gather not already in the simplified
// form
//   gather(operand, indices[N, K]) with index_vector_dim=1, no collapsed slice dimensions and
//   offset_dims={1, ..., operand rank}
// into that form plus reshapes/transposes: the indices are made 2-D (TransformStartIndices), the
// simplified gather produces [N, slice sizes...], the collapsed slice dimensions are reshaped away,
// N is expanded back into the original batch dimensions and a transpose puts the offset
// dimensions where the original had them. start_index_map is kept, so clamping is unchanged and
// results are bit-identical. A gather with a zero slice size becomes a broadcast zero, one from a
// scalar operand a broadcast of it. Gathers with operand batching dimensions (left to
// batched_gather_scatter_normalizer in XLA) or dynamic shapes are skipped.
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

bool IsSimplifiedGather(const Instruction* gather) {
  const ir::GatherDimensionNumbers& d = *gather->gather_dnums;
  const int64_t operand_rank =
      static_cast<int64_t>(d.collapsed_slice_dims.size() + d.offset_dims.size());
  if (operand_rank == 0) return false;
  return gather->operand(1)->shape().rank() == 2 && d.index_vector_dim == 1 &&
         d.collapsed_slice_dims.empty() && d.offset_dims.front() == 1 &&
         d.offset_dims.back() == static_cast<int64_t>(d.offset_dims.size());
}

bool Matches(const Instruction* i) {
  if (i->opcode() != Opcode::kGather || !i->gather_dnums.has_value() || i->operand_count() != 2) {
    return false;
  }
  const ir::GatherDimensionNumbers& d = *i->gather_dnums;
  if (!d.operand_batching_dims.empty() || !d.start_indices_batching_dims.empty()) return false;
  if (!i->shape().is_static() || !i->operand(0)->shape().is_static() ||
      !i->operand(1)->shape().is_static()) {
    return false;
  }
  return !IsSimplifiedGather(i);
}

Instruction* Expand(Instruction* gather) {
  Computation& c = *gather->parent();
  const ir::GatherDimensionNumbers d = *gather->gather_dnums;
  const std::vector<int64_t>& slice_sizes = gather->gather_slice_sizes;
  const Shape& shape = gather->shape();
  if (std::find(slice_sizes.begin(), slice_sizes.end(), 0) != slice_sizes.end()) {
    return MakeBroadcast(c, MakeScalarConstant(c, shape.element_type(), 0), shape.dimensions(), {});
  }
  const int64_t operand_rank =
      static_cast<int64_t>(d.collapsed_slice_dims.size() + d.offset_dims.size());
  Instruction* operand = gather->operand(0);
  if (operand_rank == 0) return MakeBroadcast(c, operand, shape.dimensions(), {});

  Instruction* start_indices = TransformStartIndices(c, gather->operand(1), d.index_vector_dim);
  std::vector<int64_t> output_dims = {start_indices->shape().dimensions(0)};
  output_dims.insert(output_dims.end(), slice_sizes.begin(), slice_sizes.end());
  Instruction* result = CloneInstruction(*gather, c, {operand, start_indices});
  result->set_shape(Shape(shape.element_type(), output_dims));
  ir::GatherDimensionNumbers simplified;
  for (int64_t i = 0; i < operand_rank; ++i) simplified.offset_dims.push_back(i + 1);
  simplified.start_index_map = d.start_index_map;
  simplified.index_vector_dim = 1;
  result->gather_dnums = simplified;

  if (!d.collapsed_slice_dims.empty()) {
    std::vector<int64_t> collapsed;
    for (int64_t dim : d.collapsed_slice_dims) collapsed.push_back(dim + 1);
    result = ElideDegenerateDims(c, result, collapsed);
  }
  const std::vector<int64_t>& original_dims = gather->operand(1)->shape().dimensions();
  std::vector<int64_t> batch_dims;
  for (int64_t i = 0; i < static_cast<int64_t>(original_dims.size()); ++i) {
    if (i != d.index_vector_dim) batch_dims.push_back(original_dims[i]);
  }
  if (batch_dims.size() > 1) {
    result = ExpandFirstDimIntoNDims(c, result, batch_dims);
  } else if (batch_dims.empty()) {
    result = ElideDegenerateDims(c, result, {0});
  }
  // Offset dimensions go back to their places among the batch dimensions.
  const int64_t output_rank = static_cast<int64_t>(batch_dims.size() + d.offset_dims.size());
  std::vector<int64_t> permutation;
  int64_t offset_index = static_cast<int64_t>(batch_dims.size());
  int64_t batch_index = 0;
  for (int64_t i = 0; i < output_rank; ++i) {
    const bool is_offset =
        std::find(d.offset_dims.begin(), d.offset_dims.end(), i) != d.offset_dims.end();
    permutation.push_back(is_offset ? offset_index++ : batch_index++);
  }
  return MaybeTranspose(c, result, permutation);
}

class GatherSimplifier : public Pass {
 public:
  std::string_view name() const override { return "gather_simplifier"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> gathers;
      for (Instruction* i : c->instructions()) {
        if (Matches(i)) gathers.push_back(i);
      }
      for (Instruction* gather : gathers) {
        ReplaceInstruction(gather, Expand(gather));
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterGatherSimplifier(Registry& registry) {
  registry.Register({"gather_simplifier",
                     "rewrites gathers into the simplified 2-D-indices form plus reshapes and "
                     "transposes",
                     [] { return std::make_unique<GatherSimplifier>(); }});
}

}  // namespace mltune::passes
