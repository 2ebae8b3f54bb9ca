#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/conformance/conformance.h"
#include "frontends/onnx/tensor.h"
#include "nlohmann/json.hpp"

namespace mltune::ir::onnx {

absl::StatusOr<ZooReference> ReadZooReference(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  ZooReference ref;
  try {
    ref.model = j.at("model").get<std::string>();
    ref.ort_ms = j.value("ort_ms", 0.0);
    for (const auto& e : j.at("inputs")) {
      ZooReference::Input in_;
      in_.name = e.at("name").get<std::string>();
      ::onnx::TensorProto::DataType dt;
      if (!::onnx::TensorProto::DataType_Parse(e.at("type").get<std::string>(), &dt)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": unknown type ", e.at("type").dump()));
      }
      absl::StatusOr<PrimitiveType> t = ElementTypeFromOnnx(dt);
      if (!t.ok()) return t.status();
      in_.type = *t;
      in_.shape = e.at("shape").get<std::vector<int64_t>>();
      in_.position = e.at("position").get<int64_t>();
      if (e.contains("modulus")) {
        in_.modulus = e.at("modulus").get<int64_t>();
        in_.offset = e.at("offset").get<int64_t>();
      } else {
        in_.scale = e.at("scale").get<double>();
        in_.bias = e.at("bias").get<double>();
      }
      ref.inputs.push_back(std::move(in_));
    }
    for (const auto& e : j.at("outputs")) {
      ZooReference::Output out;
      out.name = e.at("name").get<std::string>();
      out.shape = e.at("shape").get<std::vector<int64_t>>();
      out.count = e.at("count").get<int64_t>();
      out.max_abs = e.at("max_abs").get<double>();
      out.indices = e.at("indices").get<std::vector<int64_t>>();
      out.values = e.at("values").get<std::vector<double>>();
      ref.outputs.push_back(std::move(out));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  return ref;
}

absl::StatusOr<Literal> ZooInput(const ZooReference::Input& input) {
  absl::StatusOr<Literal> lit = Literal::Create(Shape(input.type, input.shape));
  if (!lit.ok()) return lit.status();
  for (int64_t i = 0; i < lit->element_count(); ++i) {
    if (input.modulus.has_value()) {
      lit->SetFromInt64(i, input.offset + (7 * i + 3) % *input.modulus);
    } else {
      lit->SetFromDouble(
          i, input.bias + input.scale * std::sin(0.1 * static_cast<double>(i) + input.position));
    }
  }
  return lit;
}

std::string CompareWithZooReference(const std::vector<Literal>& outputs, const ZooReference& ref,
                                    double rtol, double atol) {
  if (outputs.size() != ref.outputs.size()) {
    return absl::StrCat(outputs.size(), " outputs, onnxruntime has ", ref.outputs.size());
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Literal& got = outputs[o];
    const ZooReference::Output& want = ref.outputs[o];
    if (got.shape().dimensions() != want.shape) {
      return absl::StrCat("output ", o, " ('", want.name, "') is ", got.shape().ToString(false),
                          ", onnxruntime's has ", want.shape.size(), " dimensions of other sizes");
    }
    int64_t bad = 0;
    std::string first;
    for (size_t k = 0; k < want.indices.size(); ++k) {
      const double g = got.GetAsDouble(want.indices[k]), w = want.values[k];
      if (std::abs(g - w) <= rtol * std::abs(w) + atol * want.max_abs) continue;
      if (bad++ == 0) {
        first = absl::StrCat("; first at ", want.indices[k], ": ", g, " against ", w);
      }
    }
    if (bad > 0) {
      return absl::StrCat("output ", o, " ('", want.name, "'): ", bad, " of ", want.indices.size(),
                          " sampled elements differ", first);
    }
  }
  return "";
}

}  // namespace mltune::ir::onnx
