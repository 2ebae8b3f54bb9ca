// The "pass-order" task: searches the order of XLA's HLO passes that minimises the op count
// (optimizers/pass_order) on cpu and gpu, the measured latency of the CPU backend's compile on cpu
// with score=latency, or the simulated time on tpu-sim targets, against XLA's default pipeline
// for the target as the baseline.
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "daemon/sim_workers.h"
#include "daemon/task.h"
#include "daemon/xla_tasks.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "nlohmann/json.hpp"
#include "optimizers/pass_order/cpu_latency.h"
#include "optimizers/pass_order/pass_order.h"
#include "optimizers/rl/rl.h"
#include "passes/default_pipelines.h"
#include "passes/registry.h"

namespace mltune::daemon {
namespace {

constexpr char kName[] = "pass-order";
constexpr int64_t kMaxSequenceLength = 200;
// Measured candidates go to the measurement log under their own task name: seconds and op counts
// of one module must not read as one series.
constexpr char kLatencyLogName[] = "pass-order-latency";
constexpr char kLatencyScorer[] = "measured seconds";
constexpr double kMaxMeasureSeconds = 10;

struct ParsedOptions {
  uint64_t seed = 0;
  int64_t max_length = 40;
  bool warm_start = true;
  int64_t rollouts = 4;          // rl-*: sampled rollouts after the greedy one
  bool fine_tune = false;        // rl-*: train on the graph with what is left of the budget
  bool latency = false;          // score=latency: the CPU backend's measured seconds (target cpu)
  double measure_seconds = 0.1;  // score=latency: timed runs per candidate, at most
  // xla-cpu / xla-gpu: leave on XLA's own runs of the passes the sequence replaces (else they
  // are disabled through xla_disable_hlo_passes, so the sequence's order is what XLA sees).
  bool xla_passes = false;
};

constexpr const char* kAgents[] = {"ppo", "dqn", "maxq"};

std::string ModelName(std::string_view algo) {
  return absl::StrCat("pass-order/rl-", std::string(algo));
}

absl::StatusOr<ParsedOptions> ParseOptions(const TaskOptions& options) {
  ParsedOptions parsed;
  for (const auto& [key, value] : options) {
    bool ok = true;
    if (key == "seed") {
      ok = absl::SimpleAtoi(value, &parsed.seed);
    } else if (key == "max_length") {
      ok = absl::SimpleAtoi(value, &parsed.max_length) && parsed.max_length >= 1 &&
           parsed.max_length <= kMaxSequenceLength;
    } else if (key == "warm_start") {
      ok = absl::SimpleAtob(value, &parsed.warm_start);
    } else if (key == "rollouts") {
      ok = absl::SimpleAtoi(value, &parsed.rollouts) && parsed.rollouts >= 0 &&
           parsed.rollouts <= 1000;
    } else if (key == "fine_tune") {
      ok = absl::SimpleAtob(value, &parsed.fine_tune);
    } else if (key == "score") {
      ok = value == "op-count" || value == "latency";
      parsed.latency = value == "latency";
    } else if (key == "measure_seconds") {
      ok = absl::SimpleAtod(value, &parsed.measure_seconds) && parsed.measure_seconds > 0 &&
           parsed.measure_seconds <= kMaxMeasureSeconds;
    } else if (key == "xla_passes") {
      ok = value == "on" || value == "off";
      parsed.xla_passes = value == "on";
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", key,
                       "' for task pass-order (known: seed, max_length, warm_start, rollouts, "
                       "fine_tune, score, measure_seconds, xla_passes)"));
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "option ", key, "='", value, "': expected ",
          key == "seed"              ? "an unsigned integer"
          : key == "max_length"      ? absl::StrCat("an integer in [1, ", kMaxSequenceLength, "]")
          : key == "rollouts"        ? "an integer in [0, 1000]"
          : key == "score"           ? "op-count or latency"
          : key == "xla_passes"      ? "on or off"
          : key == "measure_seconds" ? absl::StrCat("seconds in (0, ", kMaxMeasureSeconds, "]")
                                     : "true or false"));
    }
  }
  return parsed;
}

