// Loading and writing a module for a CLI command, with the error printed for the user.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "ir/module.h"

namespace mltune::client {

// Parses and verifies `file`; on failure writes "error: ..." to `err` and returns nullptr.
std::unique_ptr<ir::Module> LoadVerified(const std::string& file, std::ostream& err);

// Writes `module` as HLO text to `path` and says so on `out`; on failure writes "error: ..." to
// `err` and returns false.
bool WriteModule(const ir::Module& module, const std::string& path, std::ostream& out,
                 std::ostream& err);

}  // namespace mltune::client
