#include "tests/support/corpus.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mltune::testing {

std::string CorpusDir() {
  const char* env = std::getenv("MLTUNE_CORPUS_DIR");
  std::filesystem::path dir = env != nullptr ? env : MLTUNE_CORPUS_DIR;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir / "hlo", ec)) return "";
  return dir.string();
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  const std::string dir = CorpusDir();
  if (dir.empty()) return files;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::filesystem::path(dir) / "hlo")) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext == ".txt" || ext == ".hlo" || ext == ".gz") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string SourcePath(const std::string& relative) {
  return (std::filesystem::path(MLTUNE_SOURCE_DIR) / relative).string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace mltune::testing
