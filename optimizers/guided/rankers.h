// Learned cost models (costmodels/learned) as rankers for model-guided search: a problem asks the
// ranker to order candidate settings and measures only the best ranked ("model-topk").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backends/cpu/lowering.h"
#include "costmodels/learned/learned_model.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::opt::guided {

// The model registry's name of the cost model for a task on a target: "cost-model/tile-cpu".
// `mltune train-cost-model` stores under it and the daemon loads its newest version.
std::string CostModelName(std::string_view task, std::string_view target);

// Ranks configurations of `module`'s kernels with `model`: per kernel its graph is built once
// (opt::tiling::CpuKernelFeaturesOf), each configuration fills the graph's configuration slots,
// and one batched Predict scores them, with the relative head when the model has one (it is
// trained to order configurations of one kernel) and the absolute head otherwise. The ranker
// keeps `model` alive and refers to `module`, which must outlive it. Thread-compatible: one
// problem, one thread.
tiling::CpuTileProblem::RankFn CpuTileRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model,
    const backends::cpu::LoweredModule& module);

}  // namespace mltune::opt::guided
