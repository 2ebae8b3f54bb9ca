// XLA itself as the judge of the HLO text mltune writes: jaxlib's HLO parser, its conversion to
// StableHLO and, on request, its CPU compiler with jax.jit's options. A Python child
// (xla_round_trip.py) on build/xla-venv's pinned jax does the work, one module at a time, so an
// XLA CHECK failure costs one module's verdict rather than the caller's process.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::frontends::xla {

struct XlaCheckRequest {
  std::string path;  // HLO text; gzip when it ends in .gz
  bool compile = false;
};

struct XlaVerdict {
  std::string path;
  bool ok = false;
  // Where XLA refused the module: "parse", "convert", "compile", "abort" (XLA ended the child,
  // e.g. on a CHECK) or "timeout"; the last stage run when it was accepted.
  std::string stage;
  std::string error;  // XLA's message
  double seconds = 0;
};

// $MLTUNE_XLA_PYTHON, else the source tree's build/xla-venv/bin/python (scripts/setup makes it).
std::string XlaPython();

// OK when XlaPython() exists; Unavailable saying why (and how to get it) otherwise.
absl::Status XlaAvailable();

// One verdict per request, in order. Unavailable when there is no Python with jax; Internal when
// the child fails for another reason than a module.
absl::StatusOr<std::vector<XlaVerdict>> CheckWithXla(const std::vector<XlaCheckRequest>& requests);

}  // namespace mltune::frontends::xla
