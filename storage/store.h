// The daemon's persistent store: the results cache (cache key -> best artifact), the measurement
// log (the cost models' training data), the job table and the checkpoints of learned models, in
// one SQLite file in WAL mode (the embedded default) or in a PostgreSQL database that several
// daemons share. docs/storage.md describes the schema, the budget rule, the concurrency model,
// job leases and crash recovery. sqlite3.h and libpq-fe.h stay inside storage/*.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::storage {

struct StoreOptions {
  // How long a write waits for another process's write lock before failing with Unavailable.
  int busy_timeout_ms = 5000;
  // Run PRAGMA quick_check on open and refuse a corrupt file (DataLoss naming it). O(size).
  bool check_on_open = true;
  // Read connections kept open between reads (more are opened on demand, then closed).
  int max_idle_readers = 8;
  // Refuse (NotFound) rather than create a store that does not exist yet: for readers, such as a
  // tuner loading a cost model, where an empty new file would only hide a mistyped path.
  bool must_exist = false;
};

// The results cache key. Every field must be non-empty.
struct CacheKey {
  std::string fingerprint;     // ir::Fingerprint of the input graph (structural, SHA-256 hex)
  std::string task;            // e.g. "pass-order"
  std::string target;          // target spec, e.g. "cpu"
  std::string search_version;  // bumped when the search changes what it would find

