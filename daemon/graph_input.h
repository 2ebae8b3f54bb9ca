// Turning a request's graph bytes into a verified module, under the daemon's limits. Errors are
// InvalidArgument with the parser's "NAME:LINE:COLUMN: what was expected", or Unimplemented for a
// format the daemon cannot read yet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::daemon {

enum class GraphFormat { kHloText, kOnnx };

struct GraphLimits {
  int64_t max_bytes = int64_t{64} << 20;
  int64_t max_instructions = 1'000'000;
};

struct LoadedGraph {
  std::shared_ptr<const ir::Module> module;
  std::string fingerprint;  // ir::Fingerprint
};

// `name` appears in errors ("" = "<graph>").
absl::StatusOr<LoadedGraph> LoadGraph(std::string_view data, GraphFormat format,
                                      const std::string& name, const GraphLimits& limits);

}  // namespace mltune::daemon
