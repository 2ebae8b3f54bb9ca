// Runs an mltuned child process on ephemeral loopback ports, for tests and benchmarks: a private
// temporary data directory, the ready file the daemon writes once it serves, SIGTERM to stop.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::client {

struct DaemonOptions {
  std::string binary;                   // path of mltuned
  std::vector<std::string> extra_args;  // appended after the listen/data/ready flags
  bool serve_metrics = true;            // serve /metrics on an ephemeral port
  double ready_timeout_seconds = 60;    // until the ready file appears
};

class DaemonProcess {
 public:
  // Starts mltuned with --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 (or "") in a fresh
  // temporary directory (data dir, ready file and the daemon's log), and waits for its ready file.
  // When the child exits or times out first, the error quotes the end of its log.
  static absl::StatusOr<std::unique_ptr<DaemonProcess>> Start(const DaemonOptions& options);
  // Stops the daemon (as Stop) and removes the temporary directory.
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const std::string& address() const { return address_; }  // "HOST:PORT" of the gRPC service
  const std::string& metrics_address() const { return metrics_address_; }
  const std::string& store_path() const { return store_path_; }
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then waits up to `timeout_seconds` (SIGKILL after that). Returns the exit code, or
  // 128 + signal when a signal ended it; Internal when it was already stopped.
  absl::StatusOr<int> Stop(double timeout_seconds = 30);

 private:
  DaemonProcess() = default;
  pid_t pid_ = -1;
  std::string dir_;
  std::string address_;
  std::string metrics_address_;
  std::string store_path_;
  std::string log_path_;
};

}  // namespace mltune::client
