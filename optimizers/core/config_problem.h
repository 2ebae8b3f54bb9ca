// Base for fixed-length configuration problems (tile sizes, fusion decisions, partitions,
// placements): seed candidates (the compiler's default, a cached best to continue from) and the
// text form of a candidate that results and the measurement log store ("3,0,1,...").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizers/core/search.h"

namespace mltune::opt {

class ConfigProblem : public Problem {
 public:
  std::vector<Candidate> SeedCandidates() override { return seeds_; }
  // Adds a seed; InvalidArgument when it does not fit space().
  absl::Status AddSeed(const Candidate& candidate);

  static std::string Format(const Candidate& candidate);
  // Parses Format's text, checking the length and every action against space().
  absl::StatusOr<Candidate> Parse(std::string_view text) const;
  absl::Status Check(const Candidate& candidate) const;

 private:
  std::vector<Candidate> seeds_;
};

}  // namespace mltune::opt
