// The op count, opcode histogram and feature vector on hand-written modules, and the stability of
// the feature order.
#include "optimizers/pass_order/observation.h"

#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/opcode.h"
#include "tests/support/corpus.h"

namespace mltune::opt::pass_order {
namespace {

// Op count 6: `add` in add_comp (reachable through the reduce) and c, r, dead, bc, m in the entry.
// Parameters never count, nor does `unused`, which nothing calls; `dead` counts until a pass
// removes it.
constexpr char kModule[] = R"(
HloModule m

add_comp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

unused {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}

ENTRY e {
  x = f32[4] parameter(0)
  c = f32[] constant(0)
  r = f32[] reduce(x, c), dimensions={0}, to_apply=add_comp
  dead = f32[4] negate(x)
  bc = f32[4] broadcast(r), dimensions={}
  ROOT m = f32[4] multiply(x, bc)
}
)";

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

double Feature(const std::vector<double>& f, const std::string& name) {
  const int i = GraphFeatureIndex(name);
  EXPECT_GE(i, 0) << name;
  return i >= 0 ? f[i] : -1;
}

TEST(OpCountTest, CountsNonParameterInstructionsOfReachableComputations) {
  std::unique_ptr<ir::Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->instruction_count(), 11);
  EXPECT_EQ(OpCount(*m), 6);
}

TEST(OpCountTest, ExampleModule) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m =
      ir::ParseHloFile(mltune::testing::SourcePath("examples/mlp_train_step.hlo"));
  ASSERT_TRUE(m.ok()) << m.status();
  // 65 instructions in three computations, all reachable; 6 + 2 + 2 of them are parameters.
  EXPECT_EQ((*m)->instruction_count(), 65);
  EXPECT_EQ(OpCount(**m), 55);
}

TEST(OpCountTest, SharedCalleesCountOnce) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule m
add_comp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  c = f32[] constant(0)
  r1 = f32[] reduce(x, c), dimensions={0}, to_apply=add_comp
  r2 = f32[] reduce(x, c), dimensions={0}, to_apply=add_comp
  ROOT t = (f32[], f32[]) tuple(r1, r2)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(OpCount(*m), 5);  // add once; c, r1, r2, t
}

TEST(OpcodeHistogramTest, CountsEachOpOnceAndSumsToTheOpCount) {
  std::unique_ptr<ir::Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  const std::vector<int64_t> h = OpcodeHistogram(*m);
  ASSERT_EQ(h.size(), static_cast<size_t>(ir::OpcodeCount()));
  EXPECT_EQ(std::accumulate(h.begin(), h.end(), int64_t{0}), OpCount(*m));
  auto at = [&](ir::Opcode op) { return h[static_cast<size_t>(op)]; };
  EXPECT_EQ(at(ir::Opcode::kAdd), 1);
  EXPECT_EQ(at(ir::Opcode::kConstant), 1);
  EXPECT_EQ(at(ir::Opcode::kReduce), 1);
  EXPECT_EQ(at(ir::Opcode::kNegate), 1);  // `dead`; `unused` is not reachable
  EXPECT_EQ(at(ir::Opcode::kBroadcast), 1);
  EXPECT_EQ(at(ir::Opcode::kMultiply), 1);
  EXPECT_EQ(at(ir::Opcode::kParameter), 0);
}

TEST(GraphFeaturesTest, NamesAreFixedAndOrdered) {
  // Append-only: a model trained on these features keeps its indices. Update docs/search.md
  // together with this list.
  const std::vector<std::string> expected = {"op_count",
                                             "computations",
                                             "entry_ops",
                                             "entry_parameters",
                                             "ops_constant",
                                             "ops_elementwise_unary",
                                             "ops_elementwise_binary",
                                             "ops_elementwise_other",
                                             "ops_convert",
                                             "ops_broadcast",
                                             "ops_reshape",
                                             "ops_transpose",
                                             "ops_slice",
                                             "ops_concatenate_pad",
                                             "ops_gather_scatter",
                                             "ops_dot",
                                             "ops_convolution",
                                             "ops_reduce",
                                             "ops_reduce_window",
                                             "ops_tuple",
                                             "ops_get_tuple_element",
                                             "ops_call",
                                             "ops_while",
                                             "ops_conditional",
                                             "ops_custom_call",
                                             "ops_collective",
                                             "ops_other_side_effect",
                                             "ops_iota",
                                             "ops_other",
                                             "edges",
                                             "dead_ops",
                                             "one_user_ops",
                                             "multi_user_ops",
                                             "max_operands",
                                             "max_users",
                                             "mean_operands",
                                             "critical_path",
                                             "scalar_results",
                                             "rank1_results",
                                             "rank2_results",
                                             "rank3plus_results",
                                             "tuple_results",
                                             "float_results",
                                             "integer_results",
                                             "pred_results",
                                             "log2_total_elements",
                                             "log2_max_elements",
                                             "log2_total_bytes"};
  EXPECT_EQ(GraphFeatureNames(), expected);
  std::unique_ptr<ir::Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(GraphFeatures(*m).size(), expected.size());
  EXPECT_EQ(GraphFeatureIndex("no such feature"), -1);
}

