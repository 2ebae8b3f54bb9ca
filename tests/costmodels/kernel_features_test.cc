// The learned cost model's input (costmodels/features): opcode ids, node and kernel features,
// edges and configuration slots of hand-written kernels (softmax, a dot with bias, a strided
// convolution), the structural kernel key, and the binary form with malformed input.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "costmodels/features/kernel_graph.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/opcode.h"
#include "tests/support/corpus.h"

namespace mltune::costmodels::features {
namespace {

std::unique_ptr<ir::Module> Parse(const std::string& text) {
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

std::vector<int32_t> AllNodes(const OpGraph& g) {
  std::vector<int32_t> nodes;
  for (int32_t i = 0; i < g.size(); ++i) nodes.push_back(i);
  return nodes;
}

float NodeFeature(const KernelGraph& k, int32_t node, int feature) {
  return k.node_features[static_cast<size_t>(node) * kNodeFeatures + feature];
}

float L(double x) { return static_cast<float>(std::log2(1 + x)); }

// Row-wise softmax; `cols` and the names vary to test the kernel key.
std::string Softmax(int cols, const std::string& prefix = "") {
  const std::string c = std::to_string(cols);
  return R"(HloModule softmax
max_f {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT m = f32[] maximum(u, v)
}
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT r = f32[] add(p, q)
}
ENTRY e {
  x = f32[8,)" +
         c + R"(] parameter(0)
  ninf = f32[] constant(-inf)
  )" + prefix +
         R"(mx = f32[8] reduce(x, ninf), dimensions={1}, to_apply=max_f
  )" + prefix +
         R"(mb = f32[8,)" + c + R"(] broadcast()" + prefix + R"(mx), dimensions={0}
  )" + prefix +
         R"(s = f32[8,)" + c + R"(] subtract(x, )" + prefix + R"(mb)
  )" + prefix +
         R"(ex = f32[8,)" + c + R"(] exponential()" + prefix + R"(s)
  z = f32[] constant(0)
  )" + prefix +
         R"(sm = f32[8] reduce()" + prefix + R"(ex, z), dimensions={1}, to_apply=add_f
  )" + prefix +
         R"(sb = f32[8,)" + c + R"(] broadcast()" + prefix + R"(sm), dimensions={0}
  ROOT )" +
         prefix + R"(d = f32[8,)" + c + R"(] divide()" + prefix + R"(ex, )" + prefix + R"(sb)
})";
}

constexpr char kDotBias[] = R"(HloModule dense
ENTRY e {
  x = f32[64,128] parameter(0)
  w = f32[128,256] parameter(1)
  b = f32[256] parameter(2)
  d = f32[64,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,256] broadcast(b), dimensions={1}
  ROOT a = f32[64,256] add(d, bb)
})";

constexpr char kConv[] = R"(HloModule conv
ENTRY e {
  x = f32[1,16,16,4] parameter(0)
  w = f32[3,3,4,16] parameter(1)
  ROOT c = f32[1,8,8,16] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})";

TEST(OpcodeVocabularyTest, EveryIrOpcodeHasAStableDistinctId) {
  std::set<int32_t> ids;
  for (int op = 0; op < ir::OpcodeCount(); ++op) {
    const std::string name(ir::OpcodeName(static_cast<ir::Opcode>(op)));
    const int32_t id = OpcodeId(name);
    EXPECT_GT(id, 0) << name << " is missing from costmodels/features/opcode_vocabulary.cc";
    EXPECT_LT(id, OpcodeVocabularySize()) << name;
    EXPECT_TRUE(ids.insert(id).second) << name;
  }
  EXPECT_EQ(OpcodeId("no-such-op"), 0);
  EXPECT_EQ(OpcodeId(""), 0);
  // Trained models depend on these: the list is append-only.
  EXPECT_EQ(OpcodeId("abs"), 1);
  EXPECT_EQ(OpcodeId("add"), 2);
  EXPECT_EQ(OpcodeId("xor"), 121);
}

