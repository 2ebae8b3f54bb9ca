// Test helpers: an HLO text through the CPU backend's pipeline and compiled, and the check of its
// results against the evaluator's on several seeds.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {

struct Pipelined {
  std::unique_ptr<ir::Module> module;  // as parsed: what the evaluator runs
  CompiledModule compiled;             // after RunCpuPipeline
};

inline absl::StatusOr<Pipelined> CompileThroughPipeline(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(text);
  if (!module.ok()) return module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
  if (!optimized.ok()) return optimized.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**optimized);
  if (!compiled.ok()) return compiled.status();
  return Pipelined{*std::move(module), *std::move(compiled)};
}

inline void ExpectMatchesEvaluator(const Pipelined& p, std::initializer_list<uint64_t> seeds) {
  for (uint64_t seed : seeds) {
    const absl::Status check = CheckAgainstEvaluator(*p.module, p.compiled, seed);
    EXPECT_TRUE(check.ok()) << "seed " << seed << ": " << check << "\n"
                            << p.compiled.program.source;
  }
}

}  // namespace mltune::backends::cpu
