// mltuned's configuration: command-line flags, optionally read from a config file (--config FILE,
// TOML/INI `key = value` lines with the flags' long names), command line winning.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace mltune::daemon {

inline constexpr char kDefaultListen[] = "127.0.0.1:8470";
inline constexpr char kDefaultMetricsListen[] = "127.0.0.1:9470";
// The largest graph a request carries inline (in one gRPC message, which protobuf limits to
// 2 GiB); larger ones go in chunks (UploadGraph).
inline constexpr int64_t kMaxInlineGraphBytes = int64_t{1} << 30;

struct DaemonConfig {
  std::string listen = kDefaultListen;                 // gRPC; port 0 picks a free port
  std::string metrics_listen = kDefaultMetricsListen;  // Prometheus /metrics; "" = not served
  std::string data_dir = "./var";  // the SQLite store DATA_DIR/mltune.db, the trainer's log
  // The store: "" = DATA_DIR/mltune.db; a SQLite file; or a postgresql:// URL, which several
  // daemons may share (jobs are then claimed under leases; docs/deployment.md).
  std::string store;
  // A running job's lease: after a daemon dies, another on the same store takes its jobs over
  // this long after its last renewal.
  double lease_seconds = 30;
  // More target specs (*.json, backends/spec format) on top of the built-in ones; "" = none.
  std::string specs_dir;
  // Pretrained checkpoints stored as version 0 of their models at start; "" = the installed or
  // source tree's models/pretrained (DefaultPretrainedDir), "none" = none.
  std::string pretrained_dir;
  std::string ready_file;  // written (atomically) once serving: listen=, metrics=, store=, pid=
  int worker_threads = 0;  // jobs run at once; 0 = one per CPU core
  int queue_size = 64;     // queued jobs beyond which SubmitCompile answers RESOURCE_EXHAUSTED
  int rpc_threads = 64;    // most RPCs served at once (WatchJob streams hold one each)
  // The largest graph accepted (inline or uploaded in chunks). 2 GiB is what protobuf lets one
  // ONNX file hold (bigger models keep their weights in external files, which mltune does not
  // read), so no single-file model is refused; importing one takes about 3x its size in memory.
  int64_t max_graph_bytes = int64_t{2} << 30;
  int64_t max_instructions = 1'000'000;
  int64_t max_budget_steps = 1'000'000;
  double max_job_seconds = 3600;  // deadline of every job, whatever its budget says
  int64_t default_budget_steps = 1000;
  std::string default_strategy = "beam";
  // On SIGTERM: how long running jobs may go on before they are stopped and checkpointed (their
  // best so far cached, the job queued again for the next start).
  double drain_seconds = 10;
  int max_attempts = 3;  // a job that was running at a crash this often fails instead of resuming
  // The daemon retrains a cost model (cost-model/<task>-<target>) by itself once this many
  // measurements were logged for it since its newest version (daemon/model_refresher.h); 0 never.
  int64_t retrain_rows = 1000;
  // ... and only after this long without a queued or running job; a job stops the trainer.
  double retrain_idle_seconds = 60;
  // A retrained model is stored only when it does about as well as the version it replaces on
  // kernels logged since that version (train-cost-model --gate).
  bool retrain_gate = true;
  std::string trainer;       // the mltune CLI that trains; "" = DefaultTrainerPath()
  std::string trainer_args;  // more train-cost-model flags, space-separated ("--epochs 30")
  // Access (docs/deployment.md): TLS on the gRPC port from PEM files (a client CA makes it
  // mutual TLS: clients must present a certificate it signed), and bearer tokens with roles and
  // limits (daemon/access/access_policy.h). A non-loopback --listen needs both unless insecure.
  std::string tls_cert, tls_key, tls_client_ca;
  std::string tokens_file;
  bool insecure = false;
};

// Whether HOST of a HOST:PORT address is this machine only: localhost, 127.0.0.0/8 or ::1.
bool IsLoopbackAddress(const std::string& address);

// Checks ranges and the addresses' HOST:PORT form; InvalidArgument naming the flag.
absl::Status ValidateConfig(const DaemonConfig& config);

// Parses mltuned's command line into `config`. Returns nullopt to go on, or the exit code when
// the process should exit now (0 after --help or --version, 2 after an error, printed to `err`).
std::optional<int> ParseDaemonFlags(int argc, char** argv, DaemonConfig* config, std::ostream& out,
                                    std::ostream& err);

}  // namespace mltune::daemon
