#include "daemon/pretrained_paths.h"

#include <filesystem>

#include "absl/strings/str_replace.h"

namespace mltune::daemon {

std::string PretrainedFileStem(const std::string& model_name) {
  return absl::StrReplaceAll(model_name, {{"/", kPretrainedSeparator}});
}

std::string DefaultPretrainedDir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = self.parent_path().parent_path() / "share/mltune/pretrained";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
#ifdef MLTUNE_PRETRAINED_SOURCE_DIR
  if (fs::is_directory(MLTUNE_PRETRAINED_SOURCE_DIR, ec)) return MLTUNE_PRETRAINED_SOURCE_DIR;
#endif
  return "";
}

}  // namespace mltune::daemon
