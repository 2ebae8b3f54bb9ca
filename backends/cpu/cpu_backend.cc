#include "backends/cpu/cpu_backend.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu/hlo_rewrites.h"
#include "ir/evaluator/evaluator.h"
#include "passes/default_pipelines.h"
#include "passes/registry.h"

namespace mltune::backends::cpu {

absl::StatusOr<std::unique_ptr<ir::Module>> RunCpuPasses(const ir::Module& module,
                                                         bool nhwc_convolutions) {
  static const passes::Registry* const registry = [] {
    auto* r = new passes::Registry();
    for (const passes::PassInfo* p : passes::Registry::Global().List()) {
      if (p->name != "tree_reduction_rewriter") r->Register(*p);
    }
    return r;
  }();
  std::unique_ptr<passes::Pipeline> pipeline =
      passes::MakeDefaultPipeline("cpu", nullptr, *registry);
  std::unique_ptr<ir::Module> copy = module.Clone();
  if (absl::StatusOr<bool> changed = pipeline->Run(*copy); !changed.ok()) {
    return absl::InternalError(
        absl::StrCat("XLA's default cpu pipeline failed: ", changed.status().message()));
  }
  // After XLA's pipeline, which leaves a scan's per-step input products inside its loop.
  absl::StatusOr<std::unique_ptr<passes::Pass>> batching =
      registry->Create("while-loop-dot-batching");
  if (!batching.ok()) return batching.status();
  if (absl::StatusOr<bool> changed = (*batching)->Run(*copy); !changed.ok()) {
    return absl::InternalError(
        absl::StrCat("while-loop-dot-batching failed: ", changed.status().message()));
  }
  // NCHW convolutions to NHWC, the transposes cancelled between them, as XLA's CPU compiler
  // does before layout assignment.
  // The trial runs on a copy, made only where there is something to rewrite (a model's constant
  // weights are copied with it).
  if (nhwc_convolutions && HasChannelsFirstConvolutions(*copy)) {
    std::unique_ptr<ir::Module> nhwc = copy->Clone();
    absl::StatusOr<bool> better = CanonicalizeConvolutionLayouts(*nhwc, *registry);
    if (!better.ok()) return better.status();
    if (*better) copy = std::move(nhwc);
  }
  DecomposeTopK(*copy);
  UpcastLowPrecisionMatrixOps(*copy);
  DuplicateSharedBroadcasts(*copy);
  NormalizeTupleUses(*copy);
  return copy;
}

absl::StatusOr<std::unique_ptr<ir::Module>> RunCpuPipeline(const ir::Module& module,
                                                           bool nhwc_convolutions) {
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPasses(module, nhwc_convolutions);
  if (!optimized.ok()) return optimized.status();
  if (absl::Status s = CheckSupported(**optimized); !s.ok()) return s;
  return optimized;
}

absl::StatusOr<CompiledModule> CompileModule(const ir::Module& module,
                                             const std::vector<KernelConfig>& configs,
                                             const costmodels::FusionPlan* plan,
                                             const CompilerOptions& options) {
  CompiledModule out;
  absl::StatusOr<LoweredModule> lowered = Lower(module, plan);
  if (!lowered.ok()) return lowered.status();
  out.lowered = *std::move(lowered);
  for (size_t k = 0; k < out.lowered.kernels.size(); ++k) {
    const bool given = k < configs.size() && !configs[k].empty();
    out.configs.push_back(given ? configs[k] : DefaultConfig(out.lowered.kernels[k]));
  }
  absl::StatusOr<Program> program = GenerateModule(out.lowered, out.configs);
  if (!program.ok()) return program.status();
  out.program = *std::move(program);
  absl::StatusOr<CompiledObject> object = CompileProgram(out.program, options);
  if (!object.ok()) return object.status();
  out.object = *std::move(object);
  return out;
}

absl::Status CheckAgainstEvaluator(const ir::Module& module, const CompiledModule& compiled,
                                   uint64_t seed, const MeasureOptions& options,
                                   const Tolerance& tolerance, Timing* timing,
                                   int64_t* ill_conditioned) {
  if (ill_conditioned != nullptr) *ill_conditioned = 0;
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(module, seed);
  if (!args.ok()) return args.status();
  absl::StatusOr<ir::Literal> expected = ir::Evaluate(module, *args);
  if (!expected.ok()) return expected.status();
  absl::StatusOr<std::vector<ir::Literal>> actual =
      Execute(compiled.object, compiled.program, *args, options, timing);
  if (!actual.ok()) return actual.status();
  return CompareWithRoundingSpread(module, *args, FlattenLeaves(*expected), *actual, tolerance,
                                   ill_conditioned);
}

absl::StatusOr<Timing> MeasureModule(const ir::Module& module,
                                     const std::vector<KernelConfig>& configs,
                                     const costmodels::FusionPlan* plan,
                                     const MeasureOptions& options, uint64_t seed) {
  absl::StatusOr<CompiledModule> compiled = CompileModule(module, configs, plan);
  if (!compiled.ok()) return compiled.status();
  return Measure(compiled->object, compiled->program, seed, options);
}

absl::StatusOr<Timing> MeasureKernel(const LoweredModule& module, int32_t kernel,
                                     const KernelConfig& config, const CompilerOptions& compiler,
                                     const MeasureOptions& options, uint64_t seed) {
  absl::StatusOr<Program> program = GenerateKernel(module, kernel, config);
  if (!program.ok()) return program.status();
  absl::StatusOr<CompiledObject> object = CompileProgram(*program, compiler);
  if (!object.ok()) return object.status();
  return Measure(*object, *program, seed, options);
}

}  // namespace mltune::backends::cpu