TEST(KernelGraphTest, SoftmaxAsOneKernel) {
  auto m = Parse(Softmax(128));
  const OpGraph g = BuildOpGraph(*m);
  ASSERT_EQ(g.size(), 7);  // two reduces, two broadcasts, subtract, exp, divide
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_EQ(k->size(), 7);
  EXPECT_EQ(k->node_features.size(), 7u * kNodeFeatures);
  EXPECT_EQ(k->kernel_features.size(), static_cast<size_t>(kKernelFeatures));
  const int32_t mx = Find(g, "mx"), mb = Find(g, "mb"), ex = Find(g, "ex"), d = Find(g, "d");
  EXPECT_EQ(k->opcodes[static_cast<size_t>(mx)], OpcodeId("reduce"));
  EXPECT_EQ(k->opcodes[static_cast<size_t>(ex)], OpcodeId("exponential"));
  EXPECT_EQ(k->opcodes[static_cast<size_t>(d)], OpcodeId("divide"));
  // Data edges: mx->mb->s->ex, ex->sm->sb, ex->d, sb->d.
  ASSERT_EQ(k->edge_src.size(), 7u);
  ASSERT_EQ(k->edge_dst.size(), 7u);
  std::set<std::pair<int32_t, int32_t>> edges;
  for (size_t e = 0; e < k->edge_src.size(); ++e) edges.insert({k->edge_src[e], k->edge_dst[e]});
  EXPECT_TRUE(edges.count({mx, mb}));
  EXPECT_TRUE(edges.count({ex, d}));
  EXPECT_TRUE(edges.count({Find(g, "sb"), d}));
  EXPECT_FALSE(edges.count({d, ex}));
  // The max reduce: f32[8] from f32[8,128] over the minor dim, reading the parameter.
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 5), L(8));  // minor-most dim slot
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 4), 0);     // rank 1: no second dim
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 6), 1);     // rank
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 7), 4);     // f32
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 8), 1);     // floating point
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 22), L(128));
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 23), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 26), 1);  // reads x from outside
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 25), 0);  // used inside only
  // What each reduce folds with: mx a compare (maximum), sm arithmetic (add).
  const int32_t sm = Find(g, "sm");
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 32), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, mx, 33), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, sm, 32), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, sm, 33), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, sm, 34), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, ex, 32) + NodeFeature(*k, ex, 33), 0);  // not a reduce
  // The reduced row: 128 columns; no lanes in the configuration, so no lane steps.
  EXPECT_FLOAT_EQ(k->kernel_features[30], L(128));
  EXPECT_FLOAT_EQ(k->kernel_features[31], 0);
  EXPECT_FLOAT_EQ(k->kernel_features[32], 0);
  // The inner loop: d's minor dim, 128; nothing applied to it without unroll or block.
  EXPECT_FLOAT_EQ(k->kernel_features[33], L(128));
  for (int slot = 34; slot < 38; ++slot) EXPECT_FLOAT_EQ(k->kernel_features[slot], 0) << slot;
  // exp: 1024 transcendentals; the broadcast repeats along the minor dim.
  EXPECT_FLOAT_EQ(NodeFeature(*k, ex, 11), L(1024));
  EXPECT_FLOAT_EQ(NodeFeature(*k, ex, 4), L(8));
  EXPECT_FLOAT_EQ(NodeFeature(*k, ex, 5), L(128));
  EXPECT_FLOAT_EQ(NodeFeature(*k, ex, 28), L(2));  // sm and d use it
  EXPECT_FLOAT_EQ(NodeFeature(*k, mb, 29), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, d, 25), 1);  // the module's result
  EXPECT_FLOAT_EQ(NodeFeature(*k, d, 30), 1);  // elementwise
  // Kernel: 7 ops over an 8x128 space, reads x (4 KiB), writes d (4 KiB), no matmul.
  EXPECT_FLOAT_EQ(k->kernel_features[5], L(7));
  EXPECT_FLOAT_EQ(k->kernel_features[6], L(1024));
  EXPECT_FLOAT_EQ(k->kernel_features[3], L(4096));
  EXPECT_FLOAT_EQ(k->kernel_features[8], L(1));
  EXPECT_FLOAT_EQ(k->kernel_features[9], 0);
}

