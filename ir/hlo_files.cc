#include "ir/hlo_files.h"

#include <algorithm>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"

namespace mltune::ir {
namespace {

namespace fs = std::filesystem;

// The names of the corpus's HLO text files (the parser reads .gz transparently).
bool IsHloFileName(const std::string& name) {
  for (const char* ext : {".hlo", ".txt", ".hlo.gz", ".txt.gz"}) {
    if (absl::EndsWith(name, ext)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<HloFile>> FindHloFiles(const std::vector<std::string>& inputs) {
  std::vector<HloFile> files;
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
        return absl::UnavailableError(
            absl::StrCat("cannot read folder ", input, ": ", ec.message()));
      }
    } else if (fs::is_regular_file(input, ec)) {
      files.push_back({input, input});
    } else {
      return absl::NotFoundError(absl::StrCat(input, ": no such file or folder"));
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

absl::StatusOr<std::unique_ptr<Module>> LoadVerifiedHlo(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
  if (!module.ok()) return module.status();
  if (absl::Status verified = VerifyModule(**module); !verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": verification failed: ", verified.message()));
  }
  return module;
}

}  // namespace mltune::ir
