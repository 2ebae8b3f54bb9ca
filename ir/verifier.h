// Module verifier: structure (single root, no cycles, parameters numbered 0..n-1, called
// computations present and of the right signature, unique names) and every instruction's
// shape against shape inference. Errors name the computation and instruction.
#pragma once

#include "absl/status/status.h"
#include "ir/module.h"

namespace mltune::ir {

struct VerifyOptions {
  // Compare declared and inferred layouts too (off: XLA's frontends leave layouts unassigned).
  bool check_layouts = false;
};

absl::Status VerifyModule(const Module& module, const VerifyOptions& options = {});

}  // namespace mltune::ir
