// The `mltune` binary end to end: outputs, JSON, exit codes and error messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"
#include "storage/store.h"
#include "tests/support/corpus.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

using Result = testing::CommandResult;

// Runs the CLI with stdout and stderr captured separately.
Result RunCli(const std::string& args) {
  return testing::RunCommand(std::string(MLTUNE_CLI_PATH) + " " + args);
}

std::string Example() { return testing::SourcePath("examples/mlp_train_step.hlo"); }

std::string WriteTemp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(CliTest, ParsePrintsHistogram) {
  Result r = RunCli("parse " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("module jit_mlp_train_step: verified, 3 computations"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("dot"), std::string::npos);
  EXPECT_NE(r.out.find("(ENTRY)"), std::string::npos);
}

TEST(CliTest, ParseJson) {
  Result r = RunCli("parse --json " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["module"], "jit_mlp_train_step");
  EXPECT_EQ(j["computations"].size(), 3u);
  EXPECT_EQ(j["opcodes"]["dot"], 5);
  EXPECT_EQ(j["opcodes"]["parameter"], 10);
  EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 64u);
}

TEST(CliTest, EvalIsDeterministicPerSeed) {
  Result a = RunCli("eval --seed 7 " + Example());
  Result b = RunCli("eval --seed 7 " + Example());
  Result c = RunCli("eval --seed 8 " + Example());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto digest = [](const std::string& out) { return out.substr(out.rfind("digest ")); };
  EXPECT_EQ(digest(a.out), digest(b.out));
  EXPECT_NE(digest(a.out), digest(c.out));
  EXPECT_NE(a.out.find("f32[16,32]"), std::string::npos) << a.out;
}

TEST(CliTest, EvalJsonReportsFiniteLoss) {
  Result r = RunCli("eval --json --seed 1 " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["outputs"].size(), 5u);
  EXPECT_EQ(j["outputs"][0]["shape"], "f32[]");
  // Cross-entropy of 4 classes with random weights: positive and finite.
  const double loss = j["outputs"][0]["mean"];
  EXPECT_GT(loss, 0.0);
  EXPECT_EQ(j["outputs"][0]["non_finite"], 0);
}

TEST(CliTest, FingerprintIgnoresRenaming) {
  std::string text = testing::ReadFile(Example());
  std::string renamed = text;
  for (size_t pos = 0; (pos = renamed.find("relu.15", pos)) != std::string::npos;) {
    renamed.replace(pos, 7, "hidden_activation");
  }
  const std::string path = WriteTemp("mltune_cli_renamed.hlo", renamed);
  Result a = RunCli("fingerprint " + Example());
  Result b = RunCli("fingerprint " + path);
  ASSERT_EQ(a.exit_code, 0);
  ASSERT_EQ(b.exit_code, 0);
  EXPECT_EQ(a.out.substr(0, 64), b.out.substr(0, 64));
}

