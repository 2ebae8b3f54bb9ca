// `mltune collect FILES_OR_DIRS... --target cpu --task tile --db PATH`: measures random valid
// configurations of every kernel into the store, the learned cost model's training data
// (docs/cost_models.md). Configurations are drawn per kernel from a generator seeded by the seed
// and the kernel key, so a rerun draws the same ones and, skipping what the log holds, resumes
// where an interrupted or time-bounded run stopped.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cpu/cpu_backend.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "ir/fingerprint.h"
#include "optimizers/tiling/cpu_kernel_graph.h"
#include "storage/store.h"

namespace mltune::client {
namespace {

namespace cpu = backends::cpu;
namespace tiling = opt::tiling;
using Clock = std::chrono::steady_clock;

constexpr char kTask[] = "tile-kernel";  // as the daemon's cpu tile task logs kernels
constexpr char kWorker[] = "mltune-collect";

struct LoadedModule {
  std::string file;
  std::unique_ptr<ir::Module> module;
  std::string fingerprint;
  cpu::LoweredModule lowered;
};

// The kernel's default configuration, then random ones (each parameter a random choice), without
// repeats; fewer when the kernel has fewer distinct configurations.
std::vector<cpu::KernelConfig> DrawConfigs(const cpu::Kernel& kernel, int64_t count, uint64_t seed,
                                           const std::string& key) {
  std::vector<cpu::KernelConfig> configs = {cpu::DefaultConfig(kernel)};
  std::set<cpu::KernelConfig> seen(configs.begin(), configs.end());
  // The key's first 64 bits (hex), not std::hash: the draws stay the same across builds.
  std::mt19937_64 rng(seed ^ std::strtoull(key.substr(0, 16).c_str(), nullptr, 16));
  for (int64_t tries = 0; static_cast<int64_t>(configs.size()) < count && tries < 20 * count;
       ++tries) {
    cpu::KernelConfig c;
    for (const cpu::KernelParam& p : kernel.params) {
      c.push_back(p.choices[std::uniform_int_distribution<size_t>(0, p.choices.size() - 1)(rng)]);
    }
    if (seen.insert(c).second) configs.push_back(std::move(c));
  }
  return configs;
}

// Kernel measurements as the daemon's tile task takes them: short, on hot caches.
cpu::MeasureOptions KernelMeasureOptions() {
  cpu::MeasureOptions m;
  m.max_seconds = 0.05;
  m.min_reps = 5;
  return m;
}

}  // namespace

int RunCollect(const CollectCommand& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.target == "tpu-sim") {
    err << "error: --target tpu-sim: not implemented yet (collect measures the cpu backend; the "
           "simulator's tile problem is still to be wired)\n";
    return 1;
  }
  if (cmd.target != "cpu") {
    err << "error: --target " << cmd.target << ": collect supports cpu\n";
    return 1;
  }
  if (cmd.task != "tile") {
    err << "error: --task " << cmd.task
        << ": collect supports tile (kernel configurations); fusion is still to come\n";
    return 1;
  }
  if (cmd.db.empty()) {
    err << "error: --db PATH is required\n";
    return 1;
  }
  if (cmd.per_kernel < 1) {
    err << "error: --per-kernel must be at least 1\n";
    return 1;
  }
  std::optional<std::vector<InputFile>> files = CollectHloFiles(cmd.inputs, err);
  if (!files) return 1;
  if (files->empty()) {
    err << "error: no HLO files in " << cmd.inputs.size() << " input(s)\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(cmd.db);
  if (!store.ok()) {
    err << "error: " << store.status().message() << "\n";
    return 1;
  }

  // What the log already holds: (kernel key, configuration) pairs are measured once.
  storage::MeasurementFilter filter;
  filter.task = kTask;
  filter.target = cmd.target;
  absl::StatusOr<std::vector<storage::MeasurementRecord>> logged =
      (*store)->QueryMeasurements(filter);
  if (!logged.ok()) {
    err << "error: " << logged.status().message() << "\n";
    return 1;
  }
  std::unordered_set<std::string> done;
  for (const storage::MeasurementRecord& m : *logged) {
    done.insert(absl::StrCat(m.graph_key, "\n", m.configuration));
  }

  // Every module first, so the progress line knows the total.
  std::vector<LoadedModule> modules;
  int64_t total_kernels = 0;
  for (const InputFile& f : *files) {
    std::unique_ptr<ir::Module> original = LoadVerified(f.path, err);
    if (original == nullptr) continue;
    absl::StatusOr<std::unique_ptr<ir::Module>> optimized = cpu::RunCpuPipeline(*original);
    if (!optimized.ok()) {
      err << "skip " << f.display << ": " << optimized.status().message() << "\n";
      continue;
    }
    LoadedModule m;
    m.file = f.display;
    m.module = *std::move(optimized);
    m.fingerprint = ir::Fingerprint(*m.module);
    absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*m.module);
    if (!lowered.ok()) {
      err << "skip " << f.display << ": " << lowered.status().message() << "\n";
      continue;
    }
    m.lowered = *std::move(lowered);
    total_kernels += static_cast<int64_t>(m.lowered.kernels.size());
    modules.push_back(std::move(m));
  }
  if (modules.empty()) {
    err << "error: none of the " << files->size() << " file(s) can be compiled for " << cmd.target
        << "\n";
    return 1;
  }

