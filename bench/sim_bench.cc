// Simulator throughput: candidates scored per second by each simulated worker on one module
// (default: the largest corpus module after XLA's default CPU pipeline, which inlines its calls),
// against the analytical roofline of the whole module as the reference peer. The search loops
// call these scorers millions of times, so this is the number that bounds tuning speed.
//
//   build/release/bench/sim_bench [--file F] [--seconds S] [--no-pipeline]
//
// Rows: the analytical roofline (ModuleRooflineSeconds), tpu-sim tiles (a random tile per kernel
// of the default fusion), tpu-sim fusion (random fusion decisions: plan, summarise, simulate),
// mcm-sim partitions (random chip boundaries), cluster-sim placements (random devices, and the
// m-ETF placement). Each row: candidates/s, µs per candidate, the share that was valid.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "CLI/CLI.hpp"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/analytical.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/ir.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/tiling/tile_problem.h"
#include "passes/default_pipelines.h"

namespace {

namespace fs = std::filesystem;
using namespace mltune;
using Clock = std::chrono::steady_clock;

std::string LargestCorpusFile(const std::string& dir) {
  std::string best;
  uintmax_t best_size = 0;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return best;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.file_size() > best_size) {
      best_size = e.file_size();
      best = e.path().string();
    }
  }
  return best;
}

struct Row {
  const char* name;
  int64_t candidates = 0;
  int64_t valid = 0;
  double seconds = 0;
};

