// Runs a program as a child process with a wall-clock limit, capturing its output: the system
// compiler and the kernel runner both go through here, so a hanging compile or a crashing
// candidate is a reported failure and never takes the calling process (the daemon) down.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::backends::cpu {

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that ended it, or 0
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
  // "exit 1", "killed by signal 11 (Segmentation fault)", "timed out after 5 s".
  std::string Describe() const;
};

// Spawns argv[0] (searched on PATH) in its own process group; after `timeout_seconds` the whole
// group is killed. `env` entries ("K=V") are added to the inherited environment. An error only
// when the program cannot be started.
absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, double timeout_seconds,
                                     const std::vector<std::string>& env = {});

}  // namespace mltune::backends::cpu
