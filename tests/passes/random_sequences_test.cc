// Applies 1,000 seeded random sequences of 20 passes (drawn from every registered pass, so new
// passes are covered as they land) to small evaluable corpus modules. After every step the module
// must verify and compute what the original does on seeded random inputs; a pass that leaves the
// module unchanged must report no change. A failure names the module, the sequence so far and the
// pass that broke it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "passes/registry.h"
#include "tests/support/corpus.h"
#include "tests/support/equivalence.h"

namespace mltune::passes {
namespace {

constexpr int kSequences = 1000;
constexpr int kLength = 20;
constexpr uint64_t kSeed = 0x6d6c74756e65;  // "mltune"
// Small modules keep the whole test to well under a few minutes on one core. Chosen by static
// size (not by timing), so every machine runs the same modules.
constexpr int64_t kMaxInstructions = 3000;
constexpr int64_t kMaxElements = 20'000'000;  // summed over every instruction's result
constexpr int64_t kMaxLoopIterations = 10'000;
constexpr int kMaxReportedFailures = 20;

struct Candidate {
  std::string path;
  std::unique_ptr<ir::Module> module;
};

int64_t ElementsOf(const ir::Shape& shape) {
  if (!shape.IsTuple()) return shape.IsArray() ? shape.ElementCount() : 0;
  int64_t n = 0;
  for (const ir::Shape& e : shape.tuple_shapes()) n += ElementsOf(e);
  return n;
}

int64_t TotalElements(const ir::Module& m) {
  int64_t n = 0;
  for (const ir::Computation* c : m.computations()) {
    for (const ir::Instruction* i : c->instructions()) n += ElementsOf(i->shape());
  }
  return n;
}

std::vector<Candidate> SelectModules() {
  std::vector<Candidate> out;
  for (const std::string& path : mltune::testing::CorpusFiles()) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
    if (!m.ok() || !ir::VerifyModule(**m).ok() || !ir::CheckEvaluable(**m).ok()) continue;
    if ((*m)->instruction_count() > kMaxInstructions || TotalElements(**m) > kMaxElements) {
      continue;
    }
    absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(**m, 1);
    if (!args.ok()) continue;
    ir::EvalOptions options;
    options.max_loop_iterations = kMaxLoopIterations;
    if (!ir::Evaluate(**m, *args, options).ok()) continue;
    out.push_back({path, *std::move(m)});
  }
  return out;
}

TEST(RandomPassSequencesTest, EveryStepVerifiesAndPreservesResults) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Candidate> modules = SelectModules();
  ASSERT_FALSE(modules.empty()) << "no small evaluable corpus module";
  const Registry& registry = Registry::Global();
  const std::vector<std::string> names = registry.Names();
  ASSERT_FALSE(names.empty());

  std::mt19937_64 rng(kSeed);
  int failures = 0;
  int64_t steps = 0, changed_steps = 0;
  for (int s = 0; s < kSequences && failures < kMaxReportedFailures; ++s) {
    const Candidate& c = modules[s % modules.size()];
    std::unique_ptr<ir::Module> current = c.module->Clone();
    std::string fingerprint = ir::Fingerprint(*current);
    std::vector<std::string> sequence;
    for (int k = 0; k < kLength; ++k) {
      const std::string& name = names[rng() % names.size()];
      sequence.push_back(name);
      const std::string where = "module " + c.path + ", sequence #" + std::to_string(s) + " [" +
                                absl::StrJoin(sequence, ", ") + "], pass " + name;
      ++steps;
      std::unique_ptr<Pass> pass = *registry.Create(name);
      absl::StatusOr<bool> changed = pass->Run(*current);
      if (!changed.ok()) {
        ADD_FAILURE() << where << ": pass failed: " << changed.status();
        ++failures;
        break;
      }
      const std::string next = ir::Fingerprint(*current);
      if (next == fingerprint) continue;  // same module: same verdicts as the last step
      fingerprint = next;
      ++changed_steps;
      if (!*changed) {
        ADD_FAILURE() << where << ": changed the module but reported no change";
        ++failures;
        break;
      }
      if (absl::Status v = ir::VerifyModule(*current); !v.ok()) {
        ADD_FAILURE() << where << ": module no longer verifies: " << v;
        ++failures;
        break;
      }
      if (absl::Status e = mltune::testing::CheckEquivalent(*c.module, *current, /*seeds=*/1);
          !e.ok()) {
        ADD_FAILURE() << where << ": results changed: " << e;
        ++failures;
        break;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "random sequences: %d sequences x %d passes over %zu modules and %zu passes, "
      "%lld steps (%lld changed the module) in %.1fs\n",
      kSequences, kLength, modules.size(), names.size(), static_cast<long long>(steps),
      static_cast<long long>(changed_steps), seconds);
}

}  // namespace
}  // namespace mltune::passes
