// The ONNX importer: models built here with the protos, evaluated against values computed by
// hand, and the errors a user gets for what cannot be imported.
#include "frontends/onnx/onnx_import.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "ir/evaluator/evaluator.h"
#include "onnx/onnx_pb.h"

namespace mltune::ir::onnx {
namespace {

using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

void AddValue(::onnx::ValueInfoProto* v, const std::string& name, int32_t type,
              const std::vector<std::string>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (const std::string& d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
      dim->set_dim_value(std::stoll(d));
    } else {
      dim->set_dim_param(d);
    }
  }
}

NodeProto* AddNode(ModelProto& m, const std::string& op, const std::vector<std::string>& in,
                   const std::vector<std::string>& out, const std::string& name = "") {
  NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

ModelProto NewModel(int64_t opset = 17) {
  ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

std::string Bytes(const ModelProto& m) { return m.SerializeAsString(); }

Literal F32(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  Literal l = *Literal::Create(Shape(PrimitiveType::kF32, dims));
  for (size_t i = 0; i < values.size(); ++i) l.Set<float>(i, values[i]);
  return l;
}

Literal S64(const std::vector<int64_t>& values) {
  Literal l = *Literal::Create(Shape(PrimitiveType::kS64, {int64_t(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) l.Set<int64_t>(i, values[i]);
  return l;
}

// y = Relu(x + b) reshaped to [3, 2], with b an initializer and the shape an input bound at
// import: x stays a parameter, the shape becomes a constant.
ModelProto AddReluReshape() {
  ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"2", "3"});
  AddValue(g->add_input(), "shape", TensorProto::INT64, {"2"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"3", "2"});
  TensorProto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(TensorProto::FLOAT);
  b->add_dims(3);
  for (float v : {1.0f, -10.0f, 0.5f}) b->add_float_data(v);
  AddNode(m, "Add", {"x", "b"}, {"s"}, "add");
  AddNode(m, "Relu", {"s"}, {"r"}, "relu");
  AddNode(m, "Reshape", {"r", "shape"}, {"y"}, "reshape");
  return m;
}

TEST(OnnxImportTest, ImportsAndEvaluatesWithInitializersAndBoundShapeInput) {
  OnnxImportOptions options;
  options.input_values.emplace("shape", S64({3, 2}));
  absl::StatusOr<OnnxImport> imported = ImportOnnxModel(Bytes(AddReluReshape()), options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->parameter_names, std::vector<std::string>{"x"});
  EXPECT_EQ(imported->bound_inputs, std::vector<std::string>{"shape"});
  EXPECT_EQ(imported->output_names, std::vector<std::string>{"y"});
  EXPECT_EQ(imported->opsets.at("ai.onnx"), 17);
  absl::StatusOr<Literal> out = Evaluate(*imported->module, {F32({2, 3}, {1, 2, 3, -4, 5, -6})});
  ASSERT_TRUE(out.ok()) << out.status();
  const Literal& y = out->elements()[0];
  EXPECT_EQ(y.shape().dimensions(), (std::vector<int64_t>{3, 2}));
  const std::vector<float> want = {2, 0, 3.5, 0, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.Get<float>(i), want[i]) << i;
}

TEST(OnnxImportTest, ShapeOperandFromAnUnboundInputNamesTheInput) {
  absl::StatusOr<OnnxImport> imported = ImportOnnxModel(Bytes(AddReluReshape()));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(imported.status().message());
  EXPECT_TRUE(absl::StrContains(msg, "node 2 'reshape' (Reshape, opset 17)")) << msg;
  EXPECT_TRUE(absl::StrContains(msg, "graph input 'shape'")) << msg;
}

TEST(OnnxImportTest, ShapeComputedFromShapeOpsIsFoldedWithoutBinding) {
  // Flatten by hand: Reshape(x, Concat(Shape(x)[0:1], [-1])).
  ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"2", "3", "4"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"2", "12"});
  AddNode(m, "Shape", {"x"}, {"s"});
  NodeProto* starts = AddNode(m, "Constant", {}, {"zero"});
  auto* a = starts->add_attribute();
  a->set_name("value_ints");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(0);
  NodeProto* ends = AddNode(m, "Constant", {}, {"one"});
  a = ends->add_attribute();
  a->set_name("value_ints");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(1);
  NodeProto* minus = AddNode(m, "Constant", {}, {"minus1"});
  a = minus->add_attribute();
  a->set_name("value_ints");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(-1);
  AddNode(m, "Slice", {"s", "zero", "one"}, {"batch"});
  NodeProto* concat = AddNode(m, "Concat", {"batch", "minus1"}, {"target"});
  a = concat->add_attribute();
  a->set_name("axis");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(0);
  AddNode(m, "Reshape", {"x", "target"}, {"y"});
  absl::StatusOr<OnnxImport> imported = ImportOnnxModel(Bytes(m));
  ASSERT_TRUE(imported.ok()) << imported.status();
  const Shape& root = imported->module->entry()->root()->shape();
  EXPECT_EQ(root.tuple_shapes(0).dimensions(), (std::vector<int64_t>{2, 12}));
}

TEST(OnnxImportTest, DynamicDimensionsAreBoundOrNamedInTheError) {
  ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"batch", "4"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"batch", "4"});
  AddNode(m, "Neg", {"x"}, {"y"});
  absl::StatusOr<OnnxImport> refused = ImportOnnxModel(Bytes(m));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "dimension 0 ('batch') is dynamic"))
      << refused.status();
  OnnxImportOptions options;
  options.dim_values["batch"] = 8;
  absl::StatusOr<OnnxImport> bound = ImportOnnxModel(Bytes(m), options);
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(bound->module->entry()->parameter(0)->shape().dimensions(),
            (std::vector<int64_t>{8, 4}));
}