// The options that hold on `target`: score=latency times the CPU backend's code, so cpu only;
// tpu-sim targets are scored by their simulator, so no score option there.
absl::StatusOr<ParsedOptions> ParseOptions(const TaskOptions& options, const std::string& target) {
  absl::StatusOr<ParsedOptions> parsed = ParseOptions(options);
  if (!parsed.ok()) return parsed.status();
  auto score = options.find("score");
  if (IsXlaTarget(target)) {
    // XLA's targets are always scored by XLA's measured runtime.
    if (score != options.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("option score does not apply to target '", target,
                       "': it is always scored by XLA's measured seconds"));
    }
    return parsed;
  }
  if (options.contains("xla_passes")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option xla_passes applies to targets xla-cpu and xla-gpu, not '", target, "'"));
  }
  if (score != options.end() && target != "cpu" && (parsed->latency || target != "gpu")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option score=", score->second, " does not apply to target '", target,
        "' (score=latency: target cpu only; score=op-count: cpu and gpu; tpu-sim targets are "
        "scored in simulated seconds)"));
  }
  if (options.contains("measure_seconds") && !parsed->latency) {
    return absl::InvalidArgumentError(
        "option measure_seconds applies to score=latency only (target cpu)");
  }
  return parsed;
}

// XLA's pipeline for the target; TPU-like simulated targets use the GPU (accelerator) order.
std::string PipelineFor(const std::string& target) {
  if (IsXlaTarget(target)) return XlaPlatformOf(target);
  return target == "cpu" || target == "gpu" ? target : "gpu";
}

// The score of a module on the target: the op count, or on tpu-sim targets the simulated time
// (default fusion and tiles) in seconds.
absl::StatusOr<opt::pass_order::ScoreFn> MakeScorer(const std::string& target,
                                                    std::string* scorer) {
  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(target);
  if (spec == nullptr) {
    *scorer = "op-count";
    return opt::pass_order::ScoreFn(
        [](const ir::Module& m) { return static_cast<double>(opt::pass_order::OpCount(m)); });
  }
  absl::StatusOr<backends::tpu::TpuSimulator> sim = backends::tpu::TpuSimulator::Create(*spec);
  if (!sim.ok()) return sim.status();
  *scorer = "simulated seconds";
  auto shared = std::make_shared<const backends::tpu::TpuSimulator>(*std::move(sim));
  return opt::pass_order::ScoreFn([shared](const ir::Module& m) {
    const costmodels::OpGraph graph = costmodels::BuildOpGraph(m);
    backends::tpu::TpuSimulator sim = *shared;  // noise-free: the copy's state is never shared
    return sim.Simulate(costmodels::SummarizeKernels(graph, costmodels::PlanFusion(graph))).seconds;
  });
}

absl::StatusOr<double> DefaultPipelineScore(const ir::Module& module, const std::string& target,
                                            const opt::pass_order::ScoreFn& score) {
  const std::string pipeline_name = PipelineFor(target);
  std::unique_ptr<passes::Pipeline> pipeline = passes::MakeDefaultPipeline(pipeline_name);
  if (pipeline == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown target '", target, "'"));
  }
  std::unique_ptr<ir::Module> copy = module.Clone();
  absl::StatusOr<bool> changed = pipeline->Run(*copy);
  if (!changed.ok()) {
    return absl::InternalError(absl::StrCat("XLA's default ", pipeline_name,
                                            " pipeline failed: ", changed.status().message()));
  }
  return score(*copy);
}