  // "fingerprint/task/target/search_version", for logs and messages. The store keys on the four
  // columns, never on this string.
  std::string ToString() const;
  friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

struct Provenance {
  std::string worker;          // who measured the tuned result
  std::string mltune_version;  // version of the code that produced it
  int64_t created_ms = 0;      // unix ms; set by the store on first insert
  int64_t updated_ms = 0;      // unix ms; set by the store on every change
};

// The largest artifact a result keeps: SQLite's default limit on one value (PostgreSQL's is
// 1 GiB). PutResult refuses a larger one.
inline constexpr int64_t kMaxArtifactBytes = 1'000'000'000;

// One cached result. Scores are costs: lower is better, and must be finite.
struct ResultRecord {
  CacheKey key;
  // The input as given; unknown for results written by schema version 1.
  std::optional<double> original_score;
  double baseline_score = 0;  // after the compiler's default (e.g. XLA's pipeline)
  double tuned_score = 0;     // the best candidate found
  int64_t budget_steps = 0;   // the largest search budget spent on this key (see PutResult)
  std::string strategy;       // e.g. "beam"
  // name -> bytes, e.g. "optimized_hlo", "pass_sequence". Binary-safe (NUL bytes allowed).
  std::map<std::string, std::string> artifacts;
  Provenance provenance;
  int64_t hit_count = 0;  // read-only: maintained by RecordHit
};

enum class PutOutcome {
  kInserted,      // no result for the key before
  kReplaced,      // the new record became the cached result
  kKeptExisting,  // the cached result stays (its budget may have grown)
};

enum class CacheDecision {
  kMiss,              // nothing cached: search from scratch
  kHit,               // requested budget <= cached budget: answer from the cache
  kContinueFromBest,  // larger budget: search on, starting from the cached best
};

// The budget rule: a repeated request with the same or a smaller budget is answered from the
// cache; a larger budget continues from the cached best. Negative budgets count as zero.
CacheDecision Decide(const std::optional<ResultRecord>& cached, int64_t requested_budget);
std::string_view CacheDecisionName(CacheDecision decision);

// Every evaluated candidate, kept as training data for the cost models.
struct MeasurementRecord {
  int64_t id = 0;             // assigned by the store (insertion order); ignored on append
  std::string graph_key;      // structural fingerprint of the measured graph; non-empty
  std::string task;           // non-empty
  std::string target;         // non-empty
  std::string configuration;  // the candidate, as text (pass sequence, tile sizes, ...)
  double value = 0;           // the measured cost; finite
  std::string worker;
  int64_t time_ms = 0;  // unix ms of the measurement; 0 = the store's clock at append
};

// Unset fields match everything; results come in insertion order.
struct MeasurementFilter {
  std::optional<std::string> graph_key;
  std::optional<std::string> task;
  std::optional<std::string> target;
  std::optional<std::string> worker;
  std::optional<int64_t> after_ms;  // rows appended (time_ms) after this unix ms
  int64_t limit = 0;                // 0 = no limit (QueryMeasurements only)
};

// A kernel's graph for the learned cost model (costmodels/features: the serialized KernelGraph),
// stored once per kernel key; measurements refer to it by their graph_key. The kernel's origin
// is kept for inspection only (the same kernel may come from many modules; the first is kept).
struct KernelGraphRecord {
  std::string kernel_key;  // non-empty
  std::string graph;       // the serialized graph; non-empty, binary-safe
  std::string target;      // whose kernel this is, e.g. "cpu"; non-empty
  std::string module;      // the module it came from (name)
  std::string module_fingerprint;
  std::string kernel;      // the kernel's name in that module
  int64_t created_ms = 0;  // set by the store
};

// The graph store's totals (GetStats).
struct GraphTotals {
  int64_t graphs = 0;
  int64_t bytes = 0;
};

// Yields a graph's bytes piece by piece, in order: a non-empty piece, or "" at the end. Each
// piece becomes one row, so keep them to a few MiB (kGraphPieceBytes).
using GraphSource = std::function<absl::StatusOr<std::string>()>;
inline constexpr int64_t kGraphPieceBytes = int64_t{4} << 20;

// Legal transitions: queued -> running | cancelled; running -> running (progress) | done |
// failed | cancelled | queued (resume). done, failed and cancelled are final.
enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view JobStateName(JobState state);  // "queued", "running", ...
bool IsLegalTransition(JobState from, JobState to);

struct JobRecord {
  std::string id;  // 1-64 chars of [A-Za-z0-9_-]; empty on CreateJob: 16 random hex chars
  JobState state = JobState::kQueued;
  CacheKey key;
  int64_t budget_steps = 0;
  std::string strategy;
  std::string request;  // the serialized request (bytes), so the job can be resumed
  double progress = 0;  // 0..1
  std::optional<double> best_score;
  std::string error;        // why the job failed
  int64_t attempts = 0;     // how many times the job entered running
  int64_t created_ms = 0;   // set by the store
  int64_t updated_ms = 0;   // set by the store
  int64_t started_ms = 0;   // last entry into running; 0 = never
  int64_t finished_ms = 0;  // entry into done/failed/cancelled; 0 = not finished
  // Identical requests share one job: at most one queued or running job has a given non-empty
  // dedup key (see SubmitJob).
  std::string dedup_key;
  // Set by ClaimJob: the daemon running the job and when its lease ends (unix ms, the store's
  // clock). Cleared when the job leaves running.
  std::string owner;
  int64_t lease_expires_ms = 0;
  bool cancel_requested = false;  // RequestCancel asked the owner to stop it
};

struct SubmittedJob {
  std::string id;
  bool attached = false;  // an identical job (same dedup key) was already queued or running
};

enum class RecoveryPolicy {
  kResume,  // running -> queued (failed instead once a job has used up max_attempts)
  kFail,    // running -> failed with kDaemonStoppedError
};
inline constexpr char kDaemonStoppedError[] = "daemon stopped while the job was running";

struct RecoveredJobs {
  std::vector<std::string> resumed;  // now queued
  std::vector<std::string> failed;   // now failed
};

struct ModelRecord {
  std::string name;
  int64_t version = 0;
  std::string data;  // checkpoint bytes; empty in ListModels
  int64_t size_bytes = 0;
  std::string metadata_json;
  int64_t created_ms = 0;
};

// One retraining of a learned model by the daemon (model_refresher.h) and how it ended.
struct ModelTrainingRecord {
  std::string name;     // the model, e.g. "cost-model/tile-cpu"
  std::string outcome;  // "stored", "rejected", "failed", "preempted" or "stopped"
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  int64_t new_rows = 0;  // measurements logged since the version it was to replace
  std::string detail;    // e.g. "version 3", "exit 1 (see the log)"
};

// The store's interface; Open returns the SQLite implementation (storage/sqlite_store.h). The
// overloads without some arguments stand for their defaults (virtual functions take none).
// Thread-safe: one Store serves every thread of the daemon. Every method returns a clear error
// (InvalidArgument for bad input, NotFound, FailedPrecondition for an illegal job transition,
// Unavailable when another process holds the write lock past the busy timeout, DataLoss for a
// corrupt file) and never leaves a partial write behind: each call is one transaction.
class Store {
 public:
  // The schema version this code writes (SQLite's PRAGMA user_version; PostgreSQL's
  // mltune_schema table).
  static constexpr int kSchemaVersion = 6;

  // Opens or creates the store at `path` (its parent folders are created), or an in-memory store
  // for ":memory:" (one connection: reads wait for writes there). With options.must_exist, a
  // missing file is NotFound and nothing is created. A "postgresql://" or "postgres://" URL opens
  // the PostgreSQL store there instead (migrating its schema), Unimplemented in a build without
  // libpq.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     StoreOptions options = {});
  // Whether `path` names a PostgreSQL database rather than a SQLite file.
  static bool IsPostgresUrl(std::string_view path);
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Where the store is: its file (or ":memory:"), or its URL without the password.
  virtual const std::string& path() const = 0;
  // Whether other processes may run jobs from this store at the same time (PostgreSQL): then the
  // scheduler claims jobs under leases and never runs RecoverAfterCrash.
  virtual bool shared() const = 0;
  virtual absl::StatusOr<int> SchemaVersion() = 0;
  // PRAGMA quick_check: OK, or DataLoss naming the file and the first problems found.
  virtual absl::Status CheckIntegrity() = 0;

