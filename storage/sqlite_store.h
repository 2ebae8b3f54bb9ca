// Internal to storage/: the SQLite implementation of storage::Store (store.cc: opening, the
// connection pool and transactions; results.cc, measurements.cc, kernel_graphs.cc, jobs.cc,
// models.cc, model_trainings.cc: the tables).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/store.h"

namespace mltune::storage {

class Database;  // storage/sqlite.h

class SqliteStore final : public Store {
 public:
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path, StoreOptions options);
  ~SqliteStore() override;

  const std::string& path() const override { return path_; }
  bool shared() const override { return false; }
  absl::StatusOr<int> SchemaVersion() override;
  absl::Status CheckIntegrity() override;
  absl::StatusOr<PutOutcome> PutResult(const ResultRecord& record) override;
  absl::StatusOr<std::optional<ResultRecord>> LookupResult(const CacheKey& key) override;
  absl::StatusOr<std::vector<ResultRecord>> LookupResultsByFingerprint(
      const std::string& fingerprint) override;
  absl::StatusOr<int64_t> CountResults() override;
  absl::StatusOr<int64_t> RecordHit(const CacheKey& key) override;
  absl::Status AppendMeasurements(std::span<const MeasurementRecord> records) override;
  absl::StatusOr<std::vector<MeasurementRecord>> QueryMeasurements(
      const MeasurementFilter& filter) override;
  absl::StatusOr<int64_t> CountMeasurements(const MeasurementFilter& filter) override;
  absl::StatusOr<bool> PutKernelGraph(const KernelGraphRecord& record,
                                      const GraphCheck& is_current) override;
  absl::StatusOr<std::optional<KernelGraphRecord>> GetKernelGraph(
      const std::string& kernel_key) override;
  absl::StatusOr<int64_t> CountKernelGraphs() override;
  absl::StatusOr<bool> PutGraph(const std::string& sha256, const GraphSource& next) override;
  absl::StatusOr<std::optional<int64_t>> GraphSize(const std::string& sha256) override;
  absl::StatusOr<std::optional<std::string>> GetGraph(const std::string& sha256) override;
  absl::StatusOr<GraphTotals> CountGraphs() override;
  absl::StatusOr<SubmittedJob> SubmitJob(const JobRecord& job, int64_t max_queued) override;
  absl::Status UpdateJobState(const std::string& id, JobState state, double progress,
                              std::optional<double> best_score, const std::string& error,
                              const std::string& owner) override;
  absl::StatusOr<std::optional<JobRecord>> ClaimJob(const std::string& owner, int64_t lease_ms,
                                                    int max_attempts) override;
  absl::StatusOr<std::map<std::string, bool>> RenewLeases(const std::string& owner,
                                                          int64_t lease_ms) override;
  absl::StatusOr<JobRecord> RequestCancel(const std::string& id) override;
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(std::optional<JobState> state) override;
  absl::StatusOr<std::map<std::string, int64_t>> CountJobsByState() override;
  absl::StatusOr<RecoveredJobs> RecoverAfterCrash(RecoveryPolicy policy, int max_attempts) override;
  absl::Status PutModel(const std::string& name, int64_t version, std::string_view data,
                        const std::string& metadata_json) override;
  absl::StatusOr<int64_t> PutModelNextVersion(const std::string& name, std::string_view data,
                                              const std::string& metadata_json) override;
  absl::StatusOr<std::optional<ModelRecord>> LatestModel(const std::string& name) override;
  absl::StatusOr<std::vector<ModelRecord>> ListModels() override;
  absl::Status RecordModelTraining(const ModelTrainingRecord& record) override;
  absl::StatusOr<std::vector<ModelTrainingRecord>> LatestModelTrainings() override;

 private:
  SqliteStore(std::string path, StoreOptions options, std::unique_ptr<Database> writer);

  // Runs `fn` in a write transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK when fn fails) on the
  // single writer connection, holding writer_mu_.
  absl::Status Write(const std::function<absl::Status(Database&)>& fn);
  // Runs `fn` in a read transaction (one consistent snapshot) on a pooled read connection.
  absl::Status Read(const std::function<absl::Status(Database&)>& fn);
  absl::StatusOr<std::unique_ptr<Database>> AcquireReader();
  void ReleaseReader(std::unique_ptr<Database> reader);

  // Concurrency: one writer connection behind a mutex, plus a pool of read-only connections.
  // SQLite admits one writer at a time anyway, so serializing our own writes in-process costs no
  // throughput and spares them SQLITE_BUSY against each other; BEGIN IMMEDIATE still guards
  // against other processes on the same file. In WAL mode each reader sees the last committed
  // snapshot without waiting for an open write transaction, so lookups never queue behind a long
  // measurement batch. A connection is used by one thread at a time (the writer under its mutex,
  // a reader while borrowed), which is what SQLite's multi-thread mode requires.
  std::string path_;
  StoreOptions options_;
  bool in_memory_ = false;  // ":memory:": reads go through the writer connection
  std::mutex writer_mu_;
  std::unique_ptr<Database> writer_;
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Database>> idle_readers_;
};

}  // namespace mltune::storage
