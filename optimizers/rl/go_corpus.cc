// Loading GO's graphs: dnn-partitioning files and HLO modules, kept alive beside their
// environments.
#include <cctype>
#include <deque>
#include <random>

#include "absl/strings/str_cat.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/hlo_files.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {

struct GoCorpus::Storage {
  std::deque<partition::PartitionGraph> partition_graphs;
  std::deque<costmodels::OpGraph> op_graphs;
  std::deque<mcm::McmChipProblem> mcm_problems;
  std::vector<std::unique_ptr<GoEnvironment>> envs;
};

absl::StatusOr<GoTask> ParseGoTask(std::string_view name) {
  if (name == "partition") return GoTask::kPartition;
  if (name == "placement") return GoTask::kPlacement;
  if (name == "fusion") return GoTask::kFusion;
  if (name == "joint") return GoTask::kJoint;
  if (name == "mcm") return GoTask::kMcm;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown GO task '", std::string(name),
                   "' (expected partition, placement, fusion, joint or mcm)"));
}

std::string_view GoTaskName(GoTask task) {
  switch (task) {
    case GoTask::kPartition:
      return "partition";
    case GoTask::kPlacement:
      return "placement";
    case GoTask::kFusion:
      return "fusion";
    case GoTask::kJoint:
      return "joint";
    case GoTask::kMcm:
      return "mcm";
  }
  return "";
}

std::string GraphFamily(std::string_view name) {
  const size_t slash = name.find_last_of('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  std::string family;
  for (char c : name) {
    if (!std::isalpha(static_cast<unsigned char>(c))) break;
    family.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return family.empty() ? std::string(name) : family;
}

namespace {

std::string Stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const char* suffix : {".gz", ".json", ".hlo", ".txt"}) {
    if (name.size() > std::string(suffix).size() && name.ends_with(suffix)) {
      name.resize(name.size() - std::string(suffix).size());
    }
  }
  return name;
}

}  // namespace

GoCorpus::GoCorpus(GoTask task, const backends::cluster::ClusterSimulator& sim, uint64_t seed,
                   const backends::tpu::TpuSimulator* tpu, const backends::mcm::McmSimulator* mcm)
    : task_(task),
      sim_(sim),
      seed_(seed),
      tpu_(tpu),
      mcm_(mcm),
      storage_(std::make_unique<Storage>()) {}
GoCorpus::~GoCorpus() = default;

absl::Status GoCorpus::AddPartitionGraph(const std::string& path, partition::Objective objective) {
  if (task_ != GoTask::kPartition) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a dnn-partitioning graph is an input of the partition task only"));
  }
  absl::StatusOr<partition::PartitionGraph> g = partition::LoadPartitionGraph(path);
  if (!g.ok()) return g.status();
  storage_->partition_graphs.push_back(*std::move(g));
  storage_->envs.push_back(MakePartitionEnvironment(storage_->partition_graphs.back(), objective));
  entries_.push_back(
      {absl::StrCat(Stem(path), ":", std::string(partition::ObjectiveName(objective))),
       GraphFamily(Stem(path)), storage_->envs.back().get()});
  return absl::OkStatus();
}

absl::Status GoCorpus::AddHlo(const std::string& path, int32_t max_units) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::LoadVerifiedHlo(path);
  if (!module.ok()) return module.status();
  costmodels::OpGraph graph = costmodels::BuildOpGraph(**module);
  if (graph.size() > max_units || graph.size() < 2) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ", graph.size(), " ops, outside the corpus's 2..", max_units));
  }
  const std::string stem = Stem(path);
  if (task_ == GoTask::kFusion) {
    if (tpu_ == nullptr) return absl::InvalidArgumentError("the fusion task needs a TPU simulator");
    if (costmodels::FusibleProducers(graph).empty()) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": nothing to fuse"));
    }
    storage_->op_graphs.push_back(std::move(graph));
    storage_->envs.push_back(MakeFusionEnvironment(storage_->op_graphs.back(), *tpu_));
    entries_.push_back({stem, GraphFamily(stem), storage_->envs.back().get()});
    return absl::OkStatus();
  }
  if (task_ == GoTask::kMcm) {
    if (mcm_ == nullptr) return absl::InvalidArgumentError("the mcm task needs an MCM simulator");
    storage_->mcm_problems.emplace_back(std::move(graph), *mcm_);
    const mcm::McmChipProblem& problem = storage_->mcm_problems.back();
    if (absl::StatusOr<std::unique_ptr<constraints::Solver>> solver = problem.NewSolver();
        !solver.ok()) {
      storage_->mcm_problems.pop_back();
      return absl::FailedPreconditionError(absl::StrCat(path, ": ", solver.status().message()));
    }
    storage_->envs.push_back(MakeMcmEnvironment(problem, GoSolverMode::kFix, seed_));
    entries_.push_back({stem, GraphFamily(stem), storage_->envs.back().get()});
    return absl::OkStatus();
  }
  if (task_ == GoTask::kJoint) {
    storage_->op_graphs.push_back(std::move(graph));
    storage_->envs.push_back(MakeJointEnvironment(storage_->op_graphs.back(), sim_));
    entries_.push_back({stem, GraphFamily(stem), storage_->envs.back().get()});
    return absl::OkStatus();
  }
  if (task_ == GoTask::kPlacement) {
    storage_->op_graphs.push_back(std::move(graph));
    storage_->envs.push_back(MakeClusterEnvironment(storage_->op_graphs.back(), sim_, true));
    entries_.push_back({stem, GraphFamily(stem), storage_->envs.back().get()});
    return absl::OkStatus();
  }
  // As a partition graph: a cluster of 2..8 accelerators whose memory the model needs a share of.
  std::seed_seq seq{seed_, static_cast<uint64_t>(std::hash<std::string>{}(stem))};
  std::mt19937_64 rng(seq);
  std::vector<double> seconds;
  for (const costmodels::OpNode& op : graph.nodes) seconds.push_back(sim_.NodeSeconds(op));
  const backends::TargetSpec& spec = sim_.spec();
  const double link = spec.links.empty() ? 300e9 : spec.links[0].bandwidth;
  const int32_t k = std::uniform_int_distribution<int32_t>(2, 8)(rng);
  partition::PartitionGraph probe =
      partition::PartitionGraphFromOpGraph(graph, seconds, k, 1, link);
  double total = 0;
  for (const partition::PartitionNode& n : probe.nodes) total += n.bytes;
  const double slack = std::uniform_real_distribution<double>(1.3, 3.0)(rng);
  const double limit = std::max(total / k * slack, 1.0);
  for (partition::Objective objective :
       {partition::Objective::kThroughput, partition::Objective::kLatency}) {
    storage_->partition_graphs.push_back(
        partition::PartitionGraphFromOpGraph(graph, seconds, k, limit, link));
    storage_->partition_graphs.back().name = stem;
    storage_->envs.push_back(
        MakePartitionEnvironment(storage_->partition_graphs.back(), objective));
    entries_.push_back({absl::StrCat(stem, ":", std::string(partition::ObjectiveName(objective))),
                        GraphFamily(stem), storage_->envs.back().get()});
  }
  return absl::OkStatus();
}

}  // namespace mltune::opt::rl
