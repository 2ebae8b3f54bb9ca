// The registry, Pipeline, FixedPoint and the default XLA-order pipelines.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/hlo_builder.h"
#include "passes/default_pipelines.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Parse;
using testing::Rewrite;

// Reports a change every time, or until `changes` runs have.
class CountingPass : public Pass {
 public:
  explicit CountingPass(std::string name, int changes = -1)
      : name_(std::move(name)), changes_(changes) {}
  std::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Module&) override {
    ++runs_;
    return changes_ < 0 || runs_ <= changes_;
  }
  int runs() const { return runs_; }

 private:
  std::string name_;
  int changes_;
  int runs_ = 0;
};

class FailingPass : public Pass {
 public:
  std::string_view name() const override { return "failing"; }
  absl::StatusOr<bool> Run(ir::Module&) override { return absl::InternalError("boom"); }
};

// Leaves the module unverifiable: the root's operand is replaced by an f32 where s32 is needed.
class BreakingPass : public Pass {
 public:
  std::string_view name() const override { return "breaking"; }
  absl::StatusOr<bool> Run(ir::Module& m) override {
    ir::Instruction* root = m.entry()->root();
    root->ReplaceOperand(0, MakeScalarConstant(*m.entry(), ir::PrimitiveType::kF32, 1));
    return true;
  }
};

constexpr char kSmall[] = R"(
HloModule m
ENTRY e {
  p0 = s32[] parameter(0)
  dead = s32[] negate(p0)
  ROOT r = s32[] add(p0, p0)
}
)";

TEST(RegistryTest, UnknownNameIsNotFound) {
  absl::StatusOr<std::unique_ptr<Pass>> p = Registry::Global().Create("no-such-pass");
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
}

TEST(RegistryTest, NamesAreUniqueAndMatchThePasses) {
  const Registry& r = Registry::Global();
  const std::vector<std::string> names = r.Names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const PassInfo* info = r.Find(name);
    ASSERT_NE(info, nullptr);
    EXPECT_FALSE(info->description.empty());
    absl::StatusOr<std::unique_ptr<Pass>> p = r.Create(name);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(std::string((*p)->name()), name);
  }
  for (const char* mine :
       {"dce", "cse", "constant_folding", "tuple-simplifier", "call-inliner", "flatten-call-graph",
        "zero_sized_hlo_elimination", "cse_barrier_expander", "sharding-remover",
        "computation-deduplicator"}) {
    EXPECT_NE(r.Find(mine), nullptr) << mine;
  }
}

TEST(RegistryTest, AliasesResolveToTheirPassAndAreNotListed) {
  const Registry& r = Registry::Global();
  ASSERT_FALSE(r.Aliases().empty());
  const std::vector<std::string> names = r.Names();
  for (const auto& [alias, name] : r.Aliases()) {
    SCOPED_TRACE(alias);
    EXPECT_EQ(std::count(names.begin(), names.end(), alias), 0);
    const PassInfo* info = r.Find(alias);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->name, name);
    absl::StatusOr<std::unique_ptr<Pass>> p = r.Create(alias);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(std::string((*p)->name()), name);
  }
  EXPECT_EQ(r.Find("gather-simplifier"), r.Find("gather_simplifier"));
}

TEST(PipelineTest, ReportsChangeOnlyWhenAPassChanged) {
  std::unique_ptr<ir::Module> m = Parse(kSmall);
  ASSERT_NE(m, nullptr);
  Pipeline p("test");
  p.Add(*Registry::Global().Create("cse")).Add(*Registry::Global().Create("dce"));
  p.set_verify_each(true);
  absl::StatusOr<bool> first = p.Run(*m);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  EXPECT_EQ(CountOpcode(*m, Opcode::kNegate), 0);
  absl::StatusOr<bool> second = p.Run(*m);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(*second);
}

TEST(PipelineTest, PassErrorsNameThePass) {
  std::unique_ptr<ir::Module> m = Parse(kSmall);
  ASSERT_NE(m, nullptr);
  Pipeline p("test");
  p.Add(std::make_unique<FailingPass>());
  absl::StatusOr<bool> r = p.Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("failing"), std::string::npos) << r.status();
}

TEST(PipelineTest, VerifyEachCatchesABrokenModule) {
  std::unique_ptr<ir::Module> m = Parse(kSmall);
  ASSERT_NE(m, nullptr);
  Pipeline p("test");
  p.Add(std::make_unique<BreakingPass>());
  p.set_verify_each(true);
  absl::StatusOr<bool> r = p.Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("breaking"), std::string::npos) << r.status();
}

TEST(FixedPointTest, StopsAfterTwentyFiveRounds) {
  std::unique_ptr<ir::Module> m = Parse(kSmall);
  ASSERT_NE(m, nullptr);
  auto owned = std::make_unique<CountingPass>("always");
  CountingPass* pass = owned.get();
  FixedPoint fix(std::move(owned));
  absl::StatusOr<bool> r = fix.Run(*m);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(fix.iterations_of_last_run(), 25);
  EXPECT_EQ(pass->runs(), 25);
  EXPECT_EQ(FixedPoint::kDefaultMaxIterations, 25);
}

TEST(FixedPointTest, StopsAtTheFirstRoundWithoutChange) {
  std::unique_ptr<ir::Module> m = Parse(kSmall);
  ASSERT_NE(m, nullptr);
  FixedPoint fix(std::make_unique<CountingPass>("thrice", 3));
  absl::StatusOr<bool> r = fix.Run(*m);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r);
  EXPECT_EQ(fix.iterations_of_last_run(), 4);

  FixedPoint never(std::make_unique<CountingPass>("never", 0));
  r = never.Run(*m);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(never.iterations_of_last_run(), 1);
}

