// GO's fusion priorities on the CPU worker, measured: a policy trained on tpu-sim fusion over the
// zoo decides the fusion of corpus modules it never saw, zero-shot, warm-started and fine-tuned,
// every plan compiled and timed on this machine; against XLA's default fusion, no fusion, and
// annealing at 1x and 10x GO's fine-tuning samples. Each distinct plan of a module is measured
// once and shared by the strategies; the finalists are then re-timed alternately, so that the
// minimum over many noisy measurements does not flatter the strategy that measured most.
// Run: build/release/bench/go_fusion_cpu [--out bench/results_go_fusion_cpu.md] [FILES...]
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "bench/cpu_bench_util.h"
#include "bench/go_bench_util.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "costmodels/learned/learned_model.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/rl/rl.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace {

namespace fs = std::filesystem;
namespace costmodels = mltune::costmodels;
namespace cpu = mltune::backends::cpu;
namespace rl = mltune::opt::rl;
using Clock = std::chrono::steady_clock;
using mltune::bench::Geomean;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The five corpus modules of the fusion time-to-best benchmark and the bundled MLP.
std::vector<std::string> DefaultFiles() {
  const std::string corpus = MLTUNE_CORPUS_DIR "/hlo/hloenv/";
  std::vector<std::string> files;
  for (const char* name :
       {"maml_flax__module_0067.jit_train_step.26.before_optimizations.txt",
        "Scale-Mixtures-of-NNGP__module_0040.jit_serial.13.before_optimizations.txt",
        "jax_muzero__1649835456716499.module_0095.jit__var__1.31.before_optimizations.txt",
        "neural-tangents__module_0011.jit_fn.7.before_optimizations.txt"}) {
    if (fs::exists(corpus + name)) files.push_back(corpus + name);
  }
  files.push_back(MLTUNE_SOURCE_DIR "/examples/mlp_train_step.hlo");
  return files;
}

// The plan a GO decision's fusion levels make (as the environment builds it).
costmodels::FusionPlan PlanOf(const costmodels::OpGraph& graph, const rl::GoDecision& d) {
  const std::vector<int32_t> producers = costmodels::FusibleProducers(graph);
  std::vector<int32_t> priority(producers.size(), 1);
  if (d.fusion.size() == static_cast<size_t>(graph.size())) {
    for (size_t p = 0; p < producers.size(); ++p) {
      priority[p] = d.fusion[static_cast<size_t>(producers[p])];
    }
  }
  return costmodels::PlanFusionByPriority(graph, priority);
}

struct Row {
  std::string module;
  int64_t producers = 0, plans = 0;
  double measure_seconds = 0;
  double xla = 0, unfused = 0, sa1 = 0, sa10 = 0, go_zero = 0, go_warm = 0, go_fine = 0;
  double topk = 0;  // model-topk with the shipped cpu fusion cost model, GO fine-tuning's samples
  // Measurements each needed to reach annealing 10x's best (-1: not within its budget).
  int64_t go_fine_to_sa10 = -1, topk_to_sa10 = -1, sa_to_sa10 = -1;
  // Re-timed finalists: XLA's plan, annealing 10x's best, GO zero-shot's and GO fine-tuned's.
  double re_xla = 0, re_sa10 = 0, re_zero = 0, re_fine = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GO's fusion priorities on the CPU worker, measured"};
  std::string zoo_dir = std::string(MLTUNE_SOURCE_DIR) + "/models/hlo";
  std::string out_path, checkpoint;
  std::vector<std::string> files;
  int imitation = 200, iterations = 0, zero_samples = 4, fine_samples = 16, retime_rounds = 3;
  uint64_t seed = 0;
  app.add_option("files", files, "HLO modules to fuse (default: five held-out corpus modules)");
  app.add_option("--zoo", zoo_dir, "HLO modules (*.before.hlo*) GO trains on, on tpu-sim");
  app.add_option("--imitation", imitation, "Imitation iterations");
  app.add_option("--iterations", iterations, "PPO iterations after imitation");
  app.add_option("--checkpoint", checkpoint, "Load the policy from here (or save it here)");
  app.add_option("--samples", zero_samples, "GO zero-shot samples");
  app.add_option("--fine-tune-samples", fine_samples,
                 "GO fine-tuning samples (annealing: 1x, 10x)");
  app.add_option("--retime-rounds", retime_rounds, "Alternating re-timings of the finalists");
  app.add_option("--seed", seed, "Seed");
  app.add_option("--out", out_path, "Write the markdown table here too");
  std::string cost_model =
      std::string(MLTUNE_SOURCE_DIR) + "/models/pretrained/cost-model--fusion-cpu.ckpt";
  app.add_option("--cost-model", cost_model, "model-topk's cpu fusion cost model (checkpoint)");
  CLI11_PARSE(app, argc, argv);
  if (files.empty()) files = DefaultFiles();

