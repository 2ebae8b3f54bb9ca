// The one list of passes in the library: adding a pass is its file plus one line here.
#include "passes/registry.h"

namespace mltune::passes {

// Each defined in the pass's own file.
void RegisterAlgebraicSimplifier(Registry& registry);
void RegisterBatchDotSimplification(Registry& registry);
void RegisterBatchNormExpander(Registry& registry);
void RegisterBatchedGatherScatterNormalizer(Registry& registry);
void RegisterBitcastDtypesExpander(Registry& registry);
void RegisterCallInliner(Registry& registry);
void RegisterComparisonExpander(Registry& registry);
void RegisterComputationDeduplicator(Registry& registry);
void RegisterConditionalCanonicalizer(Registry& registry);
void RegisterConditionalSimplifier(Registry& registry);
void RegisterConditionalToSelect(Registry& registry);
void RegisterConvertMover(Registry& registry);
void RegisterDotDecomposer(Registry& registry);
void RegisterDotMerger(Registry& registry);
void RegisterDynamicDimensionSimplifier(Registry& registry);
void RegisterDynamicIndexSplitter(Registry& registry);
void RegisterFlattenCallGraph(Registry& registry);
void RegisterGatherSimplifier(Registry& registry);
void RegisterHloConstantFolding(Registry& registry);
void RegisterHloCse(Registry& registry);
void RegisterHloDce(Registry& registry);
void RegisterLogisticExpander(Registry& registry);
void RegisterMapInliner(Registry& registry);
void RegisterOperandUpcaster(Registry& registry);
void RegisterOptimizationBarrierExpander(Registry& registry);
void RegisterRealImagExpander(Registry& registry);
void RegisterReshapeDecomposer(Registry& registry);
void RegisterReshapeMover(Registry& registry);
void RegisterRngExpander(Registry& registry);
void RegisterScatterSimplifier(Registry& registry);
void RegisterShardingRemover(Registry& registry);
void RegisterSimplifyFPConversions(Registry& registry);
void RegisterSliceSinker(Registry& registry);
void RegisterSortSimplifier(Registry& registry);
void RegisterStableSortExpander(Registry& registry);
void RegisterSubByteNormalization(Registry& registry);
void RegisterTransposeFolding(Registry& registry);
void RegisterTreeReductionRewriter(Registry& registry);
void RegisterTupleSimplifier(Registry& registry);
void RegisterWhileLoopConstantSinking(Registry& registry);
void RegisterWhileLoopDotBatching(Registry& registry);
void RegisterWhileLoopInvariantCodeMotion(Registry& registry);
void RegisterWhileLoopSimplifier(Registry& registry);
void RegisterWhileLoopTripCountAnnotator(Registry& registry);
void RegisterZeroSizedHloElimination(Registry& registry);

void RegisterAllPasses(Registry& registry) {
  RegisterAlgebraicSimplifier(registry);
  RegisterBatchDotSimplification(registry);
  RegisterBatchNormExpander(registry);
  RegisterBatchedGatherScatterNormalizer(registry);
  RegisterBitcastDtypesExpander(registry);
  RegisterCallInliner(registry);
  RegisterComparisonExpander(registry);
  RegisterComputationDeduplicator(registry);
  RegisterConditionalCanonicalizer(registry);
  RegisterConditionalSimplifier(registry);
  RegisterConditionalToSelect(registry);
  RegisterConvertMover(registry);
  RegisterDotDecomposer(registry);
  RegisterDotMerger(registry);
  RegisterDynamicDimensionSimplifier(registry);
  RegisterDynamicIndexSplitter(registry);
  RegisterFlattenCallGraph(registry);
  RegisterGatherSimplifier(registry);
  RegisterHloConstantFolding(registry);
  RegisterHloCse(registry);
  RegisterHloDce(registry);
  RegisterLogisticExpander(registry);
  RegisterMapInliner(registry);
  RegisterOperandUpcaster(registry);
  RegisterOptimizationBarrierExpander(registry);
  RegisterRealImagExpander(registry);
  RegisterReshapeDecomposer(registry);
  RegisterReshapeMover(registry);
  RegisterRngExpander(registry);
  RegisterScatterSimplifier(registry);
  RegisterShardingRemover(registry);
  RegisterSimplifyFPConversions(registry);
  RegisterSliceSinker(registry);
  RegisterSortSimplifier(registry);
  RegisterStableSortExpander(registry);
  RegisterSubByteNormalization(registry);
  RegisterTransposeFolding(registry);
  RegisterTreeReductionRewriter(registry);
  RegisterTupleSimplifier(registry);
  RegisterWhileLoopConstantSinking(registry);
  RegisterWhileLoopDotBatching(registry);
  RegisterWhileLoopInvariantCodeMotion(registry);
  RegisterWhileLoopSimplifier(registry);
  RegisterWhileLoopTripCountAnnotator(registry);
  RegisterZeroSizedHloElimination(registry);
}

}  // namespace mltune::passes
