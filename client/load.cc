#include "client/load.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string_view>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"

namespace mltune::client {
namespace {

namespace fs = std::filesystem;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

// The names of the corpus's HLO text files (the parser reads .gz transparently).
bool IsHloFileName(const std::string& name) {
  for (std::string_view ext : {".hlo", ".txt", ".hlo.gz", ".txt.gz"}) {
    if (EndsWith(name, ext)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::vector<InputFile>> CollectHloFiles(const std::vector<std::string>& inputs,
                                                      std::ostream& err) {
  std::vector<InputFile> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      for (auto it = fs::recursive_directory_iterator(
               input, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && IsHloFileName(it->path().filename().string())) {
          files.push_back({it->path().string(), it->path().lexically_relative(input).string()});
        }
      }
      if (ec) {
        err << "error: cannot read folder " << input << ": " << ec.message() << "\n";
        return std::nullopt;
      }
    } else if (fs::is_regular_file(input, ec)) {
      files.push_back({input, input});
    } else {
      err << "error: " << input << ": no such file or folder\n";
      return std::nullopt;
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

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
