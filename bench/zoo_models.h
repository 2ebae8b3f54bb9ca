// The zoo's inference models on mltune's CPU backend beside the runtimes users would pick instead
// (bench/peers/models.py: XLA, PyTorch eager, torch.compile, ONNX Runtime, TVM), measured in one
// run and printed as one table (`bench/cpu_models --zoo`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mltune::bench {

struct ZooBenchOptions {
  std::string zoo;                  // models/ (manifest.json, hlo/)
  std::vector<std::string> models;  // empty: every model of the manifest
  std::vector<int64_t> batches = {1, 8};
  int threads = 1;
  double seconds = 2;              // timed seconds per measurement (mltune and each peer)
  bool check = false;              // also check each compile against the reference evaluator (slow)
  std::string python;              // the peers venv's interpreter; "" or missing: no peers
  std::string peers_script;        // bench/peers/models.py
  std::vector<std::string> peers;  // empty: the script's default set
  bool as_json = false;
};

// Runs the benchmark and prints the table (or JSON); returns the process exit status.
int RunZooModels(const ZooBenchOptions& options);

}  // namespace mltune::bench
