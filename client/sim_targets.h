// The simulated workers' names as --target aliases for the offline subcommands (simulate,
// collect, train-cost-model): a copy of the mapping in daemon::SimWorkers()
// (daemon/sim_workers.cc), kept here so the CLI does not link the daemon library (gRPC, storage).
// Change both together; tests/client/cli_test.cc pins what each alias resolves to.
#pragma once

#include <string>

namespace mltune::client {

// A worker name (tpu-sim, mcm-sim, cluster-sim) becomes its default spec name, as the daemon
// resolves a request's target; anything else is returned as given.
std::string ResolveAlias(const std::string& target);
// The simulated worker of a spec kind ("tpu" -> "tpu-sim"), or nullptr.
const char* WorkerOfKind(const std::string& kind);
// "known: <spec names>; aliases: tpu-sim = tpu-v4-core, ...", for error messages.
std::string KnownTargets();

}  // namespace mltune::client