TEST(CliTest, PrintRoundTrips) {
  Result r = RunCli("print " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string path = WriteTemp("mltune_cli_printed.hlo", r.out);
  Result again = RunCli("print " + path);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(r.out, again.out);
  Result no_meta = RunCli("print --no-metadata " + Example());
  EXPECT_EQ(no_meta.out.find("metadata="), std::string::npos);
  EXPECT_NE(r.out.find("metadata="), std::string::npos);
}

TEST(CliTest, ErrorsGoToStderrWithExitCode1) {
  const std::string bad = WriteTemp("mltune_cli_bad.hlo",
                                    "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                    "  ROOT r = f32[2] frobnicate(p)\n}\n");
  Result r = RunCli("parse " + bad);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("mltune_cli_bad.hlo:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;

  Result missing = RunCli("parse /nonexistent/model.hlo");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model.hlo"), std::string::npos) << missing.err;

  Result usage = RunCli("frobnicate");
  EXPECT_EQ(usage.exit_code, 1);
}

TEST(CliTest, VerifierErrorNamesInstruction) {
  const std::string bad = WriteTemp("mltune_cli_badshape.hlo",
                                    "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                    "  q = f32[3] parameter(1)\n  ROOT r = f32[2] add(p, q)\n}\n");
  Result r = RunCli("eval " + bad);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("r"), std::string::npos);
  EXPECT_NE(r.err.find("verification failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("instruction r (line 5)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mltune

namespace mltune {
namespace {

const char kFoldable[] = R"(HloModule foldable
ENTRY e {
  p = f32[4] parameter(0)
  one = f32[] constant(1)
  b1 = f32[4] broadcast(one), dimensions={}
  m = f32[4] multiply(p, b1)
  n1 = f32[4] negate(m)
  ROOT n2 = f32[4] negate(n1)
}
)";

TEST(CliPassesTest, ListsEveryPassOnOneLine) {
  Result r = RunCli("passes");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"algsimp", "cse", "dce", "constant_folding", "simplify-while-loops"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + name + " "), std::string::npos) << name;
  }
  EXPECT_NE(r.out.find("default pipeline 'cpu'"), std::string::npos);
}

TEST(CliOptTest, PipelineReducesOpsAndVerifies) {
  const std::string in = WriteTemp("mltune_cli_foldable.hlo", kFoldable);
  const std::string out_path =
      (std::filesystem::temp_directory_path() / "mltune_cli_folded.hlo").string();
  Result r = RunCli("opt " + in + " --pipeline cpu --verify -o " + out_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // multiply by one and the double negation fold away: 5 ops (parameters do not count) -> 0: the
  // parameter is the root.
  EXPECT_NE(r.out.find("op count 5 -> 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 elements outside tolerance"), std::string::npos) << r.out;
  Result printed = RunCli("parse " + out_path);
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
}

TEST(CliOptTest, ExplicitPassListAndUnknownPass) {
  const std::string in = WriteTemp("mltune_cli_foldable2.hlo", kFoldable);
  Result r = RunCli("opt " + in + " --passes algsimp,dce");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("op count 5 -> 0"), std::string::npos) << r.out;
  Result bad = RunCli("opt " + in + " --passes algsimp,no-such-pass");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown pass 'no-such-pass'"), std::string::npos) << bad.err;
  Result both = RunCli("opt " + in + " --passes dce --pipeline cpu");
  EXPECT_EQ(both.exit_code, 1);
}

TEST(CliSearchTest, FindsAnOrderAtLeastAsGoodAsNothing) {
  const std::string in = WriteTemp("mltune_cli_search.hlo", kFoldable);
  const std::string out_path =
      (std::filesystem::temp_directory_path() / "mltune_cli_searched.hlo").string();
  Result r =
      RunCli("search pass-order " + in + " --strategy greedy --budget 200 --seed 3 -o " + out_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("original op count                5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best order found                 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best sequence"), std::string::npos);
  EXPECT_EQ(RunCli("parse " + out_path).exit_code, 0);
  Result bad = RunCli("search pass-order " + in + " --strategy telepathy");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("greedy"), std::string::npos) << bad.err;  // lists the real ones
}

}  // namespace
}  // namespace mltune

namespace mltune {
namespace {

// `mltune simulate`: the simulated workers' view of a module, offline.
std::string JaxExample() { return testing::SourcePath("examples/mlp_train_step_jax.hlo"); }

// The number after `label` on its line of `out`, in seconds ("45.2 µs", "1.20 ms", "3.00 s").
double SecondsAfter(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) return -1;
  const std::string line = out.substr(at + label.size(), out.find('\n', at) - at - label.size());
  double value = 0;
  char unit[8] = {};
  if (std::sscanf(line.c_str(), " %lf %7s", &value, unit) != 2) return -1;
  const std::string u = unit;
  if (u == "ns") return value * 1e-9;
  if (u == "µs") return value * 1e-6;
  if (u == "ms") return value * 1e-3;
  if (u == "s") return value;
  return -1;
}

TEST(CliSimulateTest, TpuSimPrintsKernelsAndTotals) {
  Result r = RunCli("simulate " + JaxExample() + " --target tpu-sim --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("module jit_mlp_train_step on tpu-v4-core, simulated by tpu-sim\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("kernels (default fusion)"), std::string::npos) << r.out;
  const double fused = SecondsAfter(r.out, "total, default fusion and tiles");
  EXPECT_GT(fused, 0) << r.out;
  EXPECT_GT(SecondsAfter(r.out, "roofline sum (reference)"), 0) << r.out;
  // Fusing saves kernel launches and HBM round trips: unfused is slower on this graph.
  const size_t unfused_at = r.out.find("kernels)", r.out.find("total, unfused ("));
  ASSERT_NE(unfused_at, std::string::npos) << r.out;
  EXPECT_GT(SecondsAfter(r.out.substr(unfused_at), "kernels)"), fused) << r.out;
  const size_t header = r.out.find("KERNEL");
  ASSERT_NE(header, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top 3 of"), std::string::npos) << r.out;
  // The header and exactly three kernel rows, then the timing line.
  std::string table = r.out.substr(header);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5) << table;
  EXPECT_NE(table.find("matmul "), std::string::npos) << table;
}

TEST(CliSimulateTest, McmSimPrintsThroughputAndChips) {
  Result r = RunCli("simulate " + JaxExample() + " --target mcm-sim");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on mcm-36, simulated by mcm-sim\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("throughput"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inferences/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CHIP"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all ops on one chip: "), std::string::npos) << r.out;
}