TEST(GraphFeaturesTest, ValuesOnAHandWrittenModule) {
  std::unique_ptr<ir::Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  const std::vector<double> f = GraphFeatures(*m);
  EXPECT_EQ(Feature(f, "op_count"), 6);
  EXPECT_EQ(Feature(f, "computations"), 2);
  EXPECT_EQ(Feature(f, "entry_ops"), 5);
  EXPECT_EQ(Feature(f, "entry_parameters"), 1);
  EXPECT_EQ(Feature(f, "ops_constant"), 1);
  EXPECT_EQ(Feature(f, "ops_elementwise_unary"), 1);
  EXPECT_EQ(Feature(f, "ops_elementwise_binary"), 2);
  EXPECT_EQ(Feature(f, "ops_broadcast"), 1);
  EXPECT_EQ(Feature(f, "ops_reduce"), 1);
  EXPECT_EQ(Feature(f, "ops_dot"), 0);
  EXPECT_EQ(Feature(f, "edges"), 8);  // s:2 r:2 dead:1 bc:1 m:2
  EXPECT_EQ(Feature(f, "dead_ops"), 1);
  EXPECT_EQ(Feature(f, "max_operands"), 2);
  EXPECT_EQ(Feature(f, "critical_path"), 4);  // x -> r -> bc -> m
  EXPECT_EQ(Feature(f, "scalar_results"), 3);
  EXPECT_EQ(Feature(f, "rank1_results"), 3);
  EXPECT_EQ(Feature(f, "float_results"), 6);
  EXPECT_DOUBLE_EQ(Feature(f, "log2_total_elements"), 4);  // 1 + (3 scalars + 3 * 4)
  // The opcode families partition the ops.
  double families = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (GraphFeatureNames()[i].rfind("ops_", 0) == 0) families += f[i];
  }
  EXPECT_EQ(families, Feature(f, "op_count"));
}

TEST(ObserveTest, ScoreIsTheOpCountUnlessACostModelIsGiven) {
  std::unique_ptr<ir::Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  const Observation o = Observe(*m);
  EXPECT_EQ(o.op_count, 6);
  EXPECT_EQ(o.score, 6);
  EXPECT_EQ(o.fingerprint, ir::Fingerprint(*m));
  EXPECT_EQ(o.features, GraphFeatures(*m));
  EXPECT_EQ(o.opcode_histogram, OpcodeHistogram(*m));
  const Observation c = Observe(*m, [](const ir::Module& mod) { return 0.5 * OpCount(mod); });
  EXPECT_EQ(c.op_count, 6);
  EXPECT_EQ(c.score, 3);
}

TEST(GraphFeaturesTest, EveryCorpusModuleHasConsistentFeatures) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  for (const std::string& path : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
    if (!m.ok()) continue;
    const std::vector<double> f = GraphFeatures(**m);
    ASSERT_EQ(f.size(), GraphFeatureNames().size());
    double families = 0;
    for (size_t i = 0; i < f.size(); ++i) {
      EXPECT_GE(f[i], 0) << path << " " << GraphFeatureNames()[i];
      if (GraphFeatureNames()[i].rfind("ops_", 0) == 0) families += f[i];
    }
    EXPECT_EQ(families, static_cast<double>(OpCount(**m))) << path;
    const std::vector<int64_t> h = OpcodeHistogram(**m);
    EXPECT_EQ(std::accumulate(h.begin(), h.end(), int64_t{0}), OpCount(**m)) << path;
  }
}

}  // namespace
}  // namespace mltune::opt::pass_order