// Calls `score` with fresh candidates for about `seconds`; a score is valid when finite.
Row Measure(const char* name, double seconds, const std::function<double()>& score) {
  Row row{name};
  const Clock::time_point start = Clock::now();
  do {
    for (int i = 0; i < 16; ++i) {
      const double s = score();
      ++row.candidates;
      if (std::isfinite(s)) ++row.valid;
    }
    row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (row.seconds < seconds);
  return row;
}

void Print(const Row& row, double reference_rate) {
  const double rate = static_cast<double>(row.candidates) / row.seconds;
  std::printf("| %-40s | %12.0f | %10.2f | %6.1f%% | %8.2fx |\n", row.name, rate, 1e6 / rate,
              100.0 * static_cast<double>(row.valid) / static_cast<double>(row.candidates),
              rate / reference_rate);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Simulated workers' scoring throughput on one module"};
  const char* env = std::getenv("MLTUNE_CORPUS_DIR");
  std::string file;
  double seconds = 2;
  bool no_pipeline = false;
  app.add_option("--file", file, "HLO module (default: the largest corpus module)");
  app.add_option("--seconds", seconds, "Seconds per row")->capture_default_str();
  app.add_flag("--no-pipeline", no_pipeline, "Score the module as given (calls stay opaque ops)");
  CLI11_PARSE(app, argc, argv);
  if (file.empty()) {
    file = LargestCorpusFile(std::string(env != nullptr ? env : MLTUNE_CORPUS_DIR) + "/hlo");
    if (file.empty()) {
      std::fprintf(stderr, "no corpus found (set MLTUNE_CORPUS_DIR or pass --file)\n");
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloFile(file);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return 1;
  }
  if (!no_pipeline) {
    absl::StatusOr<bool> changed = passes::MakeDefaultPipeline("cpu")->Run(**module);
    if (!changed.ok()) {
      std::fprintf(stderr, "default pipeline: %s\n",
                   std::string(changed.status().message()).c_str());
      return 1;
    }
  }
  const backends::TargetRegistry& targets = backends::TargetRegistry::Global();
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(**module);
  const costmodels::FusionPlan plan = costmodels::PlanFusion(graph);
  std::printf("module: %s\n", fs::path(file).filename().string().c_str());
  std::printf("ops in the entry: %d, kernels after default fusion: %d, weights: %d\n\n",
              graph.size(), plan.size(), graph.weight_count);

  std::mt19937_64 rng(1);
  const backends::TargetSpec& tpu = *targets.Find("tpu-v4-core");
  const Row roofline = Measure("analytical roofline (whole module)", seconds,
                               [&] { return costmodels::ModuleRooflineSeconds(**module, tpu); });

  opt::tiling::TpuTileProblem tiles(costmodels::SummarizeKernels(graph, plan),
                                    *backends::tpu::TpuSimulator::Create(tpu));
  const opt::SearchSpace tile_space = tiles.space();
  opt::Candidate tile_candidate(static_cast<size_t>(tile_space.max_length));
  const Row tile_row = Measure("tpu-sim: tiles (tpu-v4-core)", seconds, [&] {
    for (int64_t p = 0; p < tile_space.max_length; ++p) {
      tile_candidate[static_cast<size_t>(p)] =
          static_cast<opt::Action>(rng() % static_cast<uint64_t>(tile_space.ChoicesAt(p)));
    }
    return tiles.Evaluate(tile_candidate);
  });

  opt::fusion::TpuFusionProblem fusion(graph, *backends::tpu::TpuSimulator::Create(tpu));
  opt::Candidate fusion_candidate(static_cast<size_t>(fusion.space().max_length));
  const Row fusion_row = Measure("tpu-sim: fusion (tpu-v4-core)", seconds, [&] {
    for (opt::Action& a : fusion_candidate) a = rng() % 4 != 0 ? 1 : 0;
    return fusion.Evaluate(fusion_candidate);
  });

  opt::mcm::McmPartitionProblem mcm(graph,
                                    *backends::mcm::McmSimulator::Create(*targets.Find("mcm-36")));
  opt::Candidate mcm_candidate(static_cast<size_t>(graph.size()));
  // About one boundary per 36th of the ops, so partitions spread over the chips.
  std::bernoulli_distribution boundary(std::min(1.0, 35.0 / std::max(1, graph.size())));
  std::map<std::string, int64_t> violations;
  const Row mcm_row = Measure("mcm-sim: partition (mcm-36)", seconds, [&] {
    for (opt::Action& a : mcm_candidate) a = boundary(rng) ? 1 : 0;
    const backends::mcm::McmResult r = mcm.Simulate(mcm_candidate);
    ++violations[backends::mcm::ConstraintName(r.violated)];
    return r.valid && r.stage_seconds > 0 ? r.stage_seconds
                                          : std::numeric_limits<double>::infinity();
  });

  opt::placement::PlacementProblem placement(
      graph, *backends::cluster::ClusterSimulator::Create(*targets.Find("gpu-4x-nvlink")));
  opt::Candidate placement_candidate(static_cast<size_t>(graph.size()));
  const Row placement_row = Measure("cluster-sim: placement (gpu-4x-nvlink)", seconds, [&] {
    for (opt::Action& a : placement_candidate) a = static_cast<opt::Action>(rng() % 4);
    return placement.Evaluate(placement_candidate);
  });
  const opt::Candidate metf = placement.EarliestFinishCandidate();
  const Row metf_row =
      Measure("cluster-sim: m-ETF placement", seconds, [&] { return placement.Evaluate(metf); });

  std::printf("| %-40s | %12s | %10s | %7s | %9s |\n", "scorer", "candidates/s", "us/cand.",
              "valid", "vs roofl.");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(42, '-').c_str(), std::string(14, '-').c_str(),
              std::string(12, '-').c_str(), std::string(9, '-').c_str(),
              std::string(11, '-').c_str());
  const double reference = static_cast<double>(roofline.candidates) / roofline.seconds;
  for (const Row* row : {&roofline, &tile_row, &fusion_row, &mcm_row, &placement_row, &metf_row}) {
    Print(*row, reference);
  }
  std::printf("\nmcm-sim random partitions by first broken constraint:");
  for (const auto& [name, count] : violations) {
    std::printf(" %s %.1f%%", name.c_str(),
                100.0 * static_cast<double>(count) / static_cast<double>(mcm_row.candidates));
  }
  const backends::mcm::McmResult balanced = mcm.Simulate(mcm.BalancedCandidate());
  std::printf("\nmcm-sim balanced partition: %s, %d chips, %.0f inferences/s\n",
              balanced.valid ? "valid" : balanced.error.c_str(), balanced.chips_used,
              balanced.throughput);
  return 0;
}
