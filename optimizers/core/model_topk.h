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
// Parameters: k (settings measured per part, default 5; the paper measures the top 5 per kernel)
// and pool (settings ranked per part, default 256: every setting when the part has fewer).
// Search fails with FailedPrecondition when the problem has no model attached, InvalidArgument on
// sequence problems, before anything is measured.
absl::StatusOr<std::unique_ptr<Strategy>> CreateModelTopK(const StrategyParams& params = {});

}  // namespace mltune::opt
