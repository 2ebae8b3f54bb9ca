// The CPU backend's execution machinery: the corpus modules it supports run and match the
// evaluator; a crashing or hanging candidate is reported, never fatal; the kernel cache answers a
// second compile of the same source; the tile and fusion problems score real measurements.
#include <cstdlib>
#include <limits>
#include <numeric>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/tiling/cpu_tile_problem.h"
#include "tests/support/corpus.h"

namespace mltune::backends::cpu {
namespace {

class CpuRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

Program HandWritten(const std::string& body) {
  Program p;
  p.source = absl::StrCat(
      "#include <cstdint>\n#include <unistd.h>\nextern \"C\" int64_t mltune_scratch_bytes() { "
      "return 0; }\nextern \"C\" void mltune_entry(void* const* args, void* const* results, char* "
      "scratch) {\n",
      body, "\n}\n");
  p.params = {ir::Shape(ir::PrimitiveType::kF32, {4})};
  p.results = {ir::Shape(ir::PrimitiveType::kF32, {4})};
  return p;
}

TEST_F(CpuRuntimeTest, CrashingCandidateIsReportedAndTheCallerLives) {
  const Program p = HandWritten("  *(volatile int*)nullptr = 1; (void)args; (void)results;");
  absl::StatusOr<CompiledObject> obj = CompileProgram(p);
  ASSERT_TRUE(obj.ok()) << obj.status();
  absl::StatusOr<Timing> t = Measure(*obj, p, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(t.status().message().find("signal 11"), std::string::npos) << t.status();
}

TEST_F(CpuRuntimeTest, HangingCandidateIsKilledAtItsDeadline) {
  const Program p = HandWritten("  (void)args; (void)results; for (;;) pause();");
  absl::StatusOr<CompiledObject> obj = CompileProgram(p);
  ASSERT_TRUE(obj.ok()) << obj.status();
  MeasureOptions options;
  options.timeout_seconds = 1;
  absl::StatusOr<Timing> t = Measure(*obj, p, 0, options);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("timed out"), std::string::npos) << t.status();
}

TEST_F(CpuRuntimeTest, MemoryHungryCandidateFailsWithinItsLimit) {
  const Program p = HandWritten(
      "  (void)args; (void)results; char* x = new char[size_t{64} << 30]; x[0] = 1; "
      "*(volatile char*)x;");
  absl::StatusOr<CompiledObject> obj = CompileProgram(p);
  ASSERT_TRUE(obj.ok()) << obj.status();
  MeasureOptions options;
  options.memory_limit_mb = 512;
  absl::StatusOr<Timing> t = Measure(*obj, p, 0, options);
  EXPECT_FALSE(t.ok());
}

TEST_F(CpuRuntimeTest, KernelCacheAnswersTheSameSourceAndCompilerErrorsAreClear) {
  const Program p = HandWritten("  (void)args; (void)results; /* cache test */");
  absl::StatusOr<CompiledObject> first = CompileProgram(p);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<CompiledObject> second = CompileProgram(p);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(first->path, second->path);
  absl::StatusOr<CompiledObject> bad = CompileProgram(HandWritten("  this is not C++;"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("compiling generated code failed"), std::string::npos);
}

TEST_F(CpuRuntimeTest, UnsupportedOpsAreNamedWithTheirLine) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  ROOT s = f32[4] reduce-precision(a), exponent_bits=5, mantissa_bits=10
})");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::Status s = CheckSupported(**m);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("reduce-precision 's' (line 5)"), std::string::npos) << s;
}

constexpr char kMlp[] = R"(
HloModule mlp
add {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  ROOT a2 = f32[] add(a0, a1)
}
ENTRY e {
  x = f32[32,64] parameter(0)
  w = f32[64,48] parameter(1)
  b = f32[48] parameter(2)
  d = f32[32,48] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[32,48] broadcast(b), dimensions={1}
  s = f32[32,48] add(d, bb)
  t = f32[32,48] tanh(s)
  z = f32[] constant(0)
  ROOT r = f32[32] reduce(t, z), dimensions={1}, to_apply=add
})";

