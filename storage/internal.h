// Helpers shared by the storage/*.cc files. Internal to storage/.
#pragma once

#include <cstddef>
#include <cstdint>
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

// AppendMeasurements' checks of the record at `index`: graph_key, task and target set, a finite
// value, time_ms >= 0.
absl::Status ValidateMeasurement(const MeasurementRecord& m, size_t index);
// PutKernelGraph's checks: kernel_key, graph and target non-empty.
absl::Status ValidateKernelGraph(const KernelGraphRecord& record);
// PutModel's checks: a non-empty name, a version >= 0 (the JSON is checked by the database).
absl::Status ValidateModel(const std::string& name, int64_t version);
// RecordModelTraining's checks: a name, a known outcome, new_rows >= 0, no end before the start.
absl::Status ValidateModelTraining(const ModelTrainingRecord& record);

}  // namespace mltune::storage