  // The policy: loaded, or trained on tpu-sim fusion over every zoo module.
  const mltune::backends::TargetSpec* gpu =
      mltune::backends::TargetRegistry::Global().Find("gpu-4x-nvlink");
  const mltune::backends::TargetSpec* tpu_spec =
      mltune::backends::TargetRegistry::Global().Find("tpu-v4-core");
  auto sim = *mltune::backends::cluster::ClusterSimulator::Create(*gpu);
  auto tpu = *mltune::backends::tpu::TpuSimulator::Create(*tpu_spec);
  std::string saved, training;
  if (!checkpoint.empty() && fs::exists(checkpoint)) {
    std::ifstream in(checkpoint, std::ios::binary);
    saved.assign(std::istreambuf_iterator<char>(in), {});
    training = absl::StrCat("policy loaded from ", checkpoint);
  } else {
    rl::GoCorpus corpus(rl::GoTask::kFusion, sim, seed, &tpu);
    for (const auto& e : fs::directory_iterator(zoo_dir)) {
      const std::string p = e.path().string();
      if (p.find(".before.hlo") == std::string::npos) continue;
      if (absl::Status s = corpus.AddHlo(p, 3000); !s.ok())
        std::cerr << "note: " << s.message() << "\n";
    }
    std::vector<rl::GoEnvironment*> train;
    for (const rl::GoCorpus::Entry& e : corpus.entries()) train.push_back(e.env);
    absl::StatusOr<mltune::bench::TrainedGo> trained =
        mltune::bench::TrainGo(train, imitation, iterations, seed);
    if (!trained.ok()) {
      std::cerr << trained.status() << "\n";
      return 1;
    }
    saved = trained->checkpoint;
    training = absl::StrFormat(
        "policy trained on tpu-v4-core fusion of %d zoo modules, %d imitation + %d PPO "
        "iterations, %.0f s",
        train.size(), imitation, iterations, trained->seconds);
    if (!checkpoint.empty()) std::ofstream(checkpoint, std::ios::binary) << saved;
  }
  std::cerr << training << "\n";

