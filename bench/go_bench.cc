// GO against the partitioning baselines on graph families it never trained on: for each held-out
// family, a policy trains on every other graph (the other dnn-partitioning family and the zoo),
// then each held-out graph is split by one accelerator, the human expert, m-ETF, METIS, random,
// simulated annealing and local search at 1x and 10x GO's samples, GO zero-shot, GO fine-tuned
// and GO trained from scratch on the graph alone with the same samples.
// Run: build/release/bench/go_bench [--iterations N] [--out bench/results_go.md]
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "bench/go_bench_util.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/hlo_files.h"
#include "optimizers/core/search.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/rl/rl.h"

namespace {

namespace fs = std::filesystem;
namespace partition = mltune::opt::partition;
namespace rl = mltune::opt::rl;
using Clock = std::chrono::steady_clock;
using mltune::bench::Anneal;
using mltune::bench::AnnealRuns;
using mltune::bench::Geomean;
using mltune::bench::SplitCorpus;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The best of NOTES.md's values computed with the authors' tools: optimal contiguous DP and
// local search x10 (throughput), the DP's split and the greedy baseline (latency).
const std::map<std::string, double> kReference = {
    {"LayerGraphs/bert24_inference:throughput", 17.78},
    {"LayerGraphs/bert24_training:throughput", 39.94},
    {"LayerGraphs/resnet50_inference:throughput", 33.77},
    {"LayerGraphs/resnet50_training:throughput", 78.63},
    {"LayerGraphs/bert24_inference:latency", 100.22},
    {"LayerGraphs/resnet50_inference:latency", 1443.79},
};

std::string ExpertFile(const std::string& path) {
  if (path.find("LayerGraphs") == std::string::npos) return "";
  if (path.find("bert24_training") != std::string::npos) return "bert24_training_expert.json";
  if (path.find("bert24") != std::string::npos) return "bert24_inference_expert.json";
  if (path.find("resnet50") != std::string::npos) return "resnet50_inference_expert.json";
  return "";
}

struct Row {
  std::string graph;
  int32_t classes = 0;
  bool expert_feasible = true;
  double one = 0, expert = NAN, reference = NAN, metf = 0, metis = 0, contiguous = 0, dp = 0,
         random = 0;
  double sa1 = 0, sa10 = 0, ls1 = 0, ls10 = 0;
  double go_zero = 0, go_fine = 0, go_scratch = 0, go_warm = 0, go_warm_fine = 0;
  int64_t go_samples = 0, fine_samples = 0;
  double go_seconds = 0, heuristic_seconds = 0;  // GO zero-shot; m-ETF, METIS and the DP together
  int64_t fine_to_sa10 = -1, sa_to_best = 0;     // samples to reach annealing x10's best
};

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Value(const partition::PartitionGraph& g, const partition::Split& s,
             partition::Objective objective) {
  const partition::SplitScore score = partition::Score(g, s, objective);
  return score.valid && score.feasible ? score.objective : INFINITY;
}

// A layered random DAG of `n` nodes (each reads 1-3 of the previous 50), for timing one decision.
partition::PartitionGraph LargeGraph(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string nodes, edges;
  std::uniform_real_distribution<double> latency(0.1, 10);
  for (int i = 1; i <= n; ++i) {
    const double l = latency(rng);
    absl::StrAppend(&nodes, i == 1 ? "" : ",", "{\"id\":", i,
                    ",\"supportedOnFpga\":1,\"cpuLatency\":", 10 * l, ",\"fpgaLatency\":", l,
                    ",\"isBackwardNode\":0,\"size\":1000}");
    const int inputs = i == 1 ? 0 : 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < inputs; ++k) {
      const int from = std::max(1, i - 1 - static_cast<int>(rng() % 50));
      absl::StrAppend(&edges, edges.empty() ? "" : ",", "{\"sourceId\":", from, ",\"destId\":", i,
                      ",\"cost\":", 0.01 * (from % 7 + 1), "}");
    }
  }
  const std::string text =
      absl::StrCat("{\"maxSizePerFPGA\":1e9,\"maxFPGAs\":8,\"maxCPUs\":1,\"nodes\":[", nodes,
                   "],\"edges\":[", edges, "]}");
  return *partition::ParsePartitionGraph(text, "random-10k");
}

