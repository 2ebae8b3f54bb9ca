// The GEMM parameters a dot or convolution kernel offers are those that can change its program:
// a matrix-vector product has no register tile or cache blocks, a cache block as large as its
// dimension stands for every larger one, and a oneDNN call (impl >= 1) ignores the generated
// GEMM's parameters and `parallel`. Checked on the generated source itself (configurations said
// to be one program must generate one text, and the ones kept apart must not), and on the tile
// problem, which measures each program once and ranks repeats last.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/codegen.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/lowering.h"
#include "backends/cpu/onednn.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::backends::cpu {
namespace {

std::unique_ptr<ir::Module> Parse(const std::string& hlo) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(hlo);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

// The lowered module's first kernel of `kind`.
const Kernel* First(const LoweredModule& lowered, KernelKind kind) {
  for (const Kernel& k : lowered.kernels) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

std::vector<std::string> Names(const Kernel& k) {
  std::vector<std::string> names;
  for (const KernelParam& p : k.params) names.push_back(p.name);
  return names;
}

const KernelParam* Find(const std::vector<KernelParam>& params, const std::string& name) {
  for (const KernelParam& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// The kernel's defaults with the named values set (values outside its choices too: the
// generator takes any value).
KernelConfig With(const Kernel& k, const std::vector<std::pair<std::string, int64_t>>& values) {
  KernelConfig c = DefaultConfig(k);
  for (const auto& [name, value] : values) {
    bool found = false;
    for (size_t p = 0; p < k.params.size(); ++p) {
      if (k.params[p].name == name) c[p] = value, found = true;
    }
    EXPECT_TRUE(found) << "kernel " << k.name << " has no parameter " << name;
  }
  return c;
}

// A [64, 300] x [300, 2000] product: m under the largest mc, k between kc's choices.
constexpr char kWide[] = R"(
HloModule m
ENTRY e {
  a = f32[64,300] parameter(0)
  b = f32[300,2000] parameter(1)
  ROOT d = f32[64,2000] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

// kWide lowered: its dot kernel `k` of `lowered`.
class WideDotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m = Parse(kWide);
    ASSERT_NE(m, nullptr);
    lowered = Lower(*m);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    k = First(*lowered, KernelKind::kDot);
    ASSERT_NE(k, nullptr);
  }
  std::unique_ptr<ir::Module> m;
  absl::StatusOr<LoweredModule> lowered = absl::UnknownError("not lowered");
  const Kernel* k = nullptr;
};

TEST(GemmShapeTest, DotsAndConvolutionsByTheirDimensionNumbers) {
  std::unique_ptr<ir::Module> dot = Parse(R"(
HloModule m
ENTRY e {
  a = f32[4,300,8] parameter(0)
  b = f32[4,64,300] parameter(1)
  ROOT d = f32[4,8,64] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={2}
})");
  ASSERT_NE(dot, nullptr);
  const GemmShape s = GemmShapeOf(*dot->entry()->root());
  EXPECT_EQ(s.batch, 4);
  EXPECT_EQ(s.m, 8);
  EXPECT_EQ(s.n, 64);
  EXPECT_EQ(s.k, 300);
  EXPECT_FALSE(s.matrix_vector());

  // Two groups of 3 input and 2 output channels, a 3x3 window over 10x10 without padding.
  std::unique_ptr<ir::Module> conv = Parse(R"(
HloModule m
ENTRY e {
  x = f32[2,6,10,10] parameter(0)
  w = f32[4,3,3,3] parameter(1)
  ROOT c = f32[2,4,8,8] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=2
})");
  ASSERT_NE(conv, nullptr);
  const GemmShape c = GemmShapeOf(*conv->entry()->root());
  EXPECT_EQ(c.batch, 2);
  EXPECT_EQ(c.m, 2 * 8 * 8);
  EXPECT_EQ(c.k, 3 * 3 * 3);
  EXPECT_EQ(c.n, 2);
}

TEST(GemmShapeTest, ParamsKeepOnlyChoicesThatChangeTheBlocking) {
  EXPECT_TRUE(GemmParamsFor({.batch = 1000, .m = 1, .n = 1, .k = 3072}).empty());
  EXPECT_TRUE(GemmParamsFor({.batch = 1, .m = 512, .n = 1, .k = 512}).empty());
  EXPECT_TRUE(GemmParamsFor({.batch = 1, .m = 1, .n = 512, .k = 512}).empty());

  const std::vector<KernelParam> p = GemmParamsFor({.batch = 1, .m = 64, .n = 2000, .k = 100});
  ASSERT_NE(Find(p, "micro"), nullptr);
  EXPECT_EQ(Find(p, "micro")->choices, (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_NE(Find(p, "mc"), nullptr);
  EXPECT_EQ(Find(p, "mc")->choices, (std::vector<int64_t>{96, 48}));
  EXPECT_EQ(Find(p, "kc"), nullptr);  // every kc covers k = 100 in one block
  ASSERT_NE(Find(p, "nc"), nullptr);
  EXPECT_EQ(Find(p, "nc")->choices, (std::vector<int64_t>{1024, 256, 512, 2048}));

  const std::vector<KernelParam> big = GemmParamsFor({.batch = 1, .m = 999, .n = 9999, .k = 300});
  EXPECT_EQ(Find(big, "mc")->choices, (std::vector<int64_t>{96, 48, 192, 384}));
  EXPECT_EQ(Find(big, "kc")->choices, (std::vector<int64_t>{256, 128, 384}));
  EXPECT_EQ(Find(big, "nc")->choices, (std::vector<int64_t>{1024, 256, 512, 2048, 4096}));
  for (const KernelParam& q : GemmParams()) {
    EXPECT_TRUE(IsGemmParam(q.name));
    EXPECT_EQ(GemmParamDefault(q.name), q.choices.front());
  }
  EXPECT_FALSE(IsGemmParam("parallel"));
}

TEST(GemmParamsTest, ABatchOfDotProductsOffersNoTileOrBlocks) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule m
ENTRY e {
  a = f32[1000,3072] parameter(0)
  b = f32[1000,3072] parameter(1)
  ROOT d = f32[1000] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_contracting_dims={1}
})");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<LoweredModule> lowered = Lower(*m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const Kernel* k = First(*lowered, KernelKind::kDot);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(Names(*k), (std::vector<std::string>{"impl", "parallel"}));
}

TEST_F(WideDotTest, BlocksAsLargeAsTheMatrixGenerateOneProgram) {
  EXPECT_EQ(Find(k->params, "mc")->choices, (std::vector<int64_t>{96, 48}));
  EXPECT_EQ(Find(k->params, "kc")->choices, (std::vector<int64_t>{256, 128, 384}));
  // The generator accepts only offered values: a copy of the kernel offers every one.
  LoweredModule unpruned = *lowered;
  Kernel& full = unpruned.kernels[static_cast<size_t>(k->id)];
  full.params = {{"impl", {0}}};
  for (const KernelParam& p : GemmParams()) full.params.push_back(p);
  full.params.push_back({"parallel", {0, 1}});
  auto source = [&](const std::vector<std::pair<std::string, int64_t>>& values) {
    absl::StatusOr<Program> p = GenerateKernel(unpruned, full.id, With(full, values));
    EXPECT_TRUE(p.ok()) << p.status().message().substr(0, 200);
    return p.ok() ? p->source : std::string();
  };
  // Dropped choices: the same program as the kept one that stands for them.
  // (Compared as booleans: a failure would print two whole programs.)
  EXPECT_TRUE(source({{"mc", 384}}) == source({{"mc", 96}}));
  EXPECT_TRUE(source({{"kc", 512}}) == source({{"kc", 384}}));
  EXPECT_TRUE(source({{"nc", 4096}}) == source({{"nc", 2048}}));
  // Kept choices: different programs.
  EXPECT_FALSE(source({{"mc", 48}}) == source({{"mc", 96}}));
  EXPECT_FALSE(source({{"kc", 128}}) == source({{"kc", 256}}));
  EXPECT_FALSE(source({{"kc", 384}}) == source({{"kc", 256}}));
  EXPECT_FALSE(source({{"nc", 1024}}) == source({{"nc", 2048}}));
  EXPECT_FALSE(source({{"micro", 3}}) == source({{"micro", 0}}));
}

TEST_F(WideDotTest, OneDnnCallsIgnoreTheGeneratedGemmsParameters) {
  if (!OneDnnAvailable()) GTEST_SKIP() << "oneDNN is not available";
  const KernelConfig library = With(*k, {{"impl", 1}, {"micro", 3}, {"mc", 48}, {"parallel", 1}});
  const KernelConfig canonical = CanonicalConfig(*k, library);
  EXPECT_EQ(canonical, With(*k, {{"impl", 1}}));
  EXPECT_TRUE(GenerateKernel(*lowered, k->id, library)->source ==
              GenerateKernel(*lowered, k->id, canonical)->source);
  // The generated GEMM keeps them all.
  const KernelConfig generated = With(*k, {{"impl", 0}, {"micro", 3}, {"mc", 48}, {"parallel", 1}});
  EXPECT_EQ(CanonicalConfig(*k, generated), generated);
  // A config of the wrong length comes back unchanged.
  EXPECT_EQ(CanonicalConfig(*k, {1}), (KernelConfig{1}));
}

TEST_F(WideDotTest, TileProblemMeasuresEachProgramOnceAndRanksRepeatsLast) {
  if (!OneDnnAvailable()) GTEST_SKIP() << "oneDNN is not available";
  std::vector<KernelConfig> measured;
  opt::tiling::CpuTileProblem problem(
      *lowered, [&](int32_t, const KernelConfig& c) -> absl::StatusOr<double> {
        measured.push_back(c);
        return 1e-3;
      });
  // Settings as choice indices of the kernel's parameters, from impl's value (the default
  // rule orders its choices) and micro's index.
  auto setting = [&](int64_t impl, int64_t micro) {
    opt::Candidate s(k->params.size(), 0);
    for (size_t p = 0; p < k->params.size(); ++p) {
      const std::vector<int64_t>& c = k->params[p].choices;
      if (k->params[p].name == "impl") s[p] = std::find(c.begin(), c.end(), impl) - c.begin();
      if (k->params[p].name == "micro") s[p] = micro;
    }
    return s;
  };
  ASSERT_EQ(problem.Parts().size(), 1u);
  for (int64_t micro = 0; micro < 4; ++micro) {
    EXPECT_DOUBLE_EQ(problem.Evaluate(setting(1, micro)), 1e-3);
  }
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0], With(*k, {{"impl", 1}}));
  EXPECT_EQ(problem.Decode(setting(1, 2))[static_cast<size_t>(k->id)], With(*k, {{"impl", 1}}));

  std::vector<KernelConfig> ranked;
  problem.SetRanker([&](int32_t, const std::vector<KernelConfig>& configs) {
    ranked = configs;
    return absl::StatusOr<std::vector<double>>(std::vector<double>(configs.size(), 1.0));
  });
  absl::StatusOr<std::vector<double>> scores =
      problem.RankSettings(0, {setting(0, 0), setting(1, 0), setting(1, 3), setting(0, 3)});
  ASSERT_TRUE(scores.ok()) << scores.status();
  ASSERT_EQ(ranked.size(), 4u);
  EXPECT_EQ(ranked[2], ranked[1]);  // the ranker sees canonical configurations
  // Each implementation's best is a must-try; the repeat of impl 1 goes last; micro 3 is its own.
  EXPECT_EQ((*scores)[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ((*scores)[1], -std::numeric_limits<double>::infinity());
  EXPECT_EQ((*scores)[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ((*scores)[3], 1.0);
}

}  // namespace
}  // namespace mltune::backends::cpu
