// Internal to storage/: the PostgreSQL implementation of storage::Store, which several daemons
// share (pg_store.cc: opening, migrations and the connection pool; pg_results.cc,
// pg_measurements.cc, pg_kernel_graphs.cc, pg_models.cc, pg_jobs.cc: the tables). The schema is
// SQLite's, table for table (pg_migrations.cc), versioned in the mltune_schema table.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/postgres.h"
#include "storage/store.h"

namespace mltune::storage {

class PgStore final : public Store {
 public:
  // Connects to `url`, migrates the schema (under an advisory lock, so replicas starting at once
  // migrate once) and refuses a database whose schema is newer than this code.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& url, StoreOptions options);
  ~PgStore() override;

  const std::string& path() const override { return display_url_; }
  bool shared() const override { return true; }
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
  PgStore(std::string url, StoreOptions options);

  // Runs `fn` in one transaction (READ COMMITTED; PgConnection::Transaction retries it after a
  // serialization failure or deadlock) on a pooled connection. Errors name the store.
  absl::Status Transaction(const std::function<absl::Status(PgConnection&)>& fn);
  // Runs `fn` on a pooled connection outside an explicit transaction: one statement is atomic.
  absl::Status WithConnection(const std::function<absl::Status(PgConnection&)>& fn);
  // The single integer a count(*) query answers.
  absl::StatusOr<int64_t> QueryCount(const std::string& sql, const std::vector<PgParam>& params);
  absl::StatusOr<std::unique_ptr<PgConnection>> Acquire();
  void Release(std::unique_ptr<PgConnection> conn);

  // libpq connections are not thread-safe: each call borrows one from the pool for its duration.
  // A connection whose call failed with Unavailable is dropped, so a restarted server gets
  // fresh connections instead of dead ones.
  std::string url_, display_url_;
  StoreOptions options_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<PgConnection>> idle_;
};

// "postgresql://user:secret@host/db" -> "postgresql://user:***@host/db", for logs and path().
std::string RedactPassword(const std::string& url);

}  // namespace mltune::storage
