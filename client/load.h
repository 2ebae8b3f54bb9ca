// Loading a module for a CLI command: parse, verify, and print the error for the user.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "ir/module.h"

namespace mltune::client {

// Parses and verifies `file`; on failure writes "error: ..." to `err` and returns nullptr.
std::unique_ptr<ir::Module> LoadVerified(const std::string& file, std::ostream& err);

}  // namespace mltune::client
