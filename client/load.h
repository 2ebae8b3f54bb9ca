// Loading and writing a module for a CLI command, with the error printed for the user.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/hlo_files.h"
#include "ir/module.h"

namespace mltune::client {

// An HLO text file (or gzipped), or an ONNX model, told apart by content: the module, verified.
absl::StatusOr<std::unique_ptr<ir::Module>> LoadModelFile(const std::string& file);

// Parses and verifies `file` (HLO or ONNX); on failure writes "error: ..." to `err` and returns
// nullptr. Where a fill seed is set (SetFillElidedSeed, else MLTUNE_FILL_ELIDED=SEED), its elided
// constants get seeded values (ir::FillElidedConstants) and a warning on `err` says how many.
std::unique_ptr<ir::Module> LoadVerified(const std::string& file, std::ostream& err);
// The seed LoadVerified fills elided constants with (`mltune run --fill-elided SEED`); it takes
// precedence over MLTUNE_FILL_ELIDED.
void SetFillElidedSeed(uint64_t seed);

// Writes `module` as HLO text to `path` and says so on `out`; on failure writes "error: ..." to
// `err` and returns false.
bool WriteModule(const ir::Module& module, const std::string& path, std::ostream& out,
                 std::ostream& err);

// An HLO file to read: its path, and how to name it to the user (ir/hlo_files.h).
using InputFile = ir::HloFile;

// Files named on the command line are taken as they are; folders are searched recursively for
// HLO files (.hlo, .txt, and those gzipped). Sorted and deduplicated, so a run does not depend on
// directory order. nullopt after writing "error: ..." to `err` for a path that does not exist or
// a folder that cannot be read.
std::optional<std::vector<InputFile>> CollectHloFiles(const std::vector<std::string>& inputs,
                                                      std::ostream& err);

}  // namespace mltune::client
