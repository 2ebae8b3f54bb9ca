// Versions the daemon reports and keys its cache on.
#pragma once

namespace mltune::daemon {

inline constexpr char kMltuneVersion[] = "0.1.0";
// Part of every cache key: bump it when a change to the passes, the search or the scoring would
// find different results for the same request, so old cached answers stop matching.
inline constexpr char kSearchVersion[] = "1";

}  // namespace mltune::daemon
