#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "optimizers/pass_order/engine.h"
#include "optimizers/pass_order/pass_order.h"

namespace mltune::opt::pass_order {

absl::StatusOr<std::unique_ptr<PassOrderEnv>> PassOrderEnv::Create(PassOrderOptions options) {
  absl::StatusOr<std::shared_ptr<internal::Engine>> engine = internal::Engine::Create(options);
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<PassOrderEnv>(new PassOrderEnv(*std::move(engine), std::move(options)));
}

PassOrderEnv::PassOrderEnv(std::shared_ptr<internal::Engine> engine, PassOrderOptions options)
    : options_(std::move(options)), engine_(std::move(engine)) {}

PassOrderEnv::~PassOrderEnv() = default;

absl::StatusOr<Observation> PassOrderEnv::Reset(const ir::Module& module) {
  absl::StatusOr<internal::NodePtr> root = engine_->AddRoot(module);
  if (!root.ok()) return root.status();
  node_ = *std::move(root);
  initial_score_ = node_->score;
  step_ = 0;
  taken_.clear();
  failures_.clear();
  return engine_->Observe(*node_);
}

absl::StatusOr<StepResult> PassOrderEnv::Step(int action) {
  if (node_ == nullptr) return absl::FailedPreconditionError("Step before Reset");
  if (done()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the episode is done (", options_.episode_length, " steps); call Reset"));
  }
  if (action < 0 || action >= action_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("action ", action, " outside [0, ", action_count(), ")"));
  }
  internal::Applied applied = engine_->Apply(node_, action, /*exact=*/true);
  const double before = node_->score;
  node_ = std::move(applied.node);
  ++step_;
  taken_.push_back(action);
  StepResult r;
  // Normalised so an episode's rewards sum to the relative reduction; a zero start would make
  // every reward infinite, so it normalises by 1 instead.
  const double scale = initial_score_ != 0 ? std::abs(initial_score_) : 1.0;
  r.reward = (before - node_->score) / scale;
  r.done = done();
  r.changed = applied.changed;
  if (!applied.error.empty()) {
    failures_.push_back({action_names()[action], node_->fingerprint, applied.error});
    r.error = std::move(applied.error);
  }
  r.observation = engine_->Observe(*node_);
  return r;
}

absl::StatusOr<StepResult> PassOrderEnv::Step(std::string_view pass_name) {
  const int action = engine_->ActionIndex(pass_name);
  if (action < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pass ", std::string(pass_name), " is not in the action space"));
  }
  return Step(action);
}

std::unique_ptr<PassOrderEnv> PassOrderEnv::Fork() const {
  auto copy = std::unique_ptr<PassOrderEnv>(new PassOrderEnv(engine_, options_));
  copy->node_ = node_;
  copy->initial_score_ = initial_score_;
  copy->step_ = step_;
  copy->taken_ = taken_;
  copy->failures_ = failures_;
  return copy;
}

std::vector<bool> PassOrderEnv::ActionMask() {
  std::vector<bool> mask(static_cast<size_t>(action_count()), false);
  if (node_ == nullptr) return mask;
  for (int a = 0; a < action_count(); ++a)
    mask[a] = engine_->Apply(node_, a, /*exact=*/true).changed;
  return mask;
}

int PassOrderEnv::action_count() const { return engine_->action_count(); }
const std::vector<std::string>& PassOrderEnv::action_names() const {
  return engine_->action_names();
}
int PassOrderEnv::action_index(std::string_view pass_name) const {
  return engine_->ActionIndex(pass_name);
}
int64_t PassOrderEnv::episode_length() const { return options_.episode_length; }
bool PassOrderEnv::done() const { return step_ >= options_.episode_length; }

const ir::Module& PassOrderEnv::module() const { return *node_->module; }
const Observation& PassOrderEnv::observation() const { return engine_->Observe(*node_); }
double PassOrderEnv::score() const { return node_->score; }
PassOrderStats PassOrderEnv::stats() const { return engine_->stats(); }

}  // namespace mltune::opt::pass_order
