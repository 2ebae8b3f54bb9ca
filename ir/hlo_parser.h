// Parser for XLA's HLO text, in every style XLA, JAX and PyTorch/XLA print: `%` sigils or none,
// operand shapes inline or not, `/*index=N*/` comments, metadata, sharding, backend_config,
// elided constants `constant({...})`. Errors name the line and column and what was expected.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::ir {

struct ParseOptions {
  // Name used in error messages ("model.hlo:12:7: expected ...").
  std::string filename = "<input>";
  // Largest array a shape may describe. Parsing allocates nothing for a shape, so by default only
  // XLA's own limit applies (the byte size must fit in int64): a real training step may carry a
  // 134 GB `pred[1024,4096,32000]` that no pass materialises. Allocation limits live where memory
  // is allocated (the evaluator, the CPU runner); the fuzzer lowers this one to keep sums small.
  int64_t max_array_bytes = std::numeric_limits<int64_t>::max();
  // Largest constant literal the text may spell out (its buffer is allocated while parsing).
  int64_t max_literal_bytes = int64_t{1} << 30;
  // Largest nesting of tuples, literals and attribute braces, so hostile input cannot overflow
  // the stack.
  int max_nesting = 256;
};

absl::StatusOr<std::unique_ptr<Module>> ParseHloText(std::string_view text,
                                                     const ParseOptions& options = {});

// Reads `path` (plain text, or gzip when it ends in .gz) and parses it.
absl::StatusOr<std::unique_ptr<Module>> ParseHloFile(const std::string& path);

// Parses a shape alone, e.g. "f32[2,3]{1,0}".
absl::StatusOr<Shape> ParseShape(std::string_view text);

}  // namespace mltune::ir
