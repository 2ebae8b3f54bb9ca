// Learned cost models (costmodels/learned) as rankers for model-guided search: a problem asks the
// ranker to order candidate settings and measures only the best ranked ("model-topk").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/lowering.h"
#include "costmodels/learned/learned_model.h"
#include "ir/module.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/cpu_tile_problem.h"
#include "optimizers/tiling/tile_problem.h"

namespace mltune::opt::guided {

// Ranks configurations of `module`'s kernels with `model`: per kernel its graph is built once
// (opt::tiling::CpuKernelFeaturesOf), each configuration fills the graph's configuration slots,
// and one batched Predict scores them, with the relative head when the model has one (it is
// trained to order configurations of one kernel) and the absolute head otherwise. The ranker
// keeps `model` alive and refers to `module`, which must outlive it. Thread-compatible: one
// problem, one thread.
tiling::CpuTileProblem::RankFn CpuTileRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model,
    const backends::cpu::LoweredModule& module);

// Ranks fusion plans of `module` (plans over costmodels::BuildOpGraph(module)) by their predicted
// time: each plan is lowered on the CPU backend and its kernels' predicted seconds (the absolute
// head, each kernel under its default configuration, as `mltune collect --task fusion` measures
// it) are summed. Kernels and plans are predicted once and remembered across calls, and each
// call's new kernels go through one batched Predict. A plan that does not lower ranks +infinity.
// The ranker's observe takes the kernel times of each measured plan (PlanSeconds::Observe):
// measured kernels are priced at their times from then on, and the others corrected by the
// errors of the measured kernels they share ops with.
// Keeps `model` alive and refers to `module`, which must outlive it. Thread-compatible.
fusion::CpuFusionProblem::Ranker CpuFusionRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model, const ir::Module& module);

// Each kernel of `module` predicted alone by a cpu fusion model's absolute head, at its default
// configuration (as `mltune collect --task fusion` measures it and CpuFusionRanker sums them):
// seconds in module.kernels' order, NaN for a kernel the features cannot describe.
absl::StatusOr<std::vector<double>> CpuFusionKernelSeconds(
    const costmodels::learned::LearnedModel& model, const backends::cpu::LoweredModule& module);

// Ranks tiles of the tpu-sim kernels of `plan` (the fusion plan over `graph` =
// costmodels::BuildOpGraph(module) whose kernels a TpuTileProblem tunes, kernel i =
// plan.kernels[i]) with `model`, a tpu-sim tile model: per kernel its graph is built once, as
// `mltune collect
// --target tpu-sim --task tile` builds it, and each tile fills the configuration slots
// (tiling::TpuTileConfiguration); one batched Predict per call, with the relative head when the
// model has one. Keeps `model` alive and refers to `graph`, `module` and `plan`, which must
// outlive it. Thread-compatible.
tiling::TpuTileProblem::RankFn TpuTileRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model,
    const costmodels::OpGraph& graph, const ir::Module& module, const costmodels::FusionPlan& plan);

// Ranks tpu-sim fusion plans over `graph` (costmodels::BuildOpGraph(module)) by their predicted
// time, as CpuFusionRanker does on the CPU: the sum of the predicted seconds of each plan's
// non-opaque kernels at their default tiles (`sim`'s DefaultTile), as `mltune collect --target
// tpu-sim --task fusion` measures them, with a tpu-sim fusion model's absolute head. Kernels and
// plans are predicted once. Refers to `module` and `graph`, which must outlive it.
fusion::TpuFusionProblem::RankFn TpuFusionRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model, const ir::Module& module,
    const costmodels::OpGraph& graph, backends::tpu::TpuSimulator sim);

}  // namespace mltune::opt::guided