struct HloRow {
  std::string graph;
  int32_t ops = 0;
  double defaults = 0, other = 0, sa1 = 0, sa10 = 0, go_zero = 0, go_fine = 0, go_scratch = 0;
  double go_warm = 0, go_warm_fine = 0;
  int64_t fine_to_sa10 = -1, sa_to_best = 0;
};

// Placement on cluster-sim (default: m-ETF; other: one device) or fusion on tpu-sim (default:
// XLA's greedy fusion; other: no fusion), GO trained on the zoo's other families.
int RunHloTask(rl::GoTask task, const std::vector<std::string>& zoo,
               const std::vector<std::string>& holdouts, int imitation, int iterations,
               int zero_samples, int fine_samples, uint64_t seed, const std::string& out_path) {
  const mltune::backends::TargetSpec* gpu =
      mltune::backends::TargetRegistry::Global().Find("gpu-4x-nvlink");
  const mltune::backends::TargetSpec* tpu_spec =
      mltune::backends::TargetRegistry::Global().Find("tpu-v4-core");
  auto sim = *mltune::backends::cluster::ClusterSimulator::Create(*gpu);
  auto tpu = *mltune::backends::tpu::TpuSimulator::Create(*tpu_spec);
  rl::GoCorpus corpus(task, sim, seed, &tpu);
  std::map<const rl::GoEnvironment*, std::string> path_of;
  for (const std::string& p : zoo) {
    if (absl::Status s = corpus.AddHlo(p, 3000); !s.ok()) {
      std::cerr << "note: " << s.message() << "\n";
      continue;
    }
    path_of[corpus.entries().back().env] = p;
  }
  const bool placement = task == rl::GoTask::kPlacement;
  const bool joint = task == rl::GoTask::kJoint;
  std::vector<HloRow> rows;
  std::string notes;
  for (const std::string& family : holdouts) {
    const auto [train, held] =
        SplitCorpus(corpus, [&](const std::string& f) { return f == family; });
    if (held.empty()) continue;
    absl::StatusOr<mltune::bench::TrainedGo> trained =
        mltune::bench::TrainGo(train, imitation, iterations, seed);
    if (!trained.ok()) {
      std::cerr << trained.status() << "\n";
      return 1;
    }
    notes += absl::StrFormat("- %s held out: trained on %d modules, %d + %d iterations, %.0f s\n",
                             family, train.size(), imitation, iterations, trained->seconds);
    const std::string saved = trained->checkpoint;
    rl::GoConfig config;  // the untrained policy's, as TrainGo's
    config.seed = seed;
    for (const rl::GoCorpus::Entry* e : held) {
      std::cout << "  " << e->name << "\n" << std::flush;
      auto module = *mltune::ir::LoadVerifiedHlo(path_of[e->env]);
      mltune::costmodels::OpGraph graph = mltune::costmodels::BuildOpGraph(*module);
      HloRow r;
      r.graph = e->name;
      r.ops = graph.size();
      std::unique_ptr<mltune::opt::ConfigProblem> problem;
      if (joint) {
        // Defaults: XLA's fusion on device 0 with FIFO ("defaults"), and with m-ETF ("other");
        // annealing places XLA's kernels (FIFO).
        const std::vector<int32_t> ones(mltune::costmodels::FusibleProducers(graph).size(), 1);
        mltune::costmodels::OpGraph fused = mltune::costmodels::FuseOpGraph(
            graph, mltune::costmodels::PlanFusionByPriority(graph, ones));
        auto p = std::make_unique<mltune::opt::placement::PlacementProblem>(fused, sim);
        r.defaults = p->Evaluate(mltune::opt::Candidate(static_cast<size_t>(fused.size()), 0));
        r.other = p->Evaluate(p->EarliestFinishCandidate());
        problem = std::move(p);
      } else if (placement) {
        auto p = std::make_unique<mltune::opt::placement::PlacementProblem>(graph, sim);
        r.defaults = p->Evaluate(p->EarliestFinishCandidate());
        r.other = p->Evaluate(mltune::opt::Candidate(static_cast<size_t>(graph.size()), 0));
        problem = std::move(p);
      } else {
        auto p = std::make_unique<mltune::opt::fusion::TpuFusionProblem>(graph, tpu);
        r.defaults = p->Evaluate(p->DefaultCandidate());
        r.other = p->Evaluate(mltune::opt::Candidate(p->DefaultCandidate().size(), 0));
        problem = std::move(p);
      }
      const AnnealRuns sa = Anneal(*problem, fine_samples, seed);
      r.sa1 = sa.one;
      r.sa10 = sa.ten;
      r.sa_to_best = sa.ten_steps_to_best;
      rl::GoSolveOptions solve;
      solve.max_samples = zero_samples;
      solve.sampled = zero_samples;
      solve.seed = seed;
      r.go_zero = (*rl::GoPolicy::Load(saved))->Solve(*e->env, solve)->best_score;
      solve.max_samples = fine_samples;
      solve.fine_tune = true;
      absl::StatusOr<rl::GoSolveResult> f = (*rl::GoPolicy::Load(saved))->Solve(*e->env, solve);
      r.go_fine = f->best_score;
      for (const auto& [samples, best] : f->trace) {
        if (best <= r.sa10 * (1 + 1e-9)) {
          r.fine_to_sa10 = samples;
          break;
        }
      }
      r.go_scratch = (*rl::GoPolicy::Create(config))->Solve(*e->env, solve)->best_score;
      // Warm-started from the baselines (the daemon's seeds), zero-shot and fine-tuned.
      rl::GoSolveOptions warm = solve;
      warm.starts = e->env->Baselines();
      warm.fine_tune = false;
      warm.max_samples = zero_samples + static_cast<int64_t>(warm.starts.size());
      r.go_warm = (*rl::GoPolicy::Load(saved))->Solve(*e->env, warm)->best_score;
      warm.fine_tune = true;
      warm.max_samples = fine_samples;
      r.go_warm_fine = (*rl::GoPolicy::Load(saved))->Solve(*e->env, warm)->best_score;
      rows.push_back(r);
    }
  }
  std::string table = absl::StrFormat(
      "| held-out module (%s) | ops | %s | %s | SA %dx | SA %dx | GO zero-shot (%d) | GO "
      "fine-tuned (%d) | GO scratch (%d) | GO warm-started | GO warm, fine-tuned | fine-tuned "
      "samples to SA 10x's best (SA's own) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      joint       ? "joint placement, scheduling and fusion, gpu-4x-nvlink, makespan us"
      : placement ? "placement and scheduling, gpu-4x-nvlink, makespan us"
                  : "fusion, tpu-v4-core, us",
      joint       ? "default (XLA fusion, one GPU, FIFO)"
      : placement ? "m-ETF"
                  : "XLA fusion",
      joint       ? "XLA fusion + m-ETF"
      : placement ? "one device"
                  : "no fusion",
      fine_samples, 10 * fine_samples, zero_samples, fine_samples, fine_samples);
  auto us = [](double s) {
    return std::isfinite(s) ? absl::StrFormat("%.1f", s * 1e6) : std::string("—");
  };
  Geomean zero_default{"modules"}, zero_other{"modules"}, zero_sa10{"modules"},
      fine_sa10{"modules"}, warm_default{"modules"}, warm_other{"modules"},
      warm_fine_sa10{"modules"};
  for (const HloRow& r : rows) {
    table += absl::StrFormat(
        "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%d) |\n", r.graph, r.ops,
        us(r.defaults), us(r.other), us(r.sa1), us(r.sa10), us(r.go_zero), us(r.go_fine),
        us(r.go_scratch), us(r.go_warm), us(r.go_warm_fine),
        r.fine_to_sa10 < 0 ? std::string("not reached") : absl::StrCat(r.fine_to_sa10),
        r.sa_to_best);
    zero_default.Add(r.defaults, r.go_zero);
    zero_other.Add(r.other, r.go_zero);
    zero_sa10.Add(r.sa10, r.go_zero);
    fine_sa10.Add(r.sa10, r.go_fine);
    warm_default.Add(r.defaults, r.go_warm);
    warm_other.Add(r.other, r.go_warm);
    warm_fine_sa10.Add(r.sa10, r.go_warm_fine);
  }
  const std::string first = joint ? "the default" : placement ? "m-ETF" : "XLA fusion";
  const std::string second = joint ? "XLA fusion + m-ETF" : placement ? "one device" : "no fusion";
  table += absl::StrFormat(
      "\nGeomeans, baseline / GO (> 1: GO better):\n- zero-shot vs %s: %s\n- zero-shot vs %s: "
      "%s\n- zero-shot vs SA 10x: %s\n- fine-tuned vs SA 10x: %s\n- warm-started zero-shot vs "
      "%s: %s\n- warm-started zero-shot vs %s: %s\n- warm-started fine-tuned vs SA 10x: %s\n",
      first, zero_default.Text(), second, zero_other.Text(), zero_sa10.Text(), fine_sa10.Text(),
      first, warm_default.Text(), second, warm_other.Text(), warm_fine_sa10.Text());
  table += "\n" + notes;
  std::cout << "\n" << table;
  if (!out_path.empty()) std::ofstream(out_path) << table;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GO vs the partitioning baselines on held-out graph families"};
  std::string placement_dir = std::string(MLTUNE_CORPUS_DIR) + "/placement/dnn-partitioning";
  std::string zoo_dir = std::string(MLTUNE_SOURCE_DIR) + "/models/hlo";
  std::string out_path, checkpoint_dir;
  std::vector<std::string> holdouts = {"bert", "resnet"};
  int iterations = 150, imitation = 0, zero_samples = 16, fine_samples = 160, max_units = 3000;
  uint64_t seed = 0;
  app.add_option("--placement-dir", placement_dir, "dnn-partitioning graphs");
  app.add_option("--zoo", zoo_dir, "HLO modules (*.after.hlo*) to train on as well");
  app.add_option("--holdout", holdouts, "Families held out, one policy each");
  app.add_option("--iterations", iterations, "PPO iterations per policy");
  app.add_option("--imitation", imitation, "Imitation iterations before PPO");
  int hidden = rl::GoConfig{}.hidden;
  app.add_option("--hidden", hidden, "Width of the policy's layers");
  app.add_option("--samples", zero_samples, "GO zero-shot samples");
  app.add_option("--fine-tune-samples", fine_samples, "GO fine-tuning samples");
  app.add_option("--max-units", max_units, "Largest zoo graph trained on (ops)");
  app.add_option("--checkpoint-dir", checkpoint_dir, "Save (or reuse) each policy here");
  app.add_option("--seed", seed, "Seed");
  app.add_option("--out", out_path, "Write the markdown table here too");
  std::string task_name = "partition";
  app.add_option("--task", task_name,
                 "partition (dnn-partitioning graphs), placement (zoo on cluster-sim) or fusion "
                 "(zoo on tpu-sim)");
  CLI11_PARSE(app, argc, argv);
  absl::StatusOr<rl::GoTask> task = rl::ParseGoTask(task_name);
  if (!task.ok()) {
    std::cerr << task.status() << "\n";
    return 1;
  }
  if (*task != rl::GoTask::kPartition) {
    std::vector<std::string> modules;
    for (const auto& e : fs::directory_iterator(zoo_dir)) {
      const std::string p = e.path().string();
      // Fusion decides on unfused modules; placement on the compiler's fused kernels.
      const char* stage = *task == rl::GoTask::kPlacement ? ".after.hlo" : ".before.hlo";
      if (p.find(stage) != std::string::npos) modules.push_back(p);
    }
    std::sort(modules.begin(), modules.end());
    if (app.count("--holdout") == 0) holdouts = {"resnet", "gpt", "inception"};
    return RunHloTask(*task, modules, holdouts, imitation, iterations, zero_samples, fine_samples,
                      seed, out_path);
  }
  if (!fs::exists(placement_dir)) {
    std::cerr << "go_bench: " << placement_dir << " not found (the shared placement graphs)\n";
    return 1;
  }
  const mltune::backends::TargetSpec* spec =
      mltune::backends::TargetRegistry::Global().Find("gpu-4x-nvlink");
  absl::StatusOr<mltune::backends::cluster::ClusterSimulator> sim =
      mltune::backends::cluster::ClusterSimulator::Create(*spec);
  if (!sim.ok()) {
    std::cerr << sim.status() << "\n";
    return 1;
  }

  rl::GoCorpus corpus(rl::GoTask::kPartition, *sim, seed);
  std::vector<std::string> placement_files;
  for (const auto& e : fs::recursive_directory_iterator(placement_dir)) {
    const std::string p = e.path().string();
    if (p.ends_with(".json") && p.find("human-experts") == std::string::npos) {
      placement_files.push_back(p);
    }
  }
  std::sort(placement_files.begin(), placement_files.end());
  std::map<const rl::GoEnvironment*, std::string> path_of;
  for (const std::string& p : placement_files) {
    const partition::Objective objective = p.find("/latency/") != std::string::npos
                                               ? partition::Objective::kLatency
                                               : partition::Objective::kThroughput;
    if (absl::Status s = corpus.AddPartitionGraph(p, objective); !s.ok()) {
      std::cerr << s << "\n";
      return 1;
    }
    path_of[corpus.entries().back().env] = p;
  }
  std::vector<std::string> zoo;
  if (fs::exists(zoo_dir)) {
    for (const auto& e : fs::directory_iterator(zoo_dir)) {
      const std::string p = e.path().string();
      if (p.find(".after.hlo") != std::string::npos) zoo.push_back(p);
    }
  }
  std::sort(zoo.begin(), zoo.end());
  for (const std::string& p : zoo) {
    if (absl::Status s = corpus.AddHlo(p, max_units); !s.ok()) {
      std::cerr << "note: " << s.message() << "\n";
    }
  }
  std::cout << "corpus: " << corpus.entries().size() << " graphs (" << placement_files.size()
            << " dnn-partitioning, the rest from " << zoo.size() << " zoo modules)\n";

  std::vector<Row> rows;
  std::string training_notes;
  for (const std::string& family : holdouts) {
    const auto [train, held] = SplitCorpus(
        corpus, [&](const std::string& f) { return f == family; },
        [&](const rl::GoCorpus::Entry& e) { return path_of.count(e.env) != 0; });
    rl::GoConfig config;
    config.seed = seed;
    config.hidden = hidden;
    std::unique_ptr<rl::GoPolicy> policy;
    const std::string ckpt =
        checkpoint_dir.empty() ? "" : absl::StrCat(checkpoint_dir, "/go-holdout-", family, ".ckpt");
    if (!ckpt.empty() && fs::exists(ckpt)) {
      std::ifstream in(ckpt, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      policy = *rl::GoPolicy::Load(bytes);
      std::cout << "holdout " << family << ": loaded " << ckpt << "\n";
    } else {
      policy = *rl::GoPolicy::Create(config);
      const auto start = Clock::now();
      rl::GoTrainOptions options;
      options.iterations = iterations;
      options.imitation_iterations = imitation;
      options.eval_every = 0;
      options.on_progress = [&](const rl::GoTrainProgress& p) {
        if (p.iteration % 10 == 0) {
          std::cout << absl::StrFormat(
                           "  [%s held out] iteration %d, %d samples, %.0f s, "
                           "mean reward %.3f\n",
                           family, p.iteration, p.samples, p.seconds, p.mean_reward)
                    << std::flush;
        }
      };
      absl::StatusOr<std::vector<rl::GoTrainProgress>> h = policy->Train(train, options);
      if (!h.ok()) {
        std::cerr << h.status() << "\n";
        return 1;
      }
      training_notes += absl::StrFormat(
          "- %s held out: trained on %d graphs, %d imitation + %d PPO iterations (%d PPO samples), "
          "%.0f s\n",
          family, train.size(), imitation, iterations, h->empty() ? 0 : h->back().samples,
          Since(start));
      if (!ckpt.empty()) {
        fs::create_directories(checkpoint_dir);
        std::ofstream(ckpt, std::ios::binary) << policy->Save();
      }
    }
    const std::string saved = policy->Save();

    for (const rl::GoCorpus::Entry* e : held) {
      const std::string& path = path_of[e->env];
      absl::StatusOr<partition::PartitionGraph> g = partition::LoadPartitionGraph(path);
      const partition::Objective objective = path.find("/latency/") != std::string::npos
                                                 ? partition::Objective::kLatency
                                                 : partition::Objective::kThroughput;
      Row r;
      const std::string kind =
          path.find("LayerGraphs") != std::string::npos ? "LayerGraphs" : "OperatorGraphs";
      r.graph =
          absl::StrCat(kind, "/", g->name, ":", std::string(partition::ObjectiveName(objective)));
      r.classes = g->groups;
      std::cout << "  " << r.graph << "\n" << std::flush;
      r.one = Value(*g, partition::OneAccelerator(*g), objective);
      if (const std::string f = ExpertFile(path); !f.empty()) {
        absl::StatusOr<partition::Split> s =
            partition::LoadSplit(*g, placement_dir + "/human-experts/" + f);
        if (s.ok()) {
          const partition::SplitScore score = partition::Score(*g, *s, objective);
          r.expert = score.objective;
          r.expert_feasible = score.valid && score.feasible;
        }
      }
      if (auto it = kReference.find(r.graph); it != kReference.end()) r.reference = it->second;
      const auto heuristics = Clock::now();
      r.metf = Value(*g, partition::EarliestFinish(*g), objective);
      absl::StatusOr<partition::Split> metis = partition::MetisSplit(*g, seed);
      r.metis = metis.ok() ? Value(*g, *metis, objective) : INFINITY;
      r.dp = Value(*g, partition::ContiguousDpSplit(*g, objective), objective);
      r.heuristic_seconds = Since(heuristics);
      r.contiguous = Value(*g, partition::ContiguousSplit(*g), objective);

      // GO zero-shot.
      std::unique_ptr<rl::GoPolicy> zero = *rl::GoPolicy::Load(saved);
      std::unique_ptr<rl::GoEnvironment> env = rl::MakePartitionEnvironment(*g, objective);
      rl::GoSolveOptions solve;
      solve.max_samples = zero_samples;
      solve.sampled = zero_samples;
      solve.seed = seed;
      absl::StatusOr<rl::GoSolveResult> z = zero->Solve(*env, solve);
      r.go_zero = z->best_score;
      r.go_samples = z->samples;
      r.go_seconds = z->seconds;
      // Fine-tuned, and from scratch with the same samples.
      solve.max_samples = fine_samples;
      solve.fine_tune = true;
      std::unique_ptr<rl::GoPolicy> fine = *rl::GoPolicy::Load(saved);
      absl::StatusOr<rl::GoSolveResult> f = fine->Solve(*env, solve);
      r.go_fine = f->best_score;
      r.fine_samples = f->samples;
      std::unique_ptr<rl::GoPolicy> scratch = *rl::GoPolicy::Create(config);
      absl::StatusOr<rl::GoSolveResult> s = scratch->Solve(*env, solve);
      r.go_scratch = s->best_score;
      // Warm-started from the baselines' splits (m-ETF, METIS, contiguous), as the daemon starts
      // from its seeds: zero-shot and fine-tuned.
      {
        partition::PartitionProblem p(*g, objective);
        rl::GoSolveOptions warm = solve;
        std::vector<partition::Split> starts = {partition::EarliestFinish(*g),
                                                partition::ContiguousDpSplit(*g, objective)};
        if (metis.ok()) starts.push_back(*metis);
        for (const partition::Split& split : starts) {
          const mltune::opt::Candidate c = p.Encode(split);
          rl::GoDecision d;
          d.device.assign(c.begin(), c.end());
          warm.starts.push_back(d);
        }
        warm.fine_tune = false;
        warm.max_samples = zero_samples + static_cast<int64_t>(warm.starts.size());
        r.go_warm = (*rl::GoPolicy::Load(saved))->Solve(*env, warm)->best_score;
        warm.fine_tune = true;
        warm.max_samples = fine_samples;
        r.go_warm_fine = (*rl::GoPolicy::Load(saved))->Solve(*env, warm)->best_score;
      }

      // Search baselines at 1x and 10x GO's fine-tuning samples.
      partition::PartitionProblem problem(*g, objective);
      const AnnealRuns sa = Anneal(problem, fine_samples, seed);
      r.sa1 = sa.one;
      r.sa10 = sa.ten;
      r.sa_to_best = sa.ten_steps_to_best;
      for (const auto& [samples, best] : f->trace) {
        if (best <= r.sa10 * (1 + 1e-9)) {
          r.fine_to_sa10 = samples;
          break;
        }
      }
      std::mt19937_64 rng(seed);
      int64_t spent = 0;
      r.ls1 = Value(*g, partition::LocalSearch(*g, objective, 10, rng, fine_samples, &spent),
                    objective);
      r.ls10 = Value(*g, partition::LocalSearch(*g, objective, 10, rng, 10 * fine_samples, &spent),
                     objective);
      r.random = INFINITY;
      for (int i = 0; i < fine_samples; ++i) {
        r.random = std::min(r.random, Value(*g, partition::RandomSplit(*g, rng), objective));
      }
      rows.push_back(r);
    }
  }

  // The table: values (lower is better), then GO zero-shot's improvement over each baseline.
  std::string table = absl::StrFormat(
      "| held-out graph | classes | one acc. | expert | NOTES ref. | m-ETF | METIS | contiguous | "
      "contiguous DP | random %dx | SA 1x | SA 10x | LS 1x | LS 10x | GO zero-shot (%d) | GO "
      "fine-tuned (%d) | GO "
      "scratch (%d) | GO warm-started (+%d) | GO warm, fine-tuned (%d) | fine-tuned samples to "
      "SA 10x's best (SA's own) |\n",
      fine_samples, zero_samples, fine_samples, fine_samples, zero_samples, fine_samples);
  table += "|---|";
  for (int column = 1; column < 20; ++column) table += "---:|";
  table += "\n";
  auto num = [](double x) {
    return std::isfinite(x) ? absl::StrFormat("%.2f", x) : std::string("—");
  };
  // Geomeans of baseline / GO over the graphs where both are feasible (> 1: GO better).
  Geomean zero_best, zero_heuristic, zero_metf, zero_sa10, fine_sa10, warm_best, warm_fine_sa10;
  int zero_feasible = 0;
  std::vector<double> go_seconds, heuristic_seconds;
  for (const Row& r : rows) {
    table += absl::StrFormat(
        "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
        "| %s | %s (%d) |\n",
        r.graph, r.classes, num(r.one),
        r.expert_feasible ? num(r.expert) : absl::StrCat(num(r.expert), " (infeasible)"),
        num(r.reference), num(r.metf), num(r.metis), num(r.contiguous), num(r.dp), num(r.random),
        num(r.sa1), num(r.sa10), num(r.ls1), num(r.ls10), num(r.go_zero), num(r.go_fine),
        num(r.go_scratch), num(r.go_warm), num(r.go_warm_fine),
        r.fine_to_sa10 < 0 ? std::string("not reached") : absl::StrCat(r.fine_to_sa10),
        r.sa_to_best);
    double best_classic = std::min({r.metf, r.metis, r.contiguous, r.dp});
    if (std::isfinite(r.expert) && r.expert_feasible) {
      best_classic = std::min(best_classic, r.expert);
    }
    if (std::isfinite(r.reference)) best_classic = std::min(best_classic, r.reference);
    if (std::isfinite(r.go_zero)) ++zero_feasible;
    zero_best.Add(best_classic, r.go_zero);
    zero_heuristic.Add(std::min({r.metf, r.metis, r.dp}), r.go_zero);
    go_seconds.push_back(r.go_seconds);
    heuristic_seconds.push_back(r.heuristic_seconds);
    zero_metf.Add(r.metf, r.go_zero);
    zero_sa10.Add(r.sa10, r.go_zero);
    fine_sa10.Add(r.sa10, r.go_fine);
    warm_best.Add(best_classic, r.go_warm);
    warm_fine_sa10.Add(r.sa10, r.go_warm_fine);
  }
  table += absl::StrFormat(
      "\nGeomeans, baseline / GO (> 1: GO better), over the graphs where both are feasible. GO "
      "zero-shot found a feasible split on %d of %d graphs.\n"
      "- zero-shot vs the best of expert, m-ETF, METIS, contiguous (DP) and NOTES: %s\n"
      "- zero-shot vs the best of the three heuristics, m-ETF, METIS and the contiguous DP: %s "
      "(median seconds per graph: GO zero-shot %.3f, the three heuristics together %.3f)\n"
      "- zero-shot vs m-ETF: %s\n- zero-shot vs SA 10x: %s\n- fine-tuned vs SA 10x: %s\n"
      "- warm-started zero-shot vs the best of expert, m-ETF, METIS, contiguous (DP) and NOTES: "
      "%s\n"
      "- warm-started fine-tuned vs SA 10x: %s\n",
      zero_feasible, rows.size(), zero_best.Text(), zero_heuristic.Text(), Median(go_seconds),
      Median(heuristic_seconds), zero_metf.Text(), zero_sa10.Text(), fine_sa10.Text(),
      warm_best.Text(), warm_fine_sa10.Text());
  // One zero-shot decision on a 10,000-node graph: the greedy forward pass alone, then the whole
  // refined chain.
  {
    const partition::PartitionGraph large = LargeGraph(10000, seed);
    std::unique_ptr<rl::GoEnvironment> env =
        rl::MakePartitionEnvironment(large, partition::Objective::kThroughput);
    std::unique_ptr<rl::GoPolicy> policy = *rl::GoPolicy::Create(rl::GoConfig{});
    rl::GoSolveOptions solve;
    solve.max_samples = 3;
    solve.sampled = 0;
    absl::StatusOr<rl::GoSolveResult> r = policy->Solve(*env, solve);
    table += absl::StrFormat(
        "\nOne zero-shot decision on a 10,000-node graph (random layered DAG, 8 accelerators): "
        "%.3f s for the first forward pass, %.3f s for the refined chain of %d (1 thread)\n",
        r->first_decision_seconds, r->seconds, r->samples);
  }
  table += "\n" + training_notes;
  std::cout << "\n" << table;
  if (!out_path.empty()) std::ofstream(out_path) << table;
  return 0;
}
