// The zoo's ONNX exports (models/onnx) imported and run by the reference evaluator on the inputs
// of models/onnx/reference/NAME.json, against onnxruntime's outputs recorded there.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "frontends/onnx/conformance/conformance.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/evaluator/evaluator.h"

namespace mltune::ir::onnx {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ReferenceFiles() {
  std::vector<std::string> out;
  const fs::path dir = fs::path(MLTUNE_SOURCE_DIR) / "models/onnx/reference";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class OnnxZooTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxZooTest, MatchesOnnxRuntime) {
  absl::StatusOr<ZooReference> ref = ReadZooReference(GetParam());
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<OnnxImport> imported =
      ImportOnnxFile((fs::path(MLTUNE_SOURCE_DIR) / "models/onnx" / ref->model).string());
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<Literal> args;
  for (const std::string& name : imported->parameter_names) {
    auto it = std::find_if(ref->inputs.begin(), ref->inputs.end(),
                           [&](const ZooReference::Input& in) { return in.name == name; });
    ASSERT_NE(it, ref->inputs.end()) << "no recipe for graph input " << name;
    absl::StatusOr<Literal> v = ZooInput(*it);
    ASSERT_TRUE(v.ok()) << v.status();
    args.push_back(*std::move(v));
  }
  absl::StatusOr<Literal> result = Evaluate(*imported->module, args);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(CompareWithZooReference(result->elements(), *ref), "");
}

INSTANTIATE_TEST_SUITE_P(Zoo, OnnxZooTest, ::testing::ValuesIn(ReferenceFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = fs::path(info.param).stem().string();
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace mltune::ir::onnx