// Passes of XLA's pipeline that legalize rather than optimise (expanders, normalizers, the call
// graph's flattening): XLA's later stages require their output ("Call graph must be flattened
// before copy insertion"; the CPU emitters CHECK for simplified gathers and scatters), so they
// stay on even where a sequence also runs them.
bool XlaNeedsPass(std::string_view name) {
  static const char* const kRequired[] = {"flatten-call-graph",
                                          "sharding-remover",
                                          "sub-byte-size-setter",
                                          "dot_decomposer",
                                          "operand_upcaster",
                                          "dynamic-index-splitter",
                                          "conditional-to-select",
                                          "tree_reduction_rewriter",
                                          "while-loop-trip-count-annotator",
                                          "batched_gather_scatter_normalizer",
                                          "scatter_simplifier",
                                          "gather_simplifier"};
  for (const char* required : kRequired) {
    if (name == required) return true;
  }
  return name.find("expander") != std::string_view::npos;
}

// The XLA scorer of a pass-order search on xla-cpu / xla-gpu. Unless xla_passes=on, XLA's own
// runs of the optimising passes of its default pipeline that mltune's registry holds are
// disabled, so the searched order is what XLA sees; names XLA does not define (mltune's own
// passes) cannot be disabled and are reported in `report`.
absl::StatusOr<std::shared_ptr<XlaLatencyScorer>> MakeXlaScorer(const TaskRequest& request,
                                                                const ParsedOptions& parsed,
                                                                nlohmann::json* report) {
  XlaScoringOptions scoring;
  scoring.platform = XlaPlatformOf(request.target);
  scoring.seed = parsed.seed + 1;
  scoring.measure_seconds = std::max(parsed.measure_seconds, 0.3);
  std::vector<std::string> replaced;
  for (const std::string& name : passes::DefaultPipelinePassNames(scoring.platform)) {
    if (passes::Registry::Global().Find(name) != nullptr && !XlaNeedsPass(name) &&
        std::find(replaced.begin(), replaced.end(), name) == replaced.end()) {
      replaced.push_back(name);
    }
  }
  auto scorer = std::make_shared<XlaLatencyScorer>(*request.module, scoring);
  absl::StatusOr<std::vector<std::string>> unknown = scorer->worker().UnknownPassNames(replaced);
  if (!unknown.ok()) return unknown.status();
  std::vector<std::string> disabled;
  for (const std::string& name : replaced) {
    if (std::find(unknown->begin(), unknown->end(), name) == unknown->end()) {
      disabled.push_back(name);
    }
  }
  (*report)["xla_passes"] = parsed.xla_passes ? "on" : "off";
  (*report)["not_disabled"] = *unknown;
  if (!parsed.xla_passes) {
    scoring.options["xla_disable_hlo_passes"] = absl::StrJoin(disabled, ",");
    (*report)["disabled"] = disabled;
    scorer = std::make_shared<XlaLatencyScorer>(*request.module, scoring);
  }
  return scorer;
}

class PassOrderTask : public Task {
 public:
  std::string_view name() const override { return kName; }
  std::string description() const override {
    return "order of XLA's HLO passes that minimises the op count (cpu, gpu), the measured "
           "latency of the CPU backend's code (cpu, option score=latency), XLA's own measured "
           "latency (xla-cpu, xla-gpu: the sequence replaces XLA's passes, or with xla_passes=on "
           "runs before them) or the simulated time (tpu-sim targets), against XLA's default "
           "pipeline for the target";
  }
  std::vector<std::string> targets() const override {
    std::vector<std::string> targets = {"cpu", "gpu"};
    for (const std::string& t : XlaTargets()) targets.push_back(t);
    for (const std::string& t : TargetsOfWorker("tpu-sim")) targets.push_back(t);
    return targets;
  }

  absl::Status ValidateOptions(const TaskOptions& options,
                               const std::string& target) const override {
    return ParseOptions(options, target).status();
  }

  std::string ScoreVariant(const TaskOptions& options) const override {
    absl::StatusOr<ParsedOptions> parsed = ParseOptions(options);
    if (parsed.ok() && parsed->xla_passes) return "xla_passes=on";
    return parsed.ok() && parsed->latency ? "score=latency" : "";
  }

