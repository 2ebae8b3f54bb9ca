// ONNX input: a serialized ModelProto imported as an mltune IR module, with the node, op type and
// opset in every error. Protobuf stays inside the library; callers pass bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::ir::onnx {

struct OnnxImportOptions {
  // Values of graph inputs. The IR has static shapes, so an input that a shape operand depends on
  // (a Reshape's `shape`, a Slice's `starts`, a TopK's `k`) is folded into a constant when its
  // value is given here; every other input stays a parameter and only its shape is taken from it.
  std::map<std::string, Literal, std::less<>> input_values;
  // Sizes of symbolic dimensions (`dim_param`, e.g. "batch" -> 8).
  std::map<std::string, int64_t, std::less<>> dim_values;
  // Initializers become parameters (after the graph inputs, in file order) instead of constants.
  bool initializers_as_parameters = false;
  // Largest model accepted, in bytes (protobuf itself refuses messages over 2 GiB).
  int64_t max_model_bytes = (int64_t{2} << 30) - 1;
  // Largest constant the importer computes itself (folded values, Range, the matrices of Resize
  // and DFT); the model's own tensors are bounded by its size.
  int64_t max_constant_bytes = int64_t{1} << 30;
  // Largest module built (an unrolled RNN over a long sequence can grow past it).
  int64_t max_instructions = 10'000'000;
  // Shown in errors as the file the model came from.
  std::string display_name = "model.onnx";
};

struct OnnxImport {
  std::unique_ptr<Module> module;
  // The graph input each entry parameter stands for, by parameter number.
  std::vector<std::string> parameter_names;
  // Graph inputs folded into constants from OnnxImportOptions::input_values.
  std::vector<std::string> bound_inputs;
  // The graph outputs, in the order of the root tuple's elements.
  std::vector<std::string> output_names;
  // "ai.onnx" -> 17, ...: the opsets the model imports.
  std::map<std::string, int64_t> opsets;
};

// Imports a serialized ModelProto. InvalidArgument for a malformed model (naming the node, its op
// type and opset, or the input), Unimplemented for an op, attribute or type the importer does not
// take. The entry computation's root is a tuple of the graph's outputs.
absl::StatusOr<OnnxImport> ImportOnnxModel(std::string_view bytes,
                                           const OnnxImportOptions& options = {});
absl::StatusOr<OnnxImport> ImportOnnxFile(const std::string& path, OnnxImportOptions options = {});

// True when the first bytes are printable text (HLO text), false for a binary ModelProto: the
// cheap test that picks the parser before either runs.
bool LooksLikeText(std::string_view bytes);

// True when `bytes` parse as a ModelProto with a graph: content-based detection, so a model is
// recognized whatever its file name.
bool LooksLikeOnnxModel(std::string_view bytes);

// A serialized TensorProto (the `input_0.pb` files of ONNX's test data) as a literal, with its
// name; strings and complex types are Unimplemented.
struct NamedLiteral {
  std::string name;
  Literal value;
};
absl::StatusOr<NamedLiteral> ParseOnnxTensor(std::string_view bytes);

// The ops the importer converts, as "OpType" (default domain) or "domain:OpType", sorted.
std::vector<std::string> SupportedOnnxOps();

}  // namespace mltune::ir::onnx
