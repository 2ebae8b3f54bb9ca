// Corpus sweep for pass tests: runs one registered pass on every corpus module that parses and
// verifies, and checks the result still verifies, computes what the original does (on modules
// the evaluator can run) and, for idempotent passes, that a second run changes nothing.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "tests/passes/pass_test_util.h"
#include "tests/support/corpus.h"
#include "tests/support/equivalence.h"

namespace mltune::passes::testing {

struct CorpusModule {
  std::string path;
  std::unique_ptr<ir::Module> module;
  bool evaluable = false;
};

// Corpus modules that parse and verify, loaded once per test binary.
inline const std::vector<CorpusModule>& LoadCorpus() {
  static const std::vector<CorpusModule>* modules = [] {
    auto* out = new std::vector<CorpusModule>();
    for (const std::string& path : mltune::testing::CorpusFiles()) {
      absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
      if (!m.ok() || !ir::VerifyModule(**m).ok()) continue;
      const bool evaluable = ir::CheckEvaluable(**m).ok();
      out->push_back({path, *std::move(m), evaluable});
    }
    return out;
  }();
  return *modules;
}

struct SweepResult {
  int modules = 0;
  int changed = 0;
  int compared = 0;
  int64_t instructions_before = 0;  // over all modules
  int64_t instructions_after = 0;
};

// Runs `pass` over the corpus, each module first put through the passes in `prefix` (to expose
// what raw frontend output does not show, e.g. reshapes that algsimp has folded together).
// Equivalence with the original module is checked on evaluable modules (skipping those whose
// original cannot be evaluated within the evaluator's limits).
inline SweepResult SweepCorpus(std::string_view pass, bool idempotent = true, int seeds = 1,
                               const std::vector<std::string>& prefix = {}) {
  SweepResult r;
  const auto start = std::chrono::steady_clock::now();
  for (const CorpusModule& c : LoadCorpus()) {
    ++r.modules;
    std::unique_ptr<ir::Module> after = c.module->Clone();
    for (const std::string& p : prefix) RunPass(p, *after);
    const std::string before_fp = ir::Fingerprint(*after);
    const int64_t before_instructions = after->instruction_count();
    const bool changed = RunPass(pass, *after);
    r.instructions_before += before_instructions;
    r.instructions_after += after->instruction_count();
    const std::string after_fp = ir::Fingerprint(*after);
    EXPECT_EQ(changed, before_fp != after_fp)
        << pass << " on " << c.path << ": reported change does not match the module";
    if (!changed) continue;
    ++r.changed;
    absl::Status verified = ir::VerifyModule(*after);
    EXPECT_TRUE(verified.ok()) << pass << " on " << c.path << ": " << verified;
    if (!verified.ok()) continue;
    if (idempotent) {
      std::unique_ptr<ir::Module> again = after->Clone();
      EXPECT_FALSE(RunPass(pass, *again)) << pass << " on " << c.path << " is not idempotent";
    }
    if (!c.evaluable) continue;
    absl::Status same = mltune::testing::CheckEquivalent(*c.module, *after, seeds);
    if (absl::IsUnimplemented(same)) continue;
    ++r.compared;
    EXPECT_TRUE(same.ok()) << pass << " on " << c.path << ": " << same;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s%s: %d corpus modules, %d changed, %d compared by evaluation, %lld -> %lld instructions "
      "(%.1fs)\n",
      prefix.empty() ? "" : "(after a prefix) ", std::string(pass).c_str(), r.modules, r.changed,
      r.compared, static_cast<long long>(r.instructions_before),
      static_cast<long long>(r.instructions_after), seconds);
  return r;
}

}  // namespace mltune::passes::testing
