// Test helpers for the shared HLO corpus (../shared/corpus), which may be absent: tests that need
// it call GTEST_SKIP with a clear message then.
#pragma once

#include <string>
#include <vector>

namespace mltune::testing {

// The corpus folder, or "" when it is absent (MLTUNE_CORPUS_DIR env var overrides).
std::string CorpusDir();
// Every HLO module file under the corpus (sorted), or empty.
std::vector<std::string> CorpusFiles();
// Path of a file in the source tree, e.g. SourcePath("examples/mlp_train_step.hlo").
std::string SourcePath(const std::string& relative);
std::string ReadFile(const std::string& path);

inline constexpr char kNoCorpusMessage[] =
    "shared HLO corpus not found (expected ../shared/corpus next to the checkout, or set "
    "MLTUNE_CORPUS_DIR); skipping corpus cases";

}  // namespace mltune::testing
