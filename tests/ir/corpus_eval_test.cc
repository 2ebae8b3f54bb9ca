// Runs the reference evaluator over every module of the shared corpus on seeded random inputs.
// All must run except a fixed list the evaluator must refuse with a clear reason.
#include <chrono>
#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/evaluator/fill_elided.h"
#include "ir/hlo_parser.h"
#include "tests/support/corpus.h"

namespace mltune::ir {
namespace {

struct ExpectedFailure {
  const char* file_part;
  const char* reason;  // must appear in the error message
};

// Two modules print their weights elided as constant({...}) (they run once filled); five
// PyTorch/XLA shards communicate through all-reduce/all-gather.
constexpr ExpectedFailure kExpectedFailures[] = {
    {"jraph__module_0101.jit_accuracy.49.", "elided"},
    {"efficientnet-jax__module_0698.jit__lambda_.256.", "elided"},
    {"pytorch-xla/llama_tp_2.hlo", "collective"},
    {"pytorch-xla/qwb_linear_model_pp_2_final.hlo", "collective"},
    {"pytorch-xla/mlp_dp_mlp_1.hlo", "collective"},
    {"pytorch-xla/misc_sharding_megatron-lm.hlo", "collective"},
    {"pytorch-xla/gptj_tp_2.hlo", "collective"},
};

const ExpectedFailure* FindExpectedFailure(const std::string& path) {
  for (const ExpectedFailure& f : kExpectedFailures) {
    if (path.find(f.file_part) != std::string::npos) return &f;
  }
  return nullptr;
}

TEST(CorpusEvalTest, EvaluatesEveryModuleOrRejectsItClearly) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  int ran = 0, refused = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
    ASSERT_TRUE(module.ok()) << module.status();
    const ExpectedFailure* expected = FindExpectedFailure(path);
    if (expected != nullptr) {
      // Refused before running anything, so no arguments are needed (some are huge).
      ++refused;
      const absl::Status check = CheckEvaluable(**module);
      absl::StatusOr<Literal> result = Evaluate(**module, {});
      ASSERT_FALSE(result.ok()) << "expected a refusal (" << expected->reason << ")";
      EXPECT_EQ(result.status(), check);
      EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented) << result.status();
      EXPECT_NE(std::string(result.status().message()).find(expected->reason), std::string::npos)
          << result.status();
      // Elided constants run once filled with seeded values (mltune run --fill-elided SEED).
      if (std::string(expected->reason) == "elided") {
        absl::StatusOr<int64_t> filled = FillElidedConstants(**module, 1);
        ASSERT_TRUE(filled.ok()) << filled.status();
        EXPECT_GT(*filled, 0);
        absl::StatusOr<std::vector<Literal>> args = MakeRandomArguments(**module, 1);
        ASSERT_TRUE(args.ok()) << args.status();
        absl::StatusOr<Literal> filled_result = Evaluate(**module, *args);
        // efficientnet's batch of 250 makes f32[250,150,150,144] activations (3.2 GB): past the
        // evaluator's array limit, which it then names.
        if (filled_result.status().code() == absl::StatusCode::kResourceExhausted) {
          EXPECT_NE(std::string(filled_result.status().message()).find("over the limit"),
                    std::string::npos)
              << filled_result.status();
          std::printf("  too large to evaluate once filled: %s\n", path.c_str());
        } else {
          EXPECT_TRUE(filled_result.ok()) << filled_result.status();
        }
      }
      continue;
    }
    ASSERT_TRUE(CheckEvaluable(**module).ok()) << CheckEvaluable(**module);
    absl::StatusOr<std::vector<Literal>> args = MakeRandomArguments(**module, 1);
    ASSERT_TRUE(args.ok()) << args.status();
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<Literal> result = Evaluate(**module, *args);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (seconds > 1.0) std::printf("  slow: %.2fs %s\n", seconds, path.c_str());
    EXPECT_TRUE(result.ok()) << result.status();
    if (result.ok()) {
      ++ran;
      EXPECT_TRUE(result->shape().Compatible((*module)->entry()->root()->shape()))
          << result->shape().ToString() << " vs " << (*module)->entry()->root()->shape().ToString();
    }
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("corpus eval: ran %d of %zu modules (%d refused as expected) in %.2fs\n", ran,
              files.size(), refused, total);
  EXPECT_GE(ran * 10, static_cast<int>(files.size()) * 9) << "fewer than 90% of modules ran";
}

TEST(CorpusEvalTest, SameSeedGivesBitwiseEqualResults) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  std::string path;
  for (const std::string& f : files) {
    if (f.find("maml_flax__module_0067.jit_train_step") != std::string::npos) path = f;
  }
  if (path.empty()) GTEST_SKIP() << "maml_flax train_step module not in the corpus";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloFile(path);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Literal>> a1 = MakeRandomArguments(**module, 7);
  absl::StatusOr<std::vector<Literal>> a2 = MakeRandomArguments(**module, 7);
  absl::StatusOr<std::vector<Literal>> a3 = MakeRandomArguments(**module, 8);
  ASSERT_TRUE(a1.ok() && a2.ok() && a3.ok());
  ASSERT_FALSE(a1->empty());
  bool any_differs = false;
  for (size_t i = 0; i < a1->size(); ++i) {
    EXPECT_TRUE((*a1)[i].BitwiseEqual((*a2)[i]));
    any_differs |= !(*a1)[i].BitwiseEqual((*a3)[i]);
  }
  EXPECT_TRUE(any_differs) << "a different seed should give different arguments";
  absl::StatusOr<Literal> r1 = Evaluate(**module, *a1);
  absl::StatusOr<Literal> r2 = Evaluate(**module, *a2);
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_TRUE(r1->BitwiseEqual(*r2));
}

}  // namespace
}  // namespace mltune::ir
