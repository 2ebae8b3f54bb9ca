#include "daemon/xla_tasks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "daemon/config_search.h"
#include "daemon/task.h"
#include "ir/hlo_printer.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/config_problem.h"
#include "optimizers/pass_order/observation.h"

namespace mltune::daemon {

namespace xla = backends::xla;
using nlohmann::json;

std::vector<std::string> XlaTargets() { return {"xla-cpu", "xla-gpu"}; }

bool IsXlaTarget(std::string_view target) { return target == "xla-cpu" || target == "xla-gpu"; }

std::string XlaPlatformOf(std::string_view target) { return target == "xla-gpu" ? "gpu" : "cpu"; }

XlaLatencyScorer::XlaLatencyScorer(const ir::Module& reference, XlaScoringOptions options)
    : options_(std::move(options)),
      reference_text_(ir::PrintModule(reference)),
      worker_(xla::XlaWorker::Shared(options_.platform)) {}

absl::StatusOr<double> XlaLatencyScorer::MeasureLocked(const std::string& text,
                                                       const xla::XlaOptions& options) {
  xla::XlaMeasureRequest request;
  request.hlo_text = text;
  request.reference_hlo_text = reference_text_;
  request.options = options;
  request.seed = options_.seed;
  request.max_seconds = options_.measure_seconds;
  request.min_reps = 3;
  absl::StatusOr<xla::XlaTiming> timing = worker_.Measure(request);
  if (!timing.ok()) {
    if (absl::IsDataLoss(timing.status())) {
      ++stats_.mismatched;
    } else if (absl::IsAborted(timing.status())) {
      ++stats_.crashed;
    } else {
      ++stats_.rejected;
    }
    if (first_error_.empty()) first_error_ = std::string(timing.status().message());
    return timing.status();
  }
  ++stats_.measured;
  stats_.compile_seconds += timing->compile_s;
  return timing->median_s;
}

absl::StatusOr<double> XlaLatencyScorer::MeasureText(const std::string& hlo_text,
                                                     const xla::XlaOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  return MeasureLocked(hlo_text, options);
}

absl::StatusOr<double> XlaLatencyScorer::Measure(const ir::Module& candidate) {
  const std::string text = ir::PrintModule(candidate);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = memo_.find(text);
  if (it != memo_.end()) {
    ++stats_.memo_hits;
    return it->second;
  }
  absl::StatusOr<double> seconds = MeasureLocked(text, options_.options);
  // A crash or timeout may not recur: only settled answers are remembered.
  if (seconds.ok() || !absl::IsAborted(seconds.status())) memo_.emplace(text, seconds);
  if (seconds.ok()) points_.emplace_back(opt::pass_order::OpCount(candidate), *seconds);
  return seconds;
}

double XlaLatencyScorer::Score(const ir::Module& candidate) {
  absl::StatusOr<double> seconds = Measure(candidate);
  return seconds.ok() ? *seconds : std::numeric_limits<double>::infinity();
}

XlaLatencyScorer::Stats XlaLatencyScorer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string XlaLatencyScorer::first_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

std::vector<std::pair<int64_t, double>> XlaLatencyScorer::op_counts_and_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_;
}

