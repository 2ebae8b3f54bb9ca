// XLA's default HLO pipelines, target-independent part: the passes XLA's CPU and GPU compilers run
// before layout assignment, in XLA's order, with XLA's fixed-point sub-pipelines (FixedPoint, at
// most 25 rounds, as HloPassFix). docs/passes.md names the XLA source and version followed.
//
// Passes are looked up by name in a registry when the pipeline is built; those it does not hold
// (not yet written) are skipped and reported, so the pipelines grow as passes land.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pipeline.h"
#include "passes/registry.h"

namespace mltune::passes {

// One pass or sub-pipeline of a default pipeline, as XLA declares it.
struct PipelineStep {
  enum class Kind { kPass, kPipeline, kFixedPoint };
  Kind kind = Kind::kPass;
  std::string name;                 // XLA's pass name, or the sub-pipeline's name
  std::vector<PipelineStep> steps;  // sub-pipelines only
};

// The targets with a default pipeline: "cpu" and "gpu".
std::vector<std::string> DefaultPipelineTargets();

// The step tree of `target`'s default pipeline, or an empty vector for an unknown target.
std::vector<PipelineStep> DefaultPipelineSteps(std::string_view target);

// Every pass name `target`'s default pipeline runs, in order, repeats included.
std::vector<std::string> DefaultPipelinePassNames(std::string_view target);

// Builds `target`'s default pipeline from `registry`. Each pass the registry lacks is left out
// and recorded in `skipped` (if given) as "<sub-pipeline path>/<pass>", e.g.
// "cpu/simplification/algsimp". Returns nullptr for an unknown target.
std::unique_ptr<Pipeline> MakeDefaultPipeline(std::string_view target,
                                              std::vector<std::string>* skipped = nullptr,
                                              const Registry& registry = Registry::Global());

// A copy of `module` after `target`'s default pipeline (what a backend compiles by default), or
// InvalidArgument for an unknown target, or the pipeline's error.
absl::StatusOr<std::unique_ptr<ir::Module>> RunDefaultPipeline(const ir::Module& module,
                                                               std::string_view target);

// The distinct pass names `target`'s default pipeline needs that `registry` does not hold, in
// first-use order.
std::vector<std::string> MissingDefaultPipelinePasses(
    std::string_view target, const Registry& registry = Registry::Global());

}  // namespace mltune::passes
