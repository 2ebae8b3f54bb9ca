// Composite passes: a Pipeline runs passes in order; FixedPoint repeats a pass until it reports no
// change, at most 25 times, as XLA's HloPassFix does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace mltune::passes {

// Wall time and change count per pass name, summed over every run of that pass (LLVM's
// -time-passes). Nested pipelines and fixed points record only their leaf passes, so the totals
// add up to the pipeline's time.
struct PassTimings {
  struct Entry {
    int64_t runs = 0;
    int64_t changed = 0;
    double seconds = 0;
  };
  std::map<std::string, Entry> by_pass;
  // The leaf passes that changed the module, in order. Passes that changed nothing are identities,
  // so replaying this sequence reproduces the pipeline's result.
  std::vector<std::string> changed_sequence;
};

// While alive, every Pipeline run on this thread records into `timings`.
class ScopedPassTimings {
 public:
  explicit ScopedPassTimings(PassTimings* timings);
  ~ScopedPassTimings();
  ScopedPassTimings(const ScopedPassTimings&) = delete;
  ScopedPassTimings& operator=(const ScopedPassTimings&) = delete;

 private:
  PassTimings* previous_;
};

class Pipeline : public Pass {
 public:
  explicit Pipeline(std::string name) : name_(std::move(name)) {}
  Pipeline& Add(std::unique_ptr<Pass> pass);
  std::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Module& module) override;
  // Verify the module after every pass (slower; on for tests and `mltune opt --verify`).
  void set_verify_each(bool v) { verify_each_ = v; }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Pass>> passes_;
  bool verify_each_ = false;
};

class FixedPoint : public Pass {
 public:
  static constexpr int kDefaultMaxIterations = 25;
  explicit FixedPoint(std::unique_ptr<Pass> pass, int max_iterations = kDefaultMaxIterations);
  std::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Module& module) override;
  int iterations_of_last_run() const { return last_iterations_; }

 private:
  std::unique_ptr<Pass> pass_;
  std::string name_;
  int max_iterations_;
  int last_iterations_ = 0;
};

}  // namespace mltune::passes