TEST(KernelGraphTest, DotWithBiasFromTheFusionPlan) {
  auto m = Parse(kDotBias);
  const OpGraph g = BuildOpGraph(*m);
  const FusionPlan plan = PlanFusion(g);
  const int32_t d = Find(g, "d");
  const std::vector<int32_t>& nodes = plan.kernels[static_cast<size_t>(plan.kernel_of[d])];
  ASSERT_EQ(nodes.size(), 3u);  // the bias broadcast and add fuse into the dot's epilogue
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, nodes, {});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->edge_src.size(), 2u);  // d -> a, bb -> a
  int32_t dot = -1;
  for (int32_t i = 0; i < k->size(); ++i) {
    if (k->opcodes[static_cast<size_t>(i)] == OpcodeId("dot")) dot = i;
  }
  ASSERT_GE(dot, 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, dot, 14), L(64));
  EXPECT_FLOAT_EQ(NodeFeature(*k, dot, 15), L(256));
  EXPECT_FLOAT_EQ(NodeFeature(*k, dot, 16), L(128));
  EXPECT_FLOAT_EQ(NodeFeature(*k, dot, 10), L(2.0 * 64 * 256 * 128));
  EXPECT_FLOAT_EQ(k->kernel_features[9], 1);
  EXPECT_FLOAT_EQ(k->kernel_features[10], L(64));
  EXPECT_FLOAT_EQ(k->kernel_features[12], L(128));
  EXPECT_FLOAT_EQ(k->kernel_features[7], L(3));  // x, w, b
  // Inputs x, w and b: (64*128 + 128*256 + 256) floats.
  EXPECT_FLOAT_EQ(k->kernel_features[2], L(4.0 * (64 * 128 + 128 * 256 + 256)));
}

TEST(KernelGraphTest, ConvolutionWindow) {
  auto m = Parse(kConv);
  const OpGraph g = BuildOpGraph(*m);
  ASSERT_EQ(g.size(), 1);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, {0}, {});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->opcodes[0], OpcodeId("convolution"));
  EXPECT_TRUE(k->edge_src.empty());
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 6), 4);      // rank
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 2), L(1));   // batch, right-aligned: 4 dims in slots 2-5
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 5), L(16));  // output features, minor-most
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 18), L(9));  // 3x3 window
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 19), 2);     // stride
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 20), L(4));  // padding 1+1 per spatial dim
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 21), 1);     // no dilation
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 25), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 26), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, 0, 31), 0);  // one feature group
}

