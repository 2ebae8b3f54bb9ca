// `mltune train-agent`: trains an RL pass-ordering agent (optimizers/rl/rl.h) on HLO graphs, with
// a deterministic train / held-out split by fingerprint, and stores its checkpoint in the model
// registry, where mltuned serves the latest version as strategy rl-<algo>.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "client/training_plot.h"
#include "ir/ir.h"
#include "nlohmann/json.hpp"
#include "optimizers/pass_order/pass_order.h"
#include "optimizers/rl/rl.h"
#include "passes/default_pipelines.h"
#include "storage/store.h"

namespace mltune::client {
namespace {

namespace fs = std::filesystem;
namespace rl = opt::rl;
using Clock = std::chrono::steady_clock;

struct Graph {
  std::string file;  // InputFile::display
  std::string name;  // the module's name
  std::string fingerprint;
  int64_t ops = 0;
  std::shared_ptr<const ir::Module> module;
};

// Parses and verifies every file; skips (with a note) those that fail, are smaller than
// `min_ops`, or repeat a graph already loaded: a duplicate could otherwise land on both sides of
// the split.
std::vector<Graph> LoadGraphs(const std::vector<InputFile>& files, int64_t min_ops,
                              std::ostream& err) {
  std::vector<Graph> graphs;
  std::map<std::string, std::string> seen;  // fingerprint -> file
  int small = 0;
  for (const InputFile& input : files) {
    const std::string& file = input.path;
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloFile(file);
    if (!module.ok()) {
      err << "note: skipping " << file << ": " << module.status().message() << "\n";
      continue;
    }
    absl::Status verified = ir::VerifyModule(**module);
    if (!verified.ok()) {
      err << "note: skipping " << file << ": verification failed: " << verified.message() << "\n";
      continue;
    }
    Graph g;
    g.ops = opt::pass_order::OpCount(**module);
    if (g.ops < min_ops) {
      ++small;  // common in a corpus: one note for all of them
      continue;
    }
    g.fingerprint = ir::Fingerprint(**module);
    auto [it, inserted] = seen.emplace(g.fingerprint, file);
    if (!inserted) {
      err << "note: skipping " << file << ": the same graph as " << it->second << "\n";
      continue;
    }
    g.file = input.display;
    g.name = (*module)->name();
    g.module = std::shared_ptr<const ir::Module>(*std::move(module));
    graphs.push_back(std::move(g));
  }
  if (small > 0) {
    err << "note: skipping " << small << " file" << (small == 1 ? "" : "s") << " with fewer than "
        << "--min-ops " << min_ops << " ops\n";
  }
  return graphs;
}

// Deterministic split: graphs sorted by fingerprint (a hash, so the order is arbitrary but stable
// across machines and file names); the first round(holdout * n) are held out, at least one when
// holdout > 0 and there are two graphs or more, and never all of them.
void Split(std::vector<Graph> graphs, double holdout, std::vector<Graph>& train,
           std::vector<Graph>& held_out) {
  std::sort(graphs.begin(), graphs.end(),
            [](const Graph& a, const Graph& b) { return a.fingerprint < b.fingerprint; });
  const int n = static_cast<int>(graphs.size());
  int k = static_cast<int>(std::lround(holdout * n));
  if (holdout > 0 && n >= 2) k = std::clamp(k, 1, n - 1);
  if (n < 2) k = 0;
  for (int i = 0; i < n; ++i) (i < k ? held_out : train).push_back(std::move(graphs[i]));
}

std::vector<std::shared_ptr<const ir::Module>> Modules(const std::vector<Graph>& graphs) {
  std::vector<std::shared_ptr<const ir::Module>> modules;
  for (const Graph& g : graphs) modules.push_back(g.module);
  return modules;
}

std::string Pct(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

std::string Elided(const std::string& s, size_t width) {
  return s.size() <= width ? s : absl::StrCat(s.substr(0, width - 3), "...");
}

// Training progress on stderr: one line redrawn in place on a terminal, otherwise a plain line
// about every 10% of the episodes (logs and pipes get no carriage returns).
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, bool live, int episodes)
      : err_(err), live_(live), episodes_(episodes) {}

