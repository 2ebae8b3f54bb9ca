// mltune-worker as a library: a remote measurement worker that connects out to mltuned's
// mltune.v1.WorkerService, registers this machine's device, long-polls for batches of generated
// programs, compiles and times them here, returns the timings and heartbeats meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::worker {

struct WorkerOptions {
  std::string server;          // mltuned's HOST:PORT
  std::string target = "cpu";  // what this worker measures on: "cpu" or "gpu" (CheckTarget)
  // For "gpu": the runner that times GPU programs ("" = mltune-gpu-runner) and the architecture
  // to claim instead of probing device 0 (""): with mltune-gpu-emulator, a GPU worker on a
  // machine without one, for tests.
  std::string gpu_runner;
  std::string gpu_arch;
  // TLS as the client library sets it up (client/rpc_client.h): with ca_file or cert_file the
  // channel is TLS; cert_file and key_file together add mutual TLS.
  std::string ca_file, cert_file, key_file;
  // The name the daemon's certificate must carry when `server` is an address, not that name (a
  // replica reached by its IP, the name being its Service's): "" = the host of `server`.
  std::string tls_name;
  // Bearer token (a token with the "worker" role where mltuned runs with --tokens). Whitespace
  // around it (a token file's newline) is dropped.
  std::string token;
  std::string host;    // the name registered; "" = gethostname()
  int wait_ms = 1000;  // how long one TakeBatch waits for work, and so how soon a stop is noticed
  // After a failure to reach the daemon, the first wait before trying again; it doubles per
  // failure up to max_reconnect_seconds.
  double reconnect_seconds = 1;
  double max_reconnect_seconds = 30;
  double call_timeout_seconds = 30;  // deadline of each call, on top of TakeBatch's wait_ms
  // A progress line (batches and candidates measured) after the first batch, then at most this
  // often.
  double progress_seconds = 60;
  // One line per event (registrations, progress, connection trouble); unset: silent.
  std::function<void(std::string_view)> log;
};

// Counters since the worker started, for its log.
struct WorkerStats {
  int64_t registrations = 0;
  int64_t batches = 0;            // batches measured and returned
  int64_t candidates = 0;         // candidates measured (failed ones included)
  int64_t failed_candidates = 0;  // that came back with an error
  int64_t heartbeats = 0;         // answered heartbeats
};

// OK when this build can measure `target` remotely: the one place that decides it.
absl::Status CheckTarget(const std::string& target);

// This machine's host name ("localhost" where gethostname fails).
std::string HostName();

// Every address HOST of "HOST:PORT" resolves to, as "ADDRESS:PORT" (IPv6 in brackets), sorted:
// the replicas behind a headless Service. Unavailable when HOST does not resolve.
absl::StatusOr<std::vector<std::string>> ResolveAll(const std::string& server);

class RemoteWorker {
 public:
  // Checks the target and the options, reads the credential files and describes the device
  // (which needs the host's C++ compiler); errors name the flag at fault.
  static absl::StatusOr<std::unique_ptr<RemoteWorker>> Create(WorkerOptions options);
  ~RemoteWorker();
  RemoteWorker(const RemoteWorker&) = delete;
  RemoteWorker& operator=(const RemoteWorker&) = delete;

  const std::string& host() const;
  const std::string& server() const;  // the daemon it serves
  // What it registers as its device: "CPU MODEL, N cores, COMPILER VERSION MACHINE".
  const std::string& device() const;

  // Serves until `stop` becomes true, then finishes (and returns) the batch in hand and returns
  // OK. Reconnects with backoff while the daemon is unreachable and registers again when the
  // daemon no longer knows it; returns the error where retrying cannot help (UNAUTHENTICATED,
  // PERMISSION_DENIED, a daemon without WorkerService, a registration refused as invalid).
  absl::Status Run(const std::atomic<bool>& stop);

  WorkerStats stats() const;

 private:
  struct Impl;
  explicit RemoteWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Serves every daemon of `servers` ("HOST:PORT" each), one RemoteWorker loop per daemon, until
// `stop`. With `resolve_all`, a server stands for every address its HOST resolves to (the replicas
// behind a headless Service), looked up again every `resolve_seconds` as replicas come and go;
// each such loop checks the daemon's certificate against HOST. `announce` hears of each loop
// started or stopped. Returns the first error retrying cannot help, which stops the other loops.
absl::Status ServeAll(const WorkerOptions& base, const std::vector<std::string>& servers,
                      bool resolve_all, double resolve_seconds, const std::atomic<bool>& stop,
                      const std::function<void(std::string_view)>& announce);

}  // namespace mltune::worker
