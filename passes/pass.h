// The HLO-to-HLO pass interface, modelled on XLA's HloPassInterface.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // XLA's name for the pass (`algsimp`, `cse`, ...), as users of `hlo-opt --passes=` know it.
  virtual std::string_view name() const = 0;
  // Rewrites `module` in place. Returns true when the module changed. An error leaves the module
  // in an unspecified but verifiable state; callers discard it.
  virtual absl::StatusOr<bool> Run(ir::Module& module) = 0;
};

}  // namespace mltune::passes