TEST(OnnxImportTest, UnknownOpIsUnimplementedNamingNodeOpAndOpset) {
  ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"4"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"4"});
  AddNode(m, "NoSuchOp", {"x"}, {"y"}, "mystery");
  absl::StatusOr<OnnxImport> imported = ImportOnnxModel(Bytes(m));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(imported.status().message(),
                                "node 0 'mystery' (NoSuchOp, opset 13): op type 'NoSuchOp'"))
      << imported.status();
}

TEST(OnnxImportTest, AnAttributeTheConverterDoesNotReadIsRefused) {
  ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"4"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"4"});
  NodeProto* n = AddNode(m, "Relu", {"x"}, {"y"}, "relu");
  auto* a = n->add_attribute();
  a->set_name("negative_slope");
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(0.1f);
  absl::StatusOr<OnnxImport> imported = ImportOnnxModel(Bytes(m));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(imported.status().message(),
                                "node 0 'relu' (Relu, opset 17): attribute 'negative_slope'"))
      << imported.status();
}

TEST(OnnxImportTest, UndefinedInputAndBadAttributeAreInvalidArgument) {
  ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"4"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"4"});
  AddNode(m, "Add", {"x", "nowhere"}, {"y"});
  absl::StatusOr<OnnxImport> imported = ImportOnnxModel(Bytes(m));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(imported.status().message(), "input 'nowhere'"));

  ModelProto t = NewModel();
  g = t.mutable_graph();
  AddValue(g->add_input(), "x", TensorProto::FLOAT, {"2", "3"});
  AddValue(g->add_output(), "y", TensorProto::FLOAT, {"3", "2"});
  NodeProto* n = AddNode(t, "Transpose", {"x"}, {"y"});
  auto* a = n->add_attribute();
  a->set_name("perm");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(0);
  a->add_ints(0);
  imported = ImportOnnxModel(Bytes(t));
  ASSERT_FALSE(imported.ok());
  EXPECT_TRUE(absl::StrContains(imported.status().message(), "is not a permutation"))
      << imported.status();
}

TEST(OnnxImportTest, MalformedBytesAreRefusedWithoutCrashing) {
  const std::string good = Bytes(AddReluReshape());
  for (size_t cut : {size_t{1}, good.size() / 3, good.size() / 2, good.size() - 1}) {
    absl::StatusOr<OnnxImport> imported = ImportOnnxModel(good.substr(0, cut));
    EXPECT_FALSE(imported.ok()) << cut;
  }
  absl::StatusOr<OnnxImport> text =
      ImportOnnxModel("HloModule m\nENTRY e { ROOT c = f32[] constant(1) }");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(absl::StrContains(text.status().message(), "not a valid ONNX ModelProto"));
  OnnxImportOptions small;
  small.max_model_bytes = 16;
  absl::StatusOr<OnnxImport> big = ImportOnnxModel(good, small);
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(absl::StrContains(big.status().message(), "over the limit of 16"));
}

TEST(OnnxImportTest, ContentDetectionTellsModelsFromHloText) {
  const std::string model = Bytes(AddReluReshape());
  EXPECT_TRUE(LooksLikeOnnxModel(model));
  EXPECT_FALSE(LooksLikeText(model));
  EXPECT_TRUE(LooksLikeText("HloModule m\n\nENTRY e {\n"));
  EXPECT_FALSE(LooksLikeOnnxModel("HloModule m\n\nENTRY e {\n"));
}

TEST(OnnxImportTest, TensorFilesParseWithTheirNames) {
  TensorProto t;
  t.set_name("input_0");
  t.set_data_type(TensorProto::INT32);
  t.add_dims(2);
  t.add_int32_data(7);
  t.add_int32_data(-3);
  absl::StatusOr<NamedLiteral> parsed = ParseOnnxTensor(t.SerializeAsString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->name, "input_0");
  EXPECT_EQ(parsed->value.GetAsInt64(1), -3);
  t.add_int32_data(1);  // three values for two elements
  EXPECT_FALSE(ParseOnnxTensor(t.SerializeAsString()).ok());
  t.set_data_type(TensorProto::STRING);
  absl::StatusOr<NamedLiteral> str = ParseOnnxTensor(t.SerializeAsString());
  ASSERT_FALSE(str.ok());
  EXPECT_EQ(str.status().code(), absl::StatusCode::kUnimplemented);
}

// Inputs that crashed the importer under libFuzzer (scripts/fuzz SECONDS onnx), kept so that they
// stay errors: an overflowing Reshape shape, Adam over mixed element types.
TEST(OnnxImportTest, FuzzerFindingsAreErrors) {
  const std::filesystem::path dir =
      std::filesystem::path(MLTUNE_SOURCE_DIR) / "tests/fuzz/onnx_regressions";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    absl::StatusOr<OnnxImport> imported = ImportOnnxModel(bytes.str());
    EXPECT_FALSE(imported.ok()) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 2);
}

}  // namespace
}  // namespace mltune::ir::onnx
