// Helpers shared by the storage/*.cc files, the rules both stores (SQLite and PostgreSQL) apply
// before they write. Internal to storage/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "storage/store.h"

namespace mltune::storage {

// The store's clock: unix time in milliseconds.
int64_t NowMs();

// InvalidArgument "<what>: <field> is empty" for an incomplete cache key.
absl::Status ValidateKey(const CacheKey& key, std::string_view what);

// InvalidArgument "<what>: <field> is <value>, not a finite number".
absl::Status RequireFinite(double value, std::string_view what, std::string_view field);

// PutResult's checks: a complete key, finite scores, a budget >= 0, named artifacts.
absl::Status ValidateResult(const ResultRecord& record);
// AppendMeasurements' checks of the record at `index`: graph_key, task and target set, a finite
// value, time_ms >= 0.
absl::Status ValidateMeasurement(const MeasurementRecord& m, size_t index);
// PutKernelGraph's checks: kernel_key, graph and target non-empty.
absl::Status ValidateKernelGraph(const KernelGraphRecord& record);
// InvalidArgument "<what>: ..." unless `sha256` is 64 lowercase hex digits.
absl::Status ValidateGraphHash(const std::string& sha256, std::string_view what);
// PutModel's checks: a non-empty name, a version >= 0 (the JSON is checked by the database).
absl::Status ValidateModel(const std::string& name, int64_t version);
// RecordModelTraining's checks: a name, a known outcome, new_rows >= 0, no end before the start.
absl::Status ValidateModelTraining(const ModelTrainingRecord& record);

// --- Jobs.
std::optional<JobState> ParseJobState(std::string_view name);
bool IsFinal(JobState state);
// 16 random hex characters.
std::string NewJobId();
absl::Status ValidateJobId(const std::string& id, std::string_view what);
absl::Status ValidateProgress(double progress, std::optional<double> best_score,
                              std::string_view what);
// SubmitJob's checks: a valid id when given, queued, a complete key, budget >= 0, progress.
absl::Status ValidateNewJob(const JobRecord& job, std::string_view what);
// UpdateJobState's checks (the transition itself is checked against the stored state).
absl::Status ValidateJobUpdate(const std::string& id, JobState state, double progress,
                               std::optional<double> best_score, const std::string& error,
                               std::string_view what);
// What UpdateJobState writes: `job` (as stored) moved to `state` at `now`, with the transition and
// the fence checked (FailedPrecondition "illegal transition" or "lease lost"). Entering running
// counts an attempt and takes `owner`; leaving it clears the lease; a final state sets finished_ms.
absl::StatusOr<JobRecord> ApplyTransition(const JobRecord& job, JobState state,
                                          const std::string& owner, int64_t now,
                                          std::string_view what);
// ClaimJob's and RenewLeases' checks: a non-empty owner, a positive lease, max_attempts >= 1.
absl::Status ValidateLease(const std::string& owner, int64_t lease_ms, std::string_view what);
// ResourceExhausted when `queued` jobs fill a queue of `max_queued`.
absl::Status QueueFull(int64_t queued, int64_t max_queued);
// The error of a job whose lease expired after its last allowed attempt.
std::string LeaseExpiredError(int64_t attempts);

}  // namespace mltune::storage
