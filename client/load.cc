#include "client/load.h"

#include <ostream>

#include "ir/hlo_parser.h"
#include "ir/verifier.h"

namespace mltune::client {

std::unique_ptr<ir::Module> LoadVerified(const std::string& file, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloFile(file);
  if (!module.ok()) {
    err << "error: " << module.status().message() << "\n";
    return nullptr;
  }
  absl::Status verified = ir::VerifyModule(**module);
  if (!verified.ok()) {
    err << "error: " << file << ": verification failed: " << verified.message() << "\n";
    return nullptr;
  }
  return *std::move(module);
}

}  // namespace mltune::client