  void Update(const rl::TrainProgress& p) {
    if (p.eval_improvement) last_eval_ = *p.eval_improvement;
    const std::string line = absl::StrFormat(
        "episode %d/%d  env steps %d  mean return %s  last eval %s  %.1f s", p.episode, episodes_,
        p.env_steps, Pct(p.mean_return), last_eval_ ? Pct(*last_eval_) : "-", p.seconds);
    if (live_) {
      // Redraw at most ~10 times a second, and always on the last episode.
      const auto now = Clock::now();
      if (p.episode < episodes_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
      last_draw_ = now;
      err_ << "\r" << line;
      if (line.size() < width_) err_ << std::string(width_ - line.size(), ' ');
      width_ = line.size();
      err_.flush();
      drawn_ = true;
      return;
    }
    const int decile = episodes_ > 0 ? p.episode * 10 / episodes_ : 10;
    if (decile > last_decile_) {
      last_decile_ = decile;
      err_ << line << "\n";
    }
  }

  void Finish() {
    if (live_ && drawn_) err_ << "\n";
  }

 private:
  std::ostream& err_;
  bool live_;
  int episodes_;
  std::optional<double> last_eval_;
  Clock::time_point last_draw_{};
  size_t width_ = 0;
  bool drawn_ = false;
  int last_decile_ = 0;
};

// The agent's result on one graph, against the start and XLA's default CPU pipeline.
struct GraphEval {
  const Graph* graph = nullptr;
  int64_t default_ops = 0;
  int64_t agent_ops = 0;
  double vs_start = 0;    // (original - agent) / original
  double vs_default = 0;  // (default - agent) / default
  std::vector<std::string> sequence;
  double seconds = 0;
};

absl::StatusOr<GraphEval> EvaluateGraph(rl::Agent& agent, const Graph& graph, int episode_length,
                                        uint64_t seed) {
  GraphEval e;
  e.graph = &graph;
  std::unique_ptr<ir::Module> by_default = graph.module->Clone();
  absl::StatusOr<bool> ran = passes::MakeDefaultPipeline("cpu")->Run(*by_default);
  if (!ran.ok()) return ran.status();
  e.default_ops = opt::pass_order::OpCount(*by_default);

  // One greedy rollout as long as a training episode: what the policy learned, without search.
  rl::InferenceOptions options;
  options.max_steps = episode_length;
  options.sampled_rollouts = 0;
  options.seed = seed;
  absl::StatusOr<rl::InferenceResult> inferred = rl::InferPassOrder(agent, graph.module, options);
  if (!inferred.ok()) return inferred.status();
  e.sequence = inferred->best_sequence;
  e.seconds = inferred->seconds;

  // Apply the sequence independently of the agent's environment, as a search result is applied
  // (failing passes are no-ops), and count.
  opt::pass_order::PassOrderOptions apply_options;
  apply_options.episode_length = std::max<int64_t>(1, static_cast<int64_t>(e.sequence.size()));
  absl::StatusOr<std::unique_ptr<opt::pass_order::PassOrderProblem>> problem =
      opt::pass_order::PassOrderProblem::Create(*graph.module, apply_options);
  if (!problem.ok()) return problem.status();
  absl::StatusOr<opt::Candidate> candidate = (*problem)->ParseCandidate(e.sequence);
  if (!candidate.ok()) return candidate.status();
  std::unique_ptr<ir::Module> tuned = (*problem)->Apply(*candidate);
  e.agent_ops = opt::pass_order::OpCount(*tuned);
  e.vs_start = graph.ops ? static_cast<double>(graph.ops - e.agent_ops) / graph.ops : 0;
  e.vs_default =
      e.default_ops ? static_cast<double>(e.default_ops - e.agent_ops) / e.default_ops : 0;
  return e;
}

nlohmann::ordered_json GraphsJson(const std::vector<Graph>& graphs) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const Graph& g : graphs) {
    j.push_back(
        {{"name", g.name}, {"file", g.file}, {"fingerprint", g.fingerprint}, {"ops", g.ops}});
  }
  return j;
}

