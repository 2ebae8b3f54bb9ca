// The op graph (ops with costs, byte-weighted edges through tuples, resident weights) and the
// fusion planner (XLA-style producer-into-consumer fusion, one heavy op per kernel, decisions that
// keep ops apart, validation of arbitrary plans) with the kernels' FLOPs and bytes, by hand.
#include "costmodels/analytical/op_graph.h"

#include <memory>

#include "absl/strings/match.h"
#include "costmodels/analytical/kernels.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/support/corpus.h"

namespace mltune::costmodels {
namespace {

std::unique_ptr<ir::Module> Parse(const char* text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

int32_t Find(const OpGraph& g, const std::string& name) {
  for (int32_t i = 0; i < g.size(); ++i) {
    if (g.nodes[static_cast<size_t>(i)].name == name) return i;
  }
  ADD_FAILURE() << "no node " << name;
  return -1;
}

constexpr char kDense[] = R"(HloModule dense
ENTRY e {
  x = f32[64,128] parameter(0)
  w = f32[128,256] parameter(1)
  b = f32[256] parameter(2)
  d = f32[64,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,256] broadcast(b), dimensions={1}
  a = f32[64,256] add(d, bb)
  z = f32[] constant(0)
  zb = f32[64,256] broadcast(z), dimensions={}
  ROOT r = f32[64,256] maximum(a, zb)
})";

TEST(OpGraphTest, NodesEdgesAndWeights) {
  auto m = Parse(kDense);
  const OpGraph g = BuildOpGraph(*m);
  ASSERT_EQ(g.size(), 5);        // dot, two broadcasts, add, maximum; parameters are weights
  EXPECT_EQ(g.weight_count, 4);  // x, w, b and the constant
  const OpNode& dot = g.nodes[static_cast<size_t>(Find(g, "d"))];
  EXPECT_TRUE(dot.matmul);
  EXPECT_EQ(dot.mm.m, 64);
  EXPECT_EQ(dot.mm.n, 256);
  EXPECT_EQ(dot.mm.k, 128);
  EXPECT_EQ(dot.weights.size(), 2u);
  EXPECT_DOUBLE_EQ(dot.weights[0].bytes + dot.weights[1].bytes, 4.0 * (64 * 128 + 128 * 256));
  EXPECT_DOUBLE_EQ(dot.output_bytes, 4.0 * 64 * 256);
  const OpNode& add = g.nodes[static_cast<size_t>(Find(g, "a"))];
  ASSERT_EQ(add.inputs.size(), 2u);
  EXPECT_EQ(add.inputs[0].node, Find(g, "d"));
  EXPECT_DOUBLE_EQ(add.inputs[0].bytes, 4.0 * 64 * 256);
  EXPECT_TRUE(add.elementwise_like);
  EXPECT_EQ(add.rows, 64);
  EXPECT_EQ(add.cols, 256);
  EXPECT_TRUE(g.nodes[static_cast<size_t>(Find(g, "r"))].is_output);
  for (int32_t i = 0; i < g.size(); ++i) {
    for (const OpInput& in : g.nodes[static_cast<size_t>(i)].inputs) EXPECT_LT(in.node, i);
  }
}

TEST(OpGraphTest, EdgesRunThroughTuplesToTheProducer) {
  auto m = Parse(R"(HloModule t
ENTRY e {
  p = f32[100] parameter(0)
  a = f32[100] exponential(p)
  b = f32[50] slice(p), slice={[0:50]}
  t = (f32[100], f32[50]) tuple(a, b)
  g0 = f32[100] get-tuple-element(t), index=0
  ROOT n = f32[100] negate(g0)
})");
  const OpGraph g = BuildOpGraph(*m);
  ASSERT_EQ(g.size(), 3);
  const OpNode& n = g.nodes[static_cast<size_t>(Find(g, "n"))];
  // The tuple names both producers; each sends at most its own result.
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_DOUBLE_EQ(n.inputs[0].bytes + n.inputs[1].bytes, 400 + 200);
  EXPECT_EQ(g.nodes[static_cast<size_t>(Find(g, "a"))].weights.size(), 1u);
  EXPECT_GT(g.nodes[static_cast<size_t>(Find(g, "a"))].cost.transcendentals, 0);
}

TEST(FusionTest, DenseLayerIsOneKernelWithItsEpilogue) {
  auto m = Parse(kDense);
  const OpGraph g = BuildOpGraph(*m);
  const FusionPlan plan = PlanFusion(g);
  ASSERT_TRUE(ValidateFusion(g, plan).ok());
  ASSERT_EQ(plan.size(), 1);
  const std::vector<KernelSummary> k = SummarizeKernels(g, plan);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_TRUE(k[0].matmul);
  EXPECT_EQ(k[0].name, "r");
  EXPECT_DOUBLE_EQ(k[0].matrix_flops, 2.0 * 64 * 256 * 128);
  EXPECT_DOUBLE_EQ(k[0].vector_flops, 2.0 * 64 * 256);  // add and maximum; broadcasts are free
  // x and w feed the dot and are re-read across tiles; b is read once; only r leaves.
  EXPECT_DOUBLE_EQ(k[0].matmul_input_bytes, 4.0 * (64 * 128 + 128 * 256));
  EXPECT_DOUBLE_EQ(k[0].other_input_bytes, 4.0 * 256 + 4.0);  // b and the scalar 0
  EXPECT_DOUBLE_EQ(k[0].output_bytes, 4.0 * 64 * 256);
  // Unfused: one kernel per op, and every intermediate goes through memory.
  const FusionPlan none = Unfused(g);
  ASSERT_TRUE(ValidateFusion(g, none).ok());
  const std::vector<KernelSummary> u = SummarizeKernels(g, none);
  double unfused_bytes = 0;
  for (const KernelSummary& s : u) unfused_bytes += s.input_bytes() + s.output_bytes;
  EXPECT_GT(unfused_bytes, k[0].input_bytes() + k[0].output_bytes);
}

TEST(FusionTest, DecisionsKeepOpsOutOfTheirConsumers) {
  auto m = Parse(kDense);
  const OpGraph g = BuildOpGraph(*m);
  const std::vector<int32_t> fusible = FusibleProducers(g);
  ASSERT_EQ(fusible.size(), 4u);  // all but the root
  std::vector<uint8_t> allow(fusible.size(), 1);
  for (size_t i = 0; i < fusible.size(); ++i) {
    if (fusible[i] == Find(g, "d")) allow[i] = 0;
  }
  const FusionPlan plan = PlanFusion(g, allow);
  ASSERT_TRUE(ValidateFusion(g, plan).ok());
  EXPECT_EQ(plan.size(), 2);
  EXPECT_NE(plan.kernel_of[static_cast<size_t>(Find(g, "d"))],
            plan.kernel_of[static_cast<size_t>(Find(g, "r"))]);
}

// XLA's rule: an expensive op whose elements a broadcast reuses is not fused into the consumer
// (a batch norm's rsqrt(var) would run per pixel); a cheap one is, and so is an expensive op
// computed once per element of its consumer.
TEST(FusionTest, ExpensiveOpsStayOutOfConsumersThatBroadcastThem) {
  auto m = Parse(R"(HloModule bn
ENTRY e {
  x = f32[1,56,56,96] parameter(0)
  var = f32[96] parameter(1)
  gamma = f32[96] parameter(2)
  eps = f32[] constant(0.001)
  eb = f32[96] broadcast(eps), dimensions={}
  ve = f32[96] add(var, eb)
  rs = f32[96] rsqrt(ve)
  sc = f32[96] multiply(rs, gamma)
  b = f32[1,56,56,96] broadcast(sc), dimensions={3}
  y = f32[1,56,56,96] multiply(x, b)
  ey = f32[1,56,56,96] exponential(y)
  ROOT z = f32[1,56,56,96] negate(ey)
})");
  const OpGraph g = BuildOpGraph(*m);
  const FusionPlan plan = PlanFusion(g);
  ASSERT_TRUE(ValidateFusion(g, plan).ok());
  auto kernel = [&](const char* name) {
    return plan.kernel_of[static_cast<size_t>(Find(g, name))];
  };
  EXPECT_NE(kernel("rs"), kernel("z"));   // rsqrt once per channel
  EXPECT_EQ(kernel("sc"), kernel("z"));   // the multiply is cheap: fused
  EXPECT_EQ(kernel("y"), kernel("z"));    // exp of y: once per element, fused
  EXPECT_EQ(kernel("ve"), kernel("rs"));  // the add joins the rsqrt's kernel
  // Priority fusion with equal priorities makes the same plan.
  const FusionPlan by_priority =
      PlanFusionByPriority(g, std::vector<int32_t>(FusibleProducers(g).size(), 1));
  EXPECT_EQ(by_priority.kernel_of, plan.kernel_of);
}

// A concatenate or pad places each operand element once, and a matrix op packs its operands
// once, so neither reuses elements: an expensive op under them is fused. Counted as broadcasts,
// they kept Swin's exact GELU (exp and divides before a GEMM whose result a concatenate places)
// in single-op kernels.
TEST(FusionTest, ConcatenatesPadsAndMatrixOperandsDoNotReuseElements) {
  auto m = Parse(R"(HloModule gelu_concat
ENTRY e {
  x = f32[64,32] parameter(0)
  w = f32[32,16] parameter(1)
  ex = f32[64,32] exponential(x)
  one = f32[] constant(1)
  ob = f32[64,32] broadcast(one), dimensions={}
  dv = f32[64,32] divide(ob, ex)
  d = f32[64,16] dot(dv, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[64,64] concatenate(d, d, d, d), dimensions={1}
  ec = f32[64,16] exponential(d)
  zero = f32[] constant(0)
  p = f32[64,80] pad(ec, zero), padding=0_0x32_32
  ROOT t = (f32[64,64], f32[64,80]) tuple(c, p)
})");
  const OpGraph g = BuildOpGraph(*m);
  const FusionPlan plan = PlanFusion(g);
  ASSERT_TRUE(ValidateFusion(g, plan).ok());
  auto kernel = [&](const char* name) {
    return plan.kernel_of[static_cast<size_t>(Find(g, name))];
  };
  EXPECT_EQ(kernel("ex"), kernel("d"));  // exp and divide packed into the dot's operand
  EXPECT_EQ(kernel("dv"), kernel("d"));
  EXPECT_EQ(kernel("ec"), kernel("p"));  // exp fused under the pad
  const FusionPlan by_priority =
      PlanFusionByPriority(g, std::vector<int32_t>(FusibleProducers(g).size(), 1));
  EXPECT_EQ(by_priority.kernel_of, plan.kernel_of);
}

TEST(FusionTest, SoftmaxKeepsOneReductionPerKernel) {
  auto m = Parse(R"(HloModule softmax
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
add {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT s = f32[] add(u, v)
}
ENTRY e {
  p = f32[32,1000] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[32] reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[32,1000] broadcast(mx), dimensions={0}
  sh = f32[32,1000] subtract(p, mb)
  ex = f32[32,1000] exponential(sh)
  zero = f32[] constant(0)
  sm = f32[32] reduce(ex, zero), dimensions={1}, to_apply=add
  sb = f32[32,1000] broadcast(sm), dimensions={0}
  ROOT out = f32[32,1000] divide(ex, sb)
})");
  const OpGraph g = BuildOpGraph(*m);
  const FusionPlan plan = PlanFusion(g);
  ASSERT_TRUE(ValidateFusion(g, plan).ok());
  // ex feeds both the sum and the division: it cannot join either alone. Kernels: {mx},
  // {mb, sh, ex}, {sm}, {sb, out}.
  EXPECT_EQ(plan.size(), 4);
  EXPECT_NE(plan.kernel_of[static_cast<size_t>(Find(g, "mx"))],
            plan.kernel_of[static_cast<size_t>(Find(g, "sm"))]);
  const std::vector<KernelSummary> k = SummarizeKernels(g, plan);
  double transcendentals = 0;
  for (const KernelSummary& s : k) transcendentals += s.transcendentals;
  EXPECT_DOUBLE_EQ(transcendentals, 32.0 * 1000);
}

TEST(FusionTest, ValidateNamesTheBrokenRule) {
  auto m = Parse(R"(HloModule two
ENTRY e {
  a = f32[8,8] parameter(0)
  d1 = f32[8,8] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n = f32[8,8] negate(d1)
  ROOT d2 = f32[8,8] dot(n, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const OpGraph g = BuildOpGraph(*m);
  FusionPlan two_dots;
  two_dots.kernel_of = {0, 0, 0};
  two_dots.kernels = {{0, 1, 2}};
  absl::Status s = ValidateFusion(g, two_dots);
  EXPECT_TRUE(absl::StrContains(s.message(), "at most one")) << s;
  // d1 and d2 together with n outside: data leaves the kernel and comes back.
  FusionPlan cycle;
  cycle.kernel_of = {0, 1, 0};
  cycle.kernels = {{0, 2}, {1}};
  s = ValidateFusion(g, cycle);
  EXPECT_FALSE(s.ok());
  FusionPlan short_plan;
  short_plan.kernel_of = {0};
  short_plan.kernels = {{0}};
  EXPECT_TRUE(absl::StrContains(ValidateFusion(g, short_plan).message(), "covers 1 ops"));
}

TEST(FusionTest, FusedGraphHasOneNodePerKernelInTopologicalOrder) {
  auto m = Parse(R"(HloModule two
ENTRY e {
  x = f32[64,128] parameter(0)
  w = f32[128,128] parameter(1)
  d1 = f32[64,128] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n1 = f32[64,128] negate(d1)
  d2 = f32[64,128] dot(n1, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[64,128] tanh(d2)
})");
  const OpGraph g = BuildOpGraph(*m);
  const FusionPlan plan = PlanFusion(g);
  std::vector<int32_t> kernel_ids;
  const OpGraph fused = FuseOpGraph(g, plan, &kernel_ids);
  ASSERT_EQ(fused.size(), plan.size());
  ASSERT_EQ(kernel_ids.size(), static_cast<size_t>(plan.size()));
  double flops = 0, fused_flops = 0;
  for (const OpNode& n : g.nodes) flops += n.cost.flops;
  for (int32_t i = 0; i < fused.size(); ++i) {
    const OpNode& n = fused.nodes[static_cast<size_t>(i)];
    fused_flops += n.cost.flops;
    for (const OpInput& in : n.inputs) EXPECT_LT(in.node, i);  // producers first
  }
  EXPECT_DOUBLE_EQ(fused_flops, flops);
  // The shared weight w is read by both dot kernels; each kernel lists it once.
  for (const OpNode& n : fused.nodes) {
    if (n.matmul) {
      EXPECT_EQ(n.weights.size(), n.inputs.empty() ? 2u : 1u) << n.name;
    }
  }
  // Unfused: the same graph back, node for node.
  const OpGraph same = FuseOpGraph(g, Unfused(g));
  ASSERT_EQ(same.size(), g.size());
  EXPECT_TRUE(same.nodes.back().is_output);
}

TEST(FusionTest, CorpusModulesPlanValidKernels) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  int planned = 0;
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(file);
    if (!m.ok()) continue;
    const OpGraph g = BuildOpGraph(**m);
    const FusionPlan plan = PlanFusion(g);
    ASSERT_TRUE(ValidateFusion(g, plan).ok()) << file << ": " << ValidateFusion(g, plan);
    EXPECT_LE(plan.size(), g.size()) << file;
    ++planned;
  }
  EXPECT_GT(planned, 50);
}

}  // namespace
}  // namespace mltune::costmodels
