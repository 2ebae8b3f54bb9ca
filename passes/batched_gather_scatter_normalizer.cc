// batched_gather_scatter_normalizer: XLA's BatchedGatherScatterNormalizer. Gathers and scatters
// with explicit batching dimensions (operand_batching_dims / input_batching_dims) are rewritten
// without them: an iota per batching dimension is concatenated in front of the index vectors, the
// operand batching dimensions join start_index_map (scatter_dims_to_operand_dims) and become
// collapsed slice (inserted window) dimensions. The iota indices are always in bounds, so
// clamping and out-of-bounds skipping are unchanged and results are bit-identical. Index types too
// narrow for a batch size are promoted to s32/s64 first.
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
using ir::PrimitiveType;
using ir::Shape;

bool FitsIn(int64_t size, PrimitiveType type) {
  const int bits = ir::BitWidth(type) - (ir::IsSignedIntegral(type) ? 1 : 0);
  return bits >= 63 || size <= (int64_t{1} << bits) - 1;
}

// Promotes an integral type too narrow for `size` to s32 or s64.
PrimitiveType PromoteTypeForSize(PrimitiveType type, int64_t size) {
  if (!ir::IsIntegral(type) || FitsIn(size, type)) return type;
  return FitsIn(size, PrimitiveType::kS32) ? PrimitiveType::kS32 : PrimitiveType::kS64;
}

// `indices` with an iota per batching dimension concatenated in front of each index vector.
Instruction* CreateConcatIndices(Computation& c, Instruction* indices, int64_t index_vector_dim,
                                 const std::vector<int64_t>& batching_dims) {
  PrimitiveType type = indices->shape().element_type();
  for (int64_t d : batching_dims) type = PromoteTypeForSize(type, indices->shape().dimensions(d));
  if (type != indices->shape().element_type()) indices = MakeConvert(c, indices, type);
  std::vector<int64_t> dims = indices->shape().dimensions();
  const bool implicit_vector = index_vector_dim == static_cast<int64_t>(dims.size());
  if (implicit_vector) {
    dims.push_back(1);
    indices = MakeReshape(c, indices, dims);
  }
  std::vector<int64_t> iota_dims = dims;
  iota_dims[index_vector_dim] = 1;
  std::vector<Instruction*> parts;
  for (int64_t d : batching_dims) {
    Instruction* iota = AddInstr(c, Opcode::kIota, Shape(type, iota_dims), {});
    iota->iota_dimension = d;
    parts.push_back(iota);
  }
  parts.push_back(indices);
  std::vector<int64_t> concat_dims = iota_dims;
  concat_dims[index_vector_dim] =
      static_cast<int64_t>(batching_dims.size()) + dims[index_vector_dim];
  Instruction* concat = AddInstr(c, Opcode::kConcatenate, Shape(type, concat_dims), parts);
  concat->dimensions = {index_vector_dim};
  return concat;
}

Instruction* NormalizeGather(Instruction* gather) {
  Computation& c = *gather->parent();
  const ir::GatherDimensionNumbers d = *gather->gather_dnums;
  std::vector<int64_t> start_index_map = d.operand_batching_dims;
  start_index_map.insert(start_index_map.end(), d.start_index_map.begin(), d.start_index_map.end());
  Instruction* indices =
      CreateConcatIndices(c, gather->operand(1), d.index_vector_dim, d.start_indices_batching_dims);
  std::vector<int64_t> collapsed = d.collapsed_slice_dims;
  collapsed.insert(collapsed.end(), d.operand_batching_dims.begin(), d.operand_batching_dims.end());
  std::sort(collapsed.begin(), collapsed.end());
  Instruction* result = CloneInstruction(*gather, c, {gather->operand(0), indices});
  ir::GatherDimensionNumbers nd;
  nd.offset_dims = d.offset_dims;
  nd.collapsed_slice_dims = collapsed;
  nd.start_index_map = start_index_map;
  nd.index_vector_dim = d.index_vector_dim;
  result->gather_dnums = nd;
  result->indices_are_sorted =
      gather->indices_are_sorted && std::is_sorted(start_index_map.begin(), start_index_map.end());
  return result;
}

Instruction* NormalizeScatter(Instruction* scatter) {
  Computation& c = *scatter->parent();
  const ir::ScatterDimensionNumbers d = *scatter->scatter_dnums;
  const int64_t n = (scatter->operand_count() - 1) / 2;
  std::vector<int64_t> to_operand = d.input_batching_dims;
  to_operand.insert(to_operand.end(), d.scatter_dims_to_operand_dims.begin(),
                    d.scatter_dims_to_operand_dims.end());
  std::vector<Instruction*> operands = scatter->operands();
  operands[n] = CreateConcatIndices(c, scatter->operand(n), d.index_vector_dim,
                                    d.scatter_indices_batching_dims);
  std::vector<int64_t> inserted = d.inserted_window_dims;
  inserted.insert(inserted.end(), d.input_batching_dims.begin(), d.input_batching_dims.end());
  std::sort(inserted.begin(), inserted.end());
  Instruction* result = CloneInstruction(*scatter, c, operands);
  ir::ScatterDimensionNumbers nd;
  nd.update_window_dims = d.update_window_dims;
  nd.inserted_window_dims = inserted;
  nd.scatter_dims_to_operand_dims = to_operand;
  nd.index_vector_dim = d.index_vector_dim;
  result->scatter_dnums = nd;
  result->indices_are_sorted =
      scatter->indices_are_sorted && std::is_sorted(to_operand.begin(), to_operand.end());
  return result;
}

bool IsBatchGather(const Instruction* i) {
  return i->opcode() == Opcode::kGather && i->gather_dnums.has_value() &&
         !i->gather_dnums->operand_batching_dims.empty() && i->operand(1)->shape().is_static();
}

bool IsBatchScatter(const Instruction* i) {
  return i->opcode() == Opcode::kScatter && i->scatter_dnums.has_value() &&
         !i->scatter_dnums->input_batching_dims.empty() && i->operand_count() % 2 == 1 &&
         i->operand((i->operand_count() - 1) / 2)->shape().is_static();
}

class BatchedGatherScatterNormalizer : public Pass {
 public:
  std::string_view name() const override { return "batched_gather_scatter_normalizer"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : NonFusionComputations(module)) {
      std::vector<Instruction*> matches;
      for (Instruction* i : c->instructions()) {
        if (IsBatchGather(i) || IsBatchScatter(i)) matches.push_back(i);
      }
      for (Instruction* i : matches) {
        ReplaceInstruction(
            i, i->opcode() == Opcode::kGather ? NormalizeGather(i) : NormalizeScatter(i));
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterBatchedGatherScatterNormalizer(Registry& registry) {
  registry.Register({"batched_gather_scatter_normalizer",
                     "rewrites batching dimensions of gathers and scatters into iota indices",
                     [] { return std::make_unique<BatchedGatherScatterNormalizer>(); }});
}

}  // namespace mltune::passes