TEST_F(CpuRuntimeTest, TileProblemScoresMeasuredKernelsAndTunedConfigsStayCorrect) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kMlp);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  MeasureOptions measure;
  measure.max_seconds = 0.01;
  int calls = 0;
  opt::tiling::CpuTileProblem problem(
      *lowered, [&](int32_t k, const KernelConfig& c) -> absl::StatusOr<double> {
        ++calls;
        absl::StatusOr<Timing> t = MeasureKernel(*lowered, k, c, {}, measure);
        if (!t.ok()) return t.status();
        return t->median_s;
      });
  const double base = problem.Evaluate(problem.DefaultCandidate());
  EXPECT_GT(base, 0);
  EXPECT_LT(base, 0.01);
  EXPECT_EQ(calls, static_cast<int>(lowered->kernels.size()));
  // Measured once per (kernel, configuration).
  EXPECT_EQ(problem.Evaluate(problem.DefaultCandidate()), base);
  EXPECT_EQ(calls, static_cast<int>(lowered->kernels.size()));
  opt::Candidate other = problem.DefaultCandidate();
  other.back() = 1;  // the last kernel's last parameter
  (void)problem.Evaluate(other);
  EXPECT_EQ(calls, static_cast<int>(lowered->kernels.size()) + 1);
  absl::StatusOr<CompiledModule> compiled = CompileModule(**m, problem.Decode(other));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_TRUE(CheckAgainstEvaluator(**m, *compiled, 3).ok());
}