absl::StatusOr<Reconfirmation> Reconfirm(const std::function<absl::StatusOr<double>()>& baseline,
                                         const std::function<absl::StatusOr<double>()>& candidate,
                                         int rounds, double margin) {
  std::vector<double> a, b;
  for (int i = 0; i < rounds; ++i) {
    absl::StatusOr<double> x = baseline();
    if (!x.ok()) return x.status();
    absl::StatusOr<double> y = candidate();
    if (!y.ok()) return y.status();
    a.push_back(*x);
    b.push_back(*y);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Reconfirmation r;
  r.default_seconds = median(a);
  r.candidate_seconds = median(b);
  r.candidate_faster = r.candidate_seconds < r.default_seconds * (1 - margin);
  return r;
}

namespace {

std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

double SpearmanRankCorrelation(const std::vector<std::pair<int64_t, double>>& pairs) {
  if (pairs.size() < 3) return 0;
  std::vector<double> x, y;
  for (const auto& [a, b] : pairs) {
    x.push_back(static_cast<double>(a));
    y.push_back(b);
  }
  const std::vector<double> rx = Ranks(x), ry = Ranks(y);
  const double n = static_cast<double>(pairs.size());
  const double mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

namespace {

constexpr char kName[] = "xla-options";

struct ParsedOptions {
  uint64_t seed = 1;
  double measure_seconds = 0.3;
  std::vector<std::string> only;  // option names to search (empty: the whole catalog)
};

absl::StatusOr<ParsedOptions> ParseOptions(const TaskOptions& options, std::string_view target) {
  ParsedOptions parsed;
  for (const auto& [key, value] : options) {
    if (key == "seed") {
      if (!absl::SimpleAtoi(value, &parsed.seed)) {
        return absl::InvalidArgumentError(
            absl::StrCat("option seed='", value, "': expected an unsigned integer"));
      }
    } else if (key == "measure_seconds") {
      if (!absl::SimpleAtod(value, &parsed.measure_seconds) ||
          !(parsed.measure_seconds > 0 && parsed.measure_seconds <= 60)) {
        return absl::InvalidArgumentError(
            absl::StrCat("option measure_seconds='", value, "': expected seconds in (0, 60]"));
      }
    } else if (key == "options") {
      const std::vector<xla::XlaOptionChoice>& catalog =
          xla::CuratedXlaOptions(XlaPlatformOf(target));
      for (const std::string& name :
           std::vector<std::string>(absl::StrSplit(value, ',', absl::SkipEmpty()))) {
        const bool known = std::any_of(catalog.begin(), catalog.end(),
                                       [&](const auto& c) { return c.name == name; });
        if (!known) {
          std::vector<std::string> names;
          for (const xla::XlaOptionChoice& c : catalog) names.push_back(c.name);
          return absl::InvalidArgumentError(absl::StrCat(
              "option options: '", name, "' is not one of the searched XLA options on ",
              std::string(target), " (", absl::StrJoin(names, ", "), ")"));
        }
        parsed.only.emplace_back(name);
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '", key, "' for task ", kName,
                                                     " (known: seed, measure_seconds, options)"));
    }
  }
  return parsed;
}

// The searched options as a configuration: one position per option, action 0 leaves it unset
// (XLA's default), action i sets its i-th value.
class XlaOptionsProblem : public opt::ConfigProblem {
 public:
  XlaOptionsProblem(std::vector<xla::XlaOptionChoice> options, XlaLatencyScorer& scorer,
                    std::string module_text)
      : options_(std::move(options)), scorer_(scorer), module_text_(std::move(module_text)) {
    space_.fixed_length = true;
    space_.max_length = static_cast<int64_t>(options_.size());
    for (const xla::XlaOptionChoice& o : options_) {
      space_.choices.push_back(static_cast<int32_t>(o.values.size() + 1));
    }
    if (space_.choices.empty()) space_.choices.push_back(1);
  }
  std::string name() const override { return kName; }
  opt::SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, opt::Action action) const override {
    const xla::XlaOptionChoice& o = options_[static_cast<size_t>(position)];
    return action == 0 ? o.name + "=default"
                       : o.name + "=" + o.values[static_cast<size_t>(action - 1)];
  }

  xla::XlaOptions Decode(const opt::Candidate& candidate) const {
    xla::XlaOptions out;
    for (size_t i = 0; i < options_.size() && i < candidate.size(); ++i) {
      if (candidate[i] > 0) {
        out[options_[i].name] = options_[i].values[static_cast<size_t>(candidate[i] - 1)];
      }
    }
    return out;
  }

  double Evaluate(const opt::Candidate& candidate) override {
    const std::string key = Format(candidate);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    absl::StatusOr<double> seconds = scorer_.MeasureText(module_text_, Decode(candidate));
    const double score = seconds.ok() ? *seconds : std::numeric_limits<double>::infinity();
    if (seconds.ok() || !absl::IsAborted(seconds.status())) memo_[key] = score;
    return score;
  }

 private:
  std::vector<xla::XlaOptionChoice> options_;
  XlaLatencyScorer& scorer_;
  std::string module_text_;
  opt::SearchSpace space_;
  std::map<std::string, double> memo_;
};

class XlaOptionsTask : public Task {
 public:
  std::string_view name() const override { return kName; }
  std::string description() const override {
    return "XLA's debug options (a curated set that changes generated code, docs/xla.md) that "
           "minimise XLA's measured runtime of the graph, each candidate checked against XLA's "
           "default outputs; the result is a compiler_options dict for jax's compile()";
  }
  std::vector<std::string> targets() const override { return XlaTargets(); }
  absl::Status ValidateOptions(const TaskOptions& options,
                               const std::string& target) const override {
    return ParseOptions(options, target).status();
  }

  absl::StatusOr<TaskOutcome> Run(const TaskRequest& request) const override {
    absl::StatusOr<ParsedOptions> parsed = ParseOptions(request.options, request.target);
    if (!parsed.ok()) return parsed.status();
    const std::string platform = XlaPlatformOf(request.target);
    XlaScoringOptions scoring;
    scoring.platform = platform;
    scoring.measure_seconds = parsed->measure_seconds;
    scoring.seed = parsed->seed;
    XlaLatencyScorer scorer(*request.module, scoring);

    // The catalog less what this XLA refuses (each value probed), reported, never dropped quietly.
    std::vector<xla::XlaOptionChoice> searched;
    json refused = json::object();
    for (const xla::XlaOptionChoice& choice : xla::CuratedXlaOptions(platform)) {
      if (!parsed->only.empty() &&
          std::find(parsed->only.begin(), parsed->only.end(), choice.name) == parsed->only.end()) {
        continue;
      }
      xla::XlaOptionChoice kept{choice.name, {}, choice.effect};
      for (const std::string& value : choice.values) {
        absl::StatusOr<std::map<std::string, std::string>> no =
            scorer.worker().RefusedOptions({{choice.name, value}});
        if (!no.ok()) return no.status();
        if (no->empty()) {
          kept.values.push_back(value);
        } else {
          refused[choice.name + "=" + value] = no->begin()->second;
        }
      }
      if (!kept.values.empty()) searched.push_back(std::move(kept));
    }
    if (searched.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the installed XLA takes none of the searched options: ", refused.dump()));
    }

    const std::string& text = scorer.reference_text();
    XlaOptionsProblem problem(searched, scorer, text);
    const opt::Candidate defaults(searched.size(), 0);
    if (absl::Status s = problem.AddSeed(defaults); !s.ok()) return s;
    // The default's score is the problem's own (memoised) evaluation, so the search compares
    // like with like; +inf means XLA does not run the graph as given.
    const double baseline = problem.Evaluate(defaults);
    if (!std::isfinite(baseline)) {
      return absl::FailedPreconditionError(
          absl::StrCat("XLA does not run the graph as given: ", scorer.first_error()));
    }
    if (request.continue_from.has_value()) {
      auto it = request.continue_from->artifacts.find("configuration");
      if (it != request.continue_from->artifacts.end()) {
        absl::StatusOr<opt::Candidate> cached = problem.Parse(it->second);
        if (cached.ok()) (void)problem.AddSeed(*cached);
      }
    }
    absl::StatusOr<ConfigSearchRun> run =
        RunConfigSearch(request, kName, problem, parsed->seed, baseline, baseline,
                        absl::StrCat("XLA's measured seconds (", request.target, ")"));
    if (!run.ok()) return run.status();

    // The winner must beat the default again, interleaved, or the default is the answer.
    json confirm = nullptr;
    if (run->best == defaults) run->outcome.tuned_score = run->outcome.baseline_score;
    if (run->best != defaults) {
      const xla::XlaOptions best = problem.Decode(run->best);
      absl::StatusOr<Reconfirmation> again =
          Reconfirm([&] { return scorer.MeasureText(text, {}); },
                    [&] { return scorer.MeasureText(text, best); });
      if (!again.ok()) return again.status();
      confirm = {{"default_seconds", again->default_seconds},
                 {"tuned_seconds", again->candidate_seconds},
                 {"kept", again->candidate_faster}};
      if (again->candidate_faster) {
        run->outcome.baseline_score = again->default_seconds;
        run->outcome.tuned_score = again->candidate_seconds;
      } else {
        run->best = defaults;
        run->outcome.tuned_score = run->outcome.baseline_score;
        run->outcome.artifacts["configuration"] = opt::ConfigProblem::Format(defaults);
      }
    }
    run->outcome.artifacts["compiler_options"] = xla::XlaOptionsJson(problem.Decode(run->best));
    const XlaLatencyScorer::Stats st = scorer.stats();
    json searched_json = json::array();
    for (const xla::XlaOptionChoice& c : searched) {
      searched_json.push_back({{"name", c.name}, {"values", c.values}});
    }
    json report = {{"measured", st.measured},
                   {"rejected", st.rejected},
                   {"mismatched", st.mismatched},
                   {"crashed", st.crashed},
                   {"compile_seconds", st.compile_seconds},
                   {"searched", searched_json},
                   {"refused", refused},
                   {"reconfirmation", confirm}};
    if (!scorer.first_error().empty()) report["first_error"] = scorer.first_error();
    run->outcome.artifacts["xla"] = report.dump();
    return std::move(run->outcome);
  }
};

}  // namespace

std::unique_ptr<Task> MakeXlaOptionsTask() { return std::make_unique<XlaOptionsTask>(); }

}  // namespace mltune::daemon
