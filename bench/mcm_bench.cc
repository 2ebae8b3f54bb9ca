// Multi-chip-module partitioning through the constraint solver, on graph families GO never
// trained on (Xie et al., MLSys 2022). For each held-out zoo module on mcm-36, at equal samples:
// the share of valid candidates and the best stage time of plain random and annealing over every
// op's chip, annealing and random over chip boundaries (what mltuned ran before), the solver's
// random, annealing and local search, and GO through the solver (go-fix, go-sample) zero-shot,
// fine-tuned and trained from scratch; the balanced and contiguous-DP partitions; annealing at
// 10x the samples and how many samples fine-tuned GO needs to reach its best. Then the placement
// graphs' throughput objective: GO (go-fix) fine-tuned within its samples against the optimal
// contiguous DP, PipeDream's planner, METIS and local search with 10 restarts run to its end.
// Run: build/release/bench/mcm_bench [--out bench/results_mcm.md]
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "backends/spec/target_spec.h"
#include "bench/go_bench_util.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/hlo_files.h"
#include "optimizers/constraints/constraints.h"
#include "optimizers/core/search.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/rl/rl.h"

namespace {

namespace fs = std::filesystem;
namespace rl = mltune::opt::rl;
namespace mcm = mltune::opt::mcm;
namespace partition = mltune::opt::partition;
using Clock = std::chrono::steady_clock;
using mltune::bench::Geomean;
using mltune::opt::Candidate;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A strategy's run: its best stage seconds, the share of its evaluations that were valid, and
// its wall time per evaluation.
struct Run {
  double best = INFINITY;
  double valid_share = 0;
  double seconds_per_sample = 0;
  int64_t samples = 0;
};

Run Search(const std::string& name, mltune::opt::Problem& problem,
           const mltune::opt::StrategyRegistry& registry, int64_t samples, uint64_t seed,
           const std::function<std::pair<int64_t, int64_t>()>& counts) {
  Run run;
  const auto [before_all, before_valid] = counts();
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<mltune::opt::Strategy>> s = registry.Create(name);
  absl::StatusOr<mltune::opt::Result> r =
      (*s)->Search(problem, mltune::opt::Budget(samples, 0), seed);
  const double seconds = Since(start);
  const auto [all, valid] = counts();
  run.samples = all - before_all;
  if (r.ok()) run.best = r->best_score;
  run.valid_share = run.samples > 0 ? static_cast<double>(valid - before_valid) / run.samples : 0;
  run.seconds_per_sample = run.samples > 0 ? seconds / run.samples : 0;
  return run;
}

// Counts what GO evaluates (through its environment) and how much is valid.
class Counting : public rl::GoEnvironment {
 public:
  explicit Counting(rl::GoEnvironment& inner) : inner_(inner) {}
  const rl::GoGraph& graph() const override { return inner_.graph(); }
  double reference_score() const override { return inner_.reference_score(); }
  std::vector<rl::GoDecision> Baselines() override { return inner_.Baselines(); }
  bool realizes() const override { return inner_.realizes(); }
  rl::GoDecision Realize(const rl::GoDecision& p, const std::vector<float>& probs) override {
    return inner_.Realize(p, probs);
  }
  Outcome Evaluate(const rl::GoDecision& d) override {
    const Outcome o = inner_.Evaluate(d);
    ++all;
    valid += o.valid ? 1 : 0;
    return o;
  }
  int64_t all = 0, valid = 0;