  // --- Results cache.
  // Upsert. The new record replaces the cached one when its tuned score is lower, or equal with
  // a larger budget; otherwise the cached result stays. Either way the stored budget becomes the
  // larger of the two, so it always says how much search stands behind the cached result.
  // hit_count and created_ms survive a replacement; artifacts are replaced as a whole.
  virtual absl::StatusOr<PutOutcome> PutResult(const ResultRecord& record) = 0;
  virtual absl::StatusOr<std::optional<ResultRecord>> LookupResult(const CacheKey& key) = 0;
  // Every result for a graph (any task, target, search version), ordered by those.
  virtual absl::StatusOr<std::vector<ResultRecord>> LookupResultsByFingerprint(
      const std::string& fingerprint) = 0;
  // Rows in the results cache (every task, target and search version).
  virtual absl::StatusOr<int64_t> CountResults() = 0;
  // Counts one answer served from the cache; returns the new count. NotFound without a result.
  virtual absl::StatusOr<int64_t> RecordHit(const CacheKey& key) = 0;

  // --- Measurement log.
  // All records in one transaction: either all are stored or none (the first invalid record is
  // named in the error and nothing is written).
  virtual absl::Status AppendMeasurements(std::span<const MeasurementRecord> records) = 0;
  virtual absl::StatusOr<std::vector<MeasurementRecord>> QueryMeasurements(
      const MeasurementFilter& filter) = 0;
  virtual absl::StatusOr<int64_t> CountMeasurements(const MeasurementFilter& filter) = 0;
  absl::StatusOr<int64_t> CountMeasurements() { return CountMeasurements(MeasurementFilter{}); }

  // --- Kernel graphs (the learned cost model's inputs).
  // Insert-or-ignore: returns true when stored, false when the key was already there (the
  // stored graph stays). With `is_current`, a stored graph it rejects (one written by an older
  // feature set, which this build cannot read) is replaced by `record.graph`, keeping its origin,
  // and true is returned: so stores outlive feature changes without a new measurement.
  using GraphCheck = std::function<bool(const std::string& stored_graph)>;
  virtual absl::StatusOr<bool> PutKernelGraph(const KernelGraphRecord& record,
                                              const GraphCheck& is_current) = 0;
  absl::StatusOr<bool> PutKernelGraph(const KernelGraphRecord& record) {
    return PutKernelGraph(record, nullptr);
  }
  virtual absl::StatusOr<std::optional<KernelGraphRecord>> GetKernelGraph(
      const std::string& kernel_key) = 0;
  virtual absl::StatusOr<int64_t> CountKernelGraphs() = 0;

  // --- Graphs: the models clients submit (with their weights), each stored once, by the SHA-256
  // of its bytes, in pieces of a few MiB, so no single value nears SQLite's (1 GB) or
  // PostgreSQL's (1 GB) limit and a read never needs one huge query result. Jobs refer to their
  // graph by this hash instead of carrying its bytes.
  //
  // Stores the bytes `next` yields under `sha256` (64 lowercase hex digits, which the caller has
  // checked to be their hash) in one transaction. Returns true when stored, false when a graph
  // with that hash was already there (nothing is written, and `next` is not called).
  // InvalidArgument for a malformed hash or no bytes; a failing `next` stores nothing.
  virtual absl::StatusOr<bool> PutGraph(const std::string& sha256, const GraphSource& next) = 0;
  // PutGraph with `data` cut into pieces of kGraphPieceBytes.
  absl::StatusOr<bool> PutGraph(const std::string& sha256, std::string_view data);
  // The stored graph's length in bytes, or nullopt when there is none with that hash.
  virtual absl::StatusOr<std::optional<int64_t>> GraphSize(const std::string& sha256) = 0;
  // The stored graph's bytes, or nullopt. DataLoss when its pieces do not add up to its size.
  virtual absl::StatusOr<std::optional<std::string>> GetGraph(const std::string& sha256) = 0;
  virtual absl::StatusOr<GraphTotals> CountGraphs() = 0;

