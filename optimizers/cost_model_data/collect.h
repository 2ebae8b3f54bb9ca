// Collecting the learned cost models' training data, the library behind `mltune collect`. tile:
// each module's kernels (cpu: after the backend's pipeline and lowering; tpu: the default
// fusion) are measured under their default and random valid configurations (log task
// tile-kernel). fusion: the kernels of the default and random fusion plans, each measured once
// under its default configuration (log task fusion-kernel). graph_key is the kernel key; each
// kernel's graph goes to the store's kernel graphs; tpu rows come with the analytical baseline's
// prediction (task <task>-analytical). What the log holds is skipped, so a run resumes.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace mltune::opt::cost_model_data {

// Each field is the `mltune collect` flag of the same name (docs/cost_models.md).
struct CollectOptions {
  std::vector<std::string> inputs;  // HLO files, or folders searched recursively
  std::string target = "cpu";       // cpu or a tpu spec name (the rows are logged under it)
  std::string task = "tile";
  std::string db;          // the SQLite store (created when missing)
  double seconds = 0;      // stop cleanly after this long (0: no limit)
  int64_t per_kernel = 8;  // tile: configurations per kernel, the default one included
  // Fusion plans per module, the default one included; 0: the task's default (fusion 8; tile 1,
  // the default fusion's kernels only, on cpu).
  int64_t per_module = 0;
  // cpu: measurements per configuration, in rounds over each kernel's configurations; the
  // fastest is logged (collect_plan.h says why). 0: 3 on cpu, 1 on simulated targets.
  int rounds = 0;
  double noise = 0.02;  // tpu-sim: log-normal sigma of the simulated "measurements"
  uint64_t seed = 0;    // configurations and plans drawn, inputs generated, noise
  // cpu: a module the backend cannot lower whole is cut at those ops (backends/cpu/
  // cut_unsupported.h) and its other kernels are measured.
  bool cut_unsupported = false;
  bool live_progress = false;  // one progress line redrawn with '\r' (a terminal), else lines
};

// Measures what `options` say into the store `options.db` (created when missing): the summary
// goes to `report`, progress and per-file notes (a file skipped, a failed measurement) to
// `notes`. InvalidArgument names the bad option; a file or folder that cannot be read, or
// modules none of which the target can compile, fail the run.
absl::Status Collect(const CollectOptions& options, std::ostream& report, std::ostream& notes);

}  // namespace mltune::opt::cost_model_data