TEST(CliSimulateTest, ClusterSimPrintsMakespanAndDevices) {
  Result r = RunCli("simulate " + JaxExample() + " --target cluster-sim");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on gpu-4x-nvlink, simulated by cluster-sim\n"), std::string::npos) << r.out;
  EXPECT_GT(SecondsAfter(r.out, "makespan, m-ETF placement"), 0) << r.out;
  EXPECT_GT(SecondsAfter(r.out, "makespan, all on device 0"), 0) << r.out;
  EXPECT_NE(r.out.find("DEVICE"), std::string::npos) << r.out;
  // A spec name directly: eight devices, rows 0..7.
  Result eight = RunCli("simulate " + JaxExample() + " --target gpu-8x-pcie");
  ASSERT_EQ(eight.exit_code, 0) << eight.err;
  EXPECT_NE(eight.out.find("\n7 "), std::string::npos) << eight.out;
  EXPECT_EQ(eight.out.find("\n8 "), std::string::npos) << eight.out;
}

TEST(CliSimulateTest, JsonHasTheSameFacts) {
  Result tpu = RunCli("simulate --json " + JaxExample() + " --target tpu-sim --top 2");
  ASSERT_EQ(tpu.exit_code, 0) << tpu.err;
  auto t = nlohmann::json::parse(tpu.out);
  EXPECT_EQ(t["module"], "jit_mlp_train_step");
  EXPECT_EQ(t["target"], "tpu-v4-core");
  EXPECT_EQ(t["kind"], "tpu");
  EXPECT_EQ(t["simulator"], "tpu-sim");
  EXPECT_GT(t["ops"].get<int>(), 0);
  EXPECT_GT(t["kernels"].get<int>(), 0);
  EXPECT_LE(t["kernels"].get<int>(), t["ops"].get<int>());
  EXPECT_EQ(t["unfused"]["kernels"], t["ops"]);
  EXPECT_TRUE(t["default"]["valid"].get<bool>());
  EXPECT_GT(t["default"]["seconds"].get<double>(), 0);
  EXPECT_GT(t["unfused"]["seconds"].get<double>(), 0);
  EXPECT_GT(t["roofline_seconds"].get<double>(), 0);
  ASSERT_EQ(t["top_kernels"].size(), 2u);
  EXPECT_GE(t["top_kernels"][0]["seconds"].get<double>(),
            t["top_kernels"][1]["seconds"].get<double>());
  for (const char* key : {"kernel", "ops", "kind", "tile", "steps", "hbm_bytes", "vmem_bytes",
                          "compute_seconds", "dma_seconds", "seconds", "share"}) {
    EXPECT_TRUE(t["top_kernels"][0].contains(key)) << key;
  }
  Result all = RunCli("simulate --json " + JaxExample() + " --target tpu-v4-core --top 0");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto a = nlohmann::json::parse(all.out);
  ASSERT_EQ(a["top_kernels"].size(), a["kernels"].get<size_t>());
  double shares = 0;
  for (const auto& k : a["top_kernels"]) shares += k["share"].get<double>();
  EXPECT_NEAR(shares, 1.0, 1e-9);

  Result mcm = RunCli("simulate --json " + JaxExample() + " --target mcm-sim");
  ASSERT_EQ(mcm.exit_code, 0) << mcm.err;
  auto m = nlohmann::json::parse(mcm.out);
  EXPECT_EQ(m["target"], "mcm-36");
  EXPECT_EQ(m["chips"], 36);
  ASSERT_TRUE(m["balanced"]["valid"].get<bool>()) << mcm.out;
  EXPECT_GT(m["balanced"]["throughput_per_s"].get<double>(), 0);
  EXPECT_NEAR(m["balanced"]["throughput_per_s"].get<double>() *
                  m["balanced"]["stage_seconds"].get<double>(),
              1.0, 1e-9);
  EXPECT_EQ(m["balanced"]["per_chip"].size(), m["balanced"]["chips_used"].get<size_t>());
  int chip_ops = 0;
  for (const auto& c : m["balanced"]["per_chip"]) chip_ops += c["ops"].get<int>();
  EXPECT_EQ(chip_ops, m["ops"].get<int>());
  EXPECT_TRUE(m["one_chip"].contains("valid"));

  Result cluster = RunCli("simulate --json " + JaxExample() + " --target cluster-sim");
  ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  auto c = nlohmann::json::parse(cluster.out);
  EXPECT_EQ(c["target"], "gpu-4x-nvlink");
  EXPECT_EQ(c["kind"], "gpu-cluster");
  ASSERT_TRUE(c["metf"]["valid"].get<bool>()) << cluster.out;
  EXPECT_GT(c["metf"]["makespan_seconds"].get<double>(), 0);
  EXPECT_GT(c["one_device"]["makespan_seconds"].get<double>(), 0);
  EXPECT_GT(c["speedup"].get<double>(), 0);
  ASSERT_EQ(c["metf"]["per_device"].size(), 4u);
  int placed = 0;
  for (const auto& d : c["metf"]["per_device"]) {
    placed += d["ops"].get<int>();
    EXPECT_LE(d["utilization"].get<double>(), 1.0 + 1e-9);
  }
  EXPECT_EQ(placed, c["ops"].get<int>());
}