  const Clock::time_point start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const cpu::MeasureOptions measure = KernelMeasureOptions();
  int64_t kernels_done = 0, measured = 0, skipped = 0, failed = 0, graphs = 0;
  bool out_of_time = false;
  auto progress = [&](bool final) {
    const std::string line =
        absl::StrFormat("collect: kernels %d/%d, %d measured, %d already logged, %d failed, %.1f s",
                        kernels_done, total_kernels, measured, skipped, failed, elapsed());
    if (cmd.live_progress) {
      err << "\r" << line << (final ? "\n" : "") << std::flush;
    } else {
      err << line << "\n";
    }
  };

  for (LoadedModule& m : modules) {
    for (const cpu::Kernel& kernel : m.lowered.kernels) {
      if (out_of_time) break;
      absl::StatusOr<tiling::CpuKernelFeatures> features =
          tiling::CpuKernelFeaturesOf(m.lowered, kernel.id);
      if (!features.ok()) {
        err << "skip kernel " << kernel.name << " of " << m.file << ": "
            << features.status().message() << "\n";
        ++kernels_done;
        continue;
      }
      storage::KernelGraphRecord record;
      record.kernel_key = features->key;
      record.graph = costmodels::features::SerializeKernelGraph(features->graph);
      record.target = cmd.target;
      record.module = m.module->name();
      record.module_fingerprint = m.fingerprint;
      record.kernel = kernel.name;
      absl::StatusOr<bool> put = (*store)->PutKernelGraph(record);
      if (!put.ok()) {
        err << "error: " << put.status().message() << "\n";
        return 1;
      }
      graphs += *put ? 1 : 0;
      for (const cpu::KernelConfig& config :
           DrawConfigs(kernel, cmd.per_kernel, cmd.seed, features->key)) {
        storage::MeasurementRecord row;
        row.graph_key = features->key;
        row.task = kTask;
        row.target = cmd.target;
        row.configuration = tiling::CpuConfigText(kernel, config);
        if (!done.insert(absl::StrCat(row.graph_key, "\n", row.configuration)).second) {
          ++skipped;
          continue;
        }
        if (cmd.seconds > 0 && elapsed() >= cmd.seconds) {
          out_of_time = true;
          break;
        }
        absl::StatusOr<cpu::Timing> t =
            cpu::MeasureKernel(m.lowered, kernel.id, config, {}, measure, cmd.seed);
        if (!t.ok()) {
          err << "kernel " << kernel.name << " of " << m.file << " [" << row.configuration
              << "]: " << t.status().message() << "\n";
          ++failed;
          continue;
        }
        row.value = t->median_s;
        row.worker = kWorker;
        if (absl::Status s = (*store)->AppendMeasurements({&row, 1}); !s.ok()) {
          err << "error: " << s.message() << "\n";
          return 1;
        }
        ++measured;
      }
      if (out_of_time) break;
      ++kernels_done;
      progress(false);
    }
  }
  // Lines mode printed the last kernel's line already; a live line needs its end, and a stop
  // on the time limit its final counts.
  if (cmd.live_progress || out_of_time) progress(true);
  out << "collected " << measured << " measurement(s) of " << kernels_done << "/" << total_kernels
      << " kernel(s) from " << modules.size() << " module(s) into " << cmd.db << "; " << graphs
      << " new kernel graph(s), " << skipped << " already logged, " << failed << " failed"
      << (out_of_time
              ? absl::StrFormat("; stopped at the %.0f s limit (run again to resume)", cmd.seconds)
              : "")
      << "\n";
  return 0;
}

}  // namespace mltune::client
