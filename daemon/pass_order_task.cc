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
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "nlohmann/json.hpp"
#include "optimizers/pass_order/cpu_latency.h"
#include "optimizers/pass_order/pass_order.h"
#include "optimizers/rl/rl.h"
#include "passes/default_pipelines.h"

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
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", key,
                       "' for task pass-order (known: seed, max_length, warm_start, rollouts, "
                       "fine_tune, score, measure_seconds)"));
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "option ", key, "='", value, "': expected ",
          key == "seed"              ? "an unsigned integer"
          : key == "max_length"      ? absl::StrCat("an integer in [1, ", kMaxSequenceLength, "]")
          : key == "rollouts"        ? "an integer in [0, 1000]"
          : key == "score"           ? "op-count or latency"
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

class PassOrderTask : public Task {
 public:
  std::string_view name() const override { return kName; }
  std::string description() const override {
    return "order of XLA's HLO passes that minimises the op count (cpu, gpu), the measured "
           "latency of the CPU backend's code (cpu, option score=latency) or the simulated time "
           "(tpu-sim targets), against XLA's default pipeline for the target";
  }
  std::vector<std::string> targets() const override {
    std::vector<std::string> targets = {"cpu", "gpu"};
    for (const std::string& t : TargetsOfWorker("tpu-sim")) targets.push_back(t);
    return targets;
  }

  absl::Status ValidateOptions(const TaskOptions& options,
                               const std::string& target) const override {
    return ParseOptions(options, target).status();
  }

  std::string ScoreVariant(const TaskOptions& options) const override {
    absl::StatusOr<ParsedOptions> parsed = ParseOptions(options);
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
    absl::StatusOr<opt::pass_order::ScoreFn> score;
    if (parsed->latency) {
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
    absl::StatusOr<double> baseline =
        latency != nullptr ? opt::pass_order::DefaultCpuPipelineLatency(*request.module, *latency)
                           : DefaultPipelineScore(*request.module, request.target, *score);
    if (!baseline.ok()) return baseline.status();

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
          m.task = latency != nullptr ? kLatencyLogName : kName;
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
    outcome.original_score = (*score)(*request.module);
    outcome.baseline_score = *baseline;
    outcome.tuned_score = (*score)(*best);
    outcome.steps = result->steps;
    outcome.stopped = request.budget.stop && request.budget.stop();
    // Only time or `stop` cut a search short: a step budget counts as spent even when the last
    // candidate did not fit in its final steps (annealing may end a step or two early).
    const bool out_of_time = budget.max_seconds > 0 && result->seconds >= budget.max_seconds;
    outcome.complete = !outcome.stopped && !(result->budget_exhausted && out_of_time);
    outcome.artifacts["optimized_hlo"] = ir::PrintModule(*best);
    outcome.artifacts["pass_sequence"] = absl::StrJoin((*problem)->PassNames(result->best), "\n");
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