// model-topk's view of the problem: one part per kernel with parameters, and rankings of a
// part's settings passed to the ranker as that kernel's configurations.
TEST_F(CpuRuntimeTest, TileProblemPartsAreKernelsAndRankingsReachTheRankerAsConfigs) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kMlp);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  opt::tiling::CpuTileProblem problem(
      *lowered, [](int32_t, const KernelConfig&) -> absl::StatusOr<double> { return 1.0; });
  const std::vector<std::vector<int64_t>> parts = problem.Parts();
  int64_t positions = 0, tunable = 0;
  for (const Kernel& k : lowered->kernels) tunable += k.params.empty() ? 0 : 1;
  ASSERT_EQ(static_cast<int64_t>(parts.size()), tunable);
  for (const std::vector<int64_t>& part : parts) {
    for (int64_t p : part) EXPECT_EQ(p, positions++);  // in order, each position once
  }
  EXPECT_EQ(positions, problem.space().max_length);

  EXPECT_EQ(problem.RankSettings(0, {}).status().code(), absl::StatusCode::kFailedPrecondition);
  std::vector<std::pair<int32_t, std::vector<KernelConfig>>> asked;
  problem.SetRanker(
      [&](int32_t kernel,
          const std::vector<KernelConfig>& configs) -> absl::StatusOr<std::vector<double>> {
        asked.emplace_back(kernel, configs);
        return std::vector<double>(configs.size(), 0.0);
      });
  const std::vector<int64_t>& first = parts[0];
  opt::Candidate zero(first.size(), 0), one(first.size(), 0);
  one.back() = 1;
  absl::StatusOr<std::vector<double>> ranks = problem.RankSettings(0, {zero, one});
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  EXPECT_EQ(ranks->size(), 2u);
  ASSERT_EQ(asked.size(), 1u);
  // The settings decode as the whole candidate would: defaults, then one parameter changed.
  opt::Candidate whole = problem.DefaultCandidate();
  whole[static_cast<size_t>(first.back())] = 1;
  const int32_t kernel = asked[0].first;
  EXPECT_EQ(asked[0].second[0], problem.Decode(problem.DefaultCandidate())[kernel]);
  EXPECT_EQ(asked[0].second[1], problem.Decode(whole)[kernel]);
  // Malformed settings are errors, not out-of-range reads.
  EXPECT_EQ(problem.RankSettings(0, {opt::Candidate{}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(problem.RankSettings(0, {opt::Candidate(first.size(), 999)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(problem.RankSettings(static_cast<int64_t>(parts.size()), {zero}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A ranking marks each implementation's best-ranked configuration -infinity, so model-topk
// measures generated code and every library call the kernel offers besides its k best.
TEST(CpuTileRanking, EachImplementationsBestIsMarkedToMeasure) {
  Kernel kernel;
  kernel.params = {{"block", {0, 16}}, {"impl", {0, 1, 2}}};
  const std::vector<opt::Candidate> settings = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}};
  std::vector<double> scores = {0.1, 0.2, 0.9, 0.5, 0.7};
  opt::tiling::CpuTileProblem::MarkImplementationMustTries(kernel, settings, scores);
  // impl 0's best (0), impl 1's (3), impl 2's (4); the rest keep their scores.
  const double must = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(scores, (std::vector<double>{must, 0.2, 0.9, must, must}));
  // Without an impl parameter, or with one implementation, the ranking stands.
  Kernel plain;
  plain.params = {{"block", {0, 16}}, {"unroll", {1, 2, 4}}};
  std::vector<double> unchanged = {0.1, 0.2, 0.9, 0.5, 0.7};
  opt::tiling::CpuTileProblem::MarkImplementationMustTries(plain, settings, unchanged);
  EXPECT_EQ(unchanged, (std::vector<double>{0.1, 0.2, 0.9, 0.5, 0.7}));
  std::vector<double> one_impl = {0.3, 0.2};
  opt::tiling::CpuTileProblem::MarkImplementationMustTries(kernel, {{0, 1}, {1, 1}}, one_impl);
  EXPECT_EQ(one_impl, (std::vector<double>{0.3, 0.2}));
}

// Once the defaults are measured, the slowest kernel's part comes first, and part indices of
// RankSettings follow that order.
TEST_F(CpuRuntimeTest, TileProblemPartsPutTheSlowestKernelFirst) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kMlp);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  // Later kernels are slower.
  opt::tiling::CpuTileProblem problem(
      *lowered, [](int32_t k, const KernelConfig&) -> absl::StatusOr<double> { return k + 1.0; });
  (void)problem.Evaluate(problem.DefaultCandidate());
  std::vector<int32_t> ranked_kernels;
  problem.SetRanker(
      [&](int32_t kernel,
          const std::vector<KernelConfig>& configs) -> absl::StatusOr<std::vector<double>> {
        ranked_kernels.push_back(kernel);
        return std::vector<double>(configs.size(), 0.0);
      });
  const std::vector<std::vector<int64_t>> parts = problem.Parts();
  ASSERT_GE(parts.size(), 2u);
  EXPECT_GT(parts[0].front(), parts[1].front());  // later positions belong to later kernels
  for (size_t p = 0; p < parts.size(); ++p) {
    ASSERT_TRUE(
        problem.RankSettings(static_cast<int64_t>(p), {opt::Candidate(parts[p].size(), 0)}).ok());
  }
  ASSERT_EQ(ranked_kernels.size(), parts.size());
  for (size_t p = 1; p < ranked_kernels.size(); ++p) {
    EXPECT_GT(ranked_kernels[p - 1], ranked_kernels[p]);
  }
}

// Two dense layers that compile to one program (a model's repeated block) are tuned as one: the
// search space has one layer's positions, both layers get its configuration, and only the first
// is measured; the second counts in the score and in its part's share of the time.
TEST_F(CpuRuntimeTest, TileProblemTunesIdenticalKernelsOnce) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(R"(
HloModule twice
ENTRY e {
  x1 = f32[64,128] parameter(0)
  x2 = f32[64,128] parameter(1)
  w1 = f32[128,128] parameter(2)
  w2 = f32[128,128] parameter(3)
  d1 = f32[64,128] dot(x1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t1 = f32[64,128] tanh(d1)
  d2 = f32[64,128] dot(x2, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t2 = f32[64,128] tanh(d2)
  ROOT r = (f32[64,128], f32[64,128]) tuple(t1, t2)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->kernels.size(), 2u);
  std::vector<int32_t> measured;
  opt::tiling::CpuTileProblem problem(
      *lowered, [&](int32_t k, const KernelConfig&) -> absl::StatusOr<double> {
        measured.push_back(k);
        return 1.0;
      });
  EXPECT_EQ(problem.space().choices.size(), lowered->kernels[0].params.size());
  opt::Candidate c = problem.DefaultCandidate();
  c.back() = 1;  // the last parameter's second value
  EXPECT_EQ(problem.Evaluate(c), 2.0);
  const std::vector<KernelConfig> configs = problem.Decode(c);
  EXPECT_EQ(configs[0], configs[1]);
  EXPECT_EQ(measured, std::vector<int32_t>{0});
}

// A module measured with kernel times also reports each kernel's seconds inside the module's
// run, in the lowered kernels' order: what model-topk corrects its predictions with. The dot
// (33 MFLOP) takes far longer than the negation of 4 floats; a kernel compiled alone has none.
TEST_F(CpuRuntimeTest, KernelTimesAttributeAModulesTimeToItsKernels) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(R"(
HloModule two_kernels
ENTRY e {
  a = f32[256,256] parameter(0)
  b = f32[256,256] parameter(1)
  c = f32[4] parameter(2)
  n = f32[4] negate(c)
  d = f32[256,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[256,256], f32[4]) tuple(d, n)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<CompiledModule> c = CompileModule(**m);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->lowered.kernels.size(), 2u);
  MeasureOptions options;
  options.max_seconds = 0.05;
  absl::StatusOr<Timing> plain = Measure(c->object, c->program, 0, options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->kernel_s.empty());
  options.kernel_times = true;
  absl::StatusOr<Timing> t = Measure(c->object, c->program, 0, options);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->kernel_s.size(), 2u);
  const size_t dot = c->lowered.kernels[0].root->opcode() == ir::Opcode::kDot ? 0 : 1;
  ASSERT_EQ(c->lowered.kernels[dot].root->opcode(), ir::Opcode::kDot);
  EXPECT_GE(t->kernel_s[1 - dot], 0);
  EXPECT_GT(t->kernel_s[dot], 10 * t->kernel_s[1 - dot]);

  absl::StatusOr<Timing> alone =
      MeasureKernel(c->lowered, static_cast<int32_t>(dot), c->configs[dot], {}, options);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_TRUE(alone->kernel_s.empty());
}

// With a ranker's observe attached, every plan measured with kernel times is passed on to it.
TEST_F(CpuRuntimeTest, MeasuredPlansKernelTimesReachTheRanker) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kMlp);
  ASSERT_TRUE(m.ok()) << m.status();
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(**m);
  opt::fusion::CpuFusionProblem problem(
      graph, [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        // Only the unfused plan is timed per kernel here.
        if (plan.size() != graph.size()) return opt::fusion::PlanTiming{1.0, {}};
        return opt::fusion::PlanTiming{2.0, std::vector<double>(plan.size(), 0.5)};
      });
  std::vector<std::pair<size_t, size_t>> observed;  // (plan kernels, times)
  problem.SetRanker({[](const std::vector<costmodels::FusionPlan>& plans) {
                       return absl::StatusOr<std::vector<double>>(
                           std::vector<double>(plans.size()));
                     },
                     [&](const costmodels::FusionPlan& plan, const std::vector<double>& times) {
                       observed.emplace_back(plan.size(), times.size());
                     }});
  const opt::Candidate fused = problem.DefaultCandidate();
  const opt::Candidate apart(fused.size(), 1);
  ASSERT_LT(problem.Plan(fused).size(), graph.size());
  EXPECT_EQ(problem.Evaluate(fused), 1.0);
  EXPECT_TRUE(observed.empty());
  EXPECT_EQ(problem.Evaluate(apart), 2.0);
  EXPECT_EQ(problem.Evaluate(apart), 2.0);  // cached: not measured, not observed again
  const std::vector<std::pair<size_t, size_t>> expected = {{graph.size(), graph.size()}};
  EXPECT_EQ(observed, expected);
}

TEST_F(CpuRuntimeTest, FusionPrioritiesChangeThePlanAndEveryPlanMatchesTheEvaluator) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kMlp);
  ASSERT_TRUE(m.ok()) << m.status();
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(**m),
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        absl::StatusOr<CompiledModule> c = CompileModule(**m, {}, &plan);
        if (!c.ok()) return c.status();
        if (absl::Status s = CheckAgainstEvaluator(**m, *c, 5); !s.ok()) return s;
        return opt::fusion::PlanTiming{static_cast<double>(plan.size()), {}};
      });
  const opt::Candidate fused = problem.DefaultCandidate();
  const opt::Candidate apart(fused.size(), 1);  // priority 0: nothing fuses
  EXPECT_LT(problem.Evaluate(fused), problem.Evaluate(apart));
  EXPECT_EQ(problem.Plan(apart).size(), problem.graph().size());
  EXPECT_EQ(problem.Plan(fused).size(), costmodels::PlanFusion(problem.graph()).size());
  EXPECT_TRUE(std::isfinite(problem.Evaluate(opt::Candidate(fused.size(), 3))));
}

