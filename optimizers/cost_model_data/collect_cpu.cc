// `mltune collect --target cpu`: kernels of the CPU backend (its pipeline, then lowering),
// measured with cpu::MeasureKernel. tile: the default and random valid parameter values per
// kernel of the default fusion. fusion: the kernels that random fusion decisions make (priority
// fusion with random priorities, as the cpu fusion task searches them), each measured once with
// its default parameters.
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cut_unsupported.h"
#include "costmodels/analytical/kernels.h"
#include "ir/fingerprint.h"
#include "optimizers/cost_model_data/collect_plan.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/tiling/cpu_kernel_graph.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::opt::cost_model_data {
namespace {

namespace cpu = backends::cpu;
namespace tiling = opt::tiling;

// A module after the CPU pipeline; owned by the plan, which the lowered kernels point into.
struct CpuModule {
  std::string file;
  std::unique_ptr<ir::Module> module;
  std::string fingerprint;
};

std::shared_ptr<CpuModule> LoadCpuModule(const ir::HloFile& f, bool cut_unsupported,
                                         std::ostream& err) {
  std::unique_ptr<ir::Module> original = LoadNoting(f, err);
  if (original == nullptr) return nullptr;
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized =
      cut_unsupported ? cpu::RunCpuPasses(*original) : cpu::RunCpuPipeline(*original);
  if (!optimized.ok()) {
    err << "skip " << f.display << ": " << optimized.status().message() << "\n";
    return nullptr;
  }
  if (cut_unsupported) {
    absl::StatusOr<cpu::CutModule> cut = cpu::CutUnsupported(**optimized);
    if (!cut.ok()) {
      err << "skip " << f.display << ": " << cut.status().message() << "\n";
      return nullptr;
    }
    if (!cut->cut.empty()) {
      err << "cut " << f.display << ": " << cut->cut.size()
          << " op(s) the cpu backend cannot run became parameters (" << cut->cut.front()
          << (cut->cut.size() > 1 ? ", ..." : "") << ")\n";
    }
    *optimized = std::move(cut->module);
  }
  auto m = std::make_shared<CpuModule>();
  m->file = f.display;
  m->module = *std::move(optimized);
  m->fingerprint = ir::Fingerprint(*m->module);
  return m;
}

// The kernel's default configuration, then random ones (each parameter a random choice), without
// repeats of one program (cpu::CanonicalConfig); fewer when the kernel has fewer distinct ones.
std::vector<cpu::KernelConfig> DrawConfigs(const cpu::Kernel& kernel, int64_t count, uint64_t seed,
                                           const std::string& key) {
  std::vector<cpu::KernelConfig> configs = {cpu::DefaultConfig(kernel)};
  std::set<cpu::KernelConfig> seen(configs.begin(), configs.end());
  std::mt19937_64 rng(MixSeed(seed, key));
  for (int64_t tries = 0; static_cast<int64_t>(configs.size()) < count && tries < 20 * count;
       ++tries) {
    cpu::KernelConfig c;
    for (const cpu::KernelParam& p : kernel.params) {
      c.push_back(p.choices[std::uniform_int_distribution<size_t>(0, p.choices.size() - 1)(rng)]);
    }
    c = cpu::CanonicalConfig(kernel, std::move(c));
    if (seen.insert(c).second) configs.push_back(std::move(c));
  }
  return configs;
}

// The trial measuring `config` of kernel `id` of `lowered` (which the plan keeps alive).
Trial MeasureTrial(const cpu::LoweredModule* lowered, const cpu::Kernel& kernel,
                   cpu::KernelConfig config, uint64_t seed) {
  Trial t;
  t.configuration = tiling::CpuConfigText(kernel, config);
  const int32_t id = kernel.id;
  t.measure = [lowered, id, config = std::move(config), seed]() -> absl::StatusOr<Measured> {
    absl::StatusOr<cpu::Timing> timing = cpu::MeasureKernel(
        *lowered, id, config, {}, opt::tiling::KernelTuningMeasureOptions(), seed);
    if (!timing.ok()) return timing.status();
    return Measured{timing->median_s, std::nullopt};
  };
  return t;
}

// Adds every kernel of `lowered` not yet in `keys` to the plan, with `configs(kernel, key)`.
template <typename ConfigsFn>
void AddKernels(const CpuModule& m, const cpu::LoweredModule* lowered, ConfigsFn configs,
                uint64_t seed, std::unordered_set<std::string>& keys, CollectPlan& plan,
                std::ostream& err) {
  for (const cpu::Kernel& kernel : lowered->kernels) {
    absl::StatusOr<tiling::CpuKernelFeatures> features =
        tiling::CpuKernelFeaturesOf(*lowered, kernel.id);
    if (!features.ok()) {
      err << "skip kernel " << kernel.name << " of " << m.file << ": "
          << features.status().message() << "\n";
      continue;
    }
    if (!keys.insert(features->key).second) continue;  // the same kernel, seen before
    KernelPlan k;
    k.graph.kernel_key = features->key;
    k.graph.graph = costmodels::features::SerializeKernelGraph(features->graph);
    k.graph.target = plan.target;
    k.graph.module = m.module->name();
    k.graph.module_fingerprint = m.fingerprint;
    k.graph.kernel = kernel.name;
    k.label = absl::StrCat("kernel ", kernel.name, " of ", m.file);
    for (cpu::KernelConfig& c : configs(kernel, features->key)) {
      k.trials.push_back(MeasureTrial(lowered, kernel, std::move(c), seed));
    }
    plan.kernels.push_back(std::move(k));
  }
}

}  // namespace

