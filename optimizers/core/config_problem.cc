#include "optimizers/core/config_problem.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace mltune::opt {

absl::Status ConfigProblem::AddSeed(const Candidate& candidate) {
  if (absl::Status s = Check(candidate); !s.ok()) return s;
  seeds_.push_back(candidate);
  return absl::OkStatus();
}

std::string ConfigProblem::Format(const Candidate& candidate) {
  return absl::StrJoin(candidate, ",");
}

absl::Status ConfigProblem::Check(const Candidate& candidate) const {
  const SearchSpace s = space();
  if (static_cast<int64_t>(candidate.size()) != s.max_length) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": a configuration has ", s.max_length,
                                                   " positions; got ", candidate.size()));
  }
  for (size_t i = 0; i < candidate.size(); ++i) {
    const int32_t choices = s.ChoicesAt(static_cast<int64_t>(i));
    if (candidate[i] < 0 || candidate[i] >= choices) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": position ", i, " is ", candidate[i],
                                                     "; expected 0..", choices - 1));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Candidate> ConfigProblem::Parse(std::string_view text) const {
  Candidate candidate;
  if (!text.empty()) {
    const std::string owned(text);  // this Abseil's string_view is not std::string_view
    for (absl::string_view part : absl::StrSplit(owned, ',')) {
      Action a = 0;
      if (!absl::SimpleAtoi(part, &a)) {
        return absl::InvalidArgumentError(absl::StrCat(name(), ": '", part, "' is not an integer"));
      }
      candidate.push_back(a);
    }
  }
  if (absl::Status s = Check(candidate); !s.ok()) return s;
  return candidate;
}

}  // namespace mltune::opt
