// The strategies of `mltune partition` on a dnn-partitioning graph, behind one function.
#include "client/partition_graph.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/partition_common.h"
#include "optimizers/constraints/constraints.h"
#include "optimizers/core/search.h"
#include "optimizers/rl/rl.h"

namespace mltune::client::internal {
namespace {

namespace partition = opt::partition;
namespace rl = opt::rl;

constexpr int kLocalSearchRestarts = 10;

// Whether `b` is a better answer than `a`: valid and feasible, and `a` is not or is worse.
bool Better(const partition::SplitScore& b, const partition::SplitScore& a) {
  return b.valid && b.feasible && (!a.valid || !a.feasible || b.objective < a.objective);
}

bool IsSolverStrategy(const std::string& name) {
  return opt::constraints::SolverStrategies().Create(name).ok();
}

// The strategies this file runs itself; the registries' come on top.
const std::vector<std::string>& OwnStrategies() {
  static const std::vector<std::string> own = {
      "contiguous", "contiguous-dp",   "dp-descent",   "go",
      "go-fix",     "go-sample",       "local-search", "m-etf",
      "metis",      "one-accelerator", "pipedream"};
  return own;
}

absl::StatusOr<GraphSplit> RunStrategy(const PartitionCommand& cmd,
                                       const partition::PartitionGraph& graph,
                                       partition::Objective objective) {
  const std::string& s = cmd.strategy;
  GraphSplit out;
  out.samples = 1;
  if (s == "one-accelerator") {
    out.split = partition::OneAccelerator(graph);
  } else if (s == "m-etf") {
    out.split = partition::EarliestFinish(graph);
  } else if (s == "contiguous") {
    out.split = partition::ContiguousSplit(graph);
  } else if (s == "pipedream") {
    out.split = partition::PipeDreamSplit(graph);
  } else if (s == "contiguous-dp") {
    out.split = partition::ContiguousDpSplit(graph, objective);
  } else if (s == "metis") {
    absl::StatusOr<partition::Split> metis = partition::MetisSplit(graph, cmd.seed);
    if (!metis.ok())
      return absl::Status(metis.status().code(), absl::StrCat("metis: ", metis.status().message()));
    out.split = *std::move(metis);
  } else if (s == "local-search") {
    std::mt19937_64 rng(cmd.seed);
    out.split = partition::LocalSearch(graph, objective, kLocalSearchRestarts, rng,
                                       opt::Budget(cmd.budget, cmd.seconds), &out.samples);
  } else if (s == "dp-descent") {
    // Local search's descent from the better of the contiguous DP's and m-ETF's splits (both one
    // pass), then random restarts while the budget lasts: the classic refinement at scale, where
    // a descent from a random split does not converge in seconds.
    partition::Split dp = partition::ContiguousDpSplit(graph, objective);
    partition::Split etf = partition::EarliestFinish(graph);
    const bool etf_better =
        Better(partition::Score(graph, etf, objective), partition::Score(graph, dp, objective));
    std::mt19937_64 rng(cmd.seed);
    out.split = partition::LocalSearch(graph, objective, kLocalSearchRestarts, rng,
                                       opt::Budget(cmd.budget, cmd.seconds), &out.samples,
                                       etf_better ? &etf : &dp);
  } else if (IsGo(s)) {
    // go-fix and go-sample realize every decision through the split's constraint solver.
    const partition::PartitionProblem problem(graph, objective, cmd.contiguous, /*seeds=*/false);
    std::unique_ptr<rl::GoEnvironment> env = rl::MakePartitionEnvironment(graph, objective);
    if (s != "go") {
      env = rl::MakeConstrainedEnvironment(
          std::move(env), problem,
          s == "go-fix" ? rl::GoSolverMode::kFix : rl::GoSolverMode::kSample, cmd.seed);
    }
    // The warm start's splits, each as that strategy answers it: repaired when invalid or over
    // memory (a raw METIS split often is, and GO would only refine the others). All of it counts
    // against --seconds: METIS (about as long as the DP, 1 s at 100k nodes) and repairs start
    // only in the budget's first half, and under latency with --seconds not at all (m-ETF's
    // repair takes 2.5 s on 10k nodes, 15 s on 100k): GO reads an invalid start through the DP
    // over its order instead, as it reads its own decisions.
    const auto begin = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    auto early = [&] { return cmd.seconds <= 0 || elapsed() < cmd.seconds / 2; };
    std::vector<rl::GoDecision> starts;
    // A decision's reading runs the DP over its order: the DP's own time is the estimate of a
    // decision that GO's deadline checks start from.
    double dp_seconds = 0;
    if (cmd.warm_start) {
      std::vector<partition::Split> baselines = {partition::ContiguousDpSplit(graph, objective)};
      dp_seconds = elapsed();
      baselines.push_back(partition::EarliestFinish(graph));
      if (early()) {
        if (absl::StatusOr<partition::Split> metis = partition::MetisSplit(graph, cmd.seed);
            metis.ok()) {
          baselines.push_back(*std::move(metis));
        }
      }
      const bool repair = cmd.seconds <= 0 || objective == partition::Objective::kThroughput;
      for (partition::Split& b : baselines) {
        if (repair && early()) {
          if (absl::StatusOr<partition::Split> valid =
                  partition::ValidSplit(graph, objective, b, cmd.contiguous);
              valid.ok()) {
            b = *std::move(valid);
          }
        }
        const opt::Candidate c = problem.Encode(b);
        starts.emplace_back().device.assign(c.begin(), c.end());
      }
    }
    // At scale the policy's samples seldom improve its start (none did on go_scale's 16 graphs)
    // and a descent does, so with --seconds the policy gets half of what is left and a descent
    // from its split the rest. The descent moves classes freely, so not under --contiguous.
    const bool refine = cmd.refine && cmd.seconds > 0 && s == "go" && !cmd.contiguous;
    PartitionCommand policy_cmd = cmd;
    if (cmd.seconds > 0) {
      policy_cmd.seconds = std::max(0.01, (cmd.seconds - elapsed()) * (refine ? 0.5 : 1.0));
    }
    absl::StatusOr<rl::GoSolveResult> result =
        SolveWithGo(policy_cmd, env.get(), std::move(starts), dp_seconds);
    if (!result.ok()) return result.status();
    out.split = problem.Decode(result->best.device);
    out.samples = result->samples;
    if (refine && elapsed() < cmd.seconds) {
      std::mt19937_64 rng(cmd.seed);
      int64_t evaluations = 0;
      const partition::Split refined =
          partition::LocalSearch(graph, objective, /*restarts=*/1, rng,
                                 opt::Budget(0, cmd.seconds - elapsed()), &evaluations, &out.split);
      if (Better(partition::Score(graph, refined, objective),
                 partition::Score(graph, out.split, objective))) {
        out.split = refined;
      }
      out.samples += evaluations;
    }
  } else if (IsRegistryStrategy(s)) {
    // The registry's "random" is the best of --budget random splits (after the seeds); the
    // solver-backed strategies keep --contiguous.
    partition::PartitionProblem problem(graph, objective, cmd.contiguous);
    int64_t evaluations = 0;
    absl::StatusOr<opt::Result> result =
        RegistrySearch(s, problem, SearchBudget(cmd), cmd.seed, &evaluations);
    if (result.ok()) {
      out.split = problem.Decode(result->best);
      out.samples = result->evaluations;
    } else if (result.status().code() == absl::StatusCode::kFailedPrecondition &&
               !IsSolverStrategy(s)) {
      // Nothing valid among the samples (valid splits can be rare): m-ETF, the problem's seed,
      // is repaired below like any other invalid answer.
      out.split = partition::EarliestFinish(graph);
      out.samples = evaluations;
    } else {
      return absl::Status(result.status().code(), absl::StrCat(s, ": ", result.status().message()));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown strategy '", s,
                     "' for a partition graph (available: ", Available(OwnStrategies()), ")"));
  }
  return out;
}

}  // namespace

