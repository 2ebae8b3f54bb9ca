// How the lean `mltune` runs the subcommands that load LibTorch (search, partition, run,
// train-agent, train-cost-model): it replaces itself with `mltune-full`, the whole CLI, installed
// beside it. Keeping LibTorch out of `mltune` lets the RPC subcommands start in milliseconds.
#ifndef MLTUNE_CLIENT_FULL_CLI_H_
#define MLTUNE_CLIENT_FULL_CLI_H_

#include <ostream>
#include <string>

namespace mltune::client {

// The `mltune-full` beside this executable; empty when there is none.
std::string FullCliPath();

// Execs `mltune-full` with this process's arguments; returns only on failure (exit code 1,
// the reason on `err`).
int ExecFullCli(int argc, char** argv, std::ostream& err);

}  // namespace mltune::client

#endif  // MLTUNE_CLIENT_FULL_CLI_H_
