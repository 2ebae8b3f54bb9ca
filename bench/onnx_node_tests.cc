// ONNX backend node tests: the share that mltune's importer plus the reference evaluator passes,
// with the failures by op type. Run: build/release/bench/onnx_node_tests [--dir D] [--filter S]
// [--json FILE] [--failures]
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "frontends/onnx/conformance/conformance.h"
#include "nlohmann/json.hpp"

int main(int argc, char** argv) {
  namespace onnx = mltune::ir::onnx;
  CLI::App app{"ONNX backend node tests through mltune's importer and reference evaluator"};
  std::string dir = onnx::kDefaultNodeTestDir, filter, json_path;
  bool list_failures = false;
  app.add_option("--dir", dir, "Folder of test_* folders (libonnx-testdata's node tests)");
  app.add_option("--filter", filter, "Only tests whose name contains this");
  app.add_option("--json", json_path, "Write every test's outcome here");
  app.add_flag("--failures", list_failures, "Print every failing test with its reason");
  CLI11_PARSE(app, argc, argv);

  auto tests = onnx::ListNodeTests(dir);
  if (!tests.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(tests.status().message()).c_str());
    return 1;
  }
  std::map<std::string, int> by_outcome;
  // op type -> {tests, passed}
  std::map<std::string, std::pair<int, int>> by_op;
  nlohmann::json rows = nlohmann::json::array();
  int total = 0, passed = 0;
  for (const std::string& t : *tests) {
    if (!filter.empty() && t.find(filter) == std::string::npos) continue;
    onnx::NodeTestResult r = onnx::RunNodeTest(t);
    ++total;
    const bool ok = r.outcome == onnx::NodeTestOutcome::kPass;
    passed += ok;
    ++by_outcome[onnx::NodeTestOutcomeName(r.outcome)];
    const std::string ops = absl::StrJoin(r.op_types, "+");
    by_op[ops].first++;
    by_op[ops].second += ok;
    if (!ok && list_failures) {
      std::printf("%-50s %-16s %s\n", r.name.c_str(), onnx::NodeTestOutcomeName(r.outcome),
                  r.message.c_str());
    }
    rows.push_back({{"test", r.name},
                    {"ops", r.op_types},
                    {"outcome", onnx::NodeTestOutcomeName(r.outcome)},
                    {"message", r.message}});
  }
  std::printf("ONNX node tests (%s): %d of %d pass (%.1f%%)\n", dir.c_str(), passed, total,
              total ? 100.0 * passed / total : 0.0);
  for (const auto& [outcome, count] : by_outcome)
    std::printf("  %-18s %d\n", outcome.c_str(), count);
  std::printf("Failing op types (tests failed / tests):\n");
  for (const auto& [ops, counts] : by_op) {
    if (counts.second < counts.first) {
      std::printf("  %-40s %d / %d\n", ops.c_str(), counts.first - counts.second, counts.first);
    }
  }
  if (!json_path.empty()) {
    std::ofstream(json_path)
        << nlohmann::json{{"dir", dir}, {"total", total}, {"passed", passed}, {"tests", rows}}.dump(
               1)
        << "\n";
  }
  return 0;
}
