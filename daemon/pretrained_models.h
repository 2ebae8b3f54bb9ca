// The pretrained checkpoints mltune ships (models/pretrained/, made by scripts/pretrain): at start
// mltuned stores each as version 0 of its model, so learned strategies (rl-*, model-topk) work on
// a fresh store, while any model a user trains is stored as version 1 or later and wins.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/pretrained_paths.h"
#include "storage/store.h"

namespace mltune::daemon {

// Stores every checkpoint in `dir` that `store` lacks as version 0 (metadata: the file's, plus
// "origin": "pretrained" and "file"); returns the names stored now. A store that already has a
// version 0 keeps it. InvalidArgument names a file without its metadata or with bad JSON.
absl::StatusOr<std::vector<std::string>> InstallPretrainedModels(storage::Store& store,
                                                                 const std::string& dir);

// Where a stored model came from, for `mltune strategies`: "pretrained" or "trained <date>".
std::string ModelOrigin(const storage::ModelRecord& record);

}  // namespace mltune::daemon
