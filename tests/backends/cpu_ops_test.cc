// The CPU backend against the reference evaluator, op kind by op kind: each module is lowered,
// generated, compiled, run in the runner child on seeded random inputs and compared with
// ir::Evaluate. Kernels with tunable parameters are also checked under every value of each
// parameter (one at a time), so no configuration the tuner may pick changes results.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/onednn.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/backends/cpu_variants.h"
#include "tests/backends/op_cases.h"
#include "tests/support/jaxlib_descriptor.h"

namespace mltune::backends::cpu {
namespace {

class CpuOpsTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

using backends::Case;
constexpr const auto& kCases = backends::kOpCases;

const Case& Find(const std::string& name) {
  for (const Case& c : kCases) {
    if (name == c.name) return c;
  }
  std::abort();
}

TEST_P(CpuOpsTest, MatchesEvaluatorUnderEveryParameterValue) {
  const Case& c = Find(GetParam());
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(c.hlo);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::Status check = CheckAgainstEvaluator(**module, *compiled, 7);
  EXPECT_TRUE(check.ok()) << check << "\n" << compiled->program.source;
  // Every other value of every parameter, one kernel and parameter at a time.
  for (const ConfigVariant& v : SingleParameterVariants(compiled->lowered, compiled->configs)) {
    absl::StatusOr<CompiledModule> variant = CompileModule(**module, v.configs);
    ASSERT_TRUE(variant.ok()) << variant.status();
    absl::Status s = CheckAgainstEvaluator(**module, *variant, 11);
    EXPECT_TRUE(s.ok()) << v.label << ": " << s;
    if (v.param == "impl" && (v.value == 2 || v.value == 3)) {
      EXPECT_NE(variant->program.source.find("mt_conv_run("), std::string::npos)
          << "impl " << v.value << " did not use oneDNN's primitive";
    }
    if (v.param == "impl" && v.value == kGroupedImpl) {
      EXPECT_NE(variant->program.source.find("mt_gc_row<"), std::string::npos)
          << "impl " << v.value << " did not use the grouped kernel";
    }
    if (v.param == "impl" && v.value == kMatmulPrimitiveImpl) {
      EXPECT_NE(variant->program.source.find("mt_matmul_run("), std::string::npos)
          << "impl " << v.value << " did not use oneDNN's matmul primitive";
    }
  }
}

// `parallel` on a reduction that walks its operand in memory order (order 1) whose first loop is
// a reduced dimension (the leading one is 1): no thread may split that loop, or they fold into
// the same outputs. A reduction to one element offers no `parallel` at all: nothing to split.
TEST(CpuOpsReduceTest, ParallelNeverSplitsAReducedLoop) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseHloText(Find("reduce_unit_leading_dims").hlo);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::vector<Kernel>& kernels = compiled->lowered.kernels;
  auto kernel_named = [&](const std::string& name) {
    const auto it = std::find_if(kernels.begin(), kernels.end(),
                                 [&](const Kernel& k) { return k.name == name; });
    return it == kernels.end() ? -1 : static_cast<int>(it - kernels.begin());
  };
  const int cols = kernel_named("cols"), one = kernel_named("one");
  ASSERT_GE(cols, 0);
  ASSERT_GE(one, 0);
  // To one element over the minor dimension: no `order` (a memory-order walk would be a serial
  // chain through the output) and no `parallel` (nothing to split).
  std::vector<std::string> one_params;
  for (const KernelParam& p : kernels[static_cast<size_t>(one)].params) {
    one_params.push_back(p.name);
  }
  EXPECT_EQ(std::count(one_params.begin(), one_params.end(), "parallel"), 0);
  EXPECT_EQ(std::count(one_params.begin(), one_params.end(), "order"), 0);
  // cols walked in memory order, with parallel: the kernel adds no OpenMP loop (the prelude's
  // GEMM has its own, behind `if (parallel)`).
  std::vector<KernelConfig> configs = compiled->configs;
  const std::vector<KernelParam>& params = kernels[static_cast<size_t>(cols)].params;
  for (size_t p = 0; p < params.size(); ++p) {
    if (params[p].name == "order" || params[p].name == "parallel") {
      configs[static_cast<size_t>(cols)][p] = 1;
    }
  }
  absl::StatusOr<CompiledModule> variant = CompileModule(**module, configs);
  ASSERT_TRUE(variant.ok()) << variant.status();
  auto pragmas = [](const std::string& text) {
    int64_t n = 0;
    for (size_t at = text.find("omp parallel"); at != std::string::npos;
         at = text.find("omp parallel", at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(pragmas(variant->program.source), pragmas(Prelude())) << variant->program.source;
  MeasureOptions two_threads;
  two_threads.threads = 2;
  absl::Status check = CheckAgainstEvaluator(**module, *variant, 3, two_threads);
  EXPECT_TRUE(check.ok()) << check;
}

// Kernel `name` of `lowered`, or -1.
int32_t KernelNamed(const LoweredModule& lowered, const std::string& name) {
  for (size_t i = 0; i < lowered.kernels.size(); ++i) {
    if (lowered.kernels[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

// Kernel `name`'s parameter `param`, or nullptr.
KernelParam* ParamOf(LoweredModule& lowered, const std::string& name, const std::string& param) {
  const int32_t k = KernelNamed(lowered, name);
  if (k < 0) return nullptr;
  for (KernelParam& p : lowered.kernels[static_cast<size_t>(k)].params) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

// `parallel` is offered from kParallelMinBytes of work up (a loop's output, another kernel's
// input), on GEMMs at any size, and on every kernel of the threaded cases.
TEST(CpuOpsParallelTest, IsOfferedFromPyTorchsGrainUp) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
ENTRY e {
  p0 = f32[32767] parameter(0)
  loop_below = f32[32767] negate(p0)
  p1 = f32[32768] parameter(1)
  loop_at = f32[32768] negate(p1)
  p2 = f32[256,127] parameter(2)
  z = f32[] constant(0)
  reduce_below = f32[256] reduce(p2, z), dimensions={1}, to_apply=add
  p3 = f32[256,128] parameter(3)
  reduce_at = f32[256] reduce(p3, z), dimensions={1}, to_apply=add
  p4 = f32[4,4] parameter(4)
  dot_small = f32[4,4] dot(p4, p4), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[32767], f32[32768], f32[256], f32[256], f32[4,4]) tuple(loop_below, loop_at, reduce_below, reduce_at, dot_small)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  for (const char* name : {"loop_below", "loop_at", "reduce_below", "reduce_at", "dot_small"}) {
    ASSERT_GE(KernelNamed(*lowered, name), 0) << name;
  }
  EXPECT_EQ(ParamOf(*lowered, "loop_below", "parallel"), nullptr);
  EXPECT_EQ(ParamOf(*lowered, "reduce_below", "parallel"), nullptr);
  for (const char* name : {"loop_at", "reduce_at", "dot_small"}) {
    const KernelParam* parallel = ParamOf(*lowered, name, "parallel");
    ASSERT_NE(parallel, nullptr) << name;
    EXPECT_EQ(parallel->choices, (std::vector<int64_t>{0, 1})) << name;
  }
  std::set<KernelKind> kinds;
  for (const char* threaded : {"threaded_loop_and_pool", "threaded_reductions"}) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(Find(threaded).hlo);
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<LoweredModule> l = Lower(**m);
    ASSERT_TRUE(l.ok()) << l.status();
    for (const Kernel& k : l->kernels) {
      kinds.insert(k.kind);
      const bool has = std::any_of(k.params.begin(), k.params.end(),
                                   [](const KernelParam& p) { return p.name == "parallel"; });
      EXPECT_TRUE(has) << threaded << ": " << k.name << " (" << KernelKindName(k.kind) << ")";
    }
  }
  // Every non-GEMM kind is covered, so the exhaustive check runs each one's threaded code.
  for (KernelKind kind :
       {KernelKind::kLoop, KernelKind::kReduce, KernelKind::kReduceWindow, KernelKind::kRow}) {
    EXPECT_EQ(kinds.count(kind), 1u) << KernelKindName(kind);
  }
}

// Kernel `name`'s code under its defaults but `param` = `value`, a value its choices may no
// longer hold (as a configuration stored before they narrowed would ask).
absl::StatusOr<Program> KernelWith(LoweredModule& lowered, const std::string& name,
                                   const std::string& param, int64_t value) {
  const int32_t k = KernelNamed(lowered, name);
  if (k < 0) return absl::NotFoundError(name);
  std::vector<KernelParam>& params = lowered.kernels[static_cast<size_t>(k)].params;
  KernelConfig config;
  for (KernelParam& p : params) {
    if (p.name == param &&
        std::find(p.choices.begin(), p.choices.end(), value) == p.choices.end()) {
      p.choices.push_back(value);
    }
    config.push_back(p.name == param ? value : p.choices.front());
  }
  return GenerateKernel(lowered, k, config);
}

// `lanes` (partial accumulators on the innermost reduced dimension) is offered up to that
// dimension's length: more lanes than elements never run the vector loop, and an unused
// accumulator array of 32 made a reduce over 4 elements 14x slower than one accumulator. Where
// a configuration still asks for more (an older store's), the code is lanes=1's.
TEST(CpuOpsReduceTest, LanesNeverExceedTheReducedDimension) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
or_fn {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT o = pred[] or(a, b)
}
add_fn {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p0 = f32[64,20,4] parameter(0)
  p1 = f32[64,20,4] parameter(1)
  eq = pred[64,20,4] compare(p0, p1), direction=EQ
  f = pred[] constant(false)
  any4 = pred[64,20] reduce(eq, f), dimensions={2}, to_apply=or_fn
  p2 = f32[64,20] parameter(2)
  z = f32[] constant(0)
  sum20 = f32[64] reduce(p2, z), dimensions={1}, to_apply=add_fn
  p3 = f32[4,64] parameter(3)
  cols4 = f32[64] reduce(p3, z), dimensions={0}, to_apply=add_fn
  p4 = f32[8,200] parameter(4)
  sum200 = f32[8] reduce(p4, z), dimensions={1}, to_apply=add_fn
  ROOT t = (pred[64,20], f32[64], f32[64], f32[8]) tuple(any4, sum20, cols4, sum200)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  for (const char* name : {"any4", "sum20", "cols4", "sum200"}) {
    ASSERT_NE(ParamOf(*lowered, name, "lanes"), nullptr) << name;
  }
  EXPECT_EQ(ParamOf(*lowered, "any4", "lanes")->choices, (std::vector<int64_t>{1}));
  EXPECT_EQ(ParamOf(*lowered, "sum20", "lanes")->choices, (std::vector<int64_t>{8, 1, 16}));
  // A column reduction: its lanes split the reduced leading dimension (4), not the kept 64.
  EXPECT_EQ(ParamOf(*lowered, "cols4", "lanes")->choices, (std::vector<int64_t>{1}));
  EXPECT_EQ(ParamOf(*lowered, "sum200", "lanes")->choices,
            (std::vector<int64_t>{32, 16, 64, 8, 1}));

  // lanes=32 on the 4-element reduce gets lanes=1's code.
  absl::StatusOr<Program> with_one = KernelWith(*lowered, "any4", "lanes", 1);
  absl::StatusOr<Program> with_32 = KernelWith(*lowered, "any4", "lanes", 32);
  ASSERT_TRUE(with_one.ok()) << with_one.status();
  ASSERT_TRUE(with_32.ok()) << with_32.status();
  EXPECT_EQ(with_32->source, with_one->source);
}

// Loop kernels whose innermost dimensions longer than 1 are 4 (over 20), 40 (over 8), 100 (over
// 64) and 1000 (alone).
constexpr char kLoopShapes[] = R"(
HloModule m
ENTRY e {
  p0 = f32[2048,20,4] parameter(0)
  narrow = f32[2048,20,4] negate(p0)
  p1 = f32[8,40] parameter(1)
  strip = f32[8,40] negate(p1)
  p2 = f32[64,100] parameter(2)
  wide = f32[64,100] negate(p2)
  p3 = f32[1,1000] parameter(3)
  flat = f32[1,1000] negate(p3)
  ROOT t = (f32[2048,20,4], f32[8,40], f32[64,100], f32[1,1000]) tuple(narrow, strip, wide, flat)
})";

// `block` tiles the two innermost dimensions longer than 1, and only dimensions longer than the
// tile: a tile covering the minor dimension walks as block=0 does but behind bounds the compiler
// cannot see, so such tiles are not offered, and where a configuration still asks for one (an
// older store's) the code is block=0's.
TEST(CpuOpsLoopTest, BlockTilesOnlyDimensionsLongerThanTheTile) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kLoopShapes);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  for (const char* name : {"narrow", "strip", "wide", "flat"}) {
    ASSERT_NE(ParamOf(*lowered, name, "block"), nullptr) << name;
  }
  EXPECT_EQ(ParamOf(*lowered, "narrow", "block")->choices, (std::vector<int64_t>{0}));
  EXPECT_EQ(ParamOf(*lowered, "strip", "block")->choices, (std::vector<int64_t>{0, 16, 32}));
  EXPECT_EQ(ParamOf(*lowered, "wide", "block")->choices, (std::vector<int64_t>{0, 16, 32, 64}));
  EXPECT_EQ(ParamOf(*lowered, "flat", "block")->choices, (std::vector<int64_t>{0}));

  // block=32 on the 4-wide kernel gets block=0's code.
  absl::StatusOr<Program> with_0 = KernelWith(*lowered, "narrow", "block", 0);
  absl::StatusOr<Program> with_32 = KernelWith(*lowered, "narrow", "block", 32);
  ASSERT_TRUE(with_0.ok()) << with_0.status();
  ASSERT_TRUE(with_32.ok()) << with_32.status();
  EXPECT_EQ(with_32->source, with_0->source);
  // No bound behind std::min beyond the prelude's own.
  auto mins = [](const std::string& text) {
    int64_t n = 0;
    for (size_t at = text.find("std::min<int64_t>("); at != std::string::npos;
         at = text.find("std::min<int64_t>(", at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(mins(with_0->source), mins(Prelude())) << with_0->source;
}

// A loop kernel reading kBlockTransposeMinBytes or more through a transpose of its operand's minor
// dimension is tiled by default (block=32); smaller ones, and transposes that keep the minor
// dimension in place, walk untiled (block=0) by default. Every choice stays offered.
TEST(CpuOpsLoopTest, LargeStridedTransposesAreTiledByDefault) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
ENTRY e {
  p0 = f32[1024,512] parameter(0)
  big = f32[512,1024] transpose(p0), dimensions={1,0}
  p1 = f32[64,100] parameter(1)
  small = f32[100,64] transpose(p1), dimensions={1,0}
  p2 = f32[64,512,128] parameter(2)
  keeps_minor = f32[512,64,128] transpose(p2), dimensions={1,0,2}
  p3 = f32[2,1024,512,1] parameter(3)
  unit_minor = f32[2,512,1024,1] transpose(p3), dimensions={0,2,1,3}
  ROOT t = (f32[512,1024], f32[100,64], f32[512,64,128], f32[2,512,1024,1]) tuple(big, small, keeps_minor, unit_minor)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  for (const char* name : {"big", "small", "keeps_minor", "unit_minor"}) {
    ASSERT_NE(ParamOf(*lowered, name, "block"), nullptr) << name;
  }
  EXPECT_EQ(ParamOf(*lowered, "big", "block")->choices, (std::vector<int64_t>{32, 0, 16, 64}));
  // A unit minor dimension does not count: the operand's innermost longer one (512) moves.
  EXPECT_EQ(ParamOf(*lowered, "unit_minor", "block")->choices,
            (std::vector<int64_t>{32, 0, 16, 64}));
  EXPECT_EQ(ParamOf(*lowered, "small", "block")->choices, (std::vector<int64_t>{0, 16, 32}));
  // 16 MB, but its rows of 128 stay rows: block=0 stays the default.
  EXPECT_EQ(ParamOf(*lowered, "keeps_minor", "block")->choices,
            (std::vector<int64_t>{0, 16, 32, 64}));
  const Kernel& big = lowered->kernels[static_cast<size_t>(KernelNamed(*lowered, "big"))];
  const KernelConfig defaults = DefaultConfig(big);
  for (size_t i = 0; i < big.params.size(); ++i) {
    if (big.params[i].name == "block") {
      EXPECT_EQ(defaults[i], 32);
    }
  }
}

// `unroll` only where an inner loop is longer than kShortInnerLoop: on shorter constant loops GCC
// unrolls and vectorizes by itself, and a partial unroll stopped that (a [2048,20,4] compare ran
// 75-108 us with unroll 2 against 12-19 us). A stored configuration asking for it there gets
// unroll=1's code.
TEST(CpuOpsLoopTest, UnrollIsOfferedOnlyForLongInnerLoops) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kLoopShapes);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  for (const char* name : {"narrow", "strip", "wide", "flat"}) {
    ASSERT_NE(ParamOf(*lowered, name, "unroll"), nullptr) << name;
  }
  EXPECT_EQ(ParamOf(*lowered, "narrow", "unroll")->choices, (std::vector<int64_t>{1}));
  EXPECT_EQ(ParamOf(*lowered, "strip", "unroll")->choices, (std::vector<int64_t>{1}));
  EXPECT_EQ(ParamOf(*lowered, "wide", "unroll")->choices, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(ParamOf(*lowered, "flat", "unroll")->choices, (std::vector<int64_t>{1, 2, 4, 8}));

  absl::StatusOr<Program> with_1 = KernelWith(*lowered, "narrow", "unroll", 1);
  absl::StatusOr<Program> with_2 = KernelWith(*lowered, "narrow", "unroll", 2);
  ASSERT_TRUE(with_1.ok()) << with_1.status();
  ASSERT_TRUE(with_2.ok()) << with_2.status();
  EXPECT_EQ(with_2->source, with_1->source);
  // On the long row the factor reaches the code.
  absl::StatusOr<Program> flat_4 = KernelWith(*lowered, "flat", "unroll", 4);
  ASSERT_TRUE(flat_4.ok()) << flat_4.status();
  EXPECT_NE(flat_4->source.find("#pragma GCC unroll 4"), std::string::npos) << flat_4->source;
}

// Which convolutions get oneDNN's primitive: impl 3 (oneDNN's layouts) for every conv case above,
// impl 2 (the buffers as they are) only where oneDNN has a kernel for those layouts, and neither
// for a convolution with base (lhs) dilation, which oneDNN's forward convolution does not have.
// The primitive is the default where offered: plain layouts on 1x1 windows, blocked elsewhere.
// oneDNN runs its reference loops on other plain layouts: a training step's weight gradient
// (f01b_i01o->01bf) measured 4-7 ms there against 16-160 us for the other impls.
TEST(CpuOpsImplTest, ConvolutionPrimitiveIsOfferedWhereOneDnnComputesIt) {
  auto impls = [](const std::string& hlo) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(hlo);
    EXPECT_TRUE(module.ok()) << module.status();
    absl::StatusOr<LoweredModule> lowered = Lower(**module);
    EXPECT_TRUE(lowered.ok()) << lowered.status();
    for (const Kernel& k : lowered->kernels) {
      for (const KernelParam& p : k.params) {
        if (k.kind == KernelKind::kConvolution && p.name == "impl") return p.choices;
      }
    }
    return std::vector<int64_t>{};
  };
  // The choices in numeric order, and the default apart.
  auto sorted = [&](const std::string& hlo) {
    std::vector<int64_t> v = impls(hlo);
    std::sort(v.begin(), v.end());
    return v;
  };
  const bool dnnl = OneDnnAvailable();
  const std::vector<int64_t> all =
      dnnl ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{0};
  const std::vector<int64_t> blocked_only =
      dnnl ? std::vector<int64_t>{0, 1, 3} : std::vector<int64_t>{0};
  for (const Case& c : kCases) {
    const std::string name = c.name;
    if (name.rfind("conv_", 0) != 0) continue;
    // oneDNN's primitive has no batch groups: the im2col GEMM, generated or dnnl_sgemm.
    if (std::string(c.hlo).find("batch_group_count") != std::string::npos) {
      const std::vector<int64_t> gemms =
          dnnl ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
      EXPECT_EQ(sorted(c.hlo), gemms) << name;
      continue;
    }
    // Depthwise: the generated depthwise kernel besides, and the default.
    if (name.rfind("conv_depthwise", 0) == 0) {
      std::vector<int64_t> with_depthwise = all;
      with_depthwise.push_back(kDepthwiseImpl);
      EXPECT_EQ(sorted(c.hlo), with_depthwise) << name;
      EXPECT_EQ(impls(c.hlo).front(), kDepthwiseImpl) << name;
      continue;
    }
    // Groups of 4k output channels: the generated grouped kernel besides, the default on groups
    // of 8 and 16.
    if (name.rfind("conv_grouped", 0) == 0 && name != "conv_grouped_strided_relu") {
      const std::vector<int64_t> offered = impls(c.hlo);
      EXPECT_EQ(std::count(offered.begin(), offered.end(), kGroupedImpl), 1) << name;
      const bool preferred = name != "conv_grouped_four_wide";
      EXPECT_EQ(offered.front() == kGroupedImpl, preferred) << name;
      continue;
    }
    // Grouped, with the input's batch and feature dimensions swapped (fb01): no plain kernel.
    EXPECT_EQ(sorted(c.hlo), name == "conv_grouped_strided_relu" ? blocked_only : all) << name;
    EXPECT_EQ(impls(c.hlo).front(), dnnl ? 3 : 0) << name;
  }
  // A weight gradient as JAX writes it: the batch is the contraction, the image the window.
  EXPECT_EQ(sorted(R"(
HloModule m
ENTRY e {
  x = f32[4,8,8,3] parameter(0)
  dy = f32[4,8,8,5] parameter(1)
  ROOT dw = f32[3,3,3,5] convolution(x, dy), window={size=8x8 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
})"),
            blocked_only);
  // An input gradient: NHWC, but the weights' output and input features swapped (01oi).
  EXPECT_EQ(sorted(R"(
HloModule m
ENTRY e {
  dy = f32[4,8,8,5] parameter(0)
  w = f32[3,3,3,5] parameter(1)
  ROOT dx = f32[4,8,8,3] convolution(dy, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01oi->b01f
})"),
            blocked_only);
  const std::vector<int64_t> gemm_only =
      dnnl ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
  EXPECT_EQ(impls(R"(
HloModule m
ENTRY e {
  x = f32[1,3,5,5] parameter(0)
  w = f32[4,3,2,2] parameter(1)
  ROOT c = f32[1,4,8,8] convolution(x, w), window={size=2x2 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01
})"),
            gemm_only);
  // A pointwise layer in NHWC: plain layouts by default.
  EXPECT_EQ(impls(R"(
HloModule m
ENTRY e {
  x = f32[1,7,7,64] parameter(0)
  w = f32[1,1,64,32] parameter(1)
  ROOT c = f32[1,7,7,32] convolution(x, w), window={size=1x1}, dim_labels=b01f_01io->b01f
})")
                .front(),
            dnnl ? 2 : 0);
}

// Two convolution kernels in one program, on the primitive and on dnnl_sgemm at once (the
// one-parameter-at-a-time sweep above never combines them): oneDNN's header and the prelude's
// own dnnl_sgemm declaration must agree, and each kernel keeps its own primitive.
TEST(CpuOpsImplTest, ConvolutionImplsMixWithinOneProgram) {
  if (!OneDnnAvailable()) GTEST_SKIP() << "oneDNN is not available";
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
ENTRY e {
  x = f32[1,4,10,10] parameter(0)
  w1 = f32[6,4,3,3] parameter(1)
  w2 = f32[5,6,3,3] parameter(2)
  c1 = f32[1,6,10,10] convolution(x, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  z = f32[] constant(0)
  zb = f32[1,6,10,10] broadcast(z), dimensions={}
  r = f32[1,6,10,10] maximum(c1, zb)
  ROOT c2 = f32[1,5,4,4] convolution(r, w2), window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  for (const auto& [first, second] :
       std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {3, 2}, {2, 1}, {1, 3}, {0, 3}}) {
    std::vector<KernelConfig> configs = compiled->configs;
    int64_t next = first;
    for (size_t k = 0; k < compiled->lowered.kernels.size(); ++k) {
      const Kernel& kernel = compiled->lowered.kernels[k];
      if (kernel.kind != KernelKind::kConvolution) continue;
      ASSERT_EQ(kernel.params[0].name, "impl");
      configs[k][0] = next;
      next = second;
    }
    absl::StatusOr<CompiledModule> variant = CompileModule(**module, configs);
    ASSERT_TRUE(variant.ok()) << variant.status();
    absl::Status s = CheckAgainstEvaluator(**module, *variant, 5);
    EXPECT_TRUE(s.ok()) << "impls " << first << ", " << second << ": " << s;
  }
}

std::vector<const char*> CaseNames() {
  std::vector<const char*> names;
  for (const Case& c : kCases) names.push_back(c.name);
  return names;
}

// A while that is the root and one of whose leaves nothing reads: the lowering refuses it, naming
// the form it needs, until NormalizeTupleUses (the end of RunCpuPasses) gives every leaf a
// get-tuple-element; then it runs and matches the evaluator.
TEST(CpuOpsTupleTest, TupleValuesAreNormalizedBeforeLowering) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
c {
  cp = (s32[], f32[6]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  cn = s32[] constant(3)
  ROOT lt = pred[] compare(ci, cn), direction=LT
}
b {
  bp = (s32[], f32[6]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[6] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  bi1 = s32[] add(bi, one)
  bx1 = f32[6] sine(bx)
  ROOT r = (s32[], f32[6]) tuple(bi1, bx1)
}
ENTRY e {
  x = f32[6] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[6]) tuple(z, x)
  ROOT w = (s32[], f32[6]) while(init), condition=c, body=b
})");
  ASSERT_TRUE(module.ok()) << module.status();
  const absl::Status refused = CheckSupported(**module);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(refused.message().find("NormalizeTupleUses"), std::string::npos) << refused;
  NormalizeTupleUses(**module);
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_TRUE(CheckAgainstEvaluator(**module, *compiled, 3).ok());
}

// Generated code runs under XLA CPU's floating-point environment: subnormal results flush to
// zero (FTZ) and subnormal inputs read as zero (DAZ). The values come in as parameters, so the
// C++ compiler cannot fold them under its own (IEEE) rules.
TEST(CpuFloatEnvTest, SubnormalsFlushToZeroAsOnXlaCpu) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT p = f32[3] multiply(x, y)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto literal = [](std::vector<float> v) {
    absl::StatusOr<ir::Literal> l = ir::Literal::Create(ir::Shape(ir::PrimitiveType::kF32, {3}));
    std::memcpy(l->untyped_data(), v.data(), v.size() * sizeof(float));
    return *std::move(l);
  };
  // 1e-20 * 1e-20 is subnormal (FTZ); 1e-40 is a subnormal input (DAZ); 2 * 3 stays.
  absl::StatusOr<std::vector<ir::Literal>> out =
      Execute(compiled->object, compiled->program,
              {literal({1e-20f, 1e-40f, 2.0f}), literal({1e-20f, 1e30f, 3.0f})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  float got[3];
  std::memcpy(got, (*out)[0].untyped_data(), sizeof(got));
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 0.0f);
  EXPECT_EQ(got[2], 6.0f);
}

// A broadcast and a convert of an iota that two kernels read (CSE merged the copies) are
// duplicated into each of them by the cpu pipeline instead of being materialized: two kernels,
// the reduction and the loop after it, and the result still matches the evaluator.
TEST(CpuOpsFusionTest, SharedBroadcastsAreFusedIntoEachConsumer) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,256] parameter(0)
  half = f32[] constant(0.5)
  h = f32[64,256] broadcast(half), dimensions={}
  io = s32[64,256] iota(), iota_dimension=1
  iof = f32[64,256] convert(io)
  m = f32[64,256] multiply(x, h)
  m2 = f32[64,256] add(m, iof)
  zero = f32[] constant(0)
  r = f32[256] reduce(m2, zero), dimensions={0}, to_apply=add
  rb = f32[64,256] broadcast(r), dimensions={1}
  rx = f32[64,256] add(rb, x)
  t = f32[64,256] maximum(rx, h)
  ROOT u = f32[64,256] add(t, iof)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**optimized);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  std::vector<std::string> kernels;
  for (const Kernel& k : compiled->lowered.kernels) kernels.push_back(k.name);
  EXPECT_EQ(kernels.size(), 2u) << absl::StrJoin(kernels, ", ");
  EXPECT_TRUE(CheckAgainstEvaluator(**module, *compiled, 5).ok());
}

// An expression that a reduce-window reads is not copied into it: the window would compute it
// once per window holding each element. It stays one kernel that both consumers read.
TEST(CpuOpsFusionTest, ExpressionsReadByWindowsStayMaterialized) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  x = s32[729] parameter(0)
  io = s32[729] iota(), iota_dimension=0
  three = s32[] constant(3)
  tb = s32[729] broadcast(three), dimensions={}
  m = s32[729] multiply(io, tb)
  zero = s32[] constant(0)
  c = s32[729] reduce-window(m, zero), window={size=729 pad=728_0}, to_apply=add
  y = s32[729] add(x, m)
  ROOT t = (s32[729], s32[729]) tuple(c, y)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  int multiplies = 0;
  for (const ir::Instruction* i : (*optimized)->entry()->MakePostOrder()) {
    multiplies += i->opcode() == ir::Opcode::kMultiply ? 1 : 0;
  }
  EXPECT_EQ(multiplies, 1);
}

using testing::JaxlibDescriptor;

// JAX's LAPACK-style custom-calls (run by the runner's runtime routines) and HLO's
// triangular-solve, on a symmetric positive definite batch built in the module, match the
// evaluator: Cholesky (lower and upper), batched LU with its pivots as a permutation, QR and Q,
// and triangular solves from either side.
TEST(CpuOpsLinalgTest, LapackStyleCallsMatchTheEvaluator) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  const std::string text = absl::StrCat(
      R"(
HloModule m
ENTRY e {
  x = f32[2,4,4] parameter(0)
  y = f32[2,4,3] parameter(1)
  xt = f32[2,4,4] transpose(x), dimensions={0,2,1}
  gf = f32[2,4,4] dot(x, xt), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  g = f64[2,4,4] convert(gf)
  four = f64[] constant(4)
  i = s32[2,4,4] iota(), iota_dimension=1
  j = s32[2,4,4] iota(), iota_dimension=2
  diag = pred[2,4,4] compare(i, j), direction=EQ
  fb = f64[2,4,4] broadcast(four), dimensions={}
  zero = f64[] constant(0)
  zb = f64[2,4,4] broadcast(zero), dimensions={}
  d = f64[2,4,4] select(diag, fb, zb)
  spd = f64[2,4,4] add(g, d)
  lo = (f64[2,4,4], s32[2], s8[64]) custom-call(spd), custom_call_target="cusolver_potrf", backend_config=)",
      JaxlibDescriptor({{1, 4}, {0, 4}, {2, 8}, {4, 8}, {0, 4}}),
      R"(
  up = (f64[2,4,4], s32[2], s8[64]) custom-call(spd), custom_call_target="cusolver_potrf", backend_config=)",
      JaxlibDescriptor({{1, 4}, {1, 4}, {2, 8}, {4, 8}, {0, 4}}),
      R"(
  l = f64[2,4,4] get-tuple-element(lo), index=0
  li = s32[2] get-tuple-element(lo), index=1
  lw = s8[64] get-tuple-element(lo), index=2
  u = f64[2,4,4] get-tuple-element(up), index=0
  ui = s32[2] get-tuple-element(up), index=1
  uw = s8[64] get-tuple-element(up), index=2
  yf = f32[2,4,3] negate(y)
  xf = f32[2,4,4] negate(x)
  lu = (f32[2,4,4], s32[2,4], s32[2], s8[32]) custom-call(xf), custom_call_target="cublas_getrf_batched", backend_config=)",
      JaxlibDescriptor({{0, 4}, {2, 4}, {4, 4}}), R"(
  f = f32[2,4,4] get-tuple-element(lu), index=0
  piv = s32[2,4] get-tuple-element(lu), index=1
  info = s32[2] get-tuple-element(lu), index=2
  luw = s8[32] get-tuple-element(lu), index=3
  one = s32[] constant(1)
  ones = s32[2,4] broadcast(one), dimensions={}
  piv0 = s32[2,4] subtract(piv, ones)
  perm = s32[2,4] custom-call(piv0), custom_call_target="cuda_lu_pivots_to_permutation", backend_config=)",
      JaxlibDescriptor({{2, 8}, {4, 4}, {4, 4}}), R"(
  qr = (f32[2,4,3], f32[2,3], s32[2], s8[16]) custom-call(yf), custom_call_target="cusolver_geqrf", backend_config=)",
      JaxlibDescriptor({{0, 4}, {2, 4}, {4, 4}, {3, 4}, {0, 4}}),
      R"(
  r = f32[2,4,3] get-tuple-element(qr), index=0
  tau = f32[2,3] get-tuple-element(qr), index=1
  qi = s32[2] get-tuple-element(qr), index=2
  qw = s8[16] get-tuple-element(qr), index=3
  q = (f32[2,4,3], s32[2], s8[16]) custom-call(r, tau), custom_call_target="cusolver_orgqr", backend_config=)",
      JaxlibDescriptor({{0, 4}, {2, 4}, {4, 4}, {3, 4}, {3, 4}, {0, 4}}),
      R"(
  qq = f32[2,4,3] get-tuple-element(q), index=0
  oi = s32[2] get-tuple-element(q), index=1
  ow = s8[16] get-tuple-element(q), index=2
  lf = f32[2,4,4] convert(l)
  ts = (f32[2,4,3], s8[8], s8[8]) custom-call(lf, yf), custom_call_target="cublas_trsm_batched", backend_config=)",
      JaxlibDescriptor({{0, 4}, {2, 4}, {4, 4}, {3, 4}, {0, 4}, {0, 4}, {1, 4}, {0, 4}}),
      R"(
  sx = f32[2,4,3] get-tuple-element(ts), index=0
  sw1 = s8[8] get-tuple-element(ts), index=1
  sw2 = s8[8] get-tuple-element(ts), index=2
  xd = f64[2,4,4] convert(x)
  yt = f64[2,4,4] transpose(xd), dimensions={0,2,1}
  yt3 = f64[2,3,4] slice(yt), slice={[0:2], [0:3], [0:4]}
  hs = f64[2,3,4] triangular-solve(u, yt3), left_side=false, lower=false, unit_diagonal=false, transpose_a=NO_TRANSPOSE
  ROOT t = (f64[2,4,4], s32[2], f64[2,4,4], s32[2], f32[2,4,4], s32[2,4], s32[2], s32[2,4], f32[2,4,3], f32[2,3], f32[2,4,3], f32[2,4,3], f64[2,3,4]) tuple(l, li, u, ui, f, piv, info, perm, r, tau, qq, sx, hs)
})");
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  int64_t library = 0;
  for (const Kernel& k : compiled->lowered.kernels) library += k.kind == KernelKind::kLibrary;
  EXPECT_EQ(library, 8);
  absl::Status check = CheckAgainstEvaluator(**module, *compiled, 5);
  EXPECT_TRUE(check.ok()) << check;
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuOpsTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace mltune::backends::cpu
