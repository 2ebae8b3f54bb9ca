#include "tests/support/run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>

#include "tests/support/corpus.h"

namespace mltune::testing {

CommandResult RunCommand(const std::string& command) {
  static std::atomic<int> counter{0};
  const std::string err_path =
      (std::filesystem::temp_directory_path() /
       ("mltune_cmd_err_" + std::to_string(getpid()) + "_" + std::to_string(counter++)))
          .string();
  CommandResult r;
  FILE* pipe = popen((command + " 2>" + err_path).c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ReadFile(err_path);
  std::filesystem::remove(err_path);
  return r;
}

}  // namespace mltune::testing
