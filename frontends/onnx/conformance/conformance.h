// Conformance of the ONNX importer. ONNX's backend node tests as a score: each test folder holds
// model.onnx and test_data_set_*/ with input_*.pb and output_*.pb; a test passes when the
// imported model, evaluated by the reference evaluator, reproduces every expected output. And the
// zoo's ONNX exports against onnxruntime's outputs, sampled (bench/peers/onnx_zoo_reference.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/literal.h"

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

// onnxruntime's outputs on one zoo model, as models/onnx/reference/NAME.json records them.
struct ZooReference {
  struct Input {
    std::string name;
    PrimitiveType type;
    std::vector<int64_t> shape;
    int64_t position = 0;            // among the graph's inputs
    std::optional<int64_t> modulus;  // integers: offset + (7 i + 3) % modulus
    int64_t offset = 0;
    double scale = 0.5, bias = 0;  // floats: bias + scale * sin(0.1 i + position)
  };
  struct Output {
    std::string name;
    std::vector<int64_t> shape;
    int64_t count = 0;
    double max_abs = 0;
    std::vector<int64_t> indices;  // flat indices sampled
    std::vector<double> values;    // onnxruntime's values there
  };
  std::string model;  // file name under models/onnx
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  double ort_ms = 0;
};
absl::StatusOr<ZooReference> ReadZooReference(const std::string& path);

// The recipe's value of one input.
absl::StatusOr<Literal> ZooInput(const ZooReference::Input& input);

// Why `outputs` (the module's result leaves, in graph-output order) differ from the reference,
// or "" when every sampled element is within rtol * |ref| + atol * max_abs of the output. The
// default atol is what f32 rounding reaches through the UNet's 20 group norms (1.2e-4).
std::string CompareWithZooReference(const std::vector<Literal>& outputs, const ZooReference& ref,
                                    double rtol = 1e-3, double atol = 2e-4);

}  // namespace mltune::ir::onnx