TEST(DefaultPipelinesTest, UnknownTargetHasNoPipeline) {
  EXPECT_EQ(MakeDefaultPipeline("tpu"), nullptr);
  EXPECT_TRUE(DefaultPipelinePassNames("tpu").empty());
}

TEST(DefaultPipelinesTest, FollowXlaOrder) {
  const std::vector<std::string> cpu = DefaultPipelinePassNames("cpu");
  const std::vector<std::string> gpu = DefaultPipelinePassNames("gpu");
  ASSERT_FALSE(cpu.empty());
  ASSERT_FALSE(gpu.empty());
  // Both start by flattening the call graph; CPU then removes shardings, GPU inlines calls.
  EXPECT_EQ(cpu[0], "flatten-call-graph");
  EXPECT_EQ(cpu[1], "sharding-remover");
  EXPECT_EQ(gpu[0], "flatten-call-graph");
  EXPECT_EQ(gpu[1], "call-inliner");
  auto index = [](const std::vector<std::string>& v, const std::string& name) {
    return std::find(v.begin(), v.end(), name) - v.begin();
  };
  // CPU: cse after both simplification pipelines, flatten-call-graph last.
  EXPECT_LT(index(cpu, "constant_folding"), index(cpu, "cse"));
  EXPECT_EQ(cpu.back(), "flatten-call-graph");
  EXPECT_EQ(gpu.back(), "computation-deduplicator");
  // Fixed-point sub-pipelines where XLA uses HloPassFix.
  int fixed = 0;
  for (const PipelineStep& s : DefaultPipelineSteps("cpu")[2].steps) {
    fixed += s.kind == PipelineStep::Kind::kFixedPoint;
  }
  EXPECT_EQ(fixed, 3);  // reduce-window-rewriter, simplification, post-scatter simplification
}

TEST(DefaultPipelinesTest, SkipsAndReportsPassesNotRegistered) {
  for (const std::string& target : DefaultPipelineTargets()) {
    SCOPED_TRACE(target);
    // An empty registry: everything skipped, and the pipeline changes nothing.
    Registry empty;
    std::vector<std::string> skipped;
    std::unique_ptr<Pipeline> p = MakeDefaultPipeline(target, &skipped, empty);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(skipped.size(), DefaultPipelinePassNames(target).size());
    EXPECT_EQ(skipped[0], target + "/" + p->passes()[0]->name().data() + "/flatten-call-graph");
    std::unique_ptr<ir::Module> m = Parse(kSmall);
    ASSERT_NE(m, nullptr);
    absl::StatusOr<bool> r = p->Run(*m);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);

    // A registry holding every name: nothing skipped.
    Registry full;
    for (const std::string& name : DefaultPipelinePassNames(target)) {
      if (full.Find(name) == nullptr) {
        full.Register({name, "stub", [name] { return std::make_unique<CountingPass>(name, 0); }});
      }
    }
    skipped.clear();
    ASSERT_NE(MakeDefaultPipeline(target, &skipped, full), nullptr);
    EXPECT_TRUE(skipped.empty());
    EXPECT_TRUE(MissingDefaultPipelinePasses(target, full).empty());

    // The global registry: what is skipped is exactly what is missing.
    skipped.clear();
    ASSERT_NE(MakeDefaultPipeline(target, &skipped), nullptr);
    const std::vector<std::string> missing = MissingDefaultPipelinePasses(target);
    for (const std::string& s : skipped) {
      const std::string name = s.substr(s.rfind('/') + 1);
      EXPECT_NE(std::find(missing.begin(), missing.end(), name), missing.end()) << s;
    }
    for (const std::string& name : missing) EXPECT_EQ(Registry::Global().Find(name), nullptr);
  }
}

TEST(DefaultPipelinesTest, CpuPipelineCleansUpASmallModule) {
  Rewrite r = testing::RunAndCheck("dce", R"(
HloModule m
f {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
ENTRY e {
  p0 = f32[4] parameter(0)
  c1 = f32[4] call(p0), to_apply=f
  c2 = f32[4] call(p0), to_apply=f
  one = f32[] constant(1)
  two = f32[] constant(2)
  three = f32[] add(one, two)
  b = f32[4] broadcast(three), dimensions={}
  s = f32[4] add(c1, c2)
  ROOT out = f32[4] multiply(s, b)
}
)",
                                   /*idempotent=*/false);
  ASSERT_NE(r.before, nullptr);
  std::unique_ptr<ir::Module> m = r.before->Clone();
  std::unique_ptr<Pipeline> cpu = MakeDefaultPipeline("cpu");
  cpu->set_verify_each(true);
  absl::StatusOr<bool> changed = cpu->Run(*m);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(mltune::testing::CheckEquivalent(*r.before, *m).ok());
  EXPECT_EQ(CountOpcode(*m, Opcode::kCall), 0);    // flattened, then inlined
  EXPECT_EQ(CountOpcode(*m, Opcode::kNegate), 1);  // the two inlined copies merged by cse
  EXPECT_EQ(m->computation_count(), 1);
  EXPECT_EQ(CountOpcode(*m, Opcode::kAdd), 1);  // 1 + 2 folded
}

}  // namespace
}  // namespace mltune::passes
