// RL agents (optimizers/rl: PPO, DQN, Max-Q) against XLA's default pipeline and the classic search
// strategies, on held-out corpus graphs.
//
//   build/release/bench/rl_pass_order [--episodes 200] [--episode-length 20] [--budget 200]
//       [--encoder mlp|gnn] [--algos ppo,dqn,maxq] [--strategies random,greedy,beam,annealing]
//       [--seconds S] [--search-seconds S] [--min-ops 100] [--holdout 0.25] [--seed 0]
//       [--no-warm-start-too] [--no-hold-out-transformers] [--all-graphs] [--corpus DIR]
//
// The corpus modules with >= --min-ops ops (pass_order_bench's set, repeats of a graph dropped)
// are split by fingerprint as `mltune train-agent` splits them, and the transformer graphs are
// held out as well (their target is about unseen graphs). Each agent trains on the train graphs
// (at most --episodes episodes or about --seconds seconds), then every held-out graph is tuned
// with a budget of B environment steps by each agent (InferPassOrder: a greedy rollout, then
// sampled rollouts) and each strategy (from scratch, and warm-started from the default order).
// Rows give the op count and the improvement over XLA's default CPU pipeline; the summary gives
// the mean and geomean improvement on the held-out graphs, the transformer graphs among them and
// the others, the steps an agent needs to reach greedy's result as a fraction of greedy's, time
// and pass runs per graph, and the targets with MET / NOT MET.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/ir.h"
#include "optimizers/core/search.h"
#include "optimizers/pass_order/pass_order.h"
#include "optimizers/rl/rl.h"
#include "passes/default_pipelines.h"

namespace {

namespace fs = std::filesystem;
namespace rl = mltune::opt::rl;
using namespace mltune;
using Clock = std::chrono::steady_clock;

constexpr double kTransformerTarget = 0.133;  // mean improvement over XLA's default
constexpr double kMixedTarget = 0.104;
constexpr double kGreedyStepsTarget = 0.20;  // of greedy's steps to its result

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Graph {
  std::string file;  // base name
  std::string fingerprint;
  int64_t ops = 0;
  int64_t default_ops = 0;
  bool held_out = false;
  bool transformer = false;
  std::shared_ptr<const ir::Module> module;
};

// Transformer models by their file names in the corpus (PyTorch/XLA GPT-J, Llama, ...).
bool IsTransformer(const std::string& name) {
  for (const char* key : {"gpt", "llama", "bert", "transformer", "megatron", "qwen", "t5"}) {
    if (name.find(key) != std::string::npos) return true;
  }
  return false;
}

// One method's result on one graph.
struct Cell {
  bool ok = false;
  int64_t ops = 0;
  double seconds = 0;
  int64_t pass_runs = 0;
  // Agents: environment steps until a rollout prefix first reached greedy's op count (nullopt:
  // never within the budget). Greedy: steps until it first reached its own result.
  std::optional<int64_t> steps_to_greedy;
};

struct Method {
  std::string name;
  bool agent = false;
  std::vector<Cell> cells;  // one per graph
};

// Op count of `module` after `sequence`, stepping as a search does (failing passes are no-ops).
absl::StatusOr<int64_t> ApplyAndCount(const ir::Module& module,
                                      const std::vector<std::string>& sequence) {
  opt::pass_order::PassOrderOptions options;
  options.episode_length = std::max<int64_t>(1, static_cast<int64_t>(sequence.size()));
  auto problem = opt::pass_order::PassOrderProblem::Create(module, options);
  if (!problem.ok()) return problem.status();
  auto candidate = (*problem)->ParseCandidate(sequence);
  if (!candidate.ok()) return candidate.status();
  return opt::pass_order::OpCount(*(*problem)->Apply(*candidate));
}

// The environment steps an agent spends before some prefix of its rollouts reaches `target_ops`,
// repeating InferPassOrder's schedule (greedy rollout, then sampled rollouts with seeds seed+1,
// ...) within `budget` steps and replaying each rollout to read the op count after every step.
absl::StatusOr<std::optional<int64_t>> StepsToReach(rl::Agent& agent, const Graph& g,
                                                    int64_t target_ops, int64_t budget,
                                                    uint64_t seed) {
  if (g.ops <= target_ops) return std::optional<int64_t>(0);
  rl::PassOrderEnvOptions env_options;
  env_options.passes = agent.config().action_names;
  env_options.episode_length = agent.config().episode_length;
  auto env = rl::MakePassOrderEnvironment({g.module}, env_options);
  if (!env.ok()) return env.status();
  opt::pass_order::PassOrderOptions replay_options;
  replay_options.passes = agent.config().action_names;
  replay_options.episode_length = agent.config().episode_length;
  auto replay = opt::pass_order::PassOrderEnv::Create(replay_options);
  if (!replay.ok()) return replay.status();
  int64_t spent = 0;
  for (int r = 0; spent < budget; ++r) {
    auto rollout = agent.Run(**env, 0, /*greedy=*/r == 0, r == 0 ? seed : seed + r,
                             static_cast<int>(budget - spent));
    if (!rollout.ok()) return rollout.status();
    if (!(*replay)->Reset(*g.module).ok()) return absl::InternalError("replay reset");
    for (size_t i = 0; i < rollout->actions.size(); ++i) {
      if (!(*replay)->Step(rollout->actions[i]).ok()) return absl::InternalError("replay step");
      if ((*replay)->score() <= static_cast<double>(target_ops)) {
        return std::optional<int64_t>(spent + static_cast<int64_t>(i) + 1);
      }
    }
    if (rollout->steps == 0) break;  // nothing can change the graph
    spent += rollout->steps;
  }
  return std::optional<int64_t>();
}

std::string Pct(double fraction) { return absl::StrFormat("%+.1f%%", 100 * fraction); }

double Gain(const Graph& g, int64_t ops) {
  return g.default_ops ? static_cast<double>(g.default_ops - ops) / g.default_ops : 0;
}

struct Summary {
  int n = 0;
  double mean = 0, geomean = 0;
};

// Mean and geometric mean (of default/ops) improvement over the default on the selected graphs.
Summary Summarize(const std::vector<Graph>& graphs, const Method& m, bool (*select)(const Graph&)) {
  Summary s;
  double log_sum = 0;
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (!select(graphs[i]) || !m.cells[i].ok) continue;
    ++s.n;
    s.mean += Gain(graphs[i], m.cells[i].ops);
    log_sum += std::log(static_cast<double>(graphs[i].default_ops) /
                        std::max<double>(1, static_cast<double>(m.cells[i].ops)));
  }
  if (s.n > 0) {
    s.mean /= s.n;
    s.geomean = 1 - 1 / std::exp(log_sum / s.n);
  }
  return s;
}

