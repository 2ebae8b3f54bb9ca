// ONNX's backend node tests as a conformance score: each test folder holds model.onnx and
// test_data_set_*/ with input_*.pb and output_*.pb; a test passes when the imported model,
// evaluated by the reference evaluator, reproduces every expected output.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::ir::onnx {

// Where Debian's libonnx-testdata puts them.
inline constexpr char kDefaultNodeTestDir[] = "/usr/share/libonnx-testdata/data/node";

enum class NodeTestOutcome {
  kPass,
  kUnsupported,  // the importer refused an op, attribute or type (Unimplemented)
  kImportError,  // any other import failure
  kEvalError,    // the evaluator failed on the imported module
  kMismatch,     // an output differs from the expected one beyond the tolerance
};
const char* NodeTestOutcomeName(NodeTestOutcome outcome);

struct NodeTestResult {
  std::string name;                   // the folder's name, e.g. "test_abs"
  std::vector<std::string> op_types;  // distinct op types of the model's graph, sorted
  NodeTestOutcome outcome = NodeTestOutcome::kPass;
  std::string message;  // why it did not pass
};

// ONNX's backend test runner's comparison (numpy.testing.assert_allclose): |got - want| <=
// atol + rtol * |want|, NaN equal to NaN; integers and booleans exactly.
struct NodeTestTolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// Runs one test folder (every test_data_set_* in it).
NodeTestResult RunNodeTest(const std::string& dir, const NodeTestTolerance& tolerance = {});

// The test folders under `root` (each with a model.onnx), sorted by name.
absl::StatusOr<std::vector<std::string>> ListNodeTests(const std::string& root);

}  // namespace mltune::ir::onnx