 private:
  rl::GoEnvironment& inner_;
};

Run Go(const std::string& saved, rl::GoEnvironment& env, int64_t samples, bool fine_tune,
       uint64_t seed, std::vector<std::pair<int64_t, double>>* trace = nullptr) {
  Counting counting(env);
  rl::GoSolveOptions options;
  options.max_samples = samples;
  options.sampled = samples;
  options.fine_tune = fine_tune;
  options.seed = seed;
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<rl::GoPolicy>> policy =
      saved.empty() ? rl::GoPolicy::Create(rl::GoConfig{}) : rl::GoPolicy::Load(saved);
  absl::StatusOr<rl::GoSolveResult> r = (*policy)->Solve(counting, options);
  Run run;
  run.samples = counting.all;
  if (r.ok()) {
    run.best = r->best_score;
    if (trace != nullptr) *trace = r->trace;
  }
  run.valid_share = counting.all > 0 ? static_cast<double>(counting.valid) / counting.all : 0;
  run.seconds_per_sample = counting.all > 0 ? Since(start) / counting.all : 0;
  return run;
}

int64_t SamplesToReach(const std::vector<std::pair<int64_t, double>>& trace, double target) {
  for (const auto& [samples, best] : trace) {
    if (best <= target * (1 + 1e-9)) return samples;
  }
  return -1;
}

std::string Us(double s) {
  return std::isfinite(s) ? absl::StrFormat("%.2f", s * 1e6) : std::string("—");
}
// "—" when the strategy evaluated nothing (the solver found no valid partition to start from).
std::string Pct(const Run& run) {
  return run.samples > 0 ? absl::StrFormat("%.0f%%", run.valid_share * 100) : std::string("—");
}

// ---- Section 1: held-out zoo modules on mcm-36 ----

std::string McmSection(const std::vector<std::string>& modules,
                       const std::vector<std::string>& holdouts, int imitation, int64_t samples,
                       int max_units, uint64_t seed) {
  const mltune::backends::TargetSpec* spec =
      mltune::backends::TargetRegistry::Global().Find("mcm-36");
  const mltune::backends::mcm::McmSimulator sim =
      *mltune::backends::mcm::McmSimulator::Create(*spec);
  const mltune::backends::cluster::ClusterSimulator cluster =
      *mltune::backends::cluster::ClusterSimulator::Create(
          *mltune::backends::TargetRegistry::Global().Find("gpu-4x-nvlink"));
  rl::GoCorpus corpus(rl::GoTask::kMcm, cluster, seed, nullptr, &sim);
  std::map<std::string, std::string> path_of;
  for (const std::string& p : modules) {
    if (absl::Status s = corpus.AddHlo(p, max_units); !s.ok()) {
      std::cerr << "note: " << s.message() << "\n";
      continue;
    }
    path_of[corpus.entries().back().name] = p;
  }
  auto held_family = [&](const std::string& f) {
    return std::find(holdouts.begin(), holdouts.end(), f) != holdouts.end();
  };
  const auto [train, held] = mltune::bench::SplitCorpus(corpus, held_family);
  std::set<std::string> trained_families;
  for (const rl::GoCorpus::Entry& e : corpus.entries()) {
    if (!held_family(e.family)) trained_families.insert(e.family);
  }
  absl::StatusOr<mltune::bench::TrainedGo> trained =
      mltune::bench::TrainGo(train, imitation, 0, seed);
  if (!trained.ok()) {
    std::cerr << trained.status() << "\n";
    return "";
  }
  const double train_seconds = trained->seconds;
  const std::string saved = trained->checkpoint;

  std::string validity = absl::StrFormat(
      "### Valid candidates, %d samples each (share of evaluations the simulator accepts)\n\n"
      "| held-out module | ops | random (chip per op) | annealing (chip per op) | random "
      "(boundaries) | annealing (boundaries) | solver-random | solver-annealing | "
      "solver-local-search | go-fix | go-sample |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
      "---:|---:|\n",
      samples);
  std::string quality = absl::StrFormat(
      "### Stage time (us, lower is better; throughput = 1 / stage), %d samples each\n\n"
      "| held-out module | balanced | contiguous DP | random (boundaries) | annealing "
      "(boundaries) | solver-random | solver-annealing | solver-local-search | go-fix zero-shot "
      "(16) | go-fix fine-tuned | go-sample fine-tuned | go-fix from scratch | annealing 10x | "
      "samples to annealing 10x's best: pretrained / scratch |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
      samples);
  std::string timing =
      "### Wall time per sample (ms; a solver sample completes a partition through "
      "propagation)\n\n| held-out module | annealing (boundaries) | solver-annealing | go-fix "
      "fine-tuned | go-sample fine-tuned |\n|---|---:|---:|---:|---:|\n";
  Geomean vs_sa{"modules"}, vs_random{"modules"}, vs_solver_sa{"modules"}, vs_dp{"modules"},
      sample_vs_sa{"modules"};
  for (const rl::GoCorpus::Entry* e : held) {
    std::cerr << "  " << e->name << "\n";
    absl::StatusOr<std::unique_ptr<mltune::ir::Module>> module =
        mltune::ir::LoadVerifiedHlo(path_of[e->name]);
    const mltune::costmodels::OpGraph graph = mltune::costmodels::BuildOpGraph(**module);
    mcm::McmChipProblem chips(graph, sim);
    auto chip_counts = [&] {
      return std::make_pair(chips.evaluations(), chips.valid_evaluations());
    };
    mcm::McmPartitionProblem boundaries(graph, sim);
    int64_t boundary_all = 0, boundary_valid = 0;
    // Boundaries' validity: counted by wrapping their evaluations.
    class CountedBoundaries : public mltune::opt::ConfigProblem {
     public:
      CountedBoundaries(mcm::McmPartitionProblem& inner, int64_t* all, int64_t* valid)
          : inner_(inner), all_(all), valid_(valid) {
        for (const Candidate& c : inner.SeedCandidates()) (void)AddSeed(c);
      }
      std::string name() const override { return inner_.name(); }
      mltune::opt::SearchSpace space() const override { return inner_.space(); }
      double Evaluate(const Candidate& c) override {
        const double v = inner_.Evaluate(c);
        ++*all_;
        *valid_ += std::isfinite(v) ? 1 : 0;
        return v;
      }

     private:
      mcm::McmPartitionProblem& inner_;
      int64_t *all_, *valid_;
    } counted(boundaries, &boundary_all, &boundary_valid);
    auto boundary_counts = [&] { return std::make_pair(boundary_all, boundary_valid); };
    const mltune::opt::StrategyRegistry& registry = mltune::opt::StrategyRegistry::Global();
    const mltune::opt::StrategyRegistry& solver = mltune::opt::constraints::SolverStrategies();
    const Run plain_random = Search("random", chips, registry, samples, seed, chip_counts);
    const Run plain_sa = Search("annealing", chips, registry, samples, seed, chip_counts);
    const Run b_random = Search("random", counted, registry, samples, seed, boundary_counts);
    const Run b_sa = Search("annealing", counted, registry, samples, seed, boundary_counts);
    const Run b_sa10 = Search("annealing", counted, registry, 10 * samples, seed, boundary_counts);
    const Run s_random = Search("solver-random", chips, solver, samples, seed, chip_counts);
    const Run s_sa = Search("solver-annealing", chips, solver, samples, seed, chip_counts);
    const Run s_ls = Search("solver-local-search", chips, solver, samples, seed, chip_counts);
    std::unique_ptr<rl::GoEnvironment> fix =
        rl::MakeMcmEnvironment(chips, rl::GoSolverMode::kFix, seed);
    std::unique_ptr<rl::GoEnvironment> sample =
        rl::MakeMcmEnvironment(chips, rl::GoSolverMode::kSample, seed);
    const Run zero = Go(saved, *fix, 16, false, seed);
    std::vector<std::pair<int64_t, double>> fine_trace, scratch_trace;
    const Run fine = Go(saved, *fix, samples, true, seed, &fine_trace);
    const Run fine_sample = Go(saved, *sample, samples, true, seed);
    const Run scratch = Go("", *fix, samples, true, seed, &scratch_trace);
    const mltune::backends::mcm::McmResult balanced = chips.Simulate(chips.BalancedCandidate());
    const Candidate dp_chips = chips.ContiguousDpCandidate();
    const double dp = dp_chips.empty() ? INFINITY : chips.Simulate(dp_chips).stage_seconds;
    const int64_t to_sa10 = SamplesToReach(fine_trace, b_sa10.best);
    const int64_t scratch_to_sa10 = SamplesToReach(scratch_trace, b_sa10.best);
    validity +=
        absl::StrFormat("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", e->name,
                        graph.size(), Pct(plain_random), Pct(plain_sa), Pct(b_random), Pct(b_sa),
                        Pct(s_random), Pct(s_sa), Pct(s_ls), Pct(fine), Pct(fine_sample));
    auto reached = [](int64_t n) { return n < 0 ? std::string("—") : absl::StrCat(n); };
    quality += absl::StrFormat(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", e->name,
        Us(balanced.valid ? balanced.stage_seconds : INFINITY), Us(dp), Us(b_random.best),
        Us(b_sa.best), Us(s_random.best), Us(s_sa.best), Us(s_ls.best), Us(zero.best),
        Us(fine.best), Us(fine_sample.best), Us(scratch.best), Us(b_sa10.best), reached(to_sa10),
        reached(scratch_to_sa10));
    timing += absl::StrFormat("| %s | %.3f | %.3f | %.3f | %.3f |\n", e->name,
                              b_sa.seconds_per_sample * 1e3, s_sa.seconds_per_sample * 1e3,
                              fine.seconds_per_sample * 1e3, fine_sample.seconds_per_sample * 1e3);
    const double go_best = std::min(fine.best, fine_sample.best);
    vs_sa.Add(b_sa.best, go_best);
    vs_random.Add(b_random.best, go_best);
    vs_solver_sa.Add(s_sa.best, go_best);
    vs_dp.Add(dp, go_best);
    sample_vs_sa.Add(b_sa.best, fine_sample.best);
  }
  return absl::StrFormat(
      "## Multi-chip module (mcm-36), held-out families %s\n\nGO trained on %d modules of "
      "the families %s: %d imitation iterations, %.0f s. Baseline / GO throughput ratios, "
      "geomean (> 1: GO better): GO = the better of go-fix and go-sample fine-tuned.\n\n"
      "- vs annealing (boundaries) at equal samples: %s\n- vs random (boundaries) at equal "
      "samples: %s\n- vs solver-annealing at equal samples: %s\n- vs contiguous DP: %s\n- "
      "go-sample alone vs annealing (boundaries): %s\n\n%s\n%s\n%s",
      absl::StrJoin(holdouts, ", "), train.size(), absl::StrJoin(trained_families, ", "), imitation,
      train_seconds, vs_sa.Text(), vs_random.Text(), vs_solver_sa.Text(), vs_dp.Text(),
      sample_vs_sa.Text(), validity, quality, timing);
}

// ---- Section 2: the placement graphs' throughput objective ----

std::string PlacementSection(const std::string& placement_dir, const std::string& zoo_dir,
                             int imitation, int64_t fine_samples, uint64_t seed) {
  const mltune::backends::cluster::ClusterSimulator cluster =
      *mltune::backends::cluster::ClusterSimulator::Create(
          *mltune::backends::TargetRegistry::Global().Find("gpu-4x-nvlink"));
  rl::GoCorpus corpus(rl::GoTask::kPartition, cluster, seed);
  std::map<const rl::GoEnvironment*, std::string> path_of;
  for (const auto& e : fs::recursive_directory_iterator(placement_dir)) {
    const std::string p = e.path().string();
    if (!p.ends_with(".json") || p.find("human-experts") != std::string::npos ||
        p.find("/latency/") != std::string::npos) {
      continue;
    }
    if (corpus.AddPartitionGraph(p, partition::Objective::kThroughput).ok()) {
      path_of[corpus.entries().back().env] = p;
    }
  }
  for (const auto& e : fs::directory_iterator(zoo_dir)) {
    const std::string p = e.path().string();
    if (p.find(".after.hlo") != std::string::npos) (void)corpus.AddHlo(p, 3000);
  }
  std::string table = absl::StrFormat(
      "## Placement graphs, throughput (max-load; lower is better)\n\nOne policy per held-out "
      "family (%d imitation iterations on every other graph), go-fix fine-tuned within %d "
      "samples, cold and warm-started from the DP, METIS and m-ETF splits.\n\n"
      "| held-out graph | contiguous DP | PipeDream | METIS | local search x10 (samples) | "
      "go-fix fine-tuned, cold | go-fix fine-tuned, warm |\n|---|---:|---:|---:|---:|---:|---:|\n",
      imitation, fine_samples);
  Geomean cold_dp{"graphs"}, warm_dp{"graphs"}, warm_ls{"graphs"}, cold_ls{"graphs"};
  for (const std::string family : {"bert", "resnet"}) {
    const auto [train, held] = mltune::bench::SplitCorpus(
        corpus, [&](const std::string& f) { return f == family; },
        [&](const rl::GoCorpus::Entry& e) { return path_of.count(e.env) != 0; });
    absl::StatusOr<mltune::bench::TrainedGo> trained =
        mltune::bench::TrainGo(train, imitation, 0, seed);
    if (!trained.ok()) return "";
    const std::string saved = trained->checkpoint;
    for (const rl::GoCorpus::Entry* e : held) {
      std::cerr << "  " << e->name << "\n";
      const partition::PartitionGraph g = *partition::LoadPartitionGraph(path_of[e->env]);
      const partition::Objective throughput = partition::Objective::kThroughput;
      auto value = [&](const partition::Split& s) {
        const partition::SplitScore score = partition::Score(g, s, throughput);
        return score.valid && score.feasible ? score.objective : INFINITY;
      };
      const double dp = value(partition::ContiguousDpSplit(g, throughput));
      const double pipedream = value(partition::PipeDreamSplit(g));
      absl::StatusOr<partition::Split> metis = partition::MetisSplit(g, seed);
      const double metis_value = metis.ok() ? value(*metis) : INFINITY;
      std::mt19937_64 rng(seed);
      int64_t ls_samples = 0;
      const double ls = value(partition::LocalSearch(g, throughput, 10, rng, 0, &ls_samples));
      partition::PartitionProblem problem(g, throughput);
      std::unique_ptr<rl::GoEnvironment> env = rl::MakeConstrainedEnvironment(
          rl::MakePartitionEnvironment(g, throughput), problem, rl::GoSolverMode::kFix, seed);
      const Run cold = Go(saved, *env, fine_samples, true, seed);
      rl::GoSolveOptions warm;
      warm.max_samples = fine_samples;
      warm.fine_tune = true;
      warm.seed = seed;
      std::vector<partition::Split> starts = {partition::ContiguousDpSplit(g, throughput),
                                              partition::EarliestFinish(g)};
      if (metis.ok()) starts.push_back(*metis);
      for (const partition::Split& s : starts) {
        const Candidate c = problem.Encode(s);
        warm.starts.emplace_back().device.assign(c.begin(), c.end());
      }
      const double warm_best = (*rl::GoPolicy::Load(saved))->Solve(*env, warm)->best_score;
      table += absl::StrFormat("| %s | %.2f | %.2f | %.2f | %.2f (%d) | %.2f | %.2f |\n", e->name,
                               dp, pipedream, metis_value, ls, ls_samples, cold.best, warm_best);
      cold_dp.Add(dp, cold.best);
      warm_dp.Add(dp, warm_best);
      cold_ls.Add(ls, cold.best);
      warm_ls.Add(ls, warm_best);
    }
  }
  return table + absl::StrFormat(
                     "\nGeomeans, baseline / GO (> 1: GO better): cold vs contiguous DP %s, vs "
                     "local search x10 %s; warm vs contiguous DP %s, vs local search x10 %s.\n",
                     cold_dp.Text(), cold_ls.Text(), warm_dp.Text(), warm_ls.Text());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MCM partitioning through the constraint solver, GO in the loop"};
  std::string zoo_dir = std::string(MLTUNE_SOURCE_DIR) + "/models/hlo";
  std::string placement_dir = std::string(MLTUNE_CORPUS_DIR) + "/placement/dnn-partitioning";
  std::string out_path;
  std::vector<std::string> holdouts = {"inception", "mobilenet", "wavenet"};
  int imitation = 600, max_units = 3000;
  int64_t samples = 100, fine_samples = 200;
  uint64_t seed = 0;
  bool skip_placement = false;
  app.add_option("--zoo", zoo_dir, "HLO modules (*.after.hlo*)");
  app.add_option("--placement-dir", placement_dir, "dnn-partitioning graphs");
  app.add_option("--holdout", holdouts, "Zoo families held out of training");
  app.add_option("--imitation", imitation, "Imitation iterations per policy");
  app.add_option("--samples", samples, "Samples per strategy on the MCM");
  app.add_option("--fine-tune-samples", fine_samples, "GO's samples on the placement graphs");
  app.add_option("--max-units", max_units, "Largest module (ops)");
  app.add_flag("--skip-placement", skip_placement, "Only the MCM section");
  app.add_option("--seed", seed, "Seed");
  app.add_option("--out", out_path, "Write the markdown here too");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> modules;
  for (const auto& e : fs::directory_iterator(zoo_dir)) {
    const std::string p = e.path().string();
    if (p.find(".after.hlo") != std::string::npos) modules.push_back(p);
  }
  std::sort(modules.begin(), modules.end());
  const auto start = Clock::now();
  std::string text = McmSection(modules, holdouts, imitation, samples, max_units, seed);
  if (!skip_placement) {
    if (fs::exists(placement_dir)) {
      text += "\n" + PlacementSection(placement_dir, zoo_dir, imitation, fine_samples, seed);
    } else {
      text += "\n(placement graphs skipped: " + placement_dir + " not found)\n";
    }
  }
  text += absl::StrFormat("\nTotal: %.0f s.\n", Since(start));
  std::cout << text;
  if (!out_path.empty()) std::ofstream(out_path) << text;
  return 0;
}
