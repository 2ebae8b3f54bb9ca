// Internal to client/ (and the tests that run every strategy): the strategies `mltune partition`
// offers for a dnn-partitioning graph, and the one path that runs any of them, so that the CLI
// and the validity property test (tests/optimizers/partition_validity_test.cc) share it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli_commands.h"
#include "optimizers/device_partition/device_partition.h"

namespace mltune::client::internal {

// Every strategy name SplitGraph accepts: the baselines, local search, GO and the registries'.
std::vector<std::string> GraphStrategies();

struct GraphSplit {
  opt::partition::Split split;
  int64_t samples = 0;
};

// Runs `cmd.strategy` (which must be set) on `graph` under `objective` with cmd's budget, seed,
// contiguity and GO options. The split is valid (see ValidSplit in device_partition.h), or the
// error names the strategy and why none was found.
absl::StatusOr<GraphSplit> SplitGraph(const PartitionCommand& cmd,
                                      const opt::partition::PartitionGraph& graph,
                                      opt::partition::Objective objective);

}  // namespace mltune::client::internal
