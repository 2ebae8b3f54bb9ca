// `mltune partition` end to end: a hand-written dnn-partitioning graph whose objectives are
// computed by hand, the JSON output, split files round-tripping through --evaluate, the
// strategies against the one-accelerator baseline, the error paths, and an HLO module placed on
// cluster-sim.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/support/corpus.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;
using Result = testing::CommandResult;

Result RunCli(const std::string& args) {
  return testing::RunCommand(absl::StrCat(MLTUNE_CLI_PATH, " ", args));
}

// Two accelerators of 10 bytes and a CPU. "a" (id 2) and "join" (id 4) share colocation class 7;
// "host" (id 5) runs only on the CPU. Edges in -> a, in -> b (cost 0.5), a -> join, b -> join
// (cost 1), join -> host (cost 2).
constexpr char kGraph[] = R"({"maxSizePerFPGA": 10, "maxFPGAs": 2, "maxCPUs": 1,
 "nodes": [
  {"id": 1, "name": "in", "supportedOnFpga": true, "cpuLatency": 10, "fpgaLatency": 2, "size": 1},
  {"id": 2, "name": "a", "supportedOnFpga": true, "cpuLatency": 20, "fpgaLatency": 4, "size": 3,
   "colorClass": 7},
  {"id": 3, "name": "b", "supportedOnFpga": true, "cpuLatency": 20, "fpgaLatency": 4, "size": 3},
  {"id": 4, "name": "join", "supportedOnFpga": true, "cpuLatency": 5, "fpgaLatency": 1, "size": 1,
   "colorClass": 7},
  {"id": 5, "name": "host", "supportedOnFpga": false, "cpuLatency": 3, "fpgaLatency": 0}
 ],
 "edges": [
  {"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.5},
  {"sourceId": 2, "destId": 4, "cost": 1}, {"sourceId": 3, "destId": 4, "cost": 1},
  {"sourceId": 4, "destId": 5, "cost": 2}
 ]})";

// in, a, join on accelerator 1, b on accelerator 2, host on the CPU.
// Max-load: accelerator 1 runs 2 + 4 + 1 = 7, sends in's output (0.5) and join's (2), receives
// b's (1): 10.5; accelerator 2 runs 4, receives in's (0.5), sends b's (1): 5.5; the CPU 3.
// Latency: accelerator 1 holds two pieces, {in, a} and {join} (the path in -> b -> join leaves
// and re-enters it). {in, a} ends at 6 + 0.5 + 1 (sending in's and a's outputs) = 7.5; {b} at
// 7.5 + 0.5 + 4 + 1 = 13; {join} at 13 + 2 (receiving a's and b's) + 1 + 2 = 18; host at 21.
constexpr char kSplit[] =
    R"({"fpgas": [{"nodes": [1, 2, 4]}, {"nodes": [3]}], "cpus": [{"nodes": [5]}]})";
constexpr double kSplitThroughput = 10.5, kSplitLatency = 21;
// Everything but host on accelerator 1. Max-load: 2 + 4 + 4 + 1 + 2 (sending join's output) = 13.
// Latency: one piece ending at 11 + 2 = 13, then host at 16.
constexpr double kOneAcceleratorThroughput = 13, kOneAcceleratorLatency = 16;

class PartitionCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("mltune_partition_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    graph_ = Write("tiny.json", kGraph);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  // Runs `partition GRAPH args --json` and parses the object it prints.
  nlohmann::json Json(const std::string& args) {
    Result r = RunCli(absl::StrCat("partition ", graph_, " ", args, " --json"));
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j;
  }

  fs::path dir_;
  std::string graph_;
};

