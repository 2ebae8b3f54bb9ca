// mltuned as a library: the gRPC server (mltune.v1.CompileService, grpc.health.v1, reflection),
// the store, the job scheduler and the metrics endpoint, started and stopped as one. main.cc adds
// flags and signals; tests start it in-process on ephemeral loopback ports.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/config.h"

namespace mltune::daemon {

class Daemon {
 public:
  // Opens (or creates) the store under config.data_dir, resumes its jobs, and serves. Errors:
  // a store that cannot be opened, a port that cannot be bound, an invalid config.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const DaemonConfig& config);
  ~Daemon();  // Shutdown()
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const DaemonConfig& config() const;
  std::string address() const;  // "HOST:PORT" bound for gRPC
  int port() const;
  std::string metrics_address() const;  // "HOST:PORT", or "" when not served
  std::string store_path() const;
  // TLS and tokens as served, in words (mltuned prints it at start).
  std::string access_summary() const;

  // Stops accepting jobs, drains running ones for config.drain_seconds, checkpoints the rest
  // (best so far cached, job queued for the next start), stops the server, closes the store.
  // Thread-safe and idempotent.
  void Shutdown();

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mltune::daemon
