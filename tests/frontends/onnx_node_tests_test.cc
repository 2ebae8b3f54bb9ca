// ONNX's backend node tests (Debian's libonnx-testdata) through the importer and the reference
// evaluator: every test passes except those listed, with why, in
// onnx_node_tests_expected_failures.txt; a new failure or a newly passing test fails this.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "frontends/onnx/conformance/conformance.h"

namespace mltune::ir::onnx {
namespace {

std::set<std::string> ExpectedFailures() {
  std::ifstream in(std::string(MLTUNE_SOURCE_DIR) +
                   "/tests/frontends/onnx_node_tests_expected_failures.txt");
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of(" \t")));
  }
  return names;
}

TEST(OnnxNodeTestsTest, EveryTestPassesExceptTheListedOnes) {
  absl::StatusOr<std::vector<std::string>> tests = ListNodeTests(kDefaultNodeTestDir);
  if (!tests.ok()) GTEST_SKIP() << tests.status().message();
  const std::set<std::string> expected = ExpectedFailures();
  ASSERT_FALSE(expected.empty()) << "the expected-failures list is missing";
  std::set<std::string> failed;
  int passed = 0;
  for (const std::string& dir : *tests) {
    NodeTestResult r = RunNodeTest(dir);
    if (r.outcome == NodeTestOutcome::kPass) {
      ++passed;
      EXPECT_EQ(expected.count(r.name), 0u) << r.name << " passes now: take it off the list";
    } else {
      failed.insert(r.name);
      EXPECT_EQ(expected.count(r.name), 1u)
          << r.name << " fails (" << NodeTestOutcomeName(r.outcome) << "): " << r.message;
    }
  }
  // The target: at least 90% of the node tests.
  EXPECT_GE(passed * 10, static_cast<int>(tests->size()) * 9)
      << passed << " of " << tests->size() << " pass";
}

}  // namespace
}  // namespace mltune::ir::onnx
