// "model-topk", model-guided search: a learned cost model ranks the settings of each part of the
// problem (Problem::Parts, Problem::RankSettings) and only the k best ranked are measured.
// Not in StrategyRegistry::Global(), whose strategies search any problem by measurement alone:
// tasks that can attach a cost model to their problem offer it as their own strategy.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "optimizers/core/search.h"

namespace mltune::opt {

inline constexpr char kModelTopK[] = "model-topk";
// Parameters: k (settings measured per part, default 5; the paper measures the top 5 per kernel),
// pool (settings ranked per part, default 256: every setting when the part has fewer) and
// generations (default 0: a part with more settings than pool ranks pool random ones; more: the
// model explores from the current setting by mutation and crossover for that many generations,
// for parts as large as a whole fusion plan) and rounds (default 1: one pass over the parts;
// more: the pass repeats from the best measured candidate, measuring only what no earlier round
// did; 0: until the budget runs out or nothing new is ranked) and refine (default 0; 1: then
// steepest-descent hill climbing by measurement from the best measured candidate; 2: then
// first-improvement hill climbing, single-position changes measured in the model's order) and
// rerank (default 0: a part's k best of one ranking are measured; 1: the part's settings are
// ranked again after each measurement, for problems whose model learns from what they measured,
// such as the CPU fusion ranker's kernel times) and cycles (default 1; more: the rounds and the
// climb repeat from the best measured candidate, which a model that learns from measurements
// ranks differently each time; 0: until the budget runs out or a cycle measures nothing new).
// Search fails with FailedPrecondition when the problem has no model attached, InvalidArgument on
// sequence problems, before anything is measured.
absl::StatusOr<std::unique_ptr<Strategy>> CreateModelTopK(const StrategyParams& params = {});

// Model-topk's parameters for whole fusion plans (one part with a setting per producer): the
// model explores plans for 8 generations of 256 and the 10 best ranked are measured, the
// paper's top 10 at graph level; a second round explores again from the best measured plan,
// with the model corrected by the first 10 plans' kernel times (CpuFusionRanker), and measures
// its 10 best; then first-improvement hill climbing from the best of them, neighbours measured
// in the model's order (refine 2), until a local optimum or the end of the budget.
StrategyParams FusionModelTopKParams();

}  // namespace mltune::opt
