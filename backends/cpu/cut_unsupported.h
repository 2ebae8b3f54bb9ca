// Cutting a module at the ops the CPU backend cannot lower (sort, gather, scatter, custom calls,
// while loops with tuple state, elided constants, ...): each becomes a new entry parameter of its
// shape, so the kernels around it can still be compiled and measured. Only for collecting
// training data (`mltune collect --cut-unsupported`): the cut module computes something else, but
// every kernel left in it is a kernel of the original, read from buffers as before.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::backends::cpu {

struct CutModule {
  std::unique_ptr<ir::Module> module;
  std::vector<std::string> cut;  // names of the instructions replaced by parameters
};

// A copy of `module` whose entry the backend can lower (CheckSupported holds), or the reason it
// cannot be had: an unsupported op whose result is not an array of a generated element type
// (nothing could stand in for it), or one used whole as a tuple. A module the backend already
// lowers comes back unchanged with nothing cut.
absl::StatusOr<CutModule> CutUnsupported(const ir::Module& module);

}  // namespace mltune::backends::cpu
