// Helpers shared by the pass tests: parse a module, run a registered pass on it, and prove the
// rewrite safe by verifying it and evaluating it against the original on seeded random inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/module.h"
#include "ir/verifier.h"
#include "passes/registry.h"
#include "tests/support/equivalence.h"

namespace mltune::passes::testing {

inline std::unique_ptr<ir::Module> Parse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  absl::Status verified = ir::VerifyModule(**m);
  EXPECT_TRUE(verified.ok()) << verified;
  return *std::move(m);
}

// Runs the registered pass `name` on `module`; a pass error fails the test and reports false.
inline bool RunPass(std::string_view name, ir::Module& module) {
  absl::StatusOr<std::unique_ptr<Pass>> pass = Registry::Global().Create(name);
  EXPECT_TRUE(pass.ok()) << pass.status();
  if (!pass.ok()) return false;
  absl::StatusOr<bool> changed = (*pass)->Run(module);
  EXPECT_TRUE(changed.ok()) << changed.status();
  return changed.ok() && *changed;
}

struct Rewrite {
  std::unique_ptr<ir::Module> before;
  std::unique_ptr<ir::Module> after;
  bool changed = false;
};

// Parses `text`, runs pass `name` on a copy, and checks the copy still verifies and computes the
// same values (bit-exact for integers and predicates, docs/passes.md's tolerance for floats).
// With `idempotent`, also checks that a second run reports no change.
inline Rewrite RunAndCheck(std::string_view name, std::string_view text, bool idempotent = true) {
  Rewrite r;
  r.before = Parse(text);
  if (r.before == nullptr) return r;
  r.after = r.before->Clone();
  r.changed = RunPass(name, *r.after);
  absl::Status verified = ir::VerifyModule(*r.after);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << ir::PrintModule(*r.after);
  absl::Status same = mltune::testing::CheckEquivalent(*r.before, *r.after);
  EXPECT_TRUE(same.ok()) << same << "\n" << ir::PrintModule(*r.after);
  if (idempotent && r.changed) {
    std::unique_ptr<ir::Module> again = r.after->Clone();
    EXPECT_FALSE(RunPass(name, *again)) << "second run of " << name << " changed:\n"
                                        << ir::PrintModule(*again);
  }
  return r;
}

inline int64_t CountOpcode(const ir::Module& m, ir::Opcode op) {
  int64_t n = 0;
  for (const ir::Computation* c : m.computations()) {
    for (const ir::Instruction* i : c->instructions()) n += i->opcode() == op;
  }
  return n;
}

inline int64_t CountOpcode(const ir::Computation& c, ir::Opcode op) {
  int64_t n = 0;
  for (const ir::Instruction* i : c.instructions()) n += i->opcode() == op;
  return n;
}

}  // namespace mltune::passes::testing
