// The C++ client library for mltuned: what a compiler links to tune its graphs through the daemon,
// and what the `mltune` CLI's RPC subcommands are built on. Plain C++ types only: gRPC and the
// generated protobuf code stay inside rpc_client.cc, so including this header costs nothing.
//
//   auto client = mltune::client::Client::Connect(mltune::client::ServerAddress(""));
//   mltune::client::SubmitRequest request;
//   request.graph = hlo_text;                               // or graph_file = "model.onnx"
//   auto submitted = client->Submit(request);               // cached, attached, or a new job
//   auto job = client->Watch(submitted->job_id, on_update);  // until it finishes
//   job->results[0].artifacts["optimized_hlo"];
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::client {

// The daemon's default listen address (mltuned --listen).
inline constexpr char kDefaultServer[] = "127.0.0.1:8470";
// `flag` when non-empty, else $MLTUNE_SERVER when set and non-empty, else kDefaultServer.
std::string ServerAddress(const std::string& flag);

struct Budget {
  int64_t steps = 0;   // 0 = the daemon's default
  double seconds = 0;  // 0 = no limit beyond the daemon's
};

enum class GraphFormat { kHloText, kOnnx };

// The largest graph Submit and Lookup send inside the request itself (which every daemon
// accepts). A larger one (a model with its weights) is uploaded once, in pieces of
// kUploadChunkBytes, and the request names it by its SHA-256 (Client::UploadGraph).
inline constexpr int64_t kInlineGraphBytes = int64_t{1} << 20;
inline constexpr int64_t kUploadChunkBytes = int64_t{4} << 20;

// A graph stored on the daemon by content hash (Client::UploadGraph), or how a request's graph
// went: by hash (sha256 set) or inline (sha256 empty).
struct GraphRef {
  std::string sha256;           // lowercase hex SHA-256 of its bytes
  int64_t size = 0;             // its length in bytes
  bool already_stored = false;  // the daemon had it: its bytes were not sent again
  int64_t bytes_sent = 0;       // graph bytes this call sent (0 when already stored)
};

struct SubmitRequest {
  // The graph (HLO text or a serialized ONNX model): exactly one of its bytes, a file to read
  // (piece by piece when it is uploaded), or the SHA-256 of a graph uploaded before.
  std::string graph;
  std::string graph_file;
  std::string graph_sha256;
  GraphFormat format = GraphFormat::kHloText;
  std::string graph_name;          // shown in errors; e.g. the file name
  std::vector<std::string> tasks;  // empty = {"pass-order"}
  std::string target;              // empty = "cpu"
  Budget budget;
  std::string strategy;  // empty = the daemon's default
  std::map<std::string, std::string> options;
  bool skip_cache = false;
};

struct Provenance {
  std::string worker;
  std::string mltune_version;
  std::string search_version;
  int64_t created_unix_ms = 0;
  int64_t updated_unix_ms = 0;
};

struct TaskResult {
  std::string task;
  std::string target;
  std::string fingerprint;
  std::string strategy;
  double original_score = 0;
  double baseline_score = 0;
  double tuned_score = 0;
  int64_t budget_steps = 0;
  std::map<std::string, std::string> artifacts;  // "optimized_hlo", "pass_sequence", ...
  Provenance provenance;
  bool from_cache = false;
  int64_t cache_hits = 0;
};

enum class JobState { kUnspecified, kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view JobStateName(JobState state);  // "queued", "running", "done", ...
bool IsFinal(JobState state);                   // done, failed or cancelled

struct JobInfo {
  std::string job_id;
  JobState state = JobState::kUnspecified;
  std::vector<std::string> tasks;
  std::string target;
  std::string strategy;
  Budget budget;
  std::string fingerprint;
  std::string graph_name;
  double progress = 0;
  std::optional<double> best_score;
  int64_t steps_done = 0;
  std::string error;
  std::vector<TaskResult> results;
  int64_t attempts = 0;
  int64_t created_unix_ms = 0;
  int64_t started_unix_ms = 0;
  int64_t finished_unix_ms = 0;
};

struct SubmitResponse {
  std::string job_id;  // empty when `cached`
  bool attached = false;
  bool cached = false;
  JobInfo job;     // with results when cached
  GraphRef graph;  // how the graph was sent
};

struct LookupRequest {
  // Exactly one of a graph (fingerprinted by the daemon: its bytes, a file, or the SHA-256 of an
  // uploaded one, as in SubmitRequest) and `fingerprint`.
  std::string graph;
  std::string graph_file;
  std::string graph_sha256;
  GraphFormat format = GraphFormat::kHloText;
  std::string graph_name;
  std::string fingerprint;
  std::string task;    // empty = any
  std::string target;  // empty = any
  bool omit_artifacts = false;
};

struct LookupResponse {
  std::string fingerprint;
  std::vector<TaskResult> results;  // empty on a miss
};

struct NamedInfo {
  std::string name;
  std::string description;
  std::vector<std::string> targets;  // tasks only
};

struct StrategyList {
  std::vector<NamedInfo> strategies;
  std::vector<NamedInfo> tasks;
  std::string default_strategy;
};

struct WorkerInfo {
  std::string name;
  std::string kind;
  std::vector<std::string> targets;
  std::string scorer;
  std::string state;
  std::string job_id;
  int64_t candidates_evaluated = 0;
  std::string device;  // a hardware worker's device descriptor, or why none is attached
  std::string host;    // a remote worker's host; "" for the daemon's own
};

struct CostModelInfo {
  std::string name;      // cost-model/<task>-<target>
  int64_t version = 0;   // 0: none stored yet
  int64_t new_rows = 0;  // training rows logged since that version
  bool training = false;
  // How its last retraining since the daemon started ended ("stored", "rejected", "failed",
  // "preempted"); "" when none has.
  std::string last_outcome;
  int64_t last_outcome_ms = 0;
};

struct ServerStats {
  std::string version;
  std::string search_version;
  double uptime_seconds = 0;
  int64_t queue_depth = 0;
  int64_t queue_capacity = 0;
  int64_t jobs_running = 0;
  int64_t worker_threads = 0;
  std::map<std::string, int64_t> jobs_by_state;
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t cached_results = 0;
  int64_t measurements = 0;
  std::string data_dir;
  std::string store_path;
  std::string metrics_address;
  int64_t retrain_rows = 0;  // the daemon retrains a model at this many new rows; 0: never
  double retrain_idle_seconds = 0;
  std::vector<CostModelInfo> cost_models;
  int64_t cost_models_counted_ms = 0;  // 0: not counted yet
  int64_t stored_graphs = 0;           // graphs in the daemon's graph store (each once)
  int64_t stored_graph_bytes = 0;
  int64_t max_graph_bytes = 0;  // the largest graph the daemon accepts
};

struct ClientOptions {
  // Deadline of each unary call. Calls that move or parse a large graph get more: one second
  // more per MiB uploaded, and per 16 MiB parsed by SubmitCompile and LookupCache.
  double call_timeout_seconds = 30;
  // Largest message accepted or sent; -1: no limit but gRPC's own (2 GiB), since a result may
  // carry a model's weights (a tuned module as HLO text). Graphs go in pieces of 4 MiB.
  int max_message_bytes = -1;
  // TLS (PEM files): the CA that signed the daemon's certificate; for mutual TLS also this
  // client's certificate and key. Either of ca_file and cert_file makes the channel TLS.
  std::string ca_file, cert_file, key_file;
  std::string token;  // bearer token sent with every call ("": none)
};

// ClientOptions with ca_file, cert_file, key_file and token from $MLTUNE_CA, $MLTUNE_CERT,
// $MLTUNE_KEY and $MLTUNE_TOKEN where set.
ClientOptions ClientOptionsFromEnvironment();

// True for the status a call returns when the daemon cannot be reached (nothing listening, or no
// connection before the deadline): the `mltune` CLI exits 2 on it, a compiler can fall back to its
// default pipeline.
bool IsUnreachable(const absl::Status& status);

// Every call returns the daemon's status with its gRPC code kept (InvalidArgument,
// ResourceExhausted, NotFound, ...). When the daemon cannot be reached the status is Unavailable
// and says so: "cannot reach mltuned at ADDRESS (...): is it running?".
// Thread-safe: one Client may serve many threads (one HTTP/2 channel).
class Client {
 public:
  static std::unique_ptr<Client> Connect(const std::string& address, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& address() const;
  // Waits up to `seconds` for the channel to connect; Unavailable when it does not.
  absl::Status WaitForReady(double seconds);

  // Graphs over kInlineGraphBytes are uploaded first (UploadGraph), unless the daemon has them.
  absl::StatusOr<SubmitResponse> Submit(const SubmitRequest& request);
  // Stores a graph on the daemon once: asks whether it has the graph's SHA-256, and sends the
  // bytes (in pieces of kUploadChunkBytes) only when it has not. The daemon checks the hash and
  // the size; Unimplemented from a daemon older than the upload.
  absl::StatusOr<GraphRef> UploadGraph(std::string_view bytes);
  absl::StatusOr<GraphRef> UploadGraphFile(const std::string& path);
  // Streams the job's snapshots to `on_update` until the job finishes, `on_update` returns false,
  // or the stream fails; returns the last snapshot seen (the final one included), or the stream's
  // error when it fails before the job finished. No call deadline (jobs may run long).
  absl::StatusOr<JobInfo> Watch(const std::string& job_id,
                                const std::function<bool(const JobInfo&)>& on_update = nullptr);
  absl::StatusOr<JobInfo> GetJob(const std::string& job_id);
  absl::StatusOr<JobInfo> Cancel(const std::string& job_id);
  absl::StatusOr<LookupResponse> Lookup(const LookupRequest& request);
  absl::StatusOr<StrategyList> ListStrategies();
  absl::StatusOr<std::vector<WorkerInfo>> ListWorkers();
  absl::StatusOr<ServerStats> GetStats();

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mltune::client