TEST(CliSimulateTest, UnknownTargetListsTheKnownOnes) {
  Result r = RunCli("simulate " + JaxExample() + " --target tpu-v9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("unknown target 'tpu-v9'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tpu-v4-core"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gpu-8x-pcie"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cluster-sim = gpu-4x-nvlink"), std::string::npos) << r.err;
  Result missing = RunCli("simulate " + JaxExample());  // --target is required
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--target"), std::string::npos) << missing.err;
}

TEST(CliSimulateTest, SpecsDirAddsTargets) {
  const auto dir = std::filesystem::temp_directory_path() / "mltune_cli_specs";
  std::filesystem::create_directories(dir);
  std::string spec = testing::ReadFile(testing::SourcePath("backends/specs/mcm-36.json"));
  spec.replace(spec.find("\"mcm-36\""), 8, "\"mcm-4\"");
  spec.replace(spec.find("\"devices\": 36"), 13, "\"devices\": 4");
  std::ofstream(dir / "mcm-4.json") << spec;
  Result r =
      RunCli("simulate --json " + JaxExample() + " --target mcm-4 --specs-dir " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["target"], "mcm-4");
  EXPECT_EQ(j["chips"], 4);
  Result without = RunCli("simulate " + JaxExample() + " --target mcm-4");
  EXPECT_EQ(without.exit_code, 1);
}

TEST(CliSimulateTest, BadFileIsAParseError) {
  const std::string bad = WriteTemp("mltune_cli_bad_sim.hlo",
                                    "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                    "  ROOT r = f32[2] frobnicate(p)\n}\n");
  Result r = RunCli("simulate " + bad + " --target tpu-sim");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("mltune_cli_bad_sim.hlo:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
}

// model-topk needs a store with a trained cost model: without one it says how to make one,
// before measuring anything.
TEST(CliTest, ModelTopKWithoutAModelSaysHowToTrainOne) {
  Result none = RunCli("search tile --target cpu --strategy model-topk " + Example());
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("--model-db"), std::string::npos) << none.err;
  const std::string db = (std::filesystem::temp_directory_path() /
                          ("mltune_cli_empty_" + std::to_string(getpid()) + ".db"))
                             .string();
  // A mistyped path is named, and no empty store is left behind.
  Result missing =
      RunCli("search tile --target cpu --strategy model-topk --model-db " + db + " " + Example());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no such store file"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  ASSERT_TRUE(storage::Store::Open(db).ok());
  Result empty =
      RunCli("search tile --target cpu --strategy model-topk --model-db " + db + " " + Example());
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("holds no cost-model/tile-cpu"), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find("mltune train-cost-model"), std::string::npos) << empty.err;
  Result fusion =
      RunCli("search fusion --target cpu --strategy model-topk --model-db " + db + " " + Example());
  EXPECT_EQ(fusion.exit_code, 1);
  EXPECT_NE(fusion.err.find("holds no cost-model/fusion-cpu"), std::string::npos) << fusion.err;
  EXPECT_NE(fusion.err.find("--task fusion"), std::string::npos) << fusion.err;
  std::filesystem::remove(db);
}

