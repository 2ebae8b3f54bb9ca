// The checks both stores (SQLite and PostgreSQL) apply before they write.
#include <string>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/store.h"

namespace mltune::storage {

absl::Status ValidateMeasurement(const MeasurementRecord& m, size_t index) {
  const std::string what = absl::StrCat("AppendMeasurements: record ", index);
  if (m.graph_key.empty()) return absl::InvalidArgumentError(what + ": graph_key is empty");
  if (m.task.empty()) return absl::InvalidArgumentError(what + ": task is empty");
  if (m.target.empty()) return absl::InvalidArgumentError(what + ": target is empty");
  if (m.time_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": time_ms is ", m.time_ms, " (< 0)"));
  }
  return RequireFinite(m.value, what, "value");
}

absl::Status ValidateKernelGraph(const KernelGraphRecord& record) {
  const std::string what = absl::StrCat("PutKernelGraph(", record.kernel_key, ")");
  if (record.kernel_key.empty()) {
    return absl::InvalidArgumentError("PutKernelGraph: kernel_key is empty");
  }
  if (record.graph.empty()) return absl::InvalidArgumentError(what + ": graph is empty");
  if (record.target.empty()) return absl::InvalidArgumentError(what + ": target is empty");
  return absl::OkStatus();
}

absl::Status ValidateModel(const std::string& name, int64_t version) {
  if (name.empty()) return absl::InvalidArgumentError("PutModel: model name is empty");
  if (version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PutModel(", name, " v", version, "): version must be >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelTraining(const ModelTrainingRecord& record) {
  const std::string what = absl::StrCat("RecordModelTraining(", record.name, ")");
  if (record.name.empty()) {
    return absl::InvalidArgumentError("RecordModelTraining: model name is empty");
  }
  bool known = false;
  for (const char* outcome : {"stored", "rejected", "failed", "preempted", "stopped"}) {
    known = known || record.outcome == outcome;
  }
  if (!known) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unknown outcome '", record.outcome,
                     "' (expected stored, rejected, failed, preempted or stopped)"));
  }
  if (record.new_rows < 0) return absl::InvalidArgumentError(what + ": new_rows is negative");
  if (record.ended_ms < record.started_ms) {
    return absl::InvalidArgumentError(what + ": ended_ms is before started_ms");
  }
  return absl::OkStatus();
}

}  // namespace mltune::storage
