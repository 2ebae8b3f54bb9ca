// The CPU backend in one call each: compile a module (lower, generate, compile, cache), check it
// against the reference evaluator, and measure a module or one kernel in the runner child.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/check.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/compiler.h"
#include "backends/cpu/lowering.h"
#include "backends/cpu/runner.h"
#include "ir/module.h"

namespace mltune::backends::cpu {

// The backend's HLO pipeline: XLA's default cpu pipeline without tree_reduction_rewriter, then
// CheckSupported. The tree rewrite splits a long reduction into a reduce-window and a reduce for
// accuracy; the reductions it applies to here (max/min, integer and f64 sums) are exact or accurate
// already, and the generated reduce kernels keep vector partial accumulators, so the split would
// only add a kernel and a pass over memory (and hide the row structure from row fusion). Errors:
// Internal for a failing pass, Unimplemented (CheckSupported's) for an op the backend lacks.
absl::StatusOr<std::unique_ptr<ir::Module>> RunCpuPipeline(const ir::Module& module,
                                                           bool nhwc_convolutions = true);
// The pipeline's passes alone (then the rewrites of hlo_rewrites.h: topk as a sort, bf16/f16
// matrix ops in f32; then DuplicateSharedBroadcasts and NormalizeTupleUses), without
// CheckSupported (for CutUnsupported). `nhwc_convolutions`: CanonicalizeConvolutionLayouts after
// XLA's passes (NCHW networks run NHWC, as oneDNN's CPU kernels want them); the GPU backend,
// which shares this pipeline, keeps the module's layouts for cuDNN.
absl::StatusOr<std::unique_ptr<ir::Module>> RunCpuPasses(const ir::Module& module,
                                                         bool nhwc_convolutions = true);

struct CompiledModule {
  LoweredModule lowered;
  std::vector<KernelConfig> configs;  // one per kernel, resolved (defaults filled in)
  Program program;
  CompiledObject object;
};

// `configs`: one per kernel (missing or empty entries: defaults); `plan`: a fusion plan over
// costmodels::BuildOpGraph(module), nullptr for the default fusion.
absl::StatusOr<CompiledModule> CompileModule(const ir::Module& module,
                                             const std::vector<KernelConfig>& configs = {},
                                             const costmodels::FusionPlan* plan = nullptr,
                                             const CompilerOptions& options = {});

// The module as this CPU worker runs it, as an op graph for the placement simulator: one node per
// kernel of its default compilation (costmodels::FuseOpGraph over the kernels' fusion plan), each
// with its median seconds inside the module's run on this host (OpNode::measured_s), on
// ir::MakeRandomArguments(module, seed). Node names are the kernels' roots in the module after
// RunCpuPipeline.
absl::StatusOr<costmodels::OpGraph> MeasuredKernelGraph(const ir::Module& module,
                                                        const MeasureOptions& options = {},
                                                        uint64_t seed = 0);

// Runs the compiled module once on ir::MakeRandomArguments(module, seed) and compares with the
// evaluator's results: OK, DataLoss naming the first difference, or the evaluator's or runner's
// error. Elements outside `tolerance` pass when within its spread_factor times their
// RoundingSpread (ill-conditioned outputs; 3 noisy pairs, then 10 where elements fall outside);
// `ill_conditioned` receives how many did. With
// `timing`, the run is also timed on those inputs.
absl::Status CheckAgainstEvaluator(const ir::Module& module, const CompiledModule& compiled,
                                   uint64_t seed, const MeasureOptions& options = {},
                                   const Tolerance& tolerance = {}, Timing* timing = nullptr,
                                   int64_t* ill_conditioned = nullptr);

// Compiles the module (as CompileModule) and times it on seeded random inputs.
absl::StatusOr<Timing> MeasureModule(const ir::Module& module,
                                     const std::vector<KernelConfig>& configs,
                                     const costmodels::FusionPlan* plan,
                                     const MeasureOptions& options, uint64_t seed = 0);

// Compiles kernel `kernel` alone with `config` and times it on seeded random inputs.
absl::StatusOr<Timing> MeasureKernel(const LoweredModule& module, int32_t kernel,
                                     const KernelConfig& config, const CompilerOptions& compiler,
                                     const MeasureOptions& options, uint64_t seed = 0);

}  // namespace mltune::backends::cpu