TEST(KernelGraphTest, ConfigurationSlots) {
  auto m = Parse(kConv);
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> k =
      BuildKernelGraph(g, *m, {0}, {{"impl", 0}, {"mc", 96}, {"parallel", 1}});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_FLOAT_EQ(k->kernel_features[static_cast<size_t>(ConfigSlot("impl"))], 1);  // 1 + 0
  EXPECT_FLOAT_EQ(k->kernel_features[static_cast<size_t>(ConfigSlot("mc"))], 1 + L(96));
  EXPECT_FLOAT_EQ(k->kernel_features[static_cast<size_t>(ConfigSlot("parallel"))], 2);
  EXPECT_FLOAT_EQ(k->kernel_features[static_cast<size_t>(ConfigSlot("block"))], 0);  // absent
  // Every slot is distinct and inside the kernel features; the static figures come first.
  std::set<int> slots;
  for (const std::string& name : ConfigParameterNames()) {
    const int slot = ConfigSlot(name);
    EXPECT_GE(slot, 14) << name;
    EXPECT_LT(slot, kKernelFeatures) << name;
    EXPECT_TRUE(slots.insert(slot).second) << name;
  }
  for (const char* cpu : {"block", "unroll", "simd", "parallel", "order", "lanes", "cache", "impl",
                          "micro", "mc", "kc", "nc"}) {
    EXPECT_GE(ConfigSlot(cpu), 0) << cpu;
  }
  EXPECT_EQ(ConfigSlot("bogus"), -1);
  absl::StatusOr<KernelGraph> bad = BuildKernelGraph(g, *m, {0}, {{"bogus", 1}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bogus"), std::string_view::npos);
}

TEST(KernelGraphTest, ConfigurationTextSetsTheSlotsOfAStoredGraph) {
  auto m = Parse(kConv);
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> bare = BuildKernelGraph(g, *m, {0}, {});
  absl::StatusOr<KernelGraph> direct = BuildKernelGraph(g, *m, {0}, {{"impl", 1}, {"nc", 512}});
  ASSERT_TRUE(bare.ok() && direct.ok());
  absl::StatusOr<Configuration> config = ParseConfiguration("impl=1,nc=512");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->size(), 2u);
  EXPECT_EQ((*config)[1], (std::pair<std::string, int64_t>("nc", 512)));
  KernelGraph set = *bare;
  ASSERT_TRUE(SetConfiguration(*config, &set).ok());
  EXPECT_EQ(set, *direct);
  ASSERT_TRUE(SetConfiguration({}, &set).ok());  // clears the slots again
  EXPECT_EQ(set, *bare);
  EXPECT_TRUE(ParseConfiguration("").value().empty());
  for (const char* bad : {"impl", "=1", "impl=x", "impl=1,", "impl=1;nc=2"}) {
    EXPECT_EQ(ParseConfiguration(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// `lanes` partial accumulators on a row of n: floor(n / lanes) full steps and a scalar tail of
// n mod lanes, set with the configuration (a stored graph is reconfigured per measurement).
TEST(KernelGraphTest, LanesAppliedToTheReducedRow) {
  auto m = Parse(Softmax(49));
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> bare = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_FLOAT_EQ(bare->kernel_features[30], L(49));
  struct Case {
    int64_t lanes;
    double steps, tail;
  };
  for (const Case& c : {Case{1, 49, 0}, Case{8, 6, 1.0 / 49}, Case{16, 3, 1.0 / 49},
                        Case{32, 1, 17.0 / 49}, Case{64, 0, 1}}) {
    KernelGraph k = *bare;
    ASSERT_TRUE(SetConfiguration({{"lanes", c.lanes}, {"cache", 1}}, &k).ok());
    EXPECT_FLOAT_EQ(k.kernel_features[31], L(c.steps)) << c.lanes;
    EXPECT_FLOAT_EQ(k.kernel_features[32], static_cast<float>(c.tail)) << c.lanes;
    EXPECT_FLOAT_EQ(k.kernel_features[30], L(49)) << "the row is not a configuration slot";
    ASSERT_TRUE(SetConfiguration({}, &k).ok());
    EXPECT_EQ(k, *bare) << "clearing the configuration clears the lane slots";
  }
  // Without a reduce there is no row, and lanes leave slots 30-32 at 0.
  auto conv = Parse(kConv);
  const OpGraph cg = BuildOpGraph(*conv);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(cg, *conv, {0}, {{"lanes", 8}});
  ASSERT_TRUE(k.ok()) << k.status();
  for (int slot : {30, 31, 32}) EXPECT_FLOAT_EQ(k->kernel_features[slot], 0) << slot;
}

// `unroll` and `block` on the inner loop of m = 10 iterations (one_hot's compare, whose unrolled
// forms measure 5x slower): full unroll steps and the remainder's share; the blocked inner trip
// count and the partial block's share.
TEST(KernelGraphTest, UnrollAndBlockAppliedToTheInnerLoop) {
  auto m = Parse(R"(HloModule onehot
ENTRY e {
  a = s32[100,10] parameter(0)
  b = s32[100,10] parameter(1)
  ROOT c = pred[100,10] compare(a, b), direction=EQ
})");
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> bare = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_FLOAT_EQ(bare->kernel_features[33], L(10));
  EXPECT_FLOAT_EQ(bare->kernel_features[30], 0) << "no reduce";
  struct Case {
    int64_t unroll, block;
    double unroll_steps, unroll_tail, block_trip, block_tail;
  };
  for (const Case& c : {Case{1, 0, 10, 0, 0, 0}, Case{4, 0, 2, 0.2, 0, 0},
                        Case{8, 16, 1, 0.2, 10, 1.0}, Case{2, 32, 5, 0, 10, 1.0}}) {
    KernelGraph k = *bare;
    ASSERT_TRUE(SetConfiguration({{"block", c.block}, {"unroll", c.unroll}, {"simd", 1}}, &k).ok());
    EXPECT_FLOAT_EQ(k.kernel_features[34], L(c.unroll_steps)) << c.unroll;
    EXPECT_FLOAT_EQ(k.kernel_features[35], static_cast<float>(c.unroll_tail)) << c.unroll;
    EXPECT_FLOAT_EQ(k.kernel_features[36], c.block > 0 ? L(c.block_trip) : 0) << c.block;
    EXPECT_FLOAT_EQ(k.kernel_features[37], static_cast<float>(c.block_tail)) << c.block;
    ASSERT_TRUE(SetConfiguration({}, &k).ok());
    EXPECT_EQ(k, *bare);
  }
  // A block of 4 on 10: trips of 4, and the last block holds 2 of the 10.
  KernelGraph k = *bare;
  ASSERT_TRUE(SetConfiguration({{"block", 4}}, &k).ok());
  EXPECT_FLOAT_EQ(k.kernel_features[36], L(4));
  EXPECT_FLOAT_EQ(k.kernel_features[37], 0.2f);
}

// The fused loop nest over the output [8, 16]: exp of a row vector is hoisted out of the inner loop
// (8 evaluations, not 128), the parameter read through a transpose walks memory with a stride,
// the one added to it steps by one element, and the vector read by the hoisted exp does not vary
// along the inner loop at all.
TEST(KernelGraphTest, IndexFlowHoistsAndTellsStridedFromContiguousLoads) {
  auto m = Parse(R"(HloModule flow
ENTRY e {
  r = f32[8] parameter(0)
  x = f32[8,16] parameter(1)
  t = f32[16,8] parameter(2)
  er = f32[8] exponential(r)
  b = f32[8,16] broadcast(er), dimensions={0}
  a = f32[8,16] add(b, x)
  tt = f32[8,16] transpose(t), dimensions={1,0}
  ROOT o = f32[8,16] multiply(a, tt)
})");
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(k.ok()) << k.status();
  const int32_t er = Find(g, "er"), a = Find(g, "a"), tt = Find(g, "tt"), o = Find(g, "o");
  EXPECT_FLOAT_EQ(NodeFeature(*k, er, 35), L(8)) << "hoisted out of the inner loop";
  EXPECT_FLOAT_EQ(NodeFeature(*k, er, 36), 0) << "once per element of its own result";
  EXPECT_FLOAT_EQ(NodeFeature(*k, er, 37), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, er, 38) + NodeFeature(*k, er, 39), 0) << "invariant load";
  for (int32_t n : {a, tt, o}) {
    EXPECT_FLOAT_EQ(NodeFeature(*k, n, 35), L(128)) << n;
    EXPECT_FLOAT_EQ(NodeFeature(*k, n, 37), 1) << n;
  }
  EXPECT_FLOAT_EQ(NodeFeature(*k, a, 38), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, a, 39), 1) << "x[i, j] steps by one along j";
  EXPECT_FLOAT_EQ(NodeFeature(*k, tt, 38), 1) << "t[j, i] steps by 8 along j";
  EXPECT_FLOAT_EQ(NodeFeature(*k, tt, 39), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, o, 38) + NodeFeature(*k, o, 39), 0) << "reads only in-kernel";
  // Arithmetic: exp 8 times, add and multiply 128 each (broadcast and transpose only remap).
  EXPECT_FLOAT_EQ(k->kernel_features[38], L(8 + 128 + 128));
  EXPECT_FLOAT_EQ(k->kernel_features[39], L(8));
  EXPECT_FLOAT_EQ(k->kernel_features[40], L(128));
  EXPECT_FLOAT_EQ(k->kernel_features[41], L(128));
  // The configuration leaves these slots alone.
  KernelGraph configured = *k;
  ASSERT_TRUE(SetConfiguration({{"block", 4}, {"unroll", 2}}, &configured).ok());
  for (int slot = 38; slot < 42; ++slot) {
    EXPECT_EQ(configured.kernel_features[slot], k->kernel_features[slot]) << slot;
  }
}

// Two overlapping slices of one exp: codegen computes it once per distinct index, so 2 x 128
// times for 136 elements (recomputation shows as a positive slot 36); a stride-2 slice of a
// parameter is a strided load; a reduce's operand is read along its reduced (inner) loop.
TEST(KernelGraphTest, IndexFlowCountsRecomputationAndReducedLoops) {
  auto m = Parse(R"(HloModule recompute
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT r = f32[] add(p, q)
}
ENTRY e {
  x = f32[8,17] parameter(0)
  y = f32[8,32] parameter(1)
  w = f32[8,64] parameter(2)
  e = f32[8,17] exponential(x)
  s1 = f32[8,16] slice(e), slice={[0:8], [0:16]}
  s2 = f32[8,16] slice(e), slice={[0:8], [1:17]}
  ys = f32[8,16] slice(y), slice={[0:8], [0:32:2]}
  a = f32[8,16] add(s1, s2)
  b = f32[8,16] add(a, ys)
  z = f32[] constant(0)
  rs = f32[8] reduce(w, z), dimensions={1}, to_apply=add_f
  rb = f32[8,16] broadcast(rs), dimensions={0}
  ROOT o = f32[8,16] multiply(b, rb)
})");
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(k.ok()) << k.status();
  const int32_t e = Find(g, "e"), ys = Find(g, "ys"), rs = Find(g, "rs");
  EXPECT_FLOAT_EQ(NodeFeature(*k, e, 35), L(256));
  EXPECT_FLOAT_EQ(NodeFeature(*k, e, 36), static_cast<float>(std::log2(257.0 / 137.0)));
  EXPECT_FLOAT_EQ(NodeFeature(*k, e, 39), 1) << "the slices keep x's unit stride";
  EXPECT_FLOAT_EQ(NodeFeature(*k, ys, 38), 1) << "every other element of y";
  EXPECT_FLOAT_EQ(NodeFeature(*k, ys, 39), 0);
  // The reduce runs once per row; its operand, read along the reduced loop, 8 x 64 times.
  EXPECT_FLOAT_EQ(NodeFeature(*k, rs, 35), L(8));
  EXPECT_FLOAT_EQ(NodeFeature(*k, rs, 37), 0);
  EXPECT_FLOAT_EQ(NodeFeature(*k, rs, 39), 1);
  EXPECT_FLOAT_EQ(NodeFeature(*k, rs, 38), 0);
}

// Slots 40 (node) and 42-43 (kernel): an atan2 is a scalar libm call, 25 ns an element against an
// exp's 0.45 (the prelude's vectorized polynomial), and in the inner loop it keeps that loop
// scalar; hoisted out of it, it does not.
TEST(KernelGraphTest, ElementMathTellsScalarLibmCallsFromVectorizedOnes) {
  auto build = [](const std::string& row_op, const std::string& inner_op) {
    return Parse(absl::StrCat(R"(HloModule math
ENTRY e {
  r = f32[8] parameter(0)
  x = f32[8,16] parameter(1)
  ar = f32[8] )",
                              row_op, R"(
  b = f32[8,16] broadcast(ar), dimensions={0}
  ex = f32[8,16] exponential(x)
  in = f32[8,16] )",
                              inner_op, R"(
  s = f32[8,16] add(b, ex)
  ROOT o = f32[8,16] add(s, in)
})"));
  };
  struct Built {
    std::unique_ptr<ir::Module> module;
    OpGraph graph;
    KernelGraph kernel;
  };
  auto kernel = [&](const std::string& row_op, const std::string& inner_op) {
    Built b;
    b.module = build(row_op, inner_op);
    b.graph = BuildOpGraph(*b.module);
    absl::StatusOr<KernelGraph> k = BuildKernelGraph(b.graph, *b.module, AllNodes(b.graph), {});
    EXPECT_TRUE(k.ok()) << k.status();
    if (k.ok()) b.kernel = *std::move(k);
    return b;
  };
  const Built hoisted = kernel("atan2(r, r)", "multiply(x, x)");
  const KernelGraph& k = hoisted.kernel;
  ASSERT_FALSE(k.kernel_features.empty());
  auto node = [](const Built& b, const char* name, int slot) {
    return NodeFeature(b.kernel, Find(b.graph, name), slot);
  };
  EXPECT_FLOAT_EQ(node(hoisted, "ar", 40), L(1000 * 8 * 25.0)) << "8 rows, 25 ns each";
  EXPECT_FLOAT_EQ(node(hoisted, "ex", 40), L(1000 * 128 * 0.45));
  EXPECT_FLOAT_EQ(node(hoisted, "o", 40), L(1000 * 128 * 0.1));
  EXPECT_FLOAT_EQ(node(hoisted, "b", 40), 0) << "a broadcast only remaps";
  EXPECT_FLOAT_EQ(k.kernel_features[42], L(1000 * (8 * 25.0 + 128 * 0.45 + 3 * 128 * 0.1)));
  EXPECT_FLOAT_EQ(k.kernel_features[43], 0) << "the atan2 is hoisted out of the inner loop";

  // An [8,16] atan2 in the inner loop: that loop stays scalar.
  const Built inner = kernel("atan2(r, r)", "atan2(x, x)");
  ASSERT_FALSE(inner.kernel.kernel_features.empty());
  EXPECT_FLOAT_EQ(node(inner, "in", 40), L(1000 * 128 * 25.0));
  EXPECT_FLOAT_EQ(inner.kernel.kernel_features[43], 1);

  // A hoisted exp counts as many transcendentals as the atan2, at a fiftieth of its math.
  const Built exp = kernel("exponential(r)", "multiply(x, x)");
  ASSERT_FALSE(exp.kernel.kernel_features.empty());
  EXPECT_FLOAT_EQ(exp.kernel.kernel_features[39], k.kernel_features[39]);
  EXPECT_FLOAT_EQ(node(exp, "ar", 40), L(1000 * 8 * 0.45));
  EXPECT_LT(exp.kernel.kernel_features[42], k.kernel_features[42]);
}