  std::vector<OwnStrategy> own_strategies() const override {
    std::vector<OwnStrategy> own;
    for (const char* algo : kAgents) {
      own.push_back({absl::StrCat("rl-", algo),
                     absl::StrCat("the newest trained ", absl::AsciiStrToUpper(algo),
                                  " agent (mltune train-agent): greedy + sampled rollouts, "
                                  "optional fine-tuning (options rollouts, fine_tune)"),
                     [name = ModelName(algo)](std::string_view) { return name; }});
    }
    return own;
  }

  absl::StatusOr<TaskOutcome> Run(const TaskRequest& request) const override {
    absl::StatusOr<ParsedOptions> parsed = ParseOptions(request.options, request.target);
    if (!parsed.ok()) return parsed.status();
    const bool learned = absl::StartsWith(request.strategy, "rl-");
    std::unique_ptr<opt::Strategy> strategy;
    if (!learned) {
      absl::StatusOr<std::unique_ptr<opt::Strategy>> created =
          opt::StrategyRegistry::Global().Create(request.strategy);
      if (!created.ok()) return created.status();
      strategy = *std::move(created);
    }

    TaskOutcome outcome;
    std::shared_ptr<opt::pass_order::CpuLatencyScorer> latency;
    std::shared_ptr<XlaLatencyScorer> xla_scorer;
    nlohmann::json xla_report = nlohmann::json::object();
    absl::StatusOr<opt::pass_order::ScoreFn> score;
    if (IsXlaTarget(request.target)) {
      absl::StatusOr<std::shared_ptr<XlaLatencyScorer>> made =
          MakeXlaScorer(request, *parsed, &xla_report);
      if (!made.ok()) return made.status();
      xla_scorer = *std::move(made);
      score = opt::pass_order::ScoreFn(
          [xla_scorer](const ir::Module& m) { return xla_scorer->Score(m); });
      outcome.scorer = absl::StrCat("XLA's measured seconds (", request.target, ")");
    } else if (parsed->latency) {
      // The candidate pass sequence replaces the backend's own pipeline, so each candidate is
      // compiled as it is; the start must compile, or no score is defined.
      if (absl::Status s = opt::pass_order::CheckLatencyScorable(*request.module); !s.ok()) {
        return s;
      }
      opt::pass_order::CpuLatencyOptions latency_options;
      latency_options.measure = opt::pass_order::LatencyMeasureOptions(parsed->measure_seconds);
      latency_options.seed = parsed->seed;
      latency = std::make_shared<opt::pass_order::CpuLatencyScorer>(latency_options);
      score = opt::pass_order::LatencyScoreFn(latency);
      outcome.scorer = kLatencyScorer;
    } else {
      score = MakeScorer(request.target, &outcome.scorer);
      if (!score.ok()) return score.status();
    }
    opt::pass_order::PassOrderOptions options;
    options.episode_length = parsed->max_length;
    if (outcome.scorer != "op-count") options.cost_model = *score;
    if (parsed->warm_start) options.seed_pipeline = PipelineFor(request.target);
    if (request.continue_from.has_value()) {
      auto it = request.continue_from->artifacts.find("pass_sequence");
      if (it != request.continue_from->artifacts.end()) {
        options.seed_sequences.push_back(absl::StrSplit(it->second, '\n', absl::SkipEmpty()));
      }
    }
    absl::StatusOr<std::unique_ptr<opt::pass_order::PassOrderProblem>> problem =
        opt::pass_order::PassOrderProblem::Create(*request.module, options);
    if (!problem.ok()) return problem.status();
    // On XLA the baseline is jax.jit's: the graph as given, XLA's default compile.
    auto xla_default = [&] { return xla_scorer->MeasureText(xla_scorer->reference_text(), {}); };
    absl::StatusOr<double> baseline =
        xla_scorer != nullptr ? xla_default()
        : latency != nullptr ? opt::pass_order::DefaultCpuPipelineLatency(*request.module, *latency)
                             : DefaultPipelineScore(*request.module, request.target, *score);
    if (!baseline.ok()) {
      if (xla_scorer != nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("XLA does not run the graph as given: ", baseline.status().message()));
      }
      return baseline.status();
    }