std::vector<std::string> GraphStrategies() {
  std::vector<std::string> all = OwnStrategies();
  for (const opt::StrategyRegistry* registry :
       {&opt::StrategyRegistry::Global(), &opt::constraints::SolverStrategies()}) {
    for (const std::string& name : registry->Names()) {
      if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
    }
  }
  std::sort(all.begin(), all.end());
  return all;
}

absl::StatusOr<GraphSplit> SplitGraph(const PartitionCommand& cmd,
                                      const partition::PartitionGraph& graph,
                                      partition::Objective objective) {
  absl::StatusOr<GraphSplit> result = RunStrategy(cmd, graph, objective);
  if (!result.ok()) return result;
  const std::string error = partition::SplitError(graph, result->split, objective, cmd.contiguous);
  if (error.empty()) return result;
  // One accelerator is the strategy's definition: moving classes off it would answer another.
  if (cmd.strategy == "one-accelerator") {
    return absl::FailedPreconditionError(
        absl::StrCat("one-accelerator: the graph does not fit one accelerator's memory: ", error));
  }
  // The heuristics that ignore memory or latency's pieces (m-ETF, METIS, the contiguous runs),
  // and searches that found nothing valid within the budget, end with the nearest valid split.
  absl::StatusOr<partition::Split> valid =
      partition::ValidSplit(graph, objective, result->split, cmd.contiguous);
  if (!valid.ok()) {
    return absl::Status(valid.status().code(),
                        absl::StrCat(cmd.strategy, ": ", valid.status().message()));
  }
  result->split = *std::move(valid);
  return result;
}

}  // namespace mltune::client::internal
