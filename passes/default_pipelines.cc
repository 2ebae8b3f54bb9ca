#include "passes/default_pipelines.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mltune::passes {
namespace {

using Kind = PipelineStep::Kind;

PipelineStep P(std::string name) { return {Kind::kPass, std::move(name), {}}; }
PipelineStep Seq(std::string name, std::vector<PipelineStep> steps) {
  return {Kind::kPipeline, std::move(name), std::move(steps)};
}
PipelineStep Fix(std::string name, std::vector<PipelineStep> steps) {
  return {Kind::kFixedPoint, std::move(name), std::move(steps)};
}

// CreateSimplificationPipeline() of cpu_compiler.cc, with the default debug options (fusion
// emitters on, no YNNPACK reduce offloading, so one TreeReductionRewriter).
PipelineStep CpuSimplification(std::string name) {
  return Fix(std::move(name), {
                                  P("algsimp"),
                                  P("simplify-sorts"),
                                  P("dce"),
                                  P("gather_expander"),
                                  P("gather_simplifier"),
                                  P("tree_reduction_rewriter"),
                                  P("zero_sized_hlo_elimination"),
                                  P("while-loop-invariant-code-motion"),
                                  P("tuple-simplifier"),
                                  P("while-loop-constant-sinking"),
                                  P("simplify-while-loops"),
                                  P("dce"),
                                  P("reshape-mover"),
                                  P("constant_folding"),
                                  P("simplify-conditional"),
                              });
}

// CpuCompiler::RunHloPassesThroughLayoutAssn (openxla/xla 353a6d6c, xla/service/cpu/
// cpu_compiler.cc) for one partition, stopping at CpuLayoutAssignment. Left out as target
// specific: the 13 FloatNormalization passes (CpuFloatSupport), ConvCanonicalization,
// ChangeOpDataType (its filter asks the CPU dot emitter), ReduceWindowResizer and the
// post-layout ShapeCanonicalizer/LiteralCanonicalizer (pooling, no rewrite).
std::vector<PipelineStep> CpuSteps() {
  return {
      Seq("sharding-removal", {P("flatten-call-graph"), P("sharding-remover"), P("dce")}),
      Seq("SubbytePacker pipeline", {P("sub-byte-size-setter")}),
      Seq("HLO passes through layout assignment",
          {
              P("batched_gather_scatter_normalizer"),
              P("result_caster"),
              P("dot_decomposer"),
              P("operand_upcaster"),
              P("rng-expander"),
              P("rng-bit-generator-expander"),
              P("zero_sized_hlo_elimination"),
              P("dynamic-index-splitter"),
              P("conditional-to-select"),
              P("map-inline"),
              P("topk-decomposer"),
              P("comparison-expander"),
              P("cholesky_expander"),
              P("qr_expander"),
              P("eigh_expander"),
              P("triangular_solve_expander"),
              P("all_to_all_decomposer"),
              P("stochastic_convert_decomposer"),
              P("call-inliner"),
              P("batch-dot-simplification"),
              P("dot_decomposer"),
              P("all-reduce-promotion"),
              P("batch-dot-simplification"),
              P("convolution-group-converter"),
              P("convolution-group-converter"),
              P("batchnorm_expander"),
              P("logistic-expander"),
              P("conditional-canonicalizer"),
              P("dynamic-dimension-simplifier"),
              Fix("reduce-window-rewriter-fix", {P("reduce-window-rewriter")}),
              P("dynamic_padder"),
              CpuSimplification("simplification"),
              P("select_and_scatter_expander"),
              P("scatter_expander"),
              P("scatter_simplifier"),
              CpuSimplification("post_scatter_expansion_simplification"),
              P("bitcast_dtypes_expander"),
              P("topk-rewriter"),
              P("transpose-folding"),
              P("cse"),
              P("cse_barrier_expander"),
              P("tuple-simplifier"),
              P("while-loop-trip-count-annotator"),
              P("flatten-call-graph"),
          }),
  };
}

// GpuCompiler::OptimizeHloModule (tpopp/xla 06940fdc, a mirror of openxla/xla main,
// xla/service/gpu/gpu_compiler.cc): RunPreSPMDPartitionerPasses, RunSPMDPasses for one
// partition, then RunOptimizationPasses. Left out as GPU specific: cuDNN/composite/host-memory
// and scan rewriters before SPMD, OneHotGatherRewriter, RaggedDotRewriter, ScaledDotRewriter,
// TopKSplitter, TopkSpecializer, DotDimensionSorter, DotOperandConverter,
// PermutationSortExpander, SortRewriter, GpuScatterExpander, DotStrengthReduction,
// ReduceWindowResizer/ScanExpander; and the collective-optimization pipeline that follows
// (collectives need several devices). GpuAlgebraicSimplifier is XLA's algsimp.
std::vector<PipelineStep> GpuSteps() {
  return {
      Seq("pre-spmd-partitioner",
          {P("flatten-call-graph"), P("call-inliner"), P("zero_sized_hlo_elimination"),
           P("conditional-canonicalizer"), P("topk-decomposer"), P("topk-rewriter")}),
      Seq("sharding-removal", {P("sharding-remover"), P("dce")}),
      Seq("optimization",
          {
              P("batched_gather_scatter_normalizer"),
              P("topk-decomposer"),
              P("dot_decomposer"),
              P("result_caster"),
              P("operand_upcaster"),
              P("sub-byte-size-setter"),
              P("rng-expander"),
              P("rng-bit-generator-expander"),
              P("comparison-expander"),
              P("zero_sized_hlo_elimination"),
              P("select_and_scatter_expander"),
              P("cholesky_expander"),
              P("qr_expander"),
              P("eigh_expander"),
              P("dynamic-index-splitter"),
              P("call-inliner"),
              P("stochastic_convert_decomposer"),
              P("convolution_4d_expander"),
              P("convolution-pred-expander"),
              P("batchnorm_expander"),
              P("logistic-expander"),
              P("conditional-canonicalizer"),
              P("dynamic-dimension-simplifier"),
              Fix("reduce-window-rewriter-fix", {P("reduce-window-rewriter")}),
              P("dynamic_padder"),
              P("stable-sort-expander"),
              Fix("simplification",
                  {
                      P("zero_sized_hlo_elimination"),
                      P("gather_simplifier"),
                      P("gather_expander"),
                      P("scatter_simplifier"),
                      P("scatter_expander"),
                      P("scatter-slice-simplifier"),
                      P("algsimp"),
                      P("simplify-sorts"),
                      P("tuple-simplifier"),
                      P("while-loop-constant-sinking"),
                      P("simplify-while-loops"),
                      P("slice-sinker"),
                      P("reshape-mover"),
                      P("constant_folding"),
                      P("simplify-conditional"),
                      P("transpose-folding"),
                      P("cse"),
                      P("dce"),
                  }),
              P("dot-merger"),
              P("transpose-folding"),
              Fix("simplification-2", {P("convert-mover"), P("algsimp")}),
              P("computation-deduplicator"),
          }),
  };
}

void CollectNames(const std::vector<PipelineStep>& steps, std::vector<std::string>& out) {
  for (const PipelineStep& s : steps) {
    if (s.kind == Kind::kPass) {
      out.push_back(s.name);
    } else {
      CollectNames(s.steps, out);
    }
  }
}

std::unique_ptr<Pipeline> Build(const std::string& name, const std::vector<PipelineStep>& steps,
                                const std::string& path, const Registry& registry,
                                std::vector<std::string>* skipped) {
  auto pipeline = std::make_unique<Pipeline>(name);
  for (const PipelineStep& s : steps) {
    if (s.kind == Kind::kPass) {
      if (registry.Find(s.name) == nullptr) {
        if (skipped != nullptr) skipped->push_back(absl::StrCat(path, "/", s.name));
        continue;
      }
      pipeline->Add(*registry.Create(s.name));
      continue;
    }
    std::unique_ptr<Pipeline> sub =
        Build(s.name, s.steps, absl::StrCat(path, "/", s.name), registry, skipped);
    if (s.kind == Kind::kFixedPoint) {
      pipeline->Add(std::make_unique<FixedPoint>(std::move(sub)));
    } else {
      pipeline->Add(std::move(sub));
    }
  }
  return pipeline;
}

}  // namespace