TEST_F(PartitionCliTest, EvaluatePrintsTheHandComputedObjective) {
  const std::string split = Write("split.json", kSplit);
  Result text =
      RunCli(absl::StrCat("partition ", graph_, " --objective throughput --evaluate ", split));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("graph tiny: 5 nodes, 4 colocation classes, 2 accelerators"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("throughput (max-load): 10.5 (feasible)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("one-accelerator 13"), std::string::npos) << text.out;

  nlohmann::json throughput = Json("--objective throughput --evaluate " + split);
  EXPECT_DOUBLE_EQ(throughput["objective"].get<double>(), kSplitThroughput);
  EXPECT_EQ(throughput["strategy"], "evaluate");
  EXPECT_EQ(throughput["samples"], 1);
  EXPECT_DOUBLE_EQ(throughput["reference"]["one-accelerator"].get<double>(),
                   kOneAcceleratorThroughput);

  nlohmann::json latency = Json("--objective latency --evaluate " + split);
  EXPECT_DOUBLE_EQ(latency["objective"].get<double>(), kSplitLatency);
  EXPECT_EQ(latency["objective_name"], "latency");
  EXPECT_DOUBLE_EQ(latency["reference"]["one-accelerator"].get<double>(), kOneAcceleratorLatency);
}

TEST_F(PartitionCliTest, JsonHasTheSummaryKeys) {
  nlohmann::json j = Json("--objective throughput --strategy m-etf");
  for (const char* key :
       {"objective", "strategy", "samples", "seconds", "feasible", "objective_name", "graph"}) {
    EXPECT_TRUE(j.contains(key)) << key << " missing from " << j.dump();
  }
  EXPECT_EQ(j["strategy"], "m-etf");
  EXPECT_EQ(j["objective_name"], "throughput");
  EXPECT_EQ(j["graph"], "tiny");
  EXPECT_EQ(j["feasible"], true);
  EXPECT_GE(j["seconds"].get<double>(), 0.0);
}

TEST_F(PartitionCliTest, OutRoundTripsThroughEvaluate) {
  for (const char* objective : {"throughput", "latency"}) {
    SCOPED_TRACE(objective);
    const std::string out = (dir_ / absl::StrCat(objective, "_split.json")).string();
    nlohmann::json found =
        Json(absl::StrCat("--objective ", objective, " --strategy local-search --out ", out));
    ASSERT_TRUE(fs::exists(out));
    nlohmann::json again = Json(absl::StrCat("--objective ", objective, " --evaluate ", out));
    EXPECT_DOUBLE_EQ(again["objective"].get<double>(), found["objective"].get<double>());
    EXPECT_EQ(again["feasible"], true);
  }
}

TEST_F(PartitionCliTest, StrategiesDoNoWorseThanOneAccelerator) {
  // One accelerator fits here (8 of 10 bytes), so every search starts from it or beats it.
  for (const char* strategy : {"m-etf", "local-search", "annealing"}) {
    SCOPED_TRACE(strategy);
    nlohmann::json j = Json(absl::StrCat("--objective throughput --strategy ", strategy));
    ASSERT_TRUE(j["objective"].is_number()) << j.dump();
    EXPECT_TRUE(std::isfinite(j["objective"].get<double>()));
    EXPECT_LE(j["objective"].get<double>(), kOneAcceleratorThroughput + 1e-9);
    EXPECT_GE(j["samples"].get<int64_t>(), 1);
  }
  // Under latency m-ETF, a list scheduler that spreads work, splits this graph into more pieces
  // than one accelerator and loses (21 against 16); the searches do not.
  for (const char* strategy : {"local-search", "annealing"}) {
    SCOPED_TRACE(strategy);
    nlohmann::json j = Json(absl::StrCat("--objective latency --strategy ", strategy));
    ASSERT_TRUE(j["objective"].is_number()) << j.dump();
    EXPECT_LE(j["objective"].get<double>(), kOneAcceleratorLatency + 1e-9);
  }
  nlohmann::json metf = Json("--objective latency --strategy m-etf");
  ASSERT_TRUE(metf["objective"].is_number()) << metf.dump();
  EXPECT_TRUE(std::isfinite(metf["objective"].get<double>()));
  // The budget bounds a search's evaluations.
  nlohmann::json small = Json("--objective throughput --strategy annealing --budget 5");
  EXPECT_LE(small["samples"].get<int64_t>(), 5);
}

TEST_F(PartitionCliTest, BadInputExitsOneWithAMessage) {
  Result missing =
      RunCli("partition " + (dir_ / "absent.json").string() + " --objective throughput");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("absent.json"), std::string::npos) << missing.err;

  const std::string unknown_node =
      Write("unknown_node.json", R"({"fpgas": [{"nodes": [1, 2, 4, 99]}, {"nodes": [3]}],
                                     "cpus": [{"nodes": [5]}]})");
  Result bad_split = RunCli(
      absl::StrCat("partition ", graph_, " --objective throughput --evaluate ", unknown_node));
  EXPECT_EQ(bad_split.exit_code, 1);
  EXPECT_NE(bad_split.err.find("id 99"), std::string::npos) << bad_split.err;

  const std::string apart = Write("apart.json", R"({"fpgas": [{"nodes": [1, 2]}, {"nodes": [3, 4]}],
                                                    "cpus": [{"nodes": [5]}]})");
  Result broken =
      RunCli(absl::StrCat("partition ", graph_, " --objective latency --evaluate ", apart));
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("colocation"), std::string::npos) << broken.err;

  Result strategy =
      RunCli(absl::StrCat("partition ", graph_, " --objective throughput --strategy frobnicate"));
  EXPECT_EQ(strategy.exit_code, 1);
  EXPECT_NE(strategy.err.find("unknown strategy 'frobnicate'"), std::string::npos) << strategy.err;
  EXPECT_NE(strategy.err.find("local-search"), std::string::npos) << strategy.err;

  Result no_objective = RunCli(absl::StrCat("partition ", graph_));
  EXPECT_EQ(no_objective.exit_code, 1);
  EXPECT_NE(no_objective.err.find("--objective"), std::string::npos) << no_objective.err;

  const std::string not_json = Write("broken_graph.json", R"({"maxFPGAs": 2, "nodes": [)");
  Result syntax = RunCli(absl::StrCat("partition ", not_json, " --objective throughput"));
  EXPECT_EQ(syntax.exit_code, 1);
  EXPECT_NE(syntax.err.find("broken_graph.json"), std::string::npos) << syntax.err;
}

