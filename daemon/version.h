// Versions the daemon reports and keys its cache on.
#pragma once

#include <string>

namespace mltune::daemon {

inline constexpr char kMltuneVersion[] = "0.1.0";
// Part of every cache key: bump it when a change to the passes, the search or the scoring would
// find different results for the same request, so old cached answers stop matching.
inline constexpr char kSearchVersion[] = "1";

// The search version of a cache key: kSearchVersion, then "+" and the task's score variant (Task::
// ScoreVariant) when it has one, e.g. "1+score=latency".
inline std::string SearchVersionFor(const std::string& score_variant) {
  return score_variant.empty() ? std::string(kSearchVersion)
                               : std::string(kSearchVersion) + "+" + score_variant;
}
// True for keys of this search version, with or without a score variant.
inline bool IsCurrentSearchVersion(const std::string& version) {
  const std::string base(kSearchVersion);
  return version == base || version.rfind(base + "+", 0) == 0;
}

}  // namespace mltune::daemon
