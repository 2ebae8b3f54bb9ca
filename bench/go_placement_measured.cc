// Placement of the CPU worker's kernels on a cluster of CPU hosts (cpu-4x-ethernet), every
// kernel costed by its time measured on this host: the shipped GO policy (zero-shot and
// fine-tuned) against m-ETF, one host and annealing at equal numbers of simulated placements.
// Run: taskset -c 1 build/release/bench/go_placement_measured [--models a,b] [--out FILE.md]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/spec/target_spec.h"
#include "bench/go_bench_util.h"
#include "ir/hlo_parser.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/rl/rl.h"

namespace {

namespace fs = std::filesystem;
namespace rl = mltune::opt::rl;
using mltune::bench::Geomean;

// Samples GO's trace needed to reach `target` (at most `target` * (1 + 1e-9)); -1 if never.
int64_t SamplesToReach(const rl::GoSolveResult& r, double target) {
  for (const auto& [samples, best] : r.trace) {
    if (best <= target * (1 + 1e-9)) return samples;
  }
  return -1;
}

std::string Ms(double s) {
  return std::isfinite(s) ? absl::StrFormat("%.3f", s * 1e3) : std::string("-");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GO placing measured kernels on a CPU cluster, against annealing"};
  std::string models = "convnext,efficientnet,lstm_lm,mamba,moe,regnet,swin,unet,whisper";
  std::string out_path, target = "cpu-4x-ethernet";
  std::string checkpoint = MLTUNE_SOURCE_DIR "/models/pretrained/partition--go.ckpt";
  std::string step = "train";
  int64_t samples = 16;
  uint64_t seed = 0;
  app.add_option("--models", models, "Zoo models")->capture_default_str();
  app.add_option("--step", step,
                 "Which of each model's modules: train (its training step, whatever its batch), or "
                 "a variant such as infer.b1 (inference steps are mostly chains: little to place)")
      ->capture_default_str();
  app.add_option("--target", target, "A cluster target")->capture_default_str();
  app.add_option("--checkpoint", checkpoint, "The GO policy")->capture_default_str();
  app.add_option("--samples", samples,
                 "Placements simulated by annealing 1x and GO fine-tuning "
                 "(GO zero-shot makes 16; annealing 10x ten times these)")
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed")->capture_default_str();
  app.add_option("--out", out_path, "Also write the table as markdown");
  CLI11_PARSE(app, argc, argv);

  const mltune::backends::TargetSpec* spec =
      mltune::backends::TargetRegistry::Global().Find(target);
  if (spec == nullptr) {
    std::cerr << "unknown target " << target << "\n";
    return 1;
  }
  absl::StatusOr<mltune::backends::cluster::ClusterSimulator> sim =
      mltune::backends::cluster::ClusterSimulator::Create(*spec);
  if (!sim.ok()) {
    std::cerr << sim.status() << "\n";
    return 1;
  }
  std::ifstream in(checkpoint, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in || !rl::GoPolicy::Load(bytes.str()).ok()) {
    std::cerr << "cannot load the GO checkpoint " << checkpoint << "\n";
    return 1;
  }

  std::string table = absl::StrCat(
      "| model (kernels) | kernels' measured sum | one host | m-ETF | annealing ", samples,
      " | annealing ", 10 * samples, " | GO zero-shot (16) | GO fine-tuned (", samples,
      ") | samples to annealing ", 10 * samples, "'s best: annealing / GO fine-tuned |\n",
      "|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  Geomean zero_vs_metf{"models"}, tuned_vs_anneal{"models"}, tuned_vs_anneal10{"models"};
  const std::vector<std::string> names = absl::StrSplit(models, ',', absl::SkipEmpty());
  for (const std::string& model : names) {
    fs::path hlo;
    for (const auto& e : fs::directory_iterator(fs::path(MLTUNE_SOURCE_DIR) / "models/hlo")) {
      const std::string name = e.path().filename().string();
      if (absl::StartsWith(name, absl::StrCat(model, ".", step, ".")) &&
          absl::StrContains(name, ".before.hlo")) {
        hlo = e.path();
      }
    }
    if (hlo.empty()) {
      std::cerr << model << ": no models/hlo/" << model << "." << step << ".*.before.hlo\n";
      continue;
    }
    absl::StatusOr<std::unique_ptr<mltune::ir::Module>> module =
        mltune::ir::ParseHloFile(hlo.string());
    if (!module.ok()) {
      std::cerr << model << ": " << module.status() << "\n";
      continue;
    }
    std::cerr << model << ": measuring its kernels\n";
    mltune::backends::cpu::MeasureOptions measure;
    measure.max_seconds = 1.0;
    absl::StatusOr<mltune::costmodels::OpGraph> graph =
        mltune::backends::cpu::MeasuredKernelGraph(**module, measure, seed);
    if (!graph.ok()) {
      std::cerr << model << ": " << graph.status() << "\n";
      continue;
    }
    double measured_sum = 0;
    for (const auto& n : graph->nodes) measured_sum += n.measured_s;
    mltune::opt::placement::PlacementProblem problem(*graph, *sim);
    auto makespan = [&](const mltune::opt::Candidate& c) {
      const mltune::backends::cluster::ClusterResult r = problem.Simulate(c);
      return r.valid ? r.makespan_s : std::numeric_limits<double>::infinity();
    };
    const mltune::opt::Candidate one(static_cast<size_t>(graph->size()), 0);
    const mltune::opt::Candidate metf = problem.EarliestFinishCandidate();
    const mltune::bench::AnnealRuns anneal = mltune::bench::Anneal(problem, samples, seed);

    std::unique_ptr<rl::GoEnvironment> env =
        rl::MakeClusterEnvironment(problem.graph(), *sim, /*schedule=*/false);
    auto solve = [&](int64_t n, bool fine_tune) {
      rl::GoSolveOptions options;
      options.max_samples = n;
      options.fine_tune = fine_tune;
      options.seed = seed;
      options.starts.resize(1);
      options.starts[0].device = metf;
      return *(*rl::GoPolicy::Load(bytes.str()))->Solve(*env, options);
    };
    const rl::GoSolveResult zero = solve(16, false);
    const rl::GoSolveResult tuned = solve(samples, true);
    const double metf_s = makespan(metf);
    zero_vs_metf.Add(metf_s, zero.best_score);
    tuned_vs_anneal.Add(anneal.one, tuned.best_score);
    tuned_vs_anneal10.Add(anneal.ten, tuned.best_score);
    const int64_t go_to_best = SamplesToReach(tuned, anneal.ten);
    absl::StrAppend(&table, "| ", hlo.filename().string(), " (", graph->size(), ") | ",
                    Ms(measured_sum), " | ", Ms(makespan(one)), " | ", Ms(metf_s), " | ",
                    Ms(anneal.one), " | ", Ms(anneal.ten), " | ", Ms(zero.best_score), " | ",
                    Ms(tuned.best_score), " | ", anneal.ten_steps_to_best, " / ",
                    go_to_best < 0 ? std::string("not reached") : absl::StrCat(go_to_best), " |\n");
  }
  const std::string summary = absl::StrCat(
      "\nMakespans in ms (lower is better). Geomeans, baseline / GO (> 1: GO better):\n",
      "- GO zero-shot vs m-ETF: ", zero_vs_metf.Text(), "\n",
      "- GO fine-tuned vs annealing at equal samples: ", tuned_vs_anneal.Text(), "\n",
      "- GO fine-tuned vs annealing with 10x the samples: ", tuned_vs_anneal10.Text(), "\n");
  std::cout << table << summary;
  if (!out_path.empty()) std::ofstream(out_path) << table << summary;
  return 0;
}
