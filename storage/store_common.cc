// The parts of the Store interface both stores share, written once over their virtual methods.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "storage/store.h"

namespace mltune::storage {

absl::StatusOr<std::string> Store::CreateJob(const JobRecord& job) {
  absl::StatusOr<SubmittedJob> submitted = SubmitJob(job, 0);
  if (!submitted.ok()) return submitted.status();
  if (submitted->attached) {
    return absl::AlreadyExistsError(absl::StrCat("CreateJob: job ", submitted->id,
                                                 " is already in flight with the same dedup key"));
  }
  return submitted->id;
}

absl::StatusOr<bool> Store::PutGraph(const std::string& sha256, std::string_view data) {
  size_t offset = 0;
  return PutGraph(sha256, [&]() -> absl::StatusOr<std::string> {
    const size_t n = std::min(data.size() - offset, static_cast<size_t>(kGraphPieceBytes));
    std::string piece(data.substr(offset, n));
    offset += n;
    return piece;
  });
}

}  // namespace mltune::storage
