// A real Llama-2-class training step carries intermediates far larger than memory (the one-hot
// `pred[1024,4096,32000]` of its loss, 134 GB): nothing that does not allocate them may refuse
// them. Parsing, verifying, printing, fingerprinting and the default pipeline accept the graph;
// the reference evaluator, which would allocate, refuses it with a clear error.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/evaluator/evaluator.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "passes/default_pipelines.h"

namespace mltune {
namespace {

constexpr char kLlamaLoss[] = R"(HloModule llama2_loss

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY loss {
  labels = s32[1024,4096]{1,0} parameter(0)
  logits = bf16[1024,4096,32000]{2,1,0} parameter(1)
  iota = s32[1024,4096,32000]{2,1,0} iota(), iota_dimension=2
  wide = s32[1024,4096,32000]{2,1,0} broadcast(labels), dimensions={0,1}
  onehot = pred[1024,4096,32000]{2,1,0} compare(wide, iota), direction=EQ
  zero = bf16[] constant(0)
  zeros = bf16[1024,4096,32000]{2,1,0} broadcast(zero), dimensions={}
  picked = bf16[1024,4096,32000]{2,1,0} select(onehot, logits, zeros)
  wider = f32[1024,4096,32000]{2,1,0} convert(picked)
  fzero = f32[] constant(0)
  ROOT nll = f32[1024,4096]{1,0} reduce(wider, fzero), dimensions={2}, to_apply=add
}
)";

TEST(HugeShapesTest, ParseVerifyPrintFingerprintAndPipelineAcceptTheGraph) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kLlamaLoss);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(ir::VerifyModule(**m).ok()) << ir::VerifyModule(**m);
  absl::StatusOr<std::unique_ptr<ir::Module>> again = ir::ParseHloText(ir::PrintModule(**m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ir::Fingerprint(**m), ir::Fingerprint(**again));
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = passes::RunDefaultPipeline(**m, "cpu");
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_TRUE(ir::VerifyModule(**optimized).ok());
}

TEST(HugeShapesTest, TheEvaluatorRefusesWhatItWouldAllocate) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kLlamaLoss);
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(**m, 0);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().code(), absl::StatusCode::kResourceExhausted) << args.status();
  EXPECT_NE(args.status().message().find("bf16[1024,4096,32000]"), std::string::npos)
      << args.status();
}

// The parser still refuses what cannot be represented, and callers may still bound shapes.
TEST(HugeShapesTest, OverflowingShapesAndExplicitLimitsAreStillErrors) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(
      "HloModule m\nENTRY e {\n  ROOT p = f32[4294967296,4294967296] parameter(0)\n}\n");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("overflows int64"), std::string::npos) << m.status();
  ir::ParseOptions small;
  small.max_array_bytes = 1000;
  m = ir::ParseHloText(kLlamaLoss, small);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("over the limit of 1000"), std::string::npos) << m.status();
}

}  // namespace
}  // namespace mltune