TEST_F(PartitionCliTest, PartitionGraphWritesGraphsThatSecondsBoundedStrategiesSplit) {
  const std::string random = (dir_ / "layered.json").string();
  Result made = RunCli(absl::StrCat("partition-graph --out ", random, " --nodes 600 --seed 2"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("600 nodes"), std::string::npos) << made.out;
  graph_ = random;
  // GO makes its first decision however short the deadline: a result always holds one.
  nlohmann::json go = Json(absl::StrCat("--objective throughput --strategy go --model ",
                                        MLTUNE_SOURCE_DIR "/models/pretrained/partition--go.ckpt",
                                        " --seconds 0.000001 --no-warm-start"));
  EXPECT_EQ(go["feasible"], true);
  EXPECT_GE(go["samples"].get<int64_t>(), 1);
  // With --seconds, GO's split is refined by a descent: never worse than its warm start (which
  // holds the DP's split) or than the policy's own split (--no-refine), and within the budget.
  const std::string go_args = absl::StrCat(
      "--objective throughput --strategy go --model ",
      MLTUNE_SOURCE_DIR "/models/pretrained/partition--go.ckpt", " --seconds 0.5 --seed 1");
  nlohmann::json refined = Json(go_args);
  nlohmann::json policy = Json(go_args + " --no-refine");
  nlohmann::json dp = Json("--objective throughput --strategy contiguous-dp");
  EXPECT_EQ(refined["feasible"], true);
  EXPECT_LE(refined["objective"].get<double>(), policy["objective"].get<double>() * (1 + 1e-9));
  EXPECT_LE(refined["objective"].get<double>(), dp["objective"].get<double>() * (1 + 1e-9));
  EXPECT_GT(refined["samples"].get<int64_t>(), policy["samples"].get<int64_t>());
  EXPECT_LT(refined["seconds"].get<double>(), 0.5 * 1.2 + 0.05);
  for (const char* strategy : {"dp-descent", "local-search", "annealing"}) {
    nlohmann::json j = Json(
        absl::StrCat("--objective throughput --strategy ", strategy, " --seconds 0.2 --seed 1"));
    EXPECT_EQ(j["feasible"], true) << strategy;
    EXPECT_EQ(j["seconds_limit"], 0.2) << strategy;
    EXPECT_LE(j["objective"].get<double>(), j["reference"]["m-etf"].get<double>() * (1 + 1e-9))
        << strategy;
  }

  // A module's op graph, its step stacked as microbatches: twice the nodes for two.
  const std::string hlo = MLTUNE_SOURCE_DIR "/models/hlo/mobilenet_v2.infer.b1.before.hlo";
  auto nodes = [&](int microbatches) {
    const std::string out = (dir_ / absl::StrCat("mb", microbatches, ".json")).string();
    Result r = RunCli(absl::StrCat("partition-graph --out ", out, " --hlo ", hlo,
                                   " --microbatches ", microbatches));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(out);
    return nlohmann::json::parse(in, nullptr, false)["nodes"].size();
  };
  const size_t one = nodes(1);
  EXPECT_GT(one, 50u);
  EXPECT_EQ(nodes(2), 2 * one);
}

TEST_F(PartitionCliTest, PartitionGraphAndSecondsRejectBadValues) {
  Result nodes =
      RunCli(absl::StrCat("partition-graph --out ", (dir_ / "x.json").string(), " --nodes 0"));
  EXPECT_EQ(nodes.exit_code, 1);
  EXPECT_NE(nodes.err.find("nodes"), std::string::npos) << nodes.err;
  Result seconds =
      RunCli(absl::StrCat("partition ", graph_, " --objective throughput --seconds -1"));
  EXPECT_EQ(seconds.exit_code, 1);
  EXPECT_NE(seconds.err.find("--seconds"), std::string::npos) << seconds.err;
}

TEST_F(PartitionCliTest, GoWithoutItsCheckpointSaysSo) {
  Result r = RunCli(absl::StrCat(
      "partition ", graph_, " --objective throughput --strategy go --model /nonexistent.ckpt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent.ckpt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checkpoint"), std::string::npos) << r.err;
}

// `train-agent --algo go` trains on the graph (imitation, then PPO), writes a checkpoint that
// `partition --strategy go` serves; a warm start is not needed to be feasible here.
TEST_F(PartitionCliTest, TrainAgentGoWritesACheckpointThatPartitionServes) {
  const std::string ckpt = (dir_ / "go.ckpt").string();
  Result trained = RunCli(absl::StrCat("train-agent --algo go --task partition --graphs ", graph_,
                                       " --imitation 3 --episodes 3 --no-store --out ", ckpt));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_NE(trained.out.find("3 imitation + 3 PPO iterations"), std::string::npos) << trained.out;
  ASSERT_TRUE(fs::exists(ckpt));
  for (const char* objective : {"throughput", "latency"}) {
    nlohmann::json j = Json(
        absl::StrCat("--objective ", objective, " --strategy go --model ", ckpt, " --budget 8"));
    EXPECT_EQ(j["strategy"], "go");
    EXPECT_LE(j["samples"].get<int64_t>(), 8);
    EXPECT_TRUE(j["feasible"].get<bool>()) << j.dump();
  }
  Result bad = RunCli(absl::StrCat("train-agent --algo go --task fusion,nonsense --graphs ", graph_,
                                   " --no-store"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown GO task 'nonsense'"), std::string::npos) << bad.err;
}

TEST_F(PartitionCliTest, PlacesAnHloModuleOnACluster) {
  const std::string out = (dir_ / "placement.json").string();
  Result r = RunCli(absl::StrCat("partition ", testing::SourcePath("examples/mlp_train_step.hlo"),
                                 " --target gpu-4x-nvlink --strategy m-etf --json --out ", out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["target"], "gpu-4x-nvlink");
  EXPECT_EQ(j["strategy"], "m-etf");
  ASSERT_TRUE(j["objective"].is_number()) << r.out;
  const double makespan = j["objective"].get<double>();
  EXPECT_GT(makespan, 0);
  EXPECT_TRUE(std::isfinite(makespan));
  EXPECT_DOUBLE_EQ(makespan, j["reference"]["m-etf"].get<double>());

  std::ifstream in(out);
  nlohmann::json placement = nlohmann::json::parse(in);
  EXPECT_DOUBLE_EQ(placement["makespan_seconds"].get<double>(), makespan);
  ASSERT_EQ(placement["placement"].size(), j["ops"].get<size_t>());
  for (const auto& [op, device] : placement["placement"].items()) {
    EXPECT_GE(device.get<int>(), 0) << op;
    EXPECT_LT(device.get<int>(), 4) << op;
  }

  Result tpu = RunCli(absl::StrCat("partition ", testing::SourcePath("examples/mlp_train_step.hlo"),
                                   " --target tpu-v4-core"));
  EXPECT_EQ(tpu.exit_code, 1);
  EXPECT_NE(tpu.err.find("cluster target"), std::string::npos) << tpu.err;
}

// --measured places the CPU worker's kernels, each costed by its time measured on this host, on a
// cluster of CPU hosts: fewer nodes than the module's ops (fused kernels), a makespan no worse than
// one host's, every kernel placed; a partition graph refuses it.
TEST_F(PartitionCliTest, PlacesMeasuredKernelsOnACpuCluster) {
  const std::string hlo = testing::SourcePath("examples/mlp_train_step.hlo");
  const std::string out = (dir_ / "measured.json").string();
  Result ops = RunCli(absl::StrCat("partition ", hlo, " --target cpu-4x-ethernet --json"));
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  Result r = RunCli(absl::StrCat("partition ", hlo,
                                 " --target cpu-4x-ethernet --measured --strategy annealing "
                                 "--budget 50 --json --out ",
                                 out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["target"], "cpu-4x-ethernet");
  EXPECT_EQ(j["feasible"], true);
  EXPECT_LT(j["ops"].get<int64_t>(), nlohmann::json::parse(ops.out)["ops"].get<int64_t>());
  EXPECT_GT(j["objective"].get<double>(), 0);
  EXPECT_LE(j["objective"].get<double>(), j["reference"]["one-device"].get<double>() * (1 + 1e-9));
  std::ifstream in(out);
  EXPECT_EQ(nlohmann::json::parse(in)["placement"].size(), j["ops"].get<size_t>());

  Result graph = RunCli(absl::StrCat("partition ", graph_, " --objective throughput --measured"));
  EXPECT_EQ(graph.exit_code, 1);
  EXPECT_NE(graph.err.find("--measured"), std::string::npos) << graph.err;
}

// An HLO module on a multi-chip module: the solver's strategies, the DP and GO through the
// solver all return valid partitions; a module no chip can hold is refused naming the op.
TEST_F(PartitionCliTest, PartitionsAnHloModuleOntoAMultiChipModule) {
  const std::string hlo = testing::SourcePath("examples/mlp_train_step.hlo");
  for (const char* strategy : {"balanced", "contiguous-dp", "solver-random", "solver-annealing",
                               "solver-local-search", "go-fix", "go-sample"}) {
    SCOPED_TRACE(strategy);
    const std::string out = (dir_ / absl::StrCat(strategy, ".json")).string();
    Result r = RunCli(absl::StrCat("partition ", hlo, " --target mcm-36 --strategy ", strategy,
                                   " --budget 30 --json --out ", out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["target"], "mcm-36");
    EXPECT_EQ(j["objective_name"], "stage_seconds");
    ASSERT_TRUE(j["feasible"].get<bool>()) << r.out;
    EXPECT_LE(j["samples"].get<int64_t>(), 30);
    std::ifstream in(out);
    nlohmann::json partition = nlohmann::json::parse(in);
    EXPECT_EQ(partition["partition"].size(), j["ops"].get<size_t>());
    EXPECT_DOUBLE_EQ(partition["stage_seconds"].get<double>(), j["objective"].get<double>());
  }
  // GPT-2's embedding lookup alone needs more than a chip's 32 MB: named, before any search.
  Result big =
      RunCli(absl::StrCat("partition ", testing::SourcePath("models/hlo/gpt2.infer.b1.after.hlo"),
                          " --target mcm-36 --strategy solver-random"));
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_NE(big.err.find("sram-capacity: op '"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("alone needs"), std::string::npos) << big.err;
}

TEST_F(PartitionCliTest, HelpListsTheSubcommand) {
  Result r = RunCli("--help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("partition"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mltune
