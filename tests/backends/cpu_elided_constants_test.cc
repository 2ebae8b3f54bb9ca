// Modules shipped with their constants elided (constant({...}), as XLA's benchmark modules and
// two modules of the shared corpus are): refused with the option that fills them, and, filled with
// seeded values (ir::FillElidedConstants, `mltune run --fill-elided SEED`), compiled and checked
// against the evaluator. The corpus cases are skipped where the shared corpus is absent.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/evaluator/fill_elided.h"
#include "ir/hlo_parser.h"
#include "tests/support/corpus.h"

namespace mltune::backends::cpu {
namespace {

// Weights and an embedding table elided, of several types.
constexpr char kElided[] = R"(HloModule elided

ENTRY main {
  x = f32[4,16] parameter(0)
  ids = s32[4] parameter(1)
  w = bf16[16,8] constant({...})
  b = f32[8] constant({...})
  table = f32[8,8] constant({...})
  xb = bf16[4,16] convert(x)
  d = bf16[4,8] dot(xb, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  df = f32[4,8] convert(d)
  bb = f32[4,8] broadcast(b), dimensions={1}
  y = f32[4,8] add(df, bb)
  idx = s32[4,1] reshape(ids)
  e = f32[4,8] gather(table, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}
  ROOT o = f32[4,8] add(y, e)
}
)";

class CpuElidedConstantsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST_F(CpuElidedConstantsTest, RefusedUnlessFilledThenMatchesTheEvaluator) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kElided);
  ASSERT_TRUE(module.ok()) << module.status();
  const absl::StatusOr<std::unique_ptr<ir::Module>> refused = RunCpuPipeline(**module);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string(refused.status().message()).find("--fill-elided"), std::string::npos)
      << refused.status();
  absl::StatusOr<int64_t> filled = ir::FillElidedConstants(**module, 7);
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ(*filled, 3);
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**optimized);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const absl::Status check = CheckAgainstEvaluator(**module, *compiled, 1);
  EXPECT_TRUE(check.ok()) << check;
}

// The corpus's two elided modules get past their constants once filled. jraph's accuracy then
// stops on its argmax (a variadic reduce, not lowered) and efficientnet's batch of 250 needs
// 3.2 GB activations, so each is checked as far as it goes: filled, no op left that is elided.
TEST_F(CpuElidedConstantsTest, CorpusModulesGetPastTheirConstantsOnceFilled) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  int found = 0;
  for (const char* part :
       {"jraph__module_0101.jit_accuracy.49.", "efficientnet-jax__module_0698.jit__lambda_.256."}) {
    for (const std::string& path : files) {
      if (path.find(part) == std::string::npos) continue;
      ++found;
      SCOPED_TRACE(path);
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloFile(path);
      ASSERT_TRUE(module.ok()) << module.status();
      const absl::StatusOr<std::unique_ptr<ir::Module>> refused = RunCpuPipeline(**module);
      ASSERT_FALSE(refused.ok());
      EXPECT_NE(std::string(refused.status().message()).find("--fill-elided"), std::string::npos)
          << refused.status();
      absl::StatusOr<int64_t> filled = ir::FillElidedConstants(**module, 1);
      ASSERT_TRUE(filled.ok()) << filled.status();
      EXPECT_GT(*filled, 0);
      const absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
      if (!optimized.ok()) {
        EXPECT_EQ(std::string(optimized.status().message()).find("elided"), std::string::npos)
            << optimized.status();
        std::printf("  filled; next stop: %s\n", std::string(optimized.status().message()).c_str());
      }
    }
  }
  if (found == 0) GTEST_SKIP() << "the corpus has none of the elided modules";
}

}  // namespace
}  // namespace mltune::backends::cpu
