#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/conformance/conformance.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/evaluator/evaluator.h"
#include "onnx/onnx_pb.h"

namespace mltune::ir::onnx {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The numbered files `prefix_0.pb`, `prefix_1.pb`, ... of a test data set, in order.
std::vector<fs::path> NumberedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / absl::StrCat(prefix, "_", i, ".pb");
    if (!fs::exists(p)) break;
    out.push_back(p);
  }
  return out;
}

// Why `got` is not `want` within the tolerance, or "" when it is.
std::string Compare(const Literal& got, const Literal& want, const NodeTestTolerance& tol) {
  if (got.element_type() != want.element_type()) {
    return absl::StrCat("element type ", std::string(PrimitiveTypeName(got.element_type())),
                        ", expected ", std::string(PrimitiveTypeName(want.element_type())));
  }
  if (got.shape().dimensions() != want.shape().dimensions()) {
    return absl::StrCat("shape ", got.shape().ToString(false), ", expected ",
                        want.shape().ToString(false));
  }
  const PrimitiveType t = want.element_type();
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    bool ok;
    if (IsFloatingPoint(t)) {
      const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
      ok = (std::isnan(g) && std::isnan(w)) || g == w ||
           std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    } else if (IsUnsignedIntegral(t)) {
      ok = got.GetAsUint64(i) == want.GetAsUint64(i);
    } else {
      ok = got.GetAsInt64(i) == want.GetAsInt64(i);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  return absl::StrCat(bad, " of ", want.element_count(), " elements differ; first at ", first,
                      ": got ", got.GetAsDouble(first), ", expected ", want.GetAsDouble(first));
}

// ONNX 1.12's test data stores bfloat16 tensors as UINT16 holding their bits.
void BFloat16FromBits(Literal& value) {
  if (value.element_type() != PrimitiveType::kU16) return;
  Literal bf16 = *Literal::Create(Shape(PrimitiveType::kBF16, value.shape().dimensions()));
  if (bf16.size_bytes() > 0)
    std::memcpy(bf16.untyped_data(), value.untyped_data(), bf16.size_bytes());
  value = std::move(bf16);
}

}  // namespace

const char* NodeTestOutcomeName(NodeTestOutcome outcome) {
  switch (outcome) {
    case NodeTestOutcome::kPass:
      return "pass";
    case NodeTestOutcome::kUnsupported:
      return "unsupported";
    case NodeTestOutcome::kImportError:
      return "import error";
    case NodeTestOutcome::kEvalError:
      return "evaluation error";
    case NodeTestOutcome::kMismatch:
      return "mismatch";
  }
  return "?";
}

