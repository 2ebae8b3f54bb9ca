// A real mltuned child process for tests: started on ephemeral loopback ports with a data folder,
// its output in DATA_DIR/mltuned.log, ready once it writes its ready file, killed with the object.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace mltune::testing {

class DaemonChild {
 public:
  // Runs `binary` (mltuned) with --listen 127.0.0.1:0, no metrics, --data-dir `data_dir`, one
  // worker thread and `extra` flags; waits up to 60 s for it to serve. nullptr, with a test
  // failure holding its log, when it exits first.
  static std::unique_ptr<DaemonChild> Start(const std::string& binary,
                                            const std::filesystem::path& data_dir,
                                            std::vector<std::string> extra = {});
  ~DaemonChild();  // SIGKILL when still running
  DaemonChild(const DaemonChild&) = delete;
  DaemonChild& operator=(const DaemonChild&) = delete;

  const std::string& address() const { return address_; }
  const std::string& log() const { return log_; }
  pid_t pid() const { return pid_; }
  // Sends `signal` and reaps the child; returns its wait status.
  int Signal(int signal);

 private:
  DaemonChild() = default;
  pid_t pid_ = -1;
  std::string address_;
  std::string log_;
};

}  // namespace mltune::testing