  // --- Jobs.
  // `job.state` must be queued; returns the id (job.id, or a generated one when empty).
  // AlreadyExists for a taken id.
  // AlreadyExists also when job.dedup_key names a queued or running job. (SubmitJob that
  // refuses to attach.)
  absl::StatusOr<std::string> CreateJob(const JobRecord& job);
  // CreateJob, or the id of the queued or running job with the same non-empty dedup key
  // (attached): atomic, so identical requests to several daemons on one store make one job.
  // ResourceExhausted, creating nothing, when `max_queued` jobs are queued already (0: no limit).
  virtual absl::StatusOr<SubmittedJob> SubmitJob(const JobRecord& job, int64_t max_queued) = 0;
  // Moves a job to `state`, validating the transition (FailedPrecondition otherwise). `progress`
  // in [0, 1]; `best_score` replaces the stored one when set; `error` replaces the stored one
  // and is required (non-empty) for failed. A non-empty `owner` fences the write: the job must be
  // running under that owner's lease (FailedPrecondition "lease lost" otherwise), so a daemon
  // that lost a job to another cannot overwrite it.
  virtual absl::Status UpdateJobState(const std::string& id, JobState state, double progress,
                                      std::optional<double> best_score, const std::string& error,
                                      const std::string& owner) = 0;
  absl::Status UpdateJobState(const std::string& id, JobState state, double progress,
                              std::optional<double> best_score, const std::string& error) {
    return UpdateJobState(id, state, progress, best_score, error, "");
  }
  absl::Status UpdateJobState(const std::string& id, JobState state, double progress,
                              std::optional<double> best_score = std::nullopt) {
    return UpdateJobState(id, state, progress, best_score, "", "");
  }
  // Leases let several daemons share one job table: a running job belongs to the owner that
  // claimed it until its lease expires; a live owner renews its leases, and an expired lease
  // (its daemon died) lets another daemon take the job over.
  //
  // Claims the oldest queued job, or else the oldest running job whose lease expired: it becomes
  // running under `owner` until now + lease_ms, with one more attempt. An expired job that already
  // used max_attempts fails instead (a job that kills its daemons cannot loop). nullopt: no job.
  virtual absl::StatusOr<std::optional<JobRecord>> ClaimJob(const std::string& owner,
                                                            int64_t lease_ms, int max_attempts) = 0;
  // Extends the leases of the jobs running under `owner` to now + lease_ms. Returns them, each
  // with whether a cancel was requested; a job missing from the answer was lost to another owner.
  virtual absl::StatusOr<std::map<std::string, bool>> RenewLeases(const std::string& owner,
                                                                  int64_t lease_ms) = 0;
  // Cancels a queued job at once; asks a running job's owner to stop it (cancel_requested, seen
  // at its next renewal). Returns the job as stored. FailedPrecondition for a finished job.
  virtual absl::StatusOr<JobRecord> RequestCancel(const std::string& id) = 0;
  virtual absl::StatusOr<JobRecord> GetJob(const std::string& id) = 0;
  // Oldest first; every job when `state` is unset.
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobs(std::optional<JobState> state) = 0;
  absl::StatusOr<std::vector<JobRecord>> ListJobs() { return ListJobs(std::nullopt); }
  // Jobs per state name ("queued", "running", ...); states without jobs are absent.
  virtual absl::StatusOr<std::map<std::string, int64_t>> CountJobsByState() = 0;
  // For a daemon that owns its store alone, at startup, before it runs jobs (daemons sharing a
  // store rely on leases instead): jobs left running by a previous process are queued again
  // (kResume; a job that already entered running `max_attempts` times fails instead, so a job that
  // kills the daemon cannot loop) or failed with kDaemonStoppedError.
  virtual absl::StatusOr<RecoveredJobs> RecoverAfterCrash(RecoveryPolicy policy,
                                                          int max_attempts) = 0;
  absl::StatusOr<RecoveredJobs> RecoverAfterCrash(RecoveryPolicy policy) {
    return RecoverAfterCrash(policy, 3);
  }

  // --- Learned-model checkpoints. (name, version) is written once: AlreadyExists on a repeat.
  // `metadata_json` must be valid JSON ("" is stored as "{}").
  virtual absl::Status PutModel(const std::string& name, int64_t version, std::string_view data,
                                const std::string& metadata_json) = 0;
  // Stores `data` as the version after `name`'s highest (1 for a new name) and returns it;
  // a concurrent writer taking that version makes it retry with the next.
  virtual absl::StatusOr<int64_t> PutModelNextVersion(const std::string& name,
                                                      std::string_view data,
                                                      const std::string& metadata_json) = 0;
  // The highest version of `name`, or nullopt.
  virtual absl::StatusOr<std::optional<ModelRecord>> LatestModel(const std::string& name) = 0;
  // Every checkpoint without its bytes (size_bytes set), by name then version.
  virtual absl::StatusOr<std::vector<ModelRecord>> ListModels() = 0;

  // --- The daemon's retrainings. InvalidArgument for an empty name, an unknown outcome, negative
  // rows or an end before the start.
  virtual absl::Status RecordModelTraining(const ModelTrainingRecord& record) = 0;
  // Each model's most recent retraining (latest end), by name.
  virtual absl::StatusOr<std::vector<ModelTrainingRecord>> LatestModelTrainings() = 0;

 protected:
  Store() = default;
};

}  // namespace mltune::storage