    // Every distinct pass sequence scored goes to the measurement log.
    std::unordered_set<std::string> logged;
    opt::Budget budget = request.budget;
    const opt::pass_order::PassOrderProblem& p = **problem;
    budget.on_step = [&](const opt::Budget::Report& report) {
      // A candidate the backend could not compile or run scores +inf: no measurement to log.
      if (request.record_measurement && report.candidate != nullptr &&
          std::isfinite(report.score) && logged.size() < kMaxMeasurementsPerRun) {
        std::string configuration = absl::StrJoin(p.PassNames(*report.candidate), ",");
        if (logged.insert(configuration).second) {
          storage::MeasurementRecord m;
          m.graph_key = request.fingerprint;
          m.task = xla_scorer != nullptr ? "pass-order-xla"
                   : latency != nullptr  ? kLatencyLogName
                                         : kName;
          m.target = request.target;
          m.configuration = std::move(configuration);
          m.value = report.score;
          m.worker = request.worker;
          request.record_measurement(std::move(m));
        }
      }
      if (request.budget.on_step) request.budget.on_step(report);
    };
    absl::StatusOr<opt::Result> result = learned
                                             ? RunAgent(request, *parsed, **problem, budget)
                                             : strategy->Search(**problem, budget, parsed->seed);
    if (!result.ok()) return result.status();

