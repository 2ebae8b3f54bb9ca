// A fixture for tests that drive the `mltune` CLI against a fresh store: a per-test temp folder
// with HLO files written into graphs/, the store's path, and a runner for `mltune ARGS`.
// Header-only: MLTUNE_CLI_PATH and MLTUNE_TEST_KERNEL_CACHE are the including test's compile
// definitions (tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/support/run_command.h"

namespace mltune::testing {

class CliStoreTest : public ::testing::Test {
 protected:
  // `files`: name -> HLO text, written under graphs/.
  explicit CliStoreTest(std::map<std::string, std::string> files) : files_(std::move(files)) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("mltune_", ::testing::UnitTest::GetInstance()->current_test_suite()->name(),
                        "_", ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "graphs");
    for (const auto& [name, text] : files_) std::ofstream(dir_ / "graphs" / name) << text;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Db() const { return (dir_ / "store.db").string(); }
  std::string Graphs() const { return (dir_ / "graphs").string(); }
  std::string Graph(const std::string& name) const { return (dir_ / "graphs" / name).string(); }

  // `mltune ARGS`; compiled kernels are cached in the build tree (MLTUNE_TEST_KERNEL_CACHE), so
  // reruns of the suite skip the compiler.
  CommandResult Cli(const std::string& args) const {
    return RunCommand(absl::StrCat("MLTUNE_KERNEL_CACHE=", MLTUNE_TEST_KERNEL_CACHE, " ",
                                   MLTUNE_CLI_PATH, " ", args));
  }

  std::filesystem::path dir_;

 private:
  std::map<std::string, std::string> files_;
};

}  // namespace mltune::testing