  std::shared_ptr<const mltune::costmodels::learned::LearnedModel> learned;
  {
    std::ifstream in(cost_model, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), {}};
    absl::StatusOr<std::unique_ptr<mltune::costmodels::learned::LearnedModel>> m =
        mltune::costmodels::learned::LearnedModel::Load(bytes);
    if (!m.ok()) {
      std::cerr << cost_model << ": " << m.status().message() << "\n";
      return 1;
    }
    learned = *std::move(m);
  }

  const cpu::MeasureOptions measure_options = mltune::opt::tiling::ModuleTuningMeasureOptions();
  std::vector<Row> rows;
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<mltune::ir::Module>> module = mltune::bench::ReadForCpu(file);
    if (!module.ok()) {
      std::cerr << "skip " << file << ": " << module.status().message() << "\n";
      continue;
    }
    const costmodels::OpGraph graph = costmodels::BuildOpGraph(**module);
    Row r;
    r.module = fs::path(file).filename().string().substr(0, 48);
    r.producers = static_cast<int64_t>(costmodels::FusibleProducers(graph).size());
    if (r.producers == 0) {
      std::cerr << "skip " << file << ": no fusion decision\n";
      continue;
    }
    std::cerr << r.module << " (" << r.producers << " fusible producers)\n";
    std::map<std::vector<int32_t>, absl::StatusOr<double>> memo;
    auto time_plan = [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<double> {
      absl::StatusOr<cpu::Timing> t =
          cpu::MeasureModule(**module, {}, &plan, measure_options, seed);
      if (!t.ok()) return t.status();
      return t->median_s;
    };
    auto measure = [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<double> {
      auto [it, fresh] = memo.try_emplace(plan.kernel_of, 0.0);
      if (fresh) {
        const auto start = Clock::now();
        it->second = time_plan(plan);
        r.measure_seconds += Since(start);
      }
      return it->second;
    };
    // Both problems (annealing's and model-topk's) measure through the shared memo.
    const mltune::opt::fusion::CpuFusionProblem::MeasureFn plan_timing =
        [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<mltune::opt::fusion::PlanTiming> {
      absl::StatusOr<double> s = measure(plan);
      if (!s.ok()) return s.status();
      return mltune::opt::fusion::PlanTiming{*s, {}};
    };
    mltune::opt::fusion::CpuFusionProblem problem(graph, plan_timing);
    r.xla = problem.Evaluate(problem.DefaultCandidate());
    // Action 1 is priority 0: every producer kept apart.
    r.unfused = problem.Evaluate(mltune::opt::Candidate(problem.DefaultCandidate().size(), 1));
    auto strategy = mltune::opt::StrategyRegistry::Global().Create("annealing");
    r.sa1 = (*strategy)->Search(problem, mltune::opt::Budget(fine_samples, 0), seed)->best_score;
    const mltune::opt::Result sa10 =
        *(*strategy)->Search(problem, mltune::opt::Budget(10 * fine_samples, 0), seed);
    r.sa10 = sa10.best_score;
    // Steps (measurements) at which a search's best first reached annealing 10x's best.
    auto first_reach = [&](const mltune::opt::Result& result) -> int64_t {
      for (const mltune::opt::TracePoint& t : result.trace) {
        if (t.best_score <= r.sa10) return t.step;
      }
      return -1;
    };
    r.sa_to_sa10 = first_reach(sa10);

    // model-topk: the same measurements (shared memo), plans explored with the shipped cost model.
    mltune::opt::fusion::CpuFusionProblem guided(graph, plan_timing);
    guided.SetRanker(mltune::opt::guided::CpuFusionRanker(learned, **module));
    auto topk = mltune::opt::CreateModelTopK(mltune::opt::FusionModelTopKParams());
    if (absl::StatusOr<mltune::opt::Result> t =
            (*topk)->Search(guided, mltune::opt::Budget(fine_samples, 0), seed);
        t.ok()) {
      r.topk = t->best_score;
      r.topk_to_sa10 = first_reach(*t);
    } else {
      std::cerr << "  model-topk: " << t.status().message() << "\n";
      r.topk = INFINITY;
    }

    std::unique_ptr<rl::GoEnvironment> env = rl::MakeMeasuredFusionEnvironment(graph, measure);
    rl::GoSolveOptions solve;
    solve.max_samples = zero_samples;
    solve.sampled = zero_samples;
    solve.seed = seed;
    const rl::GoSolveResult zero = *(*rl::GoPolicy::Load(saved))->Solve(*env, solve);
    r.go_zero = zero.best_score;
    rl::GoSolveOptions warm = solve;
    warm.starts = env->Baselines();
    warm.max_samples = zero_samples + static_cast<int64_t>(warm.starts.size());
    r.go_warm = (*rl::GoPolicy::Load(saved))->Solve(*env, warm)->best_score;
    solve.max_samples = fine_samples;
    solve.fine_tune = true;
    const rl::GoSolveResult fine = *(*rl::GoPolicy::Load(saved))->Solve(*env, solve);
    r.go_fine = fine.best_score;
    for (const auto& [samples, best] : fine.trace) {
      if (best <= r.sa10) {
        r.go_fine_to_sa10 = samples;
        break;
      }
    }
    r.plans = static_cast<int64_t>(memo.size());

    // The finalists re-timed in turn; the best median of the rounds.
    const std::vector<costmodels::FusionPlan> finalists = {
        problem.Plan(problem.DefaultCandidate()), problem.Plan(sa10.best), PlanOf(graph, zero.best),
        PlanOf(graph, fine.best)};
    std::vector<double> best(finalists.size(), INFINITY);
    for (int round = 0; round < retime_rounds; ++round) {
      for (size_t f = 0; f < finalists.size(); ++f) {
        absl::StatusOr<double> s = time_plan(finalists[f]);
        if (s.ok()) best[f] = std::min(best[f], *s);
      }
    }
    r.re_xla = best[0];
    r.re_sa10 = best[1];
    r.re_zero = best[2];
    r.re_fine = best[3];
    rows.push_back(r);
  }

  auto us = [](double s) {
    return std::isfinite(s) ? absl::StrFormat("%.2f", s * 1e6) : std::string("—");
  };
  std::string table = absl::StrFormat(
      "| module (cpu worker, 1 thread, us) | fusible producers | XLA fusion | no fusion | SA %d | "
      "SA %d | GO zero-shot (%d) | GO warm-started | GO fine-tuned (%d) | model-topk (%d) | "
      "measurements to SA %d's best: SA / model-topk / GO fine-tuned | distinct plans "
      "measured (s) | re-timed: XLA / SA %d / GO zero-shot / GO fine-tuned |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n",
      fine_samples, 10 * fine_samples, zero_samples, fine_samples, fine_samples, 10 * fine_samples,
      10 * fine_samples);
  auto reach = [](int64_t n) { return n < 0 ? std::string("-") : absl::StrCat(n); };
  Geomean topk_sa1{"modules"}, fine_topk{"modules"};
  Geomean zero_xla{"modules"}, zero_unfused{"modules"}, warm_xla{"modules"}, fine_sa1{"modules"},
      fine_sa10{"modules"}, re_zero_xla{"modules"}, re_fine_sa10{"modules"};
  for (const Row& r : rows) {
    table += absl::StrFormat(
        "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s | %d (%.0f) | %s / %s / "
        "%s / %s |\n",
        r.module, r.producers, us(r.xla), us(r.unfused), us(r.sa1), us(r.sa10), us(r.go_zero),
        us(r.go_warm), us(r.go_fine), us(r.topk), reach(r.sa_to_sa10), reach(r.topk_to_sa10),
        reach(r.go_fine_to_sa10), r.plans, r.measure_seconds, us(r.re_xla), us(r.re_sa10),
        us(r.re_zero), us(r.re_fine));
    topk_sa1.Add(r.sa1, r.topk);
    fine_topk.Add(r.topk, r.go_fine);
    zero_xla.Add(r.xla, r.go_zero);
    zero_unfused.Add(r.unfused, r.go_zero);
    warm_xla.Add(r.xla, r.go_warm);
    fine_sa1.Add(r.sa1, r.go_fine);
    fine_sa10.Add(r.sa10, r.go_fine);
    re_zero_xla.Add(r.re_xla, r.re_zero);
    re_fine_sa10.Add(r.re_sa10, r.re_fine);
  }
  table += absl::StrFormat(
      "\nGeomeans, baseline / GO (> 1: GO better):\n- zero-shot vs XLA fusion: %s (re-timed: "
      "%s)\n- zero-shot vs no fusion: %s\n- warm-started vs XLA fusion: %s\n- fine-tuned vs SA "
      "%d: %s\n- fine-tuned vs SA %d: %s (re-timed: %s)\n- fine-tuned vs model-topk (%d "
      "measurements each): %s\n- model-topk vs SA %d (baseline / model-topk): %s\n\n- %s\n",
      zero_xla.Text(), re_zero_xla.Text(), zero_unfused.Text(), warm_xla.Text(), fine_samples,
      fine_sa1.Text(), 10 * fine_samples, fine_sa10.Text(), re_fine_sa10.Text(), fine_samples,
      fine_topk.Text(), fine_samples, topk_sa1.Text(), training);
  std::cout << "\n" << table;
  if (!out_path.empty()) std::ofstream(out_path) << table;
  return 0;
}
