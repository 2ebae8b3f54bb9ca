// A finished job's search as a picture: for each task, the best score against search steps (the
// result's "best_so_far" trace) beside the graph as given and the compiler's default, for
// `mltune result JOB --plot out.svg`.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "client/rpc_client.h"

namespace mltune::client {

// One SVG document, a panel per task result. FailedPrecondition when no result carries a trace
// (results cached by an mltuned older than the trace).
absl::StatusOr<std::string> ResultPlotSvg(const JobInfo& job);

}  // namespace mltune::client
