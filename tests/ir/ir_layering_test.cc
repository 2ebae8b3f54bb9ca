// ir/ is the bottom layer (docs/architecture.md): its sources include nothing from the folders
// above it and its libraries link none of theirs, so passes, frontends and backends can all
// build on it without cycles.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/corpus.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;

// The source tree's top-level folders other than ir/: what an ir/ include must not name.
std::set<std::string> FoldersAboveIr() {
  std::set<std::string> folders;
  for (const auto& e : fs::directory_iterator(testing::SourcePath(""))) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name != "ir" && !name.starts_with(".")) folders.insert(name);
  }
  return folders;
}

// Every file under ir/ whose name ends with one of `suffixes`.
std::vector<fs::path> IrFiles(const std::vector<std::string>& suffixes) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(testing::SourcePath("ir"))) {
    const std::string name = e.path().filename().string();
    for (const std::string& suffix : suffixes) {
      if (e.is_regular_file() && name.ends_with(suffix)) files.push_back(e.path());
    }
  }
  return files;
}

TEST(IrLayeringTest, IrIncludesNothingAboveIt) {
  const std::set<std::string> above = FoldersAboveIr();
  ASSERT_TRUE(above.contains("passes")) << "the source tree was not found";
  const std::regex include(R"(^\s*#\s*include\s*"([^"/]+)/[^"]*")");
  const std::vector<fs::path> files = IrFiles({".h", ".cc"});
  ASSERT_GT(files.size(), 20u);
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (std::regex_search(line, m, include)) {
        EXPECT_FALSE(above.contains(m[1].str()))
            << file.string() << ":" << n << " includes from " << m[1] << "/: " << line;
      }
    }
  }
}

TEST(IrLayeringTest, IrLibrariesLinkOnlyIrLibraries) {
  const std::regex library(R"(\bmltune_[a-z0-9_]+\b)");
  for (const fs::path& file : IrFiles({"CMakeLists.txt"})) {
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator it(text.begin(), text.end(), library), end; it != end; ++it) {
      const std::string name = it->str();
      EXPECT_TRUE(name == "mltune_target_defaults" || name.starts_with("mltune_ir"))
          << file.string() << " names " << name;
    }
  }
}

}  // namespace
}  // namespace mltune
