// `mltune collect --target tpu-sim` (or a tpu spec name): kernels as the daemon's tpu-sim tasks
// see them (the module as given, its op graph, costmodels::PlanFusion, SummarizeKernels), timed
// by the TPU simulator with seeded log-normal noise standing in for measurement noise. tile: the
// default tile and random valid ones per kernel of the default fusion; fusion: the kernels that
// random fusion decisions make, each at its default tile. Opaque kernels (one op the compiler
// cannot tile or fuse) are left out: no decision changes them. Each row also logs the analytical
// baseline's prediction (AnalyticalTileSeconds for tiles, the plain roofline for fusion), which
// needs the KernelSummary that the stored graph does not keep.
#include <memory>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/analytical.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/tile_cost.h"
#include "costmodels/features/kernel_graph.h"
#include "ir/fingerprint.h"
#include "optimizers/cost_model_data/collect_plan.h"
#include "optimizers/tiling/tile_problem.h"

namespace mltune::opt::cost_model_data {
namespace {

namespace tpu = backends::tpu;
namespace features = costmodels::features;

// The simulators of a run: `noisy` times the trials (owned by the plan), `exact` checks validity
// when drawing (VMEM does not depend on noise).
struct Simulators {
  const backends::TargetSpec* spec = nullptr;
  std::shared_ptr<tpu::TpuSimulator> noisy;
  std::unique_ptr<tpu::TpuSimulator> exact;
};

absl::Status MakeSimulators(const CollectOptions& cmd, const std::string& target,
                            Simulators& sims) {
  sims.spec = backends::TargetRegistry::Global().Find(target);
  if (sims.spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no target spec '", target, "'"));
  }
  tpu::TpuSimOptions options;
  options.noise_stddev = cmd.noise;
  options.seed = cmd.seed;
  absl::StatusOr<tpu::TpuSimulator> noisy = tpu::TpuSimulator::Create(*sims.spec, options);
  absl::StatusOr<tpu::TpuSimulator> exact = tpu::TpuSimulator::Create(*sims.spec);
  if (!noisy.ok() || !exact.ok()) return noisy.ok() ? exact.status() : noisy.status();
  sims.noisy = std::make_shared<tpu::TpuSimulator>(*std::move(noisy));
  sims.exact = std::make_unique<tpu::TpuSimulator>(*std::move(exact));
  return absl::OkStatus();
}

// A module's op graph, kept for building kernel graphs.
struct TpuModule {
  std::string file;
  std::unique_ptr<ir::Module> module;
  std::string fingerprint;
  costmodels::OpGraph graph;
};

std::unique_ptr<TpuModule> LoadTpuModule(const ir::HloFile& f, std::ostream& err) {
  std::unique_ptr<ir::Module> module = LoadNoting(f, err);
  if (module == nullptr) return nullptr;
  auto m = std::make_unique<TpuModule>();
  m->file = f.display;
  m->fingerprint = ir::Fingerprint(*module);
  m->graph = costmodels::BuildOpGraph(*module);
  m->module = std::move(module);
  return m;
}

// The trial timing `tile` of `kernel`; `analytical` is the baseline's prediction for it.
Trial SimulateTrial(const Simulators& sims, const costmodels::KernelSummary& kernel,
                    const tpu::TileConfig& tile, double analytical) {
  Trial t;
  t.configuration = opt::tiling::TpuTileConfigText(tile);
  t.measure = [sim = sims.noisy, kernel, tile, analytical]() -> absl::StatusOr<Measured> {
    const tpu::KernelTiming timing = sim->SimulateKernel(kernel, tile);
    if (!timing.valid) return absl::FailedPreconditionError(timing.error);
    return Measured{timing.seconds, analytical};
  };
  return t;
}

// Every non-opaque kernel of `fusion` not yet in `keys`, with the trials `trials(summary)` gives.
template <typename TrialsFn>
bool AddKernels(const TpuModule& m, const costmodels::FusionPlan& fusion, const std::string& target,
                TrialsFn trials, std::unordered_set<std::string>& keys, CollectPlan& plan,
                std::ostream& err) {
  const std::vector<costmodels::KernelSummary> summaries =
      costmodels::SummarizeKernels(m.graph, fusion);
  bool any = false;
  for (size_t k = 0; k < summaries.size() && k < fusion.kernels.size(); ++k) {
    if (summaries[k].opaque) continue;
    absl::StatusOr<std::string> key = features::KernelKey(m.graph, *m.module, fusion.kernels[k]);
    absl::StatusOr<features::KernelGraph> graph =
        features::BuildKernelGraph(m.graph, *m.module, fusion.kernels[k], {});
    if (!key.ok() || !graph.ok()) {
      err << "skip kernel " << summaries[k].name << " of " << m.file << ": "
          << (key.ok() ? graph.status() : key.status()).message() << "\n";
      continue;
    }
    any = true;
    if (!keys.insert(*key).second) continue;  // the same kernel, seen before
    KernelPlan kp;
    kp.graph.kernel_key = *key;
    kp.graph.graph = features::SerializeKernelGraph(*graph);
    kp.graph.target = target;
    kp.graph.module = m.module->name();
    kp.graph.module_fingerprint = m.fingerprint;
    kp.graph.kernel = summaries[k].name;
    kp.label = absl::StrCat("kernel ", summaries[k].name, " of ", m.file);
    kp.trials = trials(summaries[k], *key);
    if (!kp.trials.empty()) plan.kernels.push_back(std::move(kp));
  }
  return any;
}

}  // namespace

absl::Status PlanTpuTile(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                         CollectPlan& plan, std::ostream& err) {
  Simulators sims;
  if (absl::Status s = MakeSimulators(cmd, plan.target, sims); !s.ok()) return s;
  std::unordered_set<std::string> keys;
  auto trials = [&](const costmodels::KernelSummary& kernel, const std::string& key) {
    auto add = [&](const tpu::TileConfig& tile, std::vector<Trial>& out) {
      out.push_back(SimulateTrial(
          sims, kernel, tile,
          costmodels::AnalyticalTileSeconds(kernel, {tile.m, tile.n, tile.k}, *sims.spec)));
    };
    // The default tile, then random valid ones (each dimension a random choice, double
    // buffering a coin), without repeats.
    std::vector<Trial> out;
    const tpu::TileConfig first = sims.exact->DefaultTile(kernel);
    std::set<std::string> seen = {opt::tiling::TpuTileConfigText(first)};
    if (sims.exact->SimulateKernel(kernel, first).valid) {
      add(first, out);
    } else {
      ++plan.rejected;
    }
    std::vector<int64_t> choices[3];
    for (int d = 0; d < 3; ++d) choices[d] = sims.exact->TileChoices(kernel, d);
    std::mt19937_64 rng(MixSeed(cmd.seed, key));
    for (int64_t tries = 0;
         static_cast<int64_t>(out.size()) < cmd.per_kernel && tries < 20 * cmd.per_kernel;
         ++tries) {
      tpu::TileConfig t;
      int64_t* dims[3] = {&t.m, &t.n, &t.k};
      for (int d = 0; d < 3; ++d) {
        *dims[d] = choices[d][std::uniform_int_distribution<size_t>(0, choices[d].size() - 1)(rng)];
      }
      t.double_buffer = std::bernoulli_distribution(0.5)(rng);
      if (!seen.insert(opt::tiling::TpuTileConfigText(t)).second) continue;
      if (!sims.exact->SimulateKernel(kernel, t).valid) {
        ++plan.rejected;
        continue;
      }
      add(t, out);
    }
    return out;
  };
  for (const ir::HloFile& f : files) {
    std::unique_ptr<TpuModule> m = LoadTpuModule(f, err);
    if (m == nullptr) continue;
    if (AddKernels(*m, costmodels::PlanFusion(m->graph), plan.target, trials, keys, plan, err)) {
      ++plan.modules;
    } else {
      err << "skip " << f.display << ": no tileable kernels\n";
    }
  }
  plan.keep_alive.push_back(sims.noisy);
  return absl::OkStatus();
}

absl::Status PlanTpuFusion(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                           CollectPlan& plan, std::ostream& err) {
  Simulators sims;
  if (absl::Status s = MakeSimulators(cmd, plan.target, sims); !s.ok()) return s;
  std::unordered_set<std::string> keys;
  auto trials = [&](const costmodels::KernelSummary& kernel, const std::string&) {
    return std::vector<Trial>{SimulateTrial(
        sims, kernel, sims.exact->DefaultTile(kernel),
        costmodels::RooflineSeconds(kernel.roofline_cost, *sims.spec, kernel.element_type))};
  };
  for (const ir::HloFile& f : files) {
    std::unique_ptr<TpuModule> m = LoadTpuModule(f, err);
    if (m == nullptr) continue;
    const size_t producers = costmodels::FusibleProducers(m->graph).size();
    // The default plan (everything allowed), then random ones: per plan a random share of the
    // producers allowed to fuse, so plans range from nearly unfused to nearly the default.
    std::mt19937_64 rng(MixSeed(cmd.seed, m->fingerprint));
    std::set<std::vector<int32_t>> seen;  // plans by kernel_of
    bool any = false;
    const int64_t plans = cmd.per_module > 0 ? cmd.per_module : 8;
    for (int64_t p = 0, tries = 0; p < plans && tries < 20 * plans; ++tries) {
      std::vector<uint8_t> allow(producers, 1);
      if (p > 0) {
        const double share = std::uniform_real_distribution<double>(0, 1)(rng);
        for (uint8_t& a : allow) a = std::bernoulli_distribution(share)(rng) ? 1 : 0;
      }
      const costmodels::FusionPlan fusion = costmodels::PlanFusion(m->graph, allow);
      if (!seen.insert(fusion.kernel_of).second) continue;  // drawn before
      ++p;
      any = AddKernels(*m, fusion, plan.target, trials, keys, plan, err) || any;
      if (producers == 0) break;  // no fusion choices: the default plan is the only one
    }
    if (any) {
      ++plan.modules;
    } else {
      err << "skip " << f.display << ": no fusible kernels\n";
    }
  }
  plan.keep_alive.push_back(sims.noisy);
  return absl::OkStatus();
}

}  // namespace mltune::opt::cost_model_data
