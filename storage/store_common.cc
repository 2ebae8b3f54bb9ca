// The parts of the Store interface both stores share, written once over their virtual methods.
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

}  // namespace mltune::storage