// model-topk over fusion plans: the ranker sees each setting's plan; a setting whose plan an
// earlier setting of the same call makes ranks +infinity, so the best ranked are distinct plans.
TEST_F(CpuRuntimeTest, FusionRankingScoresPlansAndEachPlanOnce) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kMlp);
  ASSERT_TRUE(m.ok()) << m.status();
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(**m),
      [](const costmodels::FusionPlan&) -> absl::StatusOr<opt::fusion::PlanTiming> {
        return opt::fusion::PlanTiming{1.0, {}};
      });
  const opt::Candidate fused = problem.DefaultCandidate();  // every priority 1
  EXPECT_EQ(problem.RankSettings(0, {fused}).status().code(),
            absl::StatusCode::kFailedPrecondition);  // no ranker yet
  problem.SetRanker({[](const std::vector<costmodels::FusionPlan>& plans) {
                       std::vector<double> kernels;
                       for (const costmodels::FusionPlan& p : plans)
                         kernels.push_back(static_cast<double>(p.size()));
                       return absl::StatusOr<std::vector<double>>(kernels);
                     },
                     nullptr});
  const opt::Candidate also_fused(fused.size(), 2);  // every priority 2: the same plan
  const opt::Candidate apart(fused.size(), 1);       // priority 0: nothing fuses
  absl::StatusOr<std::vector<double>> ranks = problem.RankSettings(0, {fused, apart, also_fused});
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(ranks->size(), 3u);
  EXPECT_EQ((*ranks)[0], static_cast<double>(problem.Plan(fused).size()));
  EXPECT_EQ((*ranks)[1], static_cast<double>(problem.graph().size()));
  EXPECT_EQ((*ranks)[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(problem.RankSettings(1, {fused}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(problem.RankSettings(0, {opt::Candidate(fused.size(), 9)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Every corpus module the backend supports (after XLA's cpu pipeline) matches the evaluator.
TEST_F(CpuRuntimeTest, SupportedCorpusModulesMatchTheEvaluator) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  int supported = 0;
  for (const std::string& f : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(f);
    ASSERT_TRUE(m.ok()) << f << ": " << m.status();
    absl::StatusOr<std::unique_ptr<ir::Module>> opt = RunCpuPipeline(**m);
    if (absl::IsUnimplemented(opt.status())) continue;
    ASSERT_TRUE(opt.ok()) << f << ": " << opt.status();
    ++supported;
    absl::StatusOr<CompiledModule> compiled = CompileModule(**opt);
    ASSERT_TRUE(compiled.ok()) << f << ": " << compiled.status();
    MeasureOptions once;
    absl::Status s = CheckAgainstEvaluator(**m, *compiled, 0, once);
    EXPECT_TRUE(s.ok()) << f << ": " << s;
  }
  std::cout << "cpu backend: " << supported << " of " << files.size()
            << " corpus modules supported, all checked against the evaluator\n";
  EXPECT_GE(supported, 30);
}

}  // namespace
}  // namespace mltune::backends::cpu
