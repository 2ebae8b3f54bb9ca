// Finding HLO text files in folders and loading them verified: what every tool that takes
// "files or folders of HLO" (the CLI, collection of cost-model training data) starts with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::ir {

// An HLO file to read: its path, and how to name it to the user.
struct HloFile {
  std::string path;
  std::string display;  // relative to the folder it was found in, or the path as given
  bool operator<(const HloFile& o) const { return path < o.path; }
  bool operator==(const HloFile& o) const { return path == o.path; }
};

// Files are taken as they are; folders are searched recursively for HLO files (.hlo, .txt, and
// those gzipped). Sorted and deduplicated, so a run does not depend on directory order. NotFound
// for a path that does not exist, Unavailable for a folder that cannot be read.
absl::StatusOr<std::vector<HloFile>> FindHloFiles(const std::vector<std::string>& inputs);

// Parses and verifies `path` (HLO text, or gzipped). The parser's error, or
// InvalidArgument "PATH: verification failed: ...".
absl::StatusOr<std::unique_ptr<Module>> LoadVerifiedHlo(const std::string& path);

}  // namespace mltune::ir