// Each reshape between shapes that do not share their non-unit dimensions indexes its operand
// through the linear index, whose text holds every component of the index before it: a chain of
// them must not grow the analysis's keys with its length (3^40 characters here, unbounded).
TEST(KernelGraphTest, IndexFlowOnALongReshapeChain) {
  std::string text = "HloModule chain\nENTRY e {\n  r0 = f32[6,4,5] parameter(0)\n";
  constexpr int kChain = 40;
  for (int i = 1; i <= kChain; ++i) {
    absl::StrAppend(&text, "  r", i, " = ", i % 2 == 1 ? "f32[4,5,6]" : "f32[6,4,5]", " reshape(r",
                    i - 1, ")\n");
  }
  absl::StrAppend(&text, "  ROOT o = f32[6,4,5] exponential(r", kChain, ")\n}\n");
  auto m = Parse(text);
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(k.ok()) << k.status();
  for (const char* name : {"o", "r40", "r1"}) {
    EXPECT_FLOAT_EQ(NodeFeature(*k, Find(g, name), 35), L(120)) << name;
  }
  EXPECT_FLOAT_EQ(k->kernel_features[38], L(120)) << "the exp; reshapes only remap";
  EXPECT_FLOAT_EQ(k->kernel_features[40] + k->kernel_features[41], L(120)) << "r0 read once";
}

