// Records the store tests build and read back: a cache key, a result with one artifact, and a
// lookup that must find one.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "storage/store.h"

namespace mltune::storage {

inline CacheKey Key(const std::string& fingerprint = "fp1", const std::string& task = "pass-order",
                    const std::string& target = "cpu", const std::string& version = "1") {
  return {fingerprint, task, target, version};
}

inline ResultRecord Result(double tuned, int64_t budget, const std::string& strategy = "beam",
                           const CacheKey& key = Key()) {
  ResultRecord r;
  r.key = key;
  r.baseline_score = 100;
  r.tuned_score = tuned;
  r.budget_steps = budget;
  r.strategy = strategy;
  r.artifacts = {{"pass_sequence", strategy + ":" + std::to_string(tuned)}};
  r.provenance.worker = "w1";
  r.provenance.mltune_version = "0.1.0";
  return r;
}

inline ResultRecord MustLookup(Store& store, const CacheKey& key) {
  absl::StatusOr<std::optional<ResultRecord>> r = store.LookupResult(key);
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r.ok() && r->has_value()) << key.ToString();
  return r.ok() && r->has_value() ? **r : ResultRecord{};
}

}  // namespace mltune::storage
