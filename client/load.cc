#include "client/load.h"

#include <fstream>
#include <ostream>

#include "ir/hlo_printer.h"

namespace mltune::client {
std::optional<std::vector<InputFile>> CollectHloFiles(const std::vector<std::string>& inputs,
                                                      std::ostream& err) {
  absl::StatusOr<std::vector<ir::HloFile>> files = ir::FindHloFiles(inputs);
  if (!files.ok()) {
    err << "error: " << files.status().message() << "\n";
    return std::nullopt;
  }
  return *std::move(files);
}

std::unique_ptr<ir::Module> LoadVerified(const std::string& file, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::LoadVerifiedHlo(file);
  if (!module.ok()) {
    err << "error: " << module.status().message() << "\n";
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