namespace {

// The module under the compiler's default fusion, then under up to `plans - 1` distinct random
// fusion plans, each lowered and handed to `use`. Per random plan a share of the producers is kept
// apart (priority 0) and the others get a random non-zero priority, so plans range from nearly
// unfused to the default's order changed. Returns whether any plan lowered.
bool ForEachFusionPlan(const CpuModule& m, const ir::HloFile& f, int64_t plans, uint64_t seed,
                       std::ostream& err,
                       const std::function<void(std::shared_ptr<cpu::LoweredModule>)>& use) {
  using opt::fusion::CpuFusionProblem;
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(*m.module);
  const size_t producers = costmodels::FusibleProducers(graph).size();
  std::mt19937_64 rng(MixSeed(seed, m.fingerprint));
  std::set<std::vector<int32_t>> seen;  // plans by kernel_of
  bool lowered_any = false;
  for (int64_t p = 0, tries = 0; p < plans && tries < 20 * plans; ++tries) {
    std::vector<int32_t> priority(producers, 1);
    if (p > 0) {
      const double apart = std::uniform_real_distribution<double>(0, 1)(rng);
      for (int32_t& v : priority) {
        v = std::bernoulli_distribution(apart)(rng)
                ? 0
                : CpuFusionProblem::kPriorities[std::uniform_int_distribution<size_t>(
                      0, std::size(CpuFusionProblem::kPriorities) - 1)(rng)];
      }
    }
    costmodels::FusionPlan fusion = costmodels::PlanFusionByPriority(graph, priority);
    if (!seen.insert(fusion.kernel_of).second) continue;  // drawn before
    ++p;
    absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*m.module, &fusion);
    if (!lowered.ok()) {
      // The default plan failing means the backend cannot compile the module at all.
      if (p == 1) {
        err << "skip " << f.display << ": " << lowered.status().message() << "\n";
        return false;
      }
      err << "skip a fusion plan of " << f.display << ": " << lowered.status().message() << "\n";
      continue;
    }
    use(std::make_shared<cpu::LoweredModule>(*std::move(lowered)));
    lowered_any = true;
    if (producers == 0) break;  // no fusion choices: the default plan is the only one
  }
  return lowered_any;
}

// Every module's kernels under `plans` fusion plans (ForEachFusionPlan), each distinct kernel
// once across plans and modules, with the configurations `configs(kernel, key)` to measure.
template <typename ConfigsFn>
void PlanCpuKernels(const CollectOptions& cmd, const std::vector<ir::HloFile>& files, int64_t plans,
                    ConfigsFn configs, CollectPlan& plan, std::ostream& err) {
  std::unordered_set<std::string> keys;
  for (const ir::HloFile& f : files) {
    std::shared_ptr<CpuModule> m = LoadCpuModule(f, cmd.cut_unsupported, err);
    if (m == nullptr) continue;
    const bool any =
        ForEachFusionPlan(*m, f, plans, cmd.seed, err, [&](std::shared_ptr<cpu::LoweredModule> l) {
          AddKernels(*m, l.get(), configs, cmd.seed, keys, plan, err);
          plan.keep_alive.push_back(std::move(l));
        });
    if (any) {
      plan.keep_alive.push_back(m);
      ++plan.modules;
    }
  }
}

}  // namespace

absl::Status PlanCpuTile(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                         CollectPlan& plan, std::ostream& err) {
  // Tile data comes from the default fusion's kernels (those the daemon tunes) unless
  // --per-module asks for more plans: their kernels widen what the model sees.
  PlanCpuKernels(
      cmd, files, cmd.per_module > 0 ? cmd.per_module : 1,
      [&](const cpu::Kernel& kernel, const std::string& key) {
        return DrawConfigs(kernel, cmd.per_kernel, cmd.seed, key);
      },
      plan, err);
  return absl::OkStatus();
}

absl::Status PlanCpuFusion(const CollectOptions& cmd, const std::vector<ir::HloFile>& files,
                           CollectPlan& plan, std::ostream& err) {
  PlanCpuKernels(
      cmd, files, cmd.per_module > 0 ? cmd.per_module : 8,
      [](const cpu::Kernel& kernel, const std::string&) {
        return std::vector<cpu::KernelConfig>{cpu::DefaultConfig(kernel)};
      },
      plan, err);
  return absl::OkStatus();
}

}  // namespace mltune::opt::cost_model_data
