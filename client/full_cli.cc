#include "client/full_cli.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace mltune::client {

std::string FullCliPath() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path full = self.parent_path() / "mltune-full";
  return access(full.c_str(), X_OK) == 0 ? full.string() : "";
}

int ExecFullCli(int argc, char** argv, std::ostream& err) {
  const std::string path = FullCliPath();
  if (path.empty()) {
    err << "error: this subcommand needs LibTorch and runs in mltune-full, which is not installed "
           "beside mltune\n";
    return 1;
  }
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  execv(path.c_str(), args.data());
  err << "error: cannot run " << path << ": " << std::strerror(errno) << "\n";
  return 1;
}

}  // namespace mltune::client