struct GreedyMatch {
  int graphs = 0;   // held-out graphs greedy improved from the start
  int matched = 0;  // of those, where the agent reached greedy's op count within the budget
  double mean_fraction = 0;  // mean of agent steps / greedy's steps to its result, over matched
};

GreedyMatch MatchGreedy(const std::vector<Graph>& graphs, const Method& greedy,
                        const Method& agent) {
  GreedyMatch match;
  double sum = 0;
  for (size_t i = 0; i < graphs.size(); ++i) {
    const Cell& gc = greedy.cells[i];
    if (!graphs[i].held_out || !gc.ok || gc.ops >= graphs[i].ops || !gc.steps_to_greedy ||
        *gc.steps_to_greedy <= 0) {
      continue;
    }
    ++match.graphs;
    if (agent.cells[i].steps_to_greedy) {
      ++match.matched;
      sum += static_cast<double>(*agent.cells[i].steps_to_greedy) /
             static_cast<double>(*gc.steps_to_greedy);
    }
  }
  if (match.matched > 0) match.mean_fraction = sum / match.matched;
  return match;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"RL pass-ordering agents vs XLA's default pipeline and search, held-out graphs"};
  int episodes = 200, episode_length = 20;
  int64_t budget = 200, min_ops = 100;
  std::string encoder_name = "mlp";
  std::vector<std::string> algos = {"ppo", "dqn", "maxq"};
  std::vector<std::string> strategies = {"random", "greedy", "beam", "annealing"};
  double seconds = 120, search_seconds = 60, holdout = 0.25;
  uint64_t seed = 0;
  bool warm_start_too = true;
  bool hold_out_transformers = true;
  bool all_graphs = false;
  const char* env = std::getenv("MLTUNE_CORPUS_DIR");
  std::string corpus = std::string(env != nullptr ? env : MLTUNE_CORPUS_DIR) + "/hlo";
  app.add_option("--episodes", episodes, "Training episodes per agent");
  app.add_option("--episode-length", episode_length, "Passes per training episode");
  app.add_option("--budget", budget, "Environment steps per graph, for agents and strategies");
  app.add_option("--encoder", encoder_name, "Agent encoder: mlp or gnn");
  app.add_option("--algos", algos, "Agents")->delimiter(',');
  app.add_option("--strategies", strategies, "Search strategies")->delimiter(',');
  app.add_option("--seconds", seconds, "Training time cap per agent (0: none)");
  app.add_option("--search-seconds", search_seconds, "Time cap per search (0: none)");
  app.add_option("--min-ops", min_ops, "Smallest module (op count) to include");
  app.add_option("--holdout", holdout, "Fraction of the graphs held out, by fingerprint");
  app.add_option("--seed", seed, "Seed of agents and searches");
  app.add_flag("!--no-warm-start-too", warm_start_too,
               "Skip the strategies warm-started from the default order");
  app.add_flag("!--no-hold-out-transformers", hold_out_transformers,
               "Split by fingerprint only (by default the transformer graphs are held out too)");
  app.add_flag("--all-graphs", all_graphs, "Also tune the training graphs (rows marked train)");
  app.add_option("--corpus", corpus, "Folder of HLO modules");
  CLI11_PARSE(app, argc, argv);
  auto encoder = rl::ParseEncoder(encoder_name);
  if (!encoder.ok()) {
    std::cerr << "unknown encoder " << encoder_name << " (mlp or gnn)\n";
    return 1;
  }
  const auto bench_start = Clock::now();

  // ---- The corpus, as pass_order_bench loads it, without repeated graphs.
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(corpus, ec)) {
    for (const auto& e : fs::recursive_directory_iterator(corpus)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "no corpus at " << corpus << " (set MLTUNE_CORPUS_DIR)\n";
    return 1;
  }
  std::vector<Graph> graphs;
  std::map<std::string, std::string> seen;
  int repeats = 0;
  for (const std::string& file : files) {
    auto module = ir::ParseHloFile(file);
    if (!module.ok() || !ir::VerifyModule(**module).ok()) continue;
    Graph g;
    g.ops = opt::pass_order::OpCount(**module);
    if (g.ops < min_ops) continue;
    g.fingerprint = ir::Fingerprint(**module);
    g.file = fs::path(file).filename().string();
    if (!seen.emplace(g.fingerprint, g.file).second) {
      std::printf("note: %s is the same graph as %s: dropped\n", g.file.c_str(),
                  seen[g.fingerprint].c_str());
      ++repeats;
      continue;
    }
    std::unique_ptr<ir::Module> copy = (*module)->Clone();
    if (!passes::MakeDefaultPipeline("cpu")->Run(*copy).ok()) continue;
    g.default_ops = opt::pass_order::OpCount(*copy);
    g.transformer = IsTransformer(g.file);
    g.module = std::shared_ptr<const ir::Module>(*std::move(module));
    graphs.push_back(std::move(g));
  }
  if (graphs.size() < 2) {
    std::cerr << "need at least 2 corpus graphs with >= " << min_ops << " ops\n";
    return 1;
  }
  // The split of `mltune train-agent`: by fingerprint, the first round(holdout * n) held out.
  std::sort(graphs.begin(), graphs.end(),
            [](const Graph& a, const Graph& b) { return a.fingerprint < b.fingerprint; });
  const int n = static_cast<int>(graphs.size());
  const int k = holdout > 0 ? std::clamp(static_cast<int>(std::lround(holdout * n)), 1, n - 1) : 0;
  for (int i = 0; i < k; ++i) graphs[i].held_out = true;
  // The transformer targets are about graphs the agent has not seen: hold those out as well.
  for (Graph& g : graphs) g.held_out = g.held_out || (hold_out_transformers && g.transformer);
  std::vector<std::shared_ptr<const ir::Module>> train_modules, held_modules;
  const auto held_count =
      std::count_if(graphs.begin(), graphs.end(), [](const Graph& g) { return g.held_out; });
  if (held_count == 0 || held_count == n) {
    std::cerr << "the split leaves no " << (held_count == 0 ? "held-out" : "training")
              << " graphs (--holdout, --no-hold-out-transformers)\n";
    return 1;
  }
  std::printf(
      "%d corpus graphs with >= %lld ops (%d repeats dropped); split by fingerprint, holdout "
      "%.2f%s:\n",
      n, static_cast<long long>(min_ops), repeats, holdout,
      hold_out_transformers ? ", and every transformer graph held out" : "");
  for (const Graph& g : graphs) {
    std::printf("  %-8s %s %6lld ops  %s%s\n", g.held_out ? "held-out" : "train",
                g.fingerprint.substr(0, 12).c_str(), static_cast<long long>(g.ops), g.file.c_str(),
                g.transformer ? "  [transformer]" : "");
    (g.held_out ? held_modules : train_modules).push_back(g.module);
  }
  std::fflush(stdout);

  rl::PassOrderEnvOptions env_options;
  env_options.episode_length = episode_length;
  auto train_env = rl::MakePassOrderEnvironment(train_modules, env_options);
  auto held_env = rl::MakePassOrderEnvironment(held_modules, env_options);
  if (!train_env.ok() || !held_env.ok()) {
    std::cerr << "environment: "
              << (train_env.ok() ? held_env.status() : train_env.status()).message() << "\n";
    return 1;
  }

  std::vector<Method> methods;
  std::vector<std::unique_ptr<rl::Agent>> agents;
  // ---- Training, in chunks so --seconds can stop it.
  std::printf(
      "\ntraining (%s encoder, episodes of %d steps, at most %d episodes or %.0f s each):\n",
      encoder_name.c_str(), episode_length, episodes, seconds);
  for (const std::string& algo_name : algos) {
    auto algo = rl::ParseAlgo(algo_name);
    if (!algo.ok()) {
      std::cerr << "unknown algorithm " << algo_name << "\n";
      return 1;
    }
    rl::AgentConfig config;
    config.action_names = rl::PassOrderActionNames(**train_env);
    config.algo = *algo;
    config.encoder = *encoder;
    config.episode_length = episode_length;
    config.seed = seed;
    auto agent = rl::Agent::Create(config, (*train_env)->action_count(),
                                   (*train_env)->feature_size(), (*train_env)->node_feature_size());
    if (!agent.ok()) {
      std::cerr << "agent " << algo_name << ": " << agent.status().message() << "\n";
      return 1;
    }
    const auto start = Clock::now();
    int done = 0;
    rl::TrainProgress last;
    std::vector<double> returns;  // per chunk: the mean return of its last episodes
    std::optional<double> eval;
    while (done < episodes && (seconds <= 0 || Seconds(start) < seconds)) {
      rl::TrainOptions options;
      // PPO updates every 8 episodes; DQN and Max-Q every step, so they can stop after any
      // episode (a GNN episode of DQN takes seconds).
      options.episodes = std::min(*algo == rl::Algo::kPpo ? 8 : 1, episodes - done);
      options.eval_every = 0;
      auto trained = (*agent)->Train(**train_env, options);
      if (!trained.ok()) {
        std::cerr << "training " << algo_name << ": " << trained.status().message() << "\n";
        return 1;
      }
      if (!trained->empty()) {
        last = trained->back();
        returns.push_back(last.mean_return);
      }
      done += options.episodes;
    }
    // The mean return over about the last 8 episodes, whatever the chunk size.
    const size_t recent = std::min<size_t>(returns.size(), *algo == rl::Algo::kPpo ? 1 : 8);
    double mean_return = 0;
    for (size_t i = returns.size() - recent; i < returns.size(); ++i) {
      mean_return += returns[i] / static_cast<double>(recent);
    }
    // One greedy evaluation on the held-out graphs (from the start, not vs the default).
    {
      double sum = 0;
      for (int i = 0; i < (*held_env)->instance_count(); ++i) {
        auto r = (*agent)->Run(**held_env, i, /*greedy=*/true, seed, 0);
        if (r.ok()) sum += r->best_improvement;
      }
      eval = sum / (*held_env)->instance_count();
    }
    std::printf(
        "  %-5s %4d episodes, %7lld env steps, %6.1f s; last mean return %+.1f%%, held-out greedy "
        "%+.1f%% from the start\n",
        algo_name.c_str(), done, static_cast<long long>(last.env_steps), Seconds(start),
        100 * mean_return, 100 * *eval);
    std::fflush(stdout);
    methods.push_back({absl::StrCat(algo_name), true, {}});
    agents.push_back(*std::move(agent));
  }
  for (const std::string& s : strategies) methods.push_back({s, false, {}});
  if (warm_start_too) {
    for (const std::string& s : strategies) methods.push_back({absl::StrCat(s, "+ws"), false, {}});
  }
  const auto greedy_it = std::find_if(methods.begin(), methods.end(),
                                      [](const Method& m) { return m.name == "greedy"; });
  const size_t greedy_index = static_cast<size_t>(greedy_it - methods.begin());

  // ---- Every graph, every method, budget B.
  std::printf(
      "\nop count after each method with a budget of %lld steps (improvement over the "
      "default pipeline):\n",
      static_cast<long long>(budget));
  std::printf("%-34s %-5s %6s %7s", "graph", "set", "orig", "default");
  for (const Method& m : methods) std::printf(" %16s", m.name.c_str());
  std::printf("\n");
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const Graph& g = graphs[gi];
    for (Method& m : methods) m.cells.emplace_back();
    if (!g.held_out && !all_graphs) continue;
    std::string name = g.file.size() > 34 ? absl::StrCat(g.file.substr(0, 31), "...") : g.file;
    std::printf("%-34s %-5s %6lld %7lld", name.c_str(), g.held_out ? "held" : "train",
                static_cast<long long>(g.ops), static_cast<long long>(g.default_ops));
    std::fflush(stdout);
    // Strategies first: the agents' step count to greedy's result needs greedy's.
    for (size_t mi = agents.size(); mi < methods.size(); ++mi) {
      Method& m = methods[mi];
      const bool ws = m.name.size() > 3 && m.name.compare(m.name.size() - 3, 3, "+ws") == 0;
      const std::string strategy_name = ws ? m.name.substr(0, m.name.size() - 3) : m.name;
      opt::pass_order::PassOrderOptions options;
      if (ws) options.seed_pipeline = "cpu";
      auto problem = opt::pass_order::PassOrderProblem::Create(*g.module, options);
      auto strategy = opt::StrategyRegistry::Global().Create(strategy_name);
      if (!problem.ok() || !strategy.ok()) {
        std::cerr << "\n" << strategy_name << ": cannot create\n";
        return 1;
      }
      auto result = (*strategy)->Search(**problem, opt::Budget(budget, search_seconds), seed + 1);
      if (!result.ok()) continue;
      Cell& c = m.cells.back();
      c.ok = true;
      c.ops = static_cast<int64_t>(result->best_score);
      c.seconds = result->seconds;
      for (const auto& [key, value] : result->stats) {
        if (key == "pass_runs") c.pass_runs = value;
      }
      for (const opt::TracePoint& t : result->trace) {
        if (t.best_score <= result->best_score) {
          c.steps_to_greedy = t.step;
          break;
        }
      }
    }
    const Cell* greedy = greedy_index < methods.size() && methods[greedy_index].cells.back().ok
                             ? &methods[greedy_index].cells.back()
                             : nullptr;
    for (size_t ai = 0; ai < agents.size(); ++ai) {
      rl::Agent& agent = *agents[ai];
      rl::InferenceOptions options;
      options.max_steps = budget;
      options.sampled_rollouts = static_cast<int>(budget);  // as many as the budget allows
      options.seed = seed;
      if (search_seconds > 0) {
        const auto deadline = Clock::now() + std::chrono::duration<double>(search_seconds);
        options.stop = [deadline] { return Clock::now() > deadline; };
      }
      auto inferred = rl::InferPassOrder(agent, g.module, options);
      if (!inferred.ok()) {
        std::cerr << "\n" << methods[ai].name << ": " << inferred.status().message() << "\n";
        continue;
      }
      auto ops = ApplyAndCount(*g.module, inferred->best_sequence);
      if (!ops.ok()) continue;
      Cell& c = methods[ai].cells.back();
      c.ok = true;
      c.ops = *ops;
      c.seconds = inferred->seconds;
      c.pass_runs = inferred->pass_runs;
      if (greedy != nullptr) {
        auto steps = StepsToReach(agent, g, greedy->ops, budget, seed);
        if (steps.ok()) c.steps_to_greedy = *steps;
      }
    }
    for (const Method& m : methods) {
      const Cell& c = m.cells.back();
      std::printf(" %16s", c.ok ? absl::StrFormat("%lld (%s)", static_cast<long long>(c.ops),
                                                  Pct(Gain(g, c.ops)))
                                      .c_str()
                                : "error");
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  // ---- Summary per method, on the held-out graphs (and all graphs with --all-graphs).
  auto held = [](const Graph& g) { return g.held_out; };
  auto held_transformer = [](const Graph& g) { return g.held_out && g.transformer; };
  auto held_other = [](const Graph& g) { return g.held_out && !g.transformer; };
  auto all = [](const Graph&) { return true; };
  const Method* greedy = greedy_index < methods.size() ? &methods[greedy_index] : nullptr;
  std::printf(
      "\nimprovement over XLA's default cpu pipeline (mean / geomean), budget %lld steps:\n",
      static_cast<long long>(budget));
  std::printf("%-12s %17s %17s %17s %17s %12s %9s %10s\n", "method", "held-out (mixed)",
              "transformer", "other held-out", "all graphs", "to greedy", "s/graph", "pass runs");
  for (const Method& m : methods) {
    auto fmt = [&](bool (*select)(const Graph&)) {
      const Summary s = Summarize(graphs, m, select);
      return s.n ? absl::StrFormat("%s / %s", Pct(s.mean), Pct(s.geomean)) : std::string("-");
    };
    std::string to_greedy = "-";
    if (m.agent && greedy != nullptr) {
      const GreedyMatch match = MatchGreedy(graphs, *greedy, m);
      if (match.graphs > 0) {
        to_greedy =
            absl::StrFormat("%d/%d %.0f%%", match.matched, match.graphs, 100 * match.mean_fraction);
      }
    }
    double secs = 0, runs = 0;
    int held_n = 0;
    for (size_t i = 0; i < graphs.size(); ++i) {
      if (!graphs[i].held_out || !m.cells[i].ok) continue;
      ++held_n;
      secs += m.cells[i].seconds;
      runs += static_cast<double>(m.cells[i].pass_runs);
    }
    std::printf("%-12s %17s %17s %17s %17s %12s %9.3f %10.0f\n", m.name.c_str(), fmt(held).c_str(),
                fmt(held_transformer).c_str(), fmt(held_other).c_str(),
                all_graphs ? fmt(all).c_str() : "-", to_greedy.c_str(),
                held_n ? secs / held_n : 0.0, held_n ? runs / held_n : 0.0);
  }
  std::printf(
      "to greedy: held-out graphs where a prefix of the agent's rollouts reached greedy's op count "
      "(greedy from scratch, same budget) / the held-out graphs greedy improved, and the mean of "
      "(agent steps to it) / (greedy's steps to its result) over those. s/graph: time per "
      "held-out graph; pass runs: passes run per held-out graph, the agents' action masks "
      "included.\n");

  // ---- Targets, per agent, on the held-out graphs.
  std::printf("\ntargets (held-out graphs, budget %lld steps):\n", static_cast<long long>(budget));
  for (size_t ai = 0; ai < agents.size(); ++ai) {
    const Method& m = methods[ai];
    const Summary tr = Summarize(graphs, m, held_transformer);
    const Summary mixed = Summarize(graphs, m, held);
    std::printf("  %-5s mean improvement on transformer training graphs >= %.1f%%: %s (%s on %d)\n",
                m.name.c_str(), 100 * kTransformerTarget,
                tr.n == 0                       ? "NOT MEASURED, none held out"
                : tr.mean >= kTransformerTarget ? "MET"
                                                : "NOT MET",
                tr.n ? absl::StrFormat("%+.2f%%", 100 * tr.mean).c_str() : "-", tr.n);
    std::printf("  %-5s mean improvement on the mixed set >= %.1f%%: %s (%s on %d)\n",
                m.name.c_str(), 100 * kMixedTarget, mixed.mean >= kMixedTarget ? "MET" : "NOT MET",
                absl::StrFormat("%+.2f%%", 100 * mixed.mean).c_str(), mixed.n);
    // Met only when the agent reaches greedy's result on every held-out graph greedy improved,
    // within 20% of greedy's steps on average.
    const GreedyMatch match = greedy ? MatchGreedy(graphs, *greedy, m) : GreedyMatch{};
    std::printf(
        "  %-5s greedy's result in <= %.0f%% of greedy's steps: %s (reached on %d of %d graphs, "
        "mean %.0f%% of greedy's steps)\n",
        m.name.c_str(), 100 * kGreedyStepsTarget,
        match.graphs == 0 ? "NOT MEASURED (no greedy, or it improved no held-out graph)"
        : match.matched == match.graphs && match.mean_fraction <= kGreedyStepsTarget ? "MET"
                                                                                     : "NOT MET",
        match.matched, match.graphs, 100 * match.mean_fraction);
  }
  std::printf("\ntotal %.0f s\n", Seconds(bench_start));
  return 0;
}
