#include "client/load.h"

#include <fstream>
#include <ostream>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
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

bool WriteModule(const ir::Module& module, const std::string& path, std::ostream& out,
                 std::ostream& err) {
  std::ofstream file(path);
  file << ir::PrintModule(module);
  if (!file) {
    err << "error: cannot write " << path << "\n";
    return false;
  }
  out << "wrote " << path << "\n";
  return true;
}

}  // namespace mltune::client