// A Llama-2-class training step's loss carries a 134 GB one-hot intermediate: every command that
// does not allocate it accepts the graph; `run`, which would, refuses it with a clear error.
TEST(CliTest, HugeIntermediatesAreAcceptedWhereNothingAllocatesThem) {
  const std::string path = WriteTemp("mltune_cli_llama_loss.hlo", R"(HloModule llama2_loss
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY loss {
  labels = s32[1024,4096] parameter(0)
  logits = f32[1024,4096,32000] parameter(1)
  iota = s32[1024,4096,32000] iota(), iota_dimension=2
  wide = s32[1024,4096,32000] broadcast(labels), dimensions={0,1}
  onehot = pred[1024,4096,32000] compare(wide, iota), direction=EQ
  zero = f32[] constant(0)
  zeros = f32[1024,4096,32000] broadcast(zero), dimensions={}
  picked = f32[1024,4096,32000] select(onehot, logits, zeros)
  ROOT nll = f32[1024,4096] reduce(picked, zero), dimensions={2}, to_apply=add
}
)");
  for (const std::string& command :
       {std::string("parse "), std::string("fingerprint "),
        std::string("search pass-order --strategy greedy --budget 20 "),
        std::string("simulate --target tpu-v4-core "), std::string("simulate --target mcm-36 ")}) {
    Result r = RunCli(command + path);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  }
  Result run = RunCli("run " + path);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("1024,4096,32000"), std::string::npos) << run.err;
}

// A module whose weights are elided (constant({...})) runs with --fill-elided SEED or
// MLTUNE_FILL_ELIDED=SEED, and says how many constants it filled; without, the error names both.
TEST(CliTest, RunFillsElidedConstantsWhenAsked) {
  const std::string path = WriteTemp("mltune_cli_elided.hlo", R"(HloModule elided

ENTRY main {
  x = f32[4,8] parameter(0)
  w = f32[8,3] constant({...})
  b = f32[3] constant({...})
  d = f32[4,3] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[4,3] broadcast(b), dimensions={1}
  ROOT y = f32[4,3] add(d, bb)
}
)");
  Result refused = RunCli("run --repeat 1 " + path);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--fill-elided"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("MLTUNE_FILL_ELIDED"), std::string::npos) << refused.err;
  Result run = RunCli("run --check --repeat 1 --fill-elided 3 " + path);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("filled 2 elided constant"), std::string::npos) << run.err;
  Result env = RunCli("eval " + path);
  EXPECT_EQ(env.exit_code, 1);
  Result filled =
      testing::RunCommand("MLTUNE_FILL_ELIDED=3 " + std::string(MLTUNE_CLI_PATH) + " eval " + path);
  EXPECT_EQ(filled.exit_code, 0) << filled.err;
  EXPECT_NE(filled.err.find("filled 2 elided constant"), std::string::npos) << filled.err;
  Result bad = RunCli("run --fill-elided seven " + path);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--fill-elided"), std::string::npos) << bad.err;
}

// `run --target gpu` compiles every kernel to PTX; without a GPU it then says why nothing ran
// (exit 1), with one it runs and checks the module.
TEST(CliTest, RunOnTheGpuCompilesAndSaysWhyItCannotRunWithoutOne) {
  Result r = RunCli("run --target gpu --check " + Example());
  if (r.err.find("built without the CUDA toolkit") != std::string::npos) {
    GTEST_SKIP() << "built without the CUDA toolkit";
  }
  EXPECT_NE(r.out.find("kernels to PTX for sm_"), std::string::npos) << r.out << r.err;
  if (r.err.find("no GPU to run on") != std::string::npos) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out.find("latency"), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("check: matches the reference evaluator"), std::string::npos) << r.out;
  }
  // Tuning measures on the device too: without one it stops where the plain run does.
  Result tuned = RunCli("run --target gpu --tuned --budget 4 " + Example());
  if (r.err.find("no GPU to run on") != std::string::npos) {
    EXPECT_EQ(tuned.exit_code, 1);
    EXPECT_NE(tuned.err.find("no GPU to run on"), std::string::npos) << tuned.err;
  } else {
    EXPECT_EQ(tuned.exit_code, 0) << tuned.err;
    EXPECT_NE(tuned.out.find("latency (tuned kernels)"), std::string::npos) << tuned.out;
  }
}

}  // namespace
}  // namespace mltune
