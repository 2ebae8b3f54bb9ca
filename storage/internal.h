// Helpers shared by the storage/*.cc files. Internal to storage/.
#pragma once

#include <cstdint>
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

}  // namespace mltune::storage
