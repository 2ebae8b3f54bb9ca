// Runs a shell command for the tests that drive the CLI as a user would, capturing stdout and
// stderr separately.
#pragma once

#include <string>

namespace mltune::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not run or was killed by a signal
  std::string out;
  std::string err;
};

CommandResult RunCommand(const std::string& command);

}  // namespace mltune::testing
