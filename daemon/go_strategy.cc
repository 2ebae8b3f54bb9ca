// The GO policy as a search strategy.
#include "daemon/go_strategy.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace mltune::daemon {
namespace {

// The GO policy as a search strategy: every decision it evaluates goes through the search
// context, so it is charged to the budget, logged and traced like any other strategy's, and the
// seeds (m-ETF, one device, the cached best) are scored first, so it never returns worse.
class GoStrategy : public opt::Strategy {
 public:
  GoStrategy(std::unique_ptr<opt::rl::GoPolicy> policy, std::unique_ptr<opt::rl::GoEnvironment> env,
             bool fine_tune)
      : policy_(std::move(policy)), env_(std::move(env)), fine_tune_(fine_tune) {}
  std::string_view name() const override { return "go"; }

 protected:
  bool Run(opt::SearchContext& context) override {
    class Charged : public opt::rl::GoEnvironment {
     public:
      Charged(opt::rl::GoEnvironment& inner, opt::SearchContext& context)
          : inner_(inner), context_(context) {}
      const opt::rl::GoGraph& graph() const override { return inner_.graph(); }
      double reference_score() const override { return inner_.reference_score(); }
      bool realizes() const override { return inner_.realizes(); }
      opt::rl::GoDecision Realize(const opt::rl::GoDecision& proposal,
                                  const std::vector<float>& probabilities) override {
        return inner_.Realize(proposal, probabilities);
      }
      Outcome Evaluate(const opt::rl::GoDecision& decision) override {
        std::optional<opt::SearchContext::Evaluation> e =
            context_.Evaluate(opt::Candidate(decision.device.begin(), decision.device.end()));
        Outcome o;
        o.valid = e.has_value() && std::isfinite(e->score);
        o.score = o.valid ? e->score : 0;
        o.overflow = o.valid ? 0 : 1;
        return o;
      }

     private:
      opt::rl::GoEnvironment& inner_;
      opt::SearchContext& context_;
    } charged(*env_, context);
    opt::rl::GoSolveOptions options;
    const int64_t max_steps = context.budget().max_steps;
    options.max_samples = max_steps > 0 ? max_steps - context.steps() : 64;
    options.sampled = 8;
    options.fine_tune = fine_tune_;
    options.seed = context.rng()();
    options.stop = [&context] { return context.Exhausted(); };
    // Refine the best seed (m-ETF, one device, the cached best) rather than start from nothing.
    if (!context.best().empty()) {
      opt::rl::GoDecision start;
      start.device.assign(context.best().begin(), context.best().end());
      options.starts.push_back(std::move(start));
    }
    absl::StatusOr<opt::rl::GoSolveResult> solved = policy_->Solve(charged, options);
    if (!solved.ok()) Fail(solved.status());
    return context.Exhausted();
  }

 private:
  std::unique_ptr<opt::rl::GoPolicy> policy_;
  std::unique_ptr<opt::rl::GoEnvironment> env_;
  bool fine_tune_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<opt::Strategy>> MakeGoStrategy(
    const TaskRequest& request, std::unique_ptr<opt::rl::GoEnvironment> env, bool fine_tune) {
  if (!request.latest_model) return absl::InternalError("no model store for learned policies");
  absl::StatusOr<std::optional<storage::ModelRecord>> model = request.latest_model(kGoModel);
  if (!model.ok()) return model.status();
  if (!model->has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no ", kGoModel,
                     " model in the store; train one with `mltune train-agent "
                     "--algo go` or start mltuned with its pretrained models"));
  }
  absl::StatusOr<std::unique_ptr<opt::rl::GoPolicy>> policy =
      opt::rl::GoPolicy::Load((*model)->data);
  if (!policy.ok()) return policy.status();
  return std::make_unique<GoStrategy>(*std::move(policy), std::move(env), fine_tune);
}

}  // namespace mltune::daemon
