// `mltune train-agent --algo go`: trains the GO graph policy (optimizers/rl/rl.h) across
// dnn-partitioning graphs and HLO modules, holding graph families out for evaluation, and stores
// the checkpoint as the next version of `partition/go`, the model mltuned serves as strategy go.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "client/cli_commands.h"
#include "nlohmann/json.hpp"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/rl/rl.h"
#include "storage/store.h"

namespace mltune::client {
namespace {

namespace fs = std::filesystem;
namespace rl = opt::rl;

bool IsHlo(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (name.starts_with("LICENSE") || name.starts_with("README")) return false;
  return path.ends_with(".hlo") || path.ends_with(".hlo.gz") || path.ends_with(".txt") ||
         path.ends_with(".txt.gz");
}

// Every graph file under the inputs, sorted; human-expert split files are not graphs.
std::vector<std::string> GraphFiles(const std::vector<std::string>& inputs, std::ostream& err,
                                    bool* ok) {
  std::vector<std::string> files;
  *ok = true;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(input, ec)) {
        const std::string p = e.path().string();
        if (!e.is_regular_file()) continue;
        if ((p.ends_with(".json") && p.find("human-experts") == std::string::npos) || IsHlo(p)) {
          files.push_back(p);
        }
      }
    } else if (fs::is_regular_file(input, ec)) {
      files.push_back(input);
    } else {
      err << "error: " << input << ": no such file or folder\n";
      *ok = false;
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int RunTrainGoAgent(const TrainAgentCommand& cmd, std::ostream& out, std::ostream& err) {
  // One policy may learn several tasks at once: --task partition,placement.
  std::vector<rl::GoTask> tasks;
  for (absl::string_view name : absl::StrSplit(cmd.task, ',')) {
    absl::StatusOr<rl::GoTask> task = rl::ParseGoTask(std::string(name));
    if (!task.ok()) {
      err << "error: " << task.status().message() << " for --algo go\n";
      return 1;
    }
    tasks.push_back(*task);
  }
  if (cmd.episodes < 0 || cmd.imitation < 0 || cmd.episodes + cmd.imitation < 1 ||
      cmd.graphs.empty()) {
    err << "error: need --episodes (PPO iterations) and --imitation >= 0, one of them >= 1, and "
           "--graphs DIR_OR_FILE...\n";
    return 1;
  }
  // HLO ops are timed on a cluster target (--target, default gpu-4x-nvlink); the fusion task
  // simulates on tpu-v4-core, the mcm task on mcm-36.
  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(cmd.target);
  absl::StatusOr<backends::cluster::ClusterSimulator> sim =
      spec == nullptr
          ? absl::InvalidArgumentError(absl::StrCat("no target spec '", cmd.target, "'"))
          : backends::cluster::ClusterSimulator::Create(*spec);
  if (!sim.ok()) {
    err << "error: --target " << cmd.target << ": " << sim.status().message() << "\n";
    return 1;
  }
  bool ok = true;
  const std::vector<std::string> files = GraphFiles(cmd.graphs, err, &ok);
  if (!ok) return 1;
  std::optional<backends::tpu::TpuSimulator> tpu;
  if (std::find(tasks.begin(), tasks.end(), rl::GoTask::kFusion) != tasks.end()) {
    absl::StatusOr<backends::tpu::TpuSimulator> made = backends::tpu::TpuSimulator::Create(
        *backends::TargetRegistry::Global().Find("tpu-v4-core"));
    if (!made.ok()) {
      err << "error: tpu-v4-core: " << made.status().message() << "\n";
      return 1;
    }
    tpu = *std::move(made);
  }
  std::optional<backends::mcm::McmSimulator> mcm;
  if (std::find(tasks.begin(), tasks.end(), rl::GoTask::kMcm) != tasks.end()) {
    absl::StatusOr<backends::mcm::McmSimulator> made =
        backends::mcm::McmSimulator::Create(*backends::TargetRegistry::Global().Find("mcm-36"));
    if (!made.ok()) {
      err << "error: mcm-36: " << made.status().message() << "\n";
      return 1;
    }
    mcm = *std::move(made);
  }
  std::vector<std::unique_ptr<rl::GoCorpus>> corpora;
  std::vector<rl::GoEnvironment*> train, held;
  nlohmann::ordered_json train_names = nlohmann::ordered_json::array();
  nlohmann::ordered_json held_names = nlohmann::ordered_json::array();
  size_t usable = 0;
  for (rl::GoTask task : tasks) {
    corpora.push_back(std::make_unique<rl::GoCorpus>(task, *sim, cmd.seed, tpu ? &*tpu : nullptr,
                                                     mcm ? &*mcm : nullptr));
    rl::GoCorpus& corpus = *corpora.back();
    for (const std::string& file : files) {
      absl::Status added;
      if (file.ends_with(".json")) {
        if (task != rl::GoTask::kPartition) continue;
        added = corpus.AddPartitionGraph(file, file.find("/latency/") != std::string::npos
                                                   ? opt::partition::Objective::kLatency
                                                   : opt::partition::Objective::kThroughput);
      } else {
        added = corpus.AddHlo(file, static_cast<int32_t>(cmd.max_units));
      }
      if (!added.ok()) err << "note: skipping " << added.message() << "\n";
    }
    usable += corpus.entries().size();
    const std::string prefix = std::string(rl::GoTaskName(task)) + "/";
    for (const rl::GoCorpus::Entry& e : corpus.entries()) {
      const bool out_of_training =
          std::find(cmd.holdout_families.begin(), cmd.holdout_families.end(), e.family) !=
          cmd.holdout_families.end();
      (out_of_training ? held : train).push_back(e.env);
      (out_of_training ? held_names : train_names).push_back(prefix + e.name);
    }
  }
  if (train.empty()) {
    err << "error: no graph left to train on (" << files.size() << " files, " << usable
        << " usable, every one in a held-out family)\n";
    return 1;
  }
  std::unique_ptr<storage::Store> store;
  if (!OpenTrainAgentStore(cmd, &store, err)) return 1;
  out << absl::StrFormat(
      "train-agent %s: GO policy, %d imitation + %d PPO iterations, seed %d; %d graphs to "
      "train on, %d held out (families: %s)\n",
      cmd.task, cmd.imitation, cmd.episodes, cmd.seed, train.size(), held.size(),
      cmd.holdout_families.empty() ? "none" : absl::StrJoin(cmd.holdout_families, ","));
  rl::GoConfig config;
  config.seed = cmd.seed;
  std::unique_ptr<rl::GoPolicy> policy = *rl::GoPolicy::Create(config);
  rl::GoTrainOptions options;
  options.iterations = cmd.episodes;
  options.imitation_iterations = static_cast<int>(cmd.imitation);
  options.eval_every = held.empty() ? 0 : std::max(1, cmd.eval_every);
  options.eval_envs = held;
  options.on_progress = [&](const rl::GoTrainProgress& p) {
    if (p.eval_ratio || p.iteration % 10 == 0 || p.iteration == cmd.episodes) {
      out << absl::StrFormat("iteration %4d  samples %7d  %6.0f s  mean reward %7.3f", p.iteration,
                             p.samples, p.seconds, p.mean_reward);
      if (p.eval_ratio) out << absl::StrFormat("  held-out greedy / m-ETF %.3f", *p.eval_ratio);
      out << "\n" << std::flush;
    }
  };
  absl::StatusOr<std::vector<rl::GoTrainProgress>> history = policy->Train(train, options);
  if (!history.ok()) {
    err << "error: " << history.status().message() << "\n";
    return 1;
  }
  const std::string checkpoint = policy->Save();
  if (!cmd.out.empty()) {
    std::ofstream file(cmd.out, std::ios::binary);
    if (!(file << checkpoint)) {
      err << "error: cannot write " << cmd.out << "\n";
      return 1;
    }
    out << "wrote " << cmd.out << "\n";
  }
  if (store != nullptr) {
    nlohmann::ordered_json meta;
    meta["task"] = cmd.task;
    meta["algo"] = "go";
    meta["iterations"] = cmd.episodes;
    meta["imitation_iterations"] = cmd.imitation;
    meta["seed"] = cmd.seed;
    meta["target"] = cmd.target;
    meta["holdout_families"] = cmd.holdout_families;
    meta["train_graphs"] = train_names;
    meta["held_out_graphs"] = held_names;
    if (!history->empty()) {
      meta["training"] = {{"samples", history->back().samples},
                          {"seconds", history->back().seconds}};
    }
    absl::StatusOr<int64_t> version =
        store->PutModelNextVersion("partition/go", checkpoint, meta.dump());
    if (!version.ok()) {
      err << "error: storing the checkpoint: " << version.status().message() << "\n";
      return 1;
    }
    out << "stored partition/go version " << *version << " in " << cmd.store << "\n";
  }
  return 0;
}

}  // namespace mltune::client