// Every kernel of the corpus's default fusion plans: the graph builds, its loop-nest features are
// finite, and something in each kernel whose value is used is computed at least once.
TEST(KernelGraphTest, IndexFlowOnEveryCorpusKernel) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  int64_t kernels = 0, live = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(testing::ReadFile(file));
    ASSERT_TRUE(m.ok()) << m.status();
    const OpGraph g = BuildOpGraph(**m);
    const FusionPlan plan = PlanFusion(g);
    for (const std::vector<int32_t>& nodes : plan.kernels) {
      absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, **m, nodes, {});
      ASSERT_TRUE(k.ok()) << k.status();
      ++kernels;
      float most = 0;
      bool has_output = false;  // the unoptimized modules hold dead code: kernels of no use
      for (int32_t i = 0; i < k->size(); ++i) {
        for (int f = 35; f < 40; ++f) ASSERT_TRUE(std::isfinite(NodeFeature(*k, i, f))) << f;
        most = std::max(most, NodeFeature(*k, i, 35));
        has_output = has_output || NodeFeature(*k, i, 25) == 1;
      }
      if (has_output) {
        ++live;
        EXPECT_GE(most, 1.0f) << "kernel of " << g.nodes[static_cast<size_t>(nodes[0])].name;
      }
      for (int slot = 38; slot < kKernelFeatures; ++slot) {
        ASSERT_TRUE(std::isfinite(k->kernel_features[static_cast<size_t>(slot)])) << slot;
        EXPECT_GE(k->kernel_features[static_cast<size_t>(slot)], 0) << slot;
      }
    }
  }
  EXPECT_GT(kernels, 1000);
  EXPECT_GT(live, kernels / 2);
}

