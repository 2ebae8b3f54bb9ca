#include "passes/pipeline.h"

#include "absl/strings/str_cat.h"
#include "ir/verifier.h"

namespace mltune::passes {

Pipeline& Pipeline::Add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

absl::StatusOr<bool> Pipeline::Run(ir::Module& module) {
  bool changed = false;
  for (const auto& pass : passes_) {
    absl::StatusOr<bool> c = pass->Run(module);
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
    absl::StatusOr<bool> c = pass_->Run(module);
    if (!c.ok()) return c.status();
    if (!*c) break;
    changed = true;
  }
  return changed;
}

}  // namespace mltune::passes