// Opens an output file before training, so a bad path fails in a second rather than after it.
bool OpenOutput(const std::string& path, std::ofstream& file, std::ostream& err) {
  if (path.empty()) return true;
  file.open(path, std::ios::out | std::ios::trunc);
  if (!file) {
    err << "error: cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace

bool OpenTrainAgentStore(const TrainAgentCommand& cmd, std::unique_ptr<storage::Store>* store,
                         std::ostream& err) {
  store->reset();
  if (cmd.no_store) return true;
  absl::StatusOr<std::unique_ptr<storage::Store>> opened = storage::Store::Open(cmd.store);
  if (!opened.ok()) {
    err << "error: cannot open the store " << cmd.store << ": " << opened.status().message()
        << " (use --store PATH, or --no-store)\n";
    return false;
  }
  *store = *std::move(opened);
  return true;
}

int RunTrainAgent(const TrainAgentCommand& cmd, std::ostream& out, std::ostream& err) {
  // ---- Arguments, before any work.
  if (cmd.algo == "go") return RunTrainGoAgent(cmd, out, err);
  if (cmd.task != "pass-order") {
    err << "error: unknown task '" << cmd.task << "' (available: pass-order)\n";
    return 1;
  }
  absl::StatusOr<rl::Algo> algo = rl::ParseAlgo(cmd.algo);
  if (!algo.ok()) {
    err << "error: unknown algorithm '" << cmd.algo << "' (expected ppo, dqn, maxq or go)\n";
    return 1;
  }
  absl::StatusOr<rl::EncoderKind> encoder = rl::ParseEncoder(cmd.encoder);
  if (!encoder.ok()) {
    err << "error: unknown encoder '" << cmd.encoder << "' (expected mlp or gnn)\n";
    return 1;
  }
  if (cmd.episodes < 1 || cmd.episode_length < 1 || cmd.eval_every < 0 || cmd.min_ops < 0 ||
      !(cmd.holdout >= 0 && cmd.holdout < 1)) {
    err << "error: need --episodes >= 1, --episode-length >= 1, --eval-every >= 0, --min-ops >= "
           "0 and 0 <= --holdout < 1\n";
    return 1;
  }
  if (cmd.graphs.empty()) {
    err << "error: no graphs given (--graphs DIR_OR_FILE...)\n";
    return 1;
  }
  const std::string algo_name(rl::AlgoName(*algo));
  const std::string encoder_name(rl::EncoderName(*encoder));
  const std::string model_name = absl::StrCat("pass-order/rl-", algo_name);

  // ---- Graphs and the split.
  std::optional<std::vector<InputFile>> files = CollectHloFiles(cmd.graphs, err);
  if (!files) return 1;
  if (files->empty()) {
    err << "error: no HLO files (*.hlo, *.txt, optionally .gz) found in "
        << absl::StrJoin(cmd.graphs, ", ") << "\n";
    return 1;
  }
  std::vector<Graph> graphs = LoadGraphs(*files, cmd.min_ops, err);
  if (graphs.empty()) {
    err << "error: none of the " << files->size()
        << " HLO files is usable (each failed to parse or verify, has fewer than --min-ops "
        << cmd.min_ops << " ops, or repeats another)\n";
    return 1;
  }

  // ---- Outputs, opened before training: an unwritable store or file fails now, not after it.
  std::unique_ptr<storage::Store> store;
  if (!OpenTrainAgentStore(cmd, &store, err)) return 1;
  std::ofstream csv_file, svg_file;
  if (!OpenOutput(cmd.csv, csv_file, err) || !OpenOutput(cmd.svg, svg_file, err)) return 1;

  const size_t loaded = graphs.size();
  std::vector<Graph> train, held_out;
  Split(std::move(graphs), cmd.holdout, train, held_out);

  out << absl::StrFormat(
      "train-agent pass-order: %s agent, %s encoder, %d episodes of %d steps, seed %d\n", algo_name,
      encoder_name, cmd.episodes, cmd.episode_length, cmd.seed);
  out << absl::StrFormat(
      "graphs: %d of %d files usable; split by fingerprint (holdout %.2f): %d train, %d held-out\n",
      loaded, files->size(), cmd.holdout, train.size(), held_out.size());
  for (const auto* set : {&train, &held_out}) {
    for (const Graph& g : *set) {
      out << absl::StrFormat("  %-8s %s %7d ops  %s\n", set == &train ? "train" : "held-out",
                             g.fingerprint.substr(0, 12), g.ops, g.file);
    }
  }
  if (held_out.empty()) {
    out << "note: no held-out graphs (one graph, or --holdout 0): evaluating on the training "
           "graphs\n";
  }

  // ---- Environments and agent.
  rl::PassOrderEnvOptions env_options;
  env_options.episode_length = cmd.episode_length;
  absl::StatusOr<std::unique_ptr<rl::Environment>> train_env =
      rl::MakePassOrderEnvironment(Modules(train), env_options);
  if (!train_env.ok()) {
    err << "error: training environment: " << train_env.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<rl::Environment> eval_env;
  if (!held_out.empty()) {
    absl::StatusOr<std::unique_ptr<rl::Environment>> made =
        rl::MakePassOrderEnvironment(Modules(held_out), env_options);
    if (!made.ok()) {
      err << "error: evaluation environment: " << made.status().message() << "\n";
      return 1;
    }
    eval_env = *std::move(made);
  }
  rl::AgentConfig config;
  config.action_names = rl::PassOrderActionNames(**train_env);
  config.algo = *algo;
  config.encoder = *encoder;
  config.episode_length = cmd.episode_length;
  config.seed = cmd.seed;
  absl::StatusOr<std::unique_ptr<rl::Agent>> agent =
      rl::Agent::Create(config, (*train_env)->action_count(), (*train_env)->feature_size(),
                        (*train_env)->node_feature_size());
  if (!agent.ok()) {
    err << "error: cannot create the agent: " << agent.status().message() << "\n";
    return 1;
  }
  out << absl::StrFormat("action space: %d passes\n", config.action_names.size());
  out.flush();

  // ---- Training.
  std::vector<TrainingCurvePoint> curve;
  std::vector<std::pair<int, double>> evaluations;
  ProgressBar bar(err, cmd.live_progress, cmd.episodes);
  rl::TrainOptions train_options;
  train_options.episodes = cmd.episodes;
  train_options.eval_every = cmd.eval_every;
  train_options.eval_env = eval_env.get();  // nullptr: the training graphs
  train_options.on_progress = [&](const rl::TrainProgress& p) {
    curve.push_back({p.episode, p.env_steps, p.seconds, p.mean_return, p.loss, p.eval_improvement});
    if (p.eval_improvement) evaluations.emplace_back(p.episode, *p.eval_improvement);
    bar.Update(p);
  };
  absl::StatusOr<std::vector<rl::TrainProgress>> trained =
      (*agent)->Train(**train_env, train_options);
  bar.Finish();
  if (!trained.ok()) {
    err << "error: training failed: " << trained.status().message() << "\n";
    return 1;
  }
  if (curve.empty()) {
    // The agent reported no progress through the callback: use what Train returned.
    for (const rl::TrainProgress& p : *trained) {
      curve.push_back(
          {p.episode, p.env_steps, p.seconds, p.mean_return, p.loss, p.eval_improvement});
      if (p.eval_improvement) evaluations.emplace_back(p.episode, *p.eval_improvement);
    }
  }
  const TrainingCurvePoint last = curve.empty() ? TrainingCurvePoint{} : curve.back();
  out << absl::StrFormat("trained %d episodes, %d env steps in %.1f s; final mean return %s\n",
                         last.episode, last.env_steps, last.seconds, Pct(last.mean_return));
  const char* eval_set = held_out.empty() ? "training" : "held-out";
  if (!evaluations.empty()) {
    std::vector<std::string> parts;
    for (const auto& [episode, improvement] : evaluations) {
      parts.push_back(absl::StrCat(episode, ": ", Pct(improvement)));
    }
    out << "evaluations (greedy, " << eval_set
        << " graphs, mean improvement from the start): " << absl::StrJoin(parts, ", ") << "\n";
  }

  // ---- Final evaluation: the agent's greedy sequence vs the start and XLA's CPU pipeline.
  const std::vector<Graph>& eval_graphs = held_out.empty() ? train : held_out;
  std::vector<GraphEval> results;
  for (const Graph& g : eval_graphs) {
    absl::StatusOr<GraphEval> e = EvaluateGraph(**agent, g, cmd.episode_length, cmd.seed);
    if (!e.ok()) {
      err << "error: evaluating on " << g.file << ": " << e.status().message() << "\n";
      return 1;
    }
    results.push_back(*std::move(e));
  }
  double mean_vs_start = 0, mean_vs_default = 0;
  for (const GraphEval& e : results) {
    mean_vs_start += e.vs_start / results.size();
    mean_vs_default += e.vs_default / results.size();
  }
  out << absl::StrFormat("final evaluation on the %d %s graphs (greedy rollout of %d steps):\n",
                         results.size(), eval_set, cmd.episode_length);
  out << absl::StrFormat("  %-36s %7s %7s %7s %8s %10s  %s\n", "graph", "orig", "default", "agent",
                         "vs start", "vs default", "sequence");
  for (const GraphEval& e : results) {
    out << absl::StrFormat("  %-36s %7d %7d %7d %8s %10s  %s\n",
                           Elided(fs::path(e.graph->file).filename().string(), 36), e.graph->ops,
                           e.default_ops, e.agent_ops, Pct(e.vs_start), Pct(e.vs_default),
                           e.sequence.empty() ? "(none)" : absl::StrJoin(e.sequence, ","));
  }
  out << absl::StrFormat("  %-36s %7s %7s %7s %8s %10s\n", "mean", "", "", "", Pct(mean_vs_start),
                         Pct(mean_vs_default));

  // ---- Curve files.
  if (!cmd.csv.empty()) {
    csv_file << TrainingCurveCsv(curve);
    csv_file.close();
    if (!csv_file) {
      err << "error: cannot write " << cmd.csv << "\n";
      return 1;
    }
    out << "wrote " << cmd.csv << " (" << curve.size() << " episodes)\n";
  }
  if (!cmd.svg.empty()) {
    svg_file << TrainingCurveSvg(
        curve, absl::StrCat("mltune train-agent: ", algo_name, " (", encoder_name, "), ",
                            train.size(), " train / ", held_out.size(), " held-out"));
    svg_file.close();
    if (!svg_file) {
      err << "error: cannot write " << cmd.svg << "\n";
      return 1;
    }
    out << "wrote " << cmd.svg << "\n";
  }

  // ---- Checkpoint.
  if (store != nullptr) {
    nlohmann::ordered_json meta;
    meta["task"] = cmd.task;
    meta["algo"] = algo_name;
    meta["encoder"] = encoder_name;
    meta["episodes"] = cmd.episodes;
    meta["episode_length"] = cmd.episode_length;
    meta["seed"] = cmd.seed;
    meta["eval_every"] = cmd.eval_every;
    meta["holdout"] = cmd.holdout;
    meta["min_ops"] = cmd.min_ops;
    meta["passes"] = config.action_names;
    meta["train_graphs"] = GraphsJson(train);
    meta["held_out_graphs"] = GraphsJson(held_out);
    meta["training"] = {{"env_steps", last.env_steps},
                        {"seconds", last.seconds},
                        {"final_mean_return", last.mean_return}};
    nlohmann::ordered_json evals = nlohmann::ordered_json::array();
    for (const auto& [episode, improvement] : evaluations) {
      evals.push_back({{"episode", episode}, {"improvement", improvement}});
    }
    meta["evaluations"] = evals;
    nlohmann::ordered_json per_graph = nlohmann::ordered_json::array();
    for (const GraphEval& e : results) {
      per_graph.push_back({{"fingerprint", e.graph->fingerprint},
                           {"original_ops", e.graph->ops},
                           {"default_ops", e.default_ops},
                           {"agent_ops", e.agent_ops},
                           {"sequence", e.sequence}});
    }
    meta["final_eval"] = {{"graphs", eval_set},
                          {"rollout", "greedy"},
                          {"max_steps", cmd.episode_length},
                          {"mean_improvement_vs_start", mean_vs_start},
                          {"mean_improvement_vs_default_cpu", mean_vs_default},
                          {"per_graph", per_graph}};
    meta["mltune_version"] = "0.1.0";
    const std::string checkpoint = (*agent)->Save();
    absl::StatusOr<int64_t> version =
        store->PutModelNextVersion(model_name, checkpoint, meta.dump());
    if (!version.ok()) {
      err << "error: cannot store the checkpoint in " << cmd.store << ": "
          << version.status().message() << "\n";
      return 1;
    }
    out << absl::StrFormat("stored %s version %d (%d bytes) in %s\n", model_name, *version,
                           checkpoint.size(), cmd.store);
  }

  out << absl::StrFormat(
      "summary: %s/%s, %d train + %d held-out graphs, %d episodes (%d env steps, %.1f s); %s "
      "graphs: %s from the start, %s vs XLA's default CPU pipeline\n",
      algo_name, encoder_name, train.size(), held_out.size(), last.episode, last.env_steps,
      last.seconds, eval_set, Pct(mean_vs_start), Pct(mean_vs_default));
  return 0;
}

}  // namespace mltune::client
