#include "passes/pipeline.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "ir/verifier.h"

namespace mltune::passes {
namespace {

thread_local PassTimings* current_timings = nullptr;

bool IsComposite(const Pass& pass) {
  return dynamic_cast<const Pipeline*>(&pass) != nullptr ||
         dynamic_cast<const FixedPoint*>(&pass) != nullptr;
}

// Runs one pass, recording its time when timings are being collected and it is a leaf.
absl::StatusOr<bool> RunTimed(Pass& pass, ir::Module& module) {
  if (current_timings == nullptr || IsComposite(pass)) return pass.Run(module);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<bool> changed = pass.Run(module);
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  PassTimings::Entry& e = current_timings->by_pass[std::string(pass.name())];
  ++e.runs;
  e.seconds += elapsed.count();
  if (changed.ok() && *changed) {
    ++e.changed;
    current_timings->changed_sequence.emplace_back(pass.name());
  }
  return changed;
}

}  // namespace

ScopedPassTimings::ScopedPassTimings(PassTimings* timings) : previous_(current_timings) {
  current_timings = timings;
}

ScopedPassTimings::~ScopedPassTimings() { current_timings = previous_; }

Pipeline& Pipeline::Add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

absl::StatusOr<bool> Pipeline::Run(ir::Module& module) {
  bool changed = false;
  for (const auto& pass : passes_) {
    absl::StatusOr<bool> c = RunTimed(*pass, module);
    if (!c.ok()) {
      return absl::Status(c.status().code(), absl::StrCat(std::string(pass->name()), ": ",
                                                          std::string(c.status().message())));
    }
    changed |= *c;
    if (verify_each_) {
      absl::Status s = ir::VerifyModule(module);
      if (!s.ok()) {
        return absl::InternalError(absl::StrCat("module invalid after pass ",
                                                std::string(pass->name()), ": ",
                                                std::string(s.message())));
      }
    }
  }
  return changed;
}

FixedPoint::FixedPoint(std::unique_ptr<Pass> pass, int max_iterations)
    : pass_(std::move(pass)),
      name_(absl::StrCat(std::string(pass_->name()), "-fixed-point")),
      max_iterations_(max_iterations) {}

absl::StatusOr<bool> FixedPoint::Run(ir::Module& module) {
  bool changed = false;
  last_iterations_ = 0;
  while (last_iterations_ < max_iterations_) {
    ++last_iterations_;
    absl::StatusOr<bool> c = RunTimed(*pass_, module);
    if (!c.ok()) return c.status();
    if (!*c) break;
    changed = true;
  }
  return changed;
}

}  // namespace mltune::passes
