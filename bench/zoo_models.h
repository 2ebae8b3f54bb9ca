// The zoo's inference models on mltune's CPU backend, with its default kernels and tuned, beside
// the runtimes users would pick instead (bench/peers/models.py: XLA, PyTorch eager,
// torch.compile, ONNX Runtime, TVM), measured in one run and printed as one table
// (`bench/cpu_models --zoo`); optionally the training steps, on mltune alone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::bench {

struct ZooBenchOptions {
  std::string zoo;                  // models/ (manifest.json, hlo/)
  std::vector<std::string> models;  // empty: every model of the manifest (of `role`)
  // Only the models of this role in the manifest: "fit" (the CPU backend's defaults were fitted
  // on them) or "report" (held out, for figures); "" for every role.
  std::string role;
  std::vector<int64_t> batches = {1, 8};
  int threads = 1;
  double seconds = 2;       // timed seconds per measurement (mltune and each peer)
  bool check = false;       // also check each compile against the reference evaluator (slow)
  int64_t tune_budget = 0;  // tuning steps per model (TuneKernels); 0: default kernels only
  bool train = false;       // also the zoo's training steps (mltune only: peers infer)
  bool tune_train = false;  // tune the training steps too (BERT's: over 10 minutes at 8 steps)
  // Run the peers (pinned to the last CPU) while mltune runs pinned to the first, rather than
  // after it: half the wall time on two cores, at the cost of sharing the last-level cache.
  bool concurrent_peers = false;
  std::string python;              // the peers venv's interpreter; "" or missing: no peers
  std::string peers_script;        // bench/peers/models.py
  std::vector<std::string> peers;  // empty: the script's default set
  bool as_json = false;
};

// Each model of the zoo's manifest (`zoo`/manifest.json) with its role ("fit", "report", or ""
// where the manifest names none).
absl::StatusOr<std::map<std::string, std::string>> ZooRoles(const std::string& zoo);
// The manifest's models of `role`, sorted; "" or "all": every model. An error when none is.
absl::StatusOr<std::vector<std::string>> ZooModelsOfRole(const std::string& zoo,
                                                         const std::string& role);

// Runs the benchmark and prints the table (or JSON); returns the process exit status.
int RunZooModels(const ZooBenchOptions& options);

}  // namespace mltune::bench
