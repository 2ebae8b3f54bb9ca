#include "daemon/config.h"

#include <ostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/version.h"

namespace mltune::daemon {
namespace {

absl::Status CheckAddress(const std::string& flag, const std::string& address, bool allow_empty) {
  if (address.empty() && allow_empty) return absl::OkStatus();
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "='", address, "': expected HOST:PORT (port 0 picks a free one)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsLoopbackAddress(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

absl::Status ValidateConfig(const DaemonConfig& c) {
  if (absl::Status s = CheckAddress("listen", c.listen, false); !s.ok()) return s;
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  // Anyone who reaches a non-loopback port could submit, cancel and read every result.
  if (!IsLoopbackAddress(c.listen) && !c.insecure &&
      (c.tls_cert.empty() || c.tokens_file.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", c.listen,
        " is not a loopback address: serving it needs TLS (--tls-cert, "
        "--tls-key) and tokens (--tokens), or --insecure to accept that anyone who reaches the "
        "port may submit, cancel and read every result"));
  }
  if (absl::Status s = CheckAddress("metrics-listen", c.metrics_listen, true); !s.ok()) return s;
  auto positive = [](const char* flag, double value) -> absl::Status {
    if (value > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " must be positive, got ", value));
  };
  if (c.data_dir.empty()) return absl::InvalidArgumentError("--data-dir must not be empty");
  if (c.worker_threads < 0) return absl::InvalidArgumentError("--worker-threads must be >= 0");
  for (auto [flag, value] : {std::pair<const char*, double>{"queue-size", c.queue_size},
                             {"rpc-threads", c.rpc_threads},
                             {"max-graph-bytes", static_cast<double>(c.max_graph_bytes)},
                             {"max-instructions", static_cast<double>(c.max_instructions)},
                             {"max-budget-steps", static_cast<double>(c.max_budget_steps)},
                             {"max-job-seconds", c.max_job_seconds},
                             {"default-budget-steps", static_cast<double>(c.default_budget_steps)},
                             {"max-attempts", c.max_attempts},
                             {"lease-seconds", c.lease_seconds}}) {
    if (absl::Status s = positive(flag, value); !s.ok()) return s;
  }
  if (c.drain_seconds < 0) return absl::InvalidArgumentError("--drain-seconds must be >= 0");
  if (c.retrain_rows < 0) return absl::InvalidArgumentError("--retrain-rows must be >= 0");
  if (!(c.retrain_idle_seconds >= 0)) {
    return absl::InvalidArgumentError("--retrain-idle-seconds must be >= 0");
  }
  if (c.default_budget_steps > c.max_budget_steps) {
    return absl::InvalidArgumentError("--default-budget-steps exceeds --max-budget-steps");
  }
  return absl::OkStatus();
}

std::optional<int> ParseDaemonFlags(int argc, char** argv, DaemonConfig* config, std::ostream& out,
                                    std::ostream& err) {
  CLI::App app{"mltuned: the mltune autotuning daemon (gRPC mltune.v1.CompileService)", "mltuned"};
  app.set_config("--config", "", "Read flags from this TOML/INI file (key = value, flag names)");
  app.set_version_flag("--version", std::string(kMltuneVersion));
  DaemonConfig& c = *config;
  app.add_option("--listen", c.listen, "gRPC address HOST:PORT (port 0: a free port)")
      ->capture_default_str();
  app.add_option("--metrics-listen", c.metrics_listen,
                 "Prometheus /metrics address HOST:PORT (\"\": not served)")
      ->capture_default_str();
  app.add_option("--data-dir", c.data_dir, "Folder of the SQLite store (mltune.db) and logs")
      ->capture_default_str();
  app.add_option("--store", c.store,
                 "The store: a SQLite file, or a postgresql:// URL that several daemons share "
                 "(default: DATA_DIR/mltune.db)");
  app.add_option("--lease-seconds", c.lease_seconds,
                 "A running job's lease: a daemon sharing the store takes over the jobs of one "
                 "that stopped renewing after this long")
      ->capture_default_str();
  app.add_option("--specs-dir", c.specs_dir,
                 "Folder of extra target specs (*.json); a file named like a built-in replaces it");
  app.add_option("--pretrained-dir", c.pretrained_dir,
                 "Folder of pretrained checkpoints stored as version 0 of their models (default: "
                 "share/mltune/pretrained or the source tree's models/pretrained; none: none)");
  app.add_option("--ready-file", c.ready_file,
                 "Write listen=, metrics=, store=, pid= lines here once serving");
  app.add_option("--worker-threads", c.worker_threads, "Jobs run at once (0: one per core)")
      ->capture_default_str();
  app.add_option("--queue-size", c.queue_size, "Queued jobs before RESOURCE_EXHAUSTED")
      ->capture_default_str();
  app.add_option("--rpc-threads", c.rpc_threads, "Most RPCs served at once")->capture_default_str();
  app.add_option("--max-graph-bytes", c.max_graph_bytes,
                 "Largest graph accepted, in bytes (inline up to 1 GiB, larger ones uploaded in "
                 "chunks; importing a model takes about 3x its size in memory)")
      ->capture_default_str();
  app.add_option("--max-instructions", c.max_instructions,
                 "Largest graph accepted, in instructions")
      ->capture_default_str();
  app.add_option("--max-budget-steps", c.max_budget_steps, "Largest search budget accepted")
      ->capture_default_str();
  app.add_option("--max-job-seconds", c.max_job_seconds, "Deadline of every job")
      ->capture_default_str();
  app.add_option("--default-budget-steps", c.default_budget_steps,
                 "Budget of a request that names none")
      ->capture_default_str();
  app.add_option("--default-strategy", c.default_strategy, "Strategy of a request that names none")
      ->capture_default_str();
  app.add_option("--drain-seconds", c.drain_seconds,
                 "On SIGTERM, how long running jobs may finish before they are checkpointed")
      ->capture_default_str();
  app.add_option("--max-attempts", c.max_attempts,
                 "A job running at this many crashes fails instead of resuming")
      ->capture_default_str();
  app.add_option("--retrain-rows", c.retrain_rows,
                 "Retrain a cost model once this many measurements were logged for it since its "
                 "newest version (0: never)")
      ->capture_default_str();
  app.add_option("--retrain-idle-seconds", c.retrain_idle_seconds,
                 "Retrain only after this long without jobs; a job stops the trainer")
      ->capture_default_str();
  app.add_flag("!--no-retrain-gate", c.retrain_gate,
               "Store a retrained cost model even when it does worse than the version it "
               "replaces on the kernels logged since (train-cost-model without --gate)");
  app.add_option("--trainer", c.trainer,
                 "The mltune CLI that retrains (default: mltune beside mltuned)");
  app.add_option("--trainer-args", c.trainer_args,
                 "More train-cost-model flags for retraining, e.g. \"--epochs 30\"");
  app.add_option("--tls-cert", c.tls_cert, "TLS: the server's certificate chain (PEM)");
  app.add_option("--tls-key", c.tls_key, "TLS: the server's private key (PEM)");
  app.add_option("--tls-client-ca", c.tls_client_ca,
                 "Mutual TLS: accept only clients with a certificate this CA (PEM) signed");
  app.add_option("--tokens", c.tokens_file,
                 "Bearer tokens with roles and limits (docs/deployment.md); none: no token asked");
  app.add_flag("--insecure", c.insecure,
               "Serve a non-loopback --listen without TLS or tokens (anyone may call)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForVersion&) {
    out << "mltuned " << kMltuneVersion << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    err << "mltuned: error: " << e.what() << "\n";
    return 2;
  }
  if (c.worker_threads == 0) {
    c.worker_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (absl::Status s = ValidateConfig(c); !s.ok()) {
    err << "mltuned: error: " << s.message() << "\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace mltune::daemon
