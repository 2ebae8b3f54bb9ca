// Scoring by XLA itself (targets xla-cpu, xla-gpu): modules are compiled by the installed jaxlib
// as jax.jit would, checked against XLA's default compile of the graph as given, and timed
// (backends/xla). The pass-order task scores with XlaLatencyScorer on these targets; the
// xla-options task (MakeXlaOptionsTask, task.h) searches XLA's debug options.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/xla/xla_worker.h"
#include "ir/module.h"

namespace mltune::daemon {

// "xla-cpu" and "xla-gpu".
std::vector<std::string> XlaTargets();
bool IsXlaTarget(std::string_view target);
// "cpu" for xla-cpu, "gpu" for xla-gpu.
std::string XlaPlatformOf(std::string_view target);

struct XlaScoringOptions {
  std::string platform = "cpu";
  backends::xla::XlaOptions options;  // compile options of every candidate
  double measure_seconds = 0.3;       // timed work per candidate, at most
  uint64_t seed = 1;                  // of the inputs
};

// Compiles, checks and times candidate modules on an XLA worker, each distinct module (by its
// printed text) once. A candidate XLA rejects or whose outputs differ from the reference's
// scores +infinity and is counted. Thread-safe.
class XlaLatencyScorer {
 public:
  // `reference`: the graph as given, whose default compile's outputs every candidate must match.
  XlaLatencyScorer(const ir::Module& reference, XlaScoringOptions options);

  // The median seconds, or the worker's error.
  absl::StatusOr<double> Measure(const ir::Module& candidate);
  absl::StatusOr<double> MeasureText(const std::string& hlo_text,
                                     const backends::xla::XlaOptions& options);
  double Score(const ir::Module& candidate);

  struct Stats {
    int64_t measured = 0;    // distinct candidates compiled and timed
    int64_t memo_hits = 0;   // answered from an identical earlier candidate
    int64_t rejected = 0;    // XLA's parser or compiler refused them
    int64_t mismatched = 0;  // outputs differ from the reference's: discarded
    int64_t crashed = 0;     // the child died or timed out on them
    double compile_seconds = 0;
  };
  Stats stats() const;
  std::string first_error() const;
  // (op count, measured seconds) of every distinct candidate measured successfully.
  std::vector<std::pair<int64_t, double>> op_counts_and_seconds() const;
  const std::string& reference_text() const { return reference_text_; }
  backends::xla::XlaWorker& worker() const { return worker_; }

 private:
  absl::StatusOr<double> MeasureLocked(const std::string& text,
                                       const backends::xla::XlaOptions& options);

  const XlaScoringOptions options_;
  const std::string reference_text_;
  backends::xla::XlaWorker& worker_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, absl::StatusOr<double>> memo_;
  std::vector<std::pair<int64_t, double>> points_;
  Stats stats_;
  std::string first_error_;
};

// Interleaved re-measurement of a candidate against the default in the same run (A B A B ...,
// `rounds` each): the medians of each side's timings. A search returns its winner only when it
// is faster here.
struct Reconfirmation {
  double default_seconds = 0;
  double candidate_seconds = 0;
  bool candidate_faster = false;  // by at least `margin` (a fraction)
};
absl::StatusOr<Reconfirmation> Reconfirm(const std::function<absl::StatusOr<double>()>& baseline,
                                         const std::function<absl::StatusOr<double>()>& candidate,
                                         int rounds = 3, double margin = 0.01);

// Spearman's rank correlation of the pairs' two sides (ties share their mean rank); 0 for fewer
// than 3 pairs or a constant side.
double SpearmanRankCorrelation(const std::vector<std::pair<int64_t, double>>& pairs);

}  // namespace mltune::daemon