NodeTestResult RunNodeTest(const std::string& dir_string, const NodeTestTolerance& tolerance) {
  const fs::path dir(dir_string);
  NodeTestResult result;
  result.name = dir.filename().string();
  auto fail = [&](NodeTestOutcome outcome, std::string message) {
    result.outcome = outcome;
    result.message = std::move(message);
    return result;
  };
  absl::StatusOr<std::string> bytes = ReadFile(dir / "model.onnx");
  if (!bytes.ok())
    return fail(NodeTestOutcome::kImportError, std::string(bytes.status().message()));
  ::onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) {
    return fail(NodeTestOutcome::kImportError, "model.onnx does not parse");
  }
  std::set<std::string> ops;
  for (const auto& node : model.graph().node()) ops.insert(node.op_type());
  result.op_types.assign(ops.begin(), ops.end());
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> input_names;
  std::vector<int32_t> input_types;
  for (const auto& in : model.graph().input()) {
    if (initializers.count(in.name()) == 0) {
      input_names.push_back(in.name());
      input_types.push_back(in.type().tensor_type().elem_type());
    }
  }

  auto kind = [](const ::onnx::TypeProto& t) -> std::string {
    if (t.has_tensor_type()) return "";
    return t.has_sequence_type()   ? "a sequence"
           : t.has_optional_type() ? "an optional"
           : t.has_map_type()      ? "a map"
                                   : "not a tensor";
  };
  for (const auto& v : model.graph().input()) {
    if (std::string k = kind(v.type()); !k.empty()) {
      return fail(NodeTestOutcome::kUnsupported, absl::StrCat("graph input '", v.name(), "' is ", k,
                                                              "; only tensors are supported"));
    }
  }
  for (const auto& v : model.graph().output()) {
    if (std::string k = kind(v.type()); !k.empty()) {
      return fail(NodeTestOutcome::kUnsupported, absl::StrCat("graph output '", v.name(), "' is ",
                                                              k, "; only tensors are supported"));
    }
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(entry.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return fail(NodeTestOutcome::kImportError, "no test_data_set_* folder");

  for (const fs::path& set : sets) {
    const std::string where = set.filename().string();
    OnnxImportOptions options;
    options.display_name = "model.onnx";
    std::vector<fs::path> inputs = NumberedFiles(set, "input");
    for (size_t i = 0; i < inputs.size(); ++i) {
      absl::StatusOr<std::string> tb = ReadFile(inputs[i]);
      absl::StatusOr<NamedLiteral> t =
          tb.ok() ? ParseOnnxTensor(*tb) : absl::StatusOr<NamedLiteral>(tb.status());
      if (!t.ok()) {
        return fail(
            NodeTestOutcome::kUnsupported,
            absl::StrCat(where, "/", inputs[i].filename().string(), ": ", t.status().message()));
      }
      std::string name = t->name;
      if (i < input_names.size() && (name.empty() || name != input_names[i])) {
        name = input_names[i];
      }
      if (i < input_types.size() && input_types[i] == ::onnx::TensorProto::BFLOAT16) {
        BFloat16FromBits(t->value);
      }
      options.input_values[name] = std::move(t->value);
    }
    absl::StatusOr<OnnxImport> imported = ImportOnnxModel(*bytes, options);
    if (!imported.ok()) {
      return fail(imported.status().code() == absl::StatusCode::kUnimplemented
                      ? NodeTestOutcome::kUnsupported
                      : NodeTestOutcome::kImportError,
                  std::string(imported.status().message()));
    }
    std::vector<Literal> args;
    for (const std::string& name : imported->parameter_names) {
      auto it = options.input_values.find(name);
      if (it == options.input_values.end()) {
        return fail(NodeTestOutcome::kImportError,
                    absl::StrCat(where, ": no value for graph input '", name, "'"));
      }
      args.push_back(it->second);
    }
    absl::StatusOr<Literal> got = Evaluate(*imported->module, args);
    if (!got.ok()) {
      return fail(NodeTestOutcome::kEvalError, std::string(got.status().message()));
    }
    std::vector<fs::path> outputs = NumberedFiles(set, "output");
    if (outputs.size() != got->elements().size()) {
      return fail(NodeTestOutcome::kMismatch, absl::StrCat(where, ": ", got->elements().size(),
                                                           " outputs, expected ", outputs.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      absl::StatusOr<std::string> tb = ReadFile(outputs[i]);
      absl::StatusOr<NamedLiteral> want =
          tb.ok() ? ParseOnnxTensor(*tb) : absl::StatusOr<NamedLiteral>(tb.status());
      if (!want.ok()) {
        return fail(NodeTestOutcome::kUnsupported,
                    absl::StrCat(where, "/", outputs[i].filename().string(), ": ",
                                 want.status().message()));
      }
      if (got->elements()[i].element_type() == PrimitiveType::kBF16) BFloat16FromBits(want->value);
      std::string why = Compare(got->elements()[i], want->value, tolerance);
      if (!why.empty()) {
        return fail(
            NodeTestOutcome::kMismatch,
            absl::StrCat(where, ": output ", i, " ('", imported->output_names[i], "'): ", why));
      }
    }
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> ListNodeTests(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(absl::StrCat(
        root, " is not a folder (Debian: apt-get install libonnx-testdata; scripts/setup does)"));
  }
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mltune::ir::onnx