    std::unique_ptr<ir::Module> best = (*problem)->Apply(result->best);
    if (absl::Status verified = ir::VerifyModule(*best); !verified.ok()) {
      return absl::InternalError(
          absl::StrCat("the best module does not verify: ", verified.message()));
    }
    outcome.original_score = xla_scorer != nullptr ? *baseline : (*score)(*request.module);
    outcome.baseline_score = *baseline;
    outcome.tuned_score = (*score)(*best);
    std::string sequence = absl::StrJoin((*problem)->PassNames(result->best), "\n");
    if (xla_scorer != nullptr) {
      // The winner must beat jax.jit's compile again, interleaved, or the graph as given is the
      // answer.
      const std::string best_text = ir::PrintModule(*best);
      const backends::xla::XlaOptions options =
          parsed->xla_passes
              ? backends::xla::XlaOptions{}
              : backends::xla::XlaOptions{
                    {"xla_disable_hlo_passes",
                     absl::StrJoin(xla_report["disabled"].get<std::vector<std::string>>(), ",")}};
      absl::StatusOr<Reconfirmation> again =
          Reconfirm(xla_default, [&] { return xla_scorer->MeasureText(best_text, options); });
      nlohmann::json compiler_options = nlohmann::json::object();
      if (again.ok() && again->candidate_faster) {
        outcome.baseline_score = again->default_seconds;
        outcome.tuned_score = again->candidate_seconds;
        for (const auto& [k, v] : options) compiler_options[k] = v;
      } else {
        best = request.module->Clone();
        sequence.clear();
        outcome.tuned_score = outcome.baseline_score;
      }
      xla_report["reconfirmation"] =
          again.ok() ? nlohmann::json{{"default_seconds", again->default_seconds},
                                      {"tuned_seconds", again->candidate_seconds},
                                      {"kept", again->candidate_faster}}
                     : nlohmann::json{{"error", std::string(again.status().message())}};
      const XlaLatencyScorer::Stats st = xla_scorer->stats();
      const std::vector<std::pair<int64_t, double>> points = xla_scorer->op_counts_and_seconds();
      xla_report["measured"] = st.measured;
      xla_report["memo_hits"] = st.memo_hits;
      xla_report["rejected"] = st.rejected;
      xla_report["mismatched"] = st.mismatched;
      xla_report["crashed"] = st.crashed;
      xla_report["compile_seconds"] = st.compile_seconds;
      xla_report["op_count_seconds"] = points;
      xla_report["op_count_rank_correlation"] = SpearmanRankCorrelation(points);
      if (!xla_scorer->first_error().empty()) xla_report["first_error"] = xla_scorer->first_error();
      outcome.artifacts["xla"] = xla_report.dump();
      outcome.artifacts["compiler_options"] = compiler_options.dump();
    }
    outcome.steps = result->steps;
    outcome.stopped = request.budget.stop && request.budget.stop();
    // Only time or `stop` cut a search short: a step budget counts as spent even when the last
    // candidate did not fit in its final steps (annealing may end a step or two early).
    const bool out_of_time = budget.max_seconds > 0 && result->seconds >= budget.max_seconds;
    outcome.complete = !outcome.stopped && !(result->budget_exhausted && out_of_time);
    outcome.artifacts["optimized_hlo"] = ir::PrintModule(*best);
    outcome.artifacts["pass_sequence"] = sequence;
    if (latency != nullptr) {
      // What the measurements cost and why some candidates were invalid (+inf).
      const opt::pass_order::CpuLatencyStats st = latency->stats();
      nlohmann::json j = {{"measured", st.measured},
                          {"memo_hits", st.memo_hits},
                          {"unsupported", st.unsupported},
                          {"failed", st.failed},
                          {"compile_seconds", st.compile_seconds},
                          {"measure_seconds", st.measure_seconds},
                          {"best_op_count", opt::pass_order::OpCount(*best)}};
      if (!latency->first_error().empty()) j["first_error"] = latency->first_error();
      outcome.artifacts["latency"] = j.dump();
    }
    return outcome;
  }

 private:
  // A learned agent as a strategy: the agent's best sequence and the seeds (XLA's order, the
  // cached best), each scored on the problem, the best of them as the result.
  static absl::StatusOr<opt::Result> RunAgent(const TaskRequest& request,
                                              const ParsedOptions& options,
                                              opt::pass_order::PassOrderProblem& problem,
                                              const opt::Budget& budget) {
    const std::string algo(absl::StripPrefix(request.strategy, "rl-"));
    if (!request.latest_model) return absl::InternalError("no model store for learned agents");
    absl::StatusOr<std::optional<storage::ModelRecord>> model =
        request.latest_model(ModelName(algo));
    if (!model.ok()) return model.status();
    if (!model->has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no trained ", ModelName(algo),
                       " model in the store; train one with "
                       "`mltune train-agent --task pass-order --algo ",
                       algo, " --graphs DIR --store STORE`"));
    }
    absl::StatusOr<std::unique_ptr<opt::rl::Agent>> agent = opt::rl::Agent::Load((*model)->data);
    if (!agent.ok()) return agent.status();
    opt::rl::InferenceOptions inference;
    inference.max_steps = budget.max_steps > 0 ? budget.max_steps : 200;
    inference.sampled_rollouts = static_cast<int>(options.rollouts);
    inference.fine_tune = options.fine_tune;
    inference.seed = options.seed;
    inference.stop = budget.stop;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<opt::rl::InferenceResult> inferred = opt::rl::InferPassOrder(
        **agent, std::shared_ptr<const ir::Module>(request.module->Clone()), inference);
    if (!inferred.ok()) return inferred.status();

    opt::Result result;
    result.strategy = request.strategy;
    result.steps = inferred->steps;
    result.initial_score = problem.initial_score();
    std::vector<opt::Candidate> candidates = problem.SeedCandidates();
    absl::StatusOr<opt::Candidate> found = problem.ParseCandidate(inferred->best_sequence);
    if (!found.ok()) return found.status();
    candidates.insert(candidates.begin(), *found);
    result.best_score = result.initial_score;
    for (const opt::Candidate& candidate : candidates) {
      const double score = problem.Observe(candidate).score;
      if (budget.on_step) budget.on_step({result.steps, result.best_score, &candidate, score});
      if (score < result.best_score) {
        result.best_score = score;
        result.best = candidate;
      }
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }
};

}  // namespace

std::unique_ptr<Task> MakePassOrderTask() { return std::make_unique<PassOrderTask>(); }

}  // namespace mltune::daemon