std::vector<std::string> DefaultPipelineTargets() { return {"cpu", "gpu"}; }

std::vector<PipelineStep> DefaultPipelineSteps(std::string_view target) {
  if (target == "cpu") return CpuSteps();
  if (target == "gpu") return GpuSteps();
  return {};
}

std::vector<std::string> DefaultPipelinePassNames(std::string_view target) {
  std::vector<std::string> names;
  CollectNames(DefaultPipelineSteps(target), names);
  return names;
}

std::unique_ptr<Pipeline> MakeDefaultPipeline(std::string_view target,
                                              std::vector<std::string>* skipped,
                                              const Registry& registry) {
  if (target != "cpu" && target != "gpu") return nullptr;
  const std::string t(target);
  return Build(absl::StrCat(t, "-default"), DefaultPipelineSteps(target), t, registry, skipped);
}

std::vector<std::string> MissingDefaultPipelinePasses(std::string_view target,
                                                      const Registry& registry) {
  std::vector<std::string> missing;
  for (const std::string& name : DefaultPipelinePassNames(target)) {
    if (registry.Find(name) == nullptr &&
        std::find(missing.begin(), missing.end(), name) == missing.end()) {
      missing.push_back(name);
    }
  }
  return missing;
}

absl::StatusOr<std::unique_ptr<ir::Module>> RunDefaultPipeline(const ir::Module& module,
                                                               std::string_view target) {
  std::unique_ptr<Pipeline> pipeline = MakeDefaultPipeline(target);
  if (pipeline == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no default pipeline for target '", std::string(target), "'"));
  }
  std::unique_ptr<ir::Module> copy = module.Clone();
  absl::StatusOr<bool> changed = pipeline->Run(*copy);
  if (!changed.ok()) return changed.status();
  return copy;
}

}  // namespace mltune::passes