TEST(KernelGraphTest, RejectsBadNodeLists) {
  auto m = Parse(kConv);
  const OpGraph g = BuildOpGraph(*m);
  EXPECT_EQ(BuildKernelGraph(g, *m, {}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildKernelGraph(g, *m, {1}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KernelKey(g, *m, {0, 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KernelKeyTest, SameKernelSameKeyAcrossModulesAndNames) {
  auto a = Parse(Softmax(128));
  auto b = Parse(Softmax(128, "renamed_"));
  auto c = Parse(Softmax(256));
  const OpGraph ga = BuildOpGraph(*a), gb = BuildOpGraph(*b), gc = BuildOpGraph(*c);
  absl::StatusOr<std::string> ka = KernelKey(ga, *a, AllNodes(ga));
  absl::StatusOr<std::string> kb = KernelKey(gb, *b, AllNodes(gb));
  absl::StatusOr<std::string> kc = KernelKey(gc, *c, AllNodes(gc));
  ASSERT_TRUE(ka.ok() && kb.ok() && kc.ok());
  EXPECT_EQ(ka->size(), 64u);  // SHA-256 hex
  EXPECT_EQ(*ka, *kb);
  EXPECT_NE(*ka, *kc);  // a shape differs
  // A sub-kernel is another kernel.
  absl::StatusOr<std::string> part = KernelKey(ga, *a, {0, 1, 2});
  ASSERT_TRUE(part.ok());
  EXPECT_NE(*part, *ka);
}

TEST(KernelKeyTest, TheSameKernelInsideALargerModule) {
  auto alone = Parse(kConv);
  auto bigger = Parse(R"(HloModule bigger
ENTRY e {
  p = f32[1,16,16,4] parameter(0)
  x = f32[1,16,16,4] negate(p)
  w = f32[3,3,4,16] parameter(1)
  c = f32[1,8,8,16] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t = f32[1,8,8,16] tanh(c)
})");
  const OpGraph g1 = BuildOpGraph(*alone), g2 = BuildOpGraph(*bigger);
  absl::StatusOr<std::string> k1 = KernelKey(g1, *alone, {0});
  absl::StatusOr<std::string> k2 = KernelKey(g2, *bigger, {Find(g2, "c")});
  ASSERT_TRUE(k1.ok() && k2.ok());
  EXPECT_EQ(*k1, *k2);  // its input comes from another kernel there, from a parameter here
  // Another reducer is another kernel, though opcodes and shapes match.
  std::string text = Softmax(128);
  text.replace(text.find("maximum(u, v)"), 13, "minimum(u, v)");
  auto other = Parse(text);
  auto base = Parse(Softmax(128));
  const OpGraph go = BuildOpGraph(*other), gb = BuildOpGraph(*base);
  EXPECT_NE(*KernelKey(go, *other, AllNodes(go)), *KernelKey(gb, *base, AllNodes(gb)));
}

TEST(SerializationTest, RoundTrips) {
  auto m = Parse(Softmax(128));
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, AllNodes(g), {{"lanes", 32}});
  ASSERT_TRUE(k.ok());
  const std::string bytes = SerializeKernelGraph(*k);
  absl::StatusOr<KernelGraph> back = ParseKernelGraph(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *k);
  EXPECT_EQ(SerializeKernelGraph(*back), bytes);
}

TEST(SerializationTest, RejectsMalformedBytes) {
  auto m = Parse(kDotBias);
  const OpGraph g = BuildOpGraph(*m);
  absl::StatusOr<KernelGraph> k = BuildKernelGraph(g, *m, AllNodes(g), {});
  ASSERT_TRUE(k.ok());
  const std::string good = SerializeKernelGraph(*k);
  for (const std::string& bad :
       {std::string(), std::string("garbage"), good.substr(0, good.size() - 1), good + "x",
        std::string("MKG1") + std::string(20, '\xff')}) {
    absl::StatusOr<KernelGraph> r = ParseKernelGraph(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad.size();
  }
  auto corrupt = [&](size_t offset, uint32_t value) {
    std::string b = good;
    for (int i = 0; i < 4; ++i) b[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
    return ParseKernelGraph(b).status();
  };
  const size_t header = 24;
  EXPECT_FALSE(corrupt(header, 5000).ok());  // opcode id outside the vocabulary
  const size_t edges = header + 4 * (g.size() + g.size() * kNodeFeatures);
  EXPECT_FALSE(corrupt(edges, 99).ok());                          // edge endpoint outside the graph
  EXPECT_FALSE(corrupt(header + 4 * g.size(), 0x7fc00000).ok());  // NaN feature
  EXPECT_FALSE(corrupt(8, kNodeFeatures + 1).ok());               // another feature width
  // Any single corrupted byte is parsed or rejected, never a crash.
  for (size_t i = 0; i < good.size(); ++i) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    (void)ParseKernelGraph(b);
  }
}

}  // namespace
}  // namespace mltune::costmodels::features
