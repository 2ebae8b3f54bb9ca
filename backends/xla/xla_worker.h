// XLA itself as a measurement worker ("xla-cpu"): a long-lived Python child (xla_child.py, on the
// pinned jax/jaxlib of build/xla-venv) compiles HLO modules exactly as jax.jit does, checks their
// outputs against XLA's default compile of a reference module, and times them. A crash or a CHECK
// inside XLA ends only the child, which the next request restarts; the child dies with its parent.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mltune::backends::xla {

// The interpreter and child script a worker runs: $MLTUNE_XLA_PYTHON, else the source tree's
// build/xla-venv (scripts/setup makes it); $MLTUNE_XLA_CHILD, else xla_child.py beside this
// library's source.
std::string XlaPythonPath();
std::string XlaChildScriptPath();

struct XlaWorkerInfo {
  std::string name;      // "xla-cpu"
  std::string jax;       // jax's version
  std::string platform;  // XLA's platform: "cpu", "gpu"
  std::string device;    // "cpu:cpu"
  int64_t child_pid = 0;
};

// One XLA debug option value as XLA's compile_options take it: "true"/"false" become booleans,
// integers numbers, anything else a string.
using XlaOptions = std::map<std::string, std::string>;
// `options` as the JSON object jax's compile(compiler_options=...) takes, values typed as above.
std::string XlaOptionsJson(const XlaOptions& options);

struct XlaMeasureRequest {
  std::string hlo_text;  // the candidate module (HLO text XLA's parser takes)
  // The module whose default compile gives the expected outputs on the same seeded inputs; empty:
  // no check. The child caches its outputs, so a search passes the same text on every request.
  std::string reference_hlo_text;
  XlaOptions options;
  uint64_t seed = 1;  // of the inputs: floats in [-1, 1), integers in [0, 8)
  double rtol = 1e-3, atol = 1e-3;
  // The CPU runner's timing policy (backends/cpu/runner.h MeasureOptions).
  int min_reps = 5;
  int max_reps = 500;
  double max_seconds = 0.3;
  double target_spread = 0.02;
  double timeout_seconds = 600;  // compile and timing together; then the child is killed
};

struct XlaTiming {
  double median_s = 0, min_s = 0, p25_s = 0, p75_s = 0, spread = 0;
  int64_t samples = 0;
  double compile_s = 0;
  bool checked = false;    // outputs compared with the reference's
  double max_abs_err = 0;  // the largest elementwise difference found
};

// Errors of Measure: InvalidArgument for a module XLA's parser or compiler rejects or an option
// it does not know (the message names it); DataLoss when the outputs differ from the
// reference's beyond rtol/atol; Aborted when the child died on the request (it is restarted on
// the next); Unavailable when no child can be started (the message says why).
// One XLA debug option the xla-options task searches: the values it tries besides XLA's default
// (which a candidate keeps by leaving the option unset), and what the option changes.
struct XlaOptionChoice {
  std::string name;
  std::vector<std::string> values;
  std::string effect;
};
// The curated options of a platform ("cpu", "gpu"); docs/xla.md lists them.
const std::vector<XlaOptionChoice>& CuratedXlaOptions(std::string_view platform);

class XlaWorker {
 public:
  // `platform`: "cpu" or "gpu" (MLTUNE_XLA_PLATFORM of the child).
  explicit XlaWorker(std::string platform);
  ~XlaWorker();
  XlaWorker(const XlaWorker&) = delete;
  XlaWorker& operator=(const XlaWorker&) = delete;

  // The process-wide worker of a platform, started on first use.
  static XlaWorker& Shared(const std::string& platform);

  // Starts the child if needed and describes it, or Unavailable naming what is missing.
  absl::StatusOr<XlaWorkerInfo> Describe();
  absl::StatusOr<XlaTiming> Measure(const XlaMeasureRequest& request);
  // The module as XLA compiles it with `options`: canonical names, no metadata (what jax.jit's
  // own compile of the same module prints, compared in tests).
  absl::StatusOr<std::string> OptimizedHlo(const std::string& hlo_text, const XlaOptions& options);
  // Of `options`, those the installed XLA refuses, each with XLA's reason.
  absl::StatusOr<std::map<std::string, std::string>> RefusedOptions(const XlaOptions& options);
  // Of `names` (HLO pass names), those the installed XLA's library does not define.
  absl::StatusOr<std::vector<std::string>> UnknownPassNames(const std::vector<std::string>& names);

  int64_t restarts() const;  // children started after the first (crashes and timeouts)

 private:
  class Child;
  std::string platform_;
  std::unique_ptr<Child> child_;
};

}  // namespace mltune::backends::xla
