// What every `mltune collect` target and task shares: the measurement plan (kernels, each with
// the configurations to measure), skipping what the log already holds, the time bound, the
// progress line and the summary. The collectors (collect_cpu.cc, collect_tpu.cc) only build
// plans; RunCollectPlan measures them, so resuming and counting behave the same everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/hlo_files.h"
#include "optimizers/cost_model_data/collect.h"
#include "storage/store.h"

namespace mltune::opt::cost_model_data {

// One measurement: seconds, and the analytical baseline's prediction where the collector
// computes it at collect time (logged under "<task>-analytical" with the same key and
// configuration, so train-cost-model can compare on exactly the measured rows).
struct Measured {
  double seconds = 0;
  std::optional<double> analytical;
};

struct Trial {
  std::string configuration;  // "name=value,..." (the log's configuration text)
  std::function<absl::StatusOr<Measured>()> measure;
};

struct KernelPlan {
  storage::KernelGraphRecord graph;  // key, serialized graph, where it was first seen
  std::string label;                 // "kernel K of FILE", for messages
  std::vector<Trial> trials;
};

struct CollectPlan {
  std::string target;    // logged target: "cpu" or a tpu spec name
  std::string log_task;  // "tile-kernel" or "fusion-kernel"
  // fusion: a kernel is measured once; any logged row of its key counts as done. tile: each
  // (key, configuration) pair is measured once.
  bool once_per_kernel = false;
  std::vector<KernelPlan> kernels;  // distinct keys
  // Measurements per trial, in rounds over a kernel's trials (alternating direction); the log
  // gets the fastest. A co-runner on a shared machine only ever slows a measurement down (a busy
  // second core moves a 1.4 ns kernel to 2.0-2.5 ns here), so the minimum over rounds spread in
  // time is the uncontended time. 1 for simulated targets: their noise is the model's.
  int rounds = 1;
  int64_t modules = 0;   // that yielded kernels
  int64_t rejected = 0;  // configurations drawn but invalid (tpu-sim: VMEM)
  std::vector<std::shared_ptr<void>> keep_alive;  // what the trials' closures point into
};

// The analytical rows' log task: "tile-kernel-analytical" for "tile-kernel".
std::string AnalyticalTask(const std::string& log_task);

// A generator seed from the run's seed and a hex digest (a kernel key, a fingerprint): its first
// 64 bits, not std::hash, so draws stay the same across builds.
uint64_t MixSeed(uint64_t seed, const std::string& hex);

// Measures `plan` into `store`: skips what the log holds, measures each kernel's remaining trials
// plan.rounds times and logs their fastest (one row per trial, a kernel's rows together), stops
// before the next measurement once cmd.seconds are spent (a kernel cut short logs the rounds it
// has), prints progress on `err` and the summary on `out`.
absl::Status RunCollectPlan(const CollectOptions& cmd, CollectPlan& plan, storage::Store& store,
                            std::ostream& out, std::ostream& err);

// Parses and verifies `file`; on failure notes "error: ..." on `err` and returns nullptr (the
// collectors skip such a file).
std::unique_ptr<ir::Module> LoadNoting(const ir::HloFile& file, std::ostream& err);

// The collectors: fill `plan` from the files (a file they cannot use is skipped with a note on
// `err`).
absl::Status PlanCpuTile(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                         CollectPlan& plan, std::ostream& err);
absl::Status PlanCpuFusion(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                           CollectPlan& plan, std::ostream& err);
absl::Status PlanTpuTile(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                         CollectPlan& plan, std::ostream& err);
absl::Status PlanTpuFusion(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                           CollectPlan& plan, std::ostream& err);

}  // namespace mltune::opt::cost_model_data
