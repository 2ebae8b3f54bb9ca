// The `mltune` RPC subcommands end to end: the real binary against a real mltuned child on
// ephemeral loopback ports (client/daemon_process.h), one fresh daemon per test.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "absl/strings/str_cat.h"
#include "client/daemon_process.h"
#include "nlohmann/json.hpp"
#include "tests/support/corpus.h"
#include "tests/support/large_onnx.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;

using Result = testing::CommandResult;

// Runs the CLI with stdout and stderr captured separately; `env` prefixes the command
// (e.g. "MLTUNE_SERVER=... "). MLTUNE_SERVER is cleared otherwise, so the caller's shell cannot
// leak into a test.
Result RunCli(const std::string& args, const std::string& env = "") {
  return testing::RunCommand(
      absl::StrCat(env.empty() ? "env -u MLTUNE_SERVER " : absl::StrCat("env ", env, " "),
                   MLTUNE_CLI_PATH, " ", args));
}

std::string Example() { return testing::SourcePath("examples/mlp_train_step.hlo"); }

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() / (std::to_string(getpid()) + "_" + name)).string();
}

// A loopback port nothing listens on: bound once by us, then released.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 1;  // nothing listens on port 1 either
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// A graph whose search runs far longer than a test (as tests/daemon's SlowHlo): `blocks` blocks
// of work for algsimp and CSE, each instruction with few users so every pass stays linear.
std::string WriteSlowHlo(const std::string& path, int blocks = 3000) {
  std::ofstream out(path);
  out << "HloModule slow\n\nENTRY e {\n  p = f32[16,16] parameter(0)\n"
      << "  zero = f32[] constant(0)\n  one = f32[] constant(1)\n  x0 = f32[16,16] negate(p)\n";
  for (int i = 1; i <= blocks; ++i) {
    out << "  o" << i << " = f32[16,16] broadcast(one), dimensions={}\n"
        << "  a" << i << " = f32[16,16] multiply(x" << i - 1 << ", o" << i << ")\n"
        << "  z" << i << " = f32[16,16] broadcast(zero), dimensions={}\n"
        << "  d" << i << " = f32[16,16] add(a" << i << ", z" << i << ")\n"
        << "  e" << i << " = f32[16,16] add(a" << i << ", z" << i << ")\n"
        << "  x" << i << " = f32[16,16] maximum(d" << i << ", e" << i << ")\n";
  }
  out << "  ROOT r = f32[16,16] negate(x" << blocks << ")\n}\n";
  return path;
}

// "submitted job ID" -> ID.
std::string JobIdFrom(const std::string& out) {
  std::smatch m;
  if (std::regex_search(out, m, std::regex("(?:submitted|attached to running) job (\\S+)"))) {
    return m[1];
  }
  return "";
}

// Tests that do not need a daemon: it is the point that none is there.
TEST(RpcCliUnreachableTest, ClosedPortSaysCannotReachAndExits2) {
  const std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  for (const std::string& args : std::vector<std::string>{
           "stats", "workers", "strategies", "result some-job", "watch some-job", "cancel some-job",
           "submit " + Example(), "lookup " + Example()}) {
    Result r = RunCli(args + " --server " + address);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("cannot reach mltuned at " + address), std::string::npos) << args << "\n"
                                                                                   << r.err;
    EXPECT_NE(r.err.find("is it running?"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("MLTUNE_SERVER"), std::string::npos) << r.err;
  }
}

TEST(RpcCliUnreachableTest, EnvironmentNamesTheServer) {
  const std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  Result r = RunCli("stats", "MLTUNE_SERVER=" + address);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot reach mltuned at " + address), std::string::npos) << r.err;
  // The flag wins over the environment.
  const std::string other = "127.0.0.1:" + std::to_string(ClosedPort());
  r = RunCli("stats --server " + other, "MLTUNE_SERVER=" + address);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot reach mltuned at " + other), std::string::npos) << r.err;
}

class RpcCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef MLTUNE_DAEMON_PATH
    GTEST_SKIP() << "built without the mltuned target";
#else
    client::DaemonOptions options;
    options.binary = MLTUNE_DAEMON_PATH;
    // No grace period for running jobs on SIGTERM: teardown should not wait on a search.
    options.extra_args = {"--drain-seconds", "0", "--max-budget-steps", "100000000"};
    options.serve_metrics = false;
    auto daemon = client::DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    server_ = " --server " + daemon_->address();
#endif
  }

  void TearDown() override {
    if (daemon_ == nullptr) return;
    auto code = daemon_->Stop();
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << "mltuned did not exit cleanly on SIGTERM; log:\n"
                        << testing::ReadFile(daemon_->log_path());
  }

  Result Submit(const std::string& args) { return RunCli("submit " + args + server_); }

  std::unique_ptr<client::DaemonProcess> daemon_;
  std::string server_;
};

TEST_F(RpcCliTest, SubmitWatchThenCacheResultAndLookup) {
  const std::string out_path = TempPath("tuned.hlo");
  Result r =
      Submit(Example() + " --budget 50 --strategy greedy --option seed=1 --watch -o " + out_path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = JobIdFrom(r.out);
  ASSERT_FALSE(id.empty()) << r.out;
  EXPECT_NE(r.out.find("job " + id + ": done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass-order on cpu: strategy greedy, budget 50 steps"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("baseline (XLA default)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("improvement vs baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + out_path), std::string::npos) << r.out;
  // Progress goes to stderr: plain lines, since stderr is not a terminal here.
  EXPECT_NE(r.err.find("job " + id + " done"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  // The optimized HLO is a module the offline CLI accepts.
  Result parsed = RunCli("parse " + out_path);
  EXPECT_EQ(parsed.exit_code, 0) << parsed.err;
  fs::remove(out_path);

  // The same request again: the cache answers and no job is created.
  r = Submit(Example() + " --budget 50");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("answered from cache"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("from cache"), std::string::npos) << r.out;
  EXPECT_EQ(JobIdFrom(r.out), "") << r.out;

  // result --json: every field, parseable.
  r = RunCli("result " + id + " --json" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json job = nlohmann::json::parse(r.out);
  EXPECT_EQ(job["job_id"], id);
  EXPECT_EQ(job["state"], "done");
  EXPECT_EQ(job["tasks"], nlohmann::json::array({"pass-order"}));
  EXPECT_EQ(job["target"], "cpu");
  EXPECT_EQ(job["strategy"], "greedy");
  EXPECT_EQ(job["budget"]["steps"], 50);
  EXPECT_EQ(job["graph_name"], Example());
  ASSERT_EQ(job["results"].size(), 1u) << r.out;
  const nlohmann::json& result = job["results"][0];
  EXPECT_EQ(result["task"], "pass-order");
  EXPECT_EQ(result["target"], "cpu");
  EXPECT_GT(result["original_score"].get<double>(), 0);
  EXPECT_GT(result["baseline_score"].get<double>(), 0);
  EXPECT_GT(result["tuned_score"].get<double>(), 0);
  EXPECT_LE(result["tuned_score"].get<double>(), result["original_score"].get<double>());
  EXPECT_TRUE(result.contains("improvement_vs_baseline_percent"));
  EXPECT_TRUE(result["pass_sequence"].is_array());
  EXPECT_FALSE(result["provenance"]["search_version"].get<std::string>().empty()) << r.out;
  EXPECT_NE(result["artifacts"]["optimized_hlo"].get<std::string>().find("HloModule"),
            std::string::npos);
  for (const char* key : {"fingerprint", "progress", "best_score", "steps_done", "error",
                          "attempts", "created_unix_ms", "started_unix_ms", "finished_unix_ms"}) {
    EXPECT_TRUE(job.contains(key)) << key;
  }

  // The search's best-so-far trace: steps ascending, bests never worse, ending at the tuned score.
  const nlohmann::json trace =
      nlohmann::json::parse(result["artifacts"]["best_so_far"].get<std::string>());
  const std::vector<double> steps = trace["step"], best = trace["best"];
  ASSERT_FALSE(best.empty());
  EXPECT_EQ(best.front(), result["original_score"].get<double>());
  EXPECT_EQ(best.back(), result["tuned_score"].get<double>());
  EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end()));
  EXPECT_TRUE(std::is_sorted(best.rbegin(), best.rend()));

  // result --plot: that curve, drawn, beside the default's and the input's lines.
  const std::string plot_path = TempPath("search.svg");
  r = RunCli("result " + id + " --plot " + plot_path + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("best-so-far curves written to " + plot_path), std::string::npos) << r.out;
  const std::string svg = testing::ReadFile(plot_path);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  for (const char* label : {">best so far<", ">compiler's default<", ">as given<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  r = RunCli("result " + id + " --plot /nonexistent-dir/x.svg" + server_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write /nonexistent-dir/x.svg"), std::string::npos) << r.err;
  fs::remove(plot_path);

  // The daemon's fingerprint is the offline one.
  Result fp = RunCli("fingerprint " + Example());
  ASSERT_EQ(fp.exit_code, 0) << fp.err;
  const std::string fingerprint = fp.out.substr(0, 64);
  EXPECT_EQ(job["fingerprint"], fingerprint);

  // result as text.
  r = RunCli("result " + id + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("provenance: worker"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass sequence ("), std::string::npos) << r.out;

  // lookup by file and by fingerprint; a target never tuned is a miss (exit 3).
  r = RunCli("lookup " + Example() + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 cached result for " + fingerprint), std::string::npos) << r.out;
  r = RunCli("lookup --fingerprint " + fingerprint + " --json" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json lookup = nlohmann::json::parse(r.out);
  EXPECT_EQ(lookup["fingerprint"], fingerprint);
  EXPECT_EQ(lookup["results"].size(), 1u);
  r = RunCli("lookup " + Example() + " --target gpu" + server_);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no cached result for " + fingerprint), std::string::npos) << r.out;

  // stats counts the hit.
  r = RunCli("stats --json" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json stats = nlohmann::json::parse(r.out);
  EXPECT_GE(stats["cache_hits"].get<int64_t>(), 1) << r.out;
  EXPECT_GE(stats["cached_results"].get<int64_t>(), 1) << r.out;
  // The daemon's own cost model retraining, on by default: every model of cpu and the tpu specs,
  // none stored yet.
  EXPECT_EQ(stats["retrain_rows"].get<int64_t>(), 1000) << r.out;
  ASSERT_TRUE(stats["cost_models"].is_array()) << r.out;
  std::set<std::string> models;
  for (const nlohmann::json& m : stats["cost_models"]) {
    models.insert(m["name"].get<std::string>());
    EXPECT_EQ(m["version"].get<int64_t>(), 0) << r.out;
    EXPECT_FALSE(m["training"].get<bool>()) << r.out;
    EXPECT_EQ(m["last_outcome"].get<std::string>(), "") << r.out;  // none ran yet
  }
  if (stats["cost_models_counted_ms"].get<int64_t>() > 0) {
    EXPECT_TRUE(models.contains("cost-model/tile-cpu")) << r.out;
    EXPECT_TRUE(models.contains("cost-model/fusion-tpu-v4-core")) << r.out;
  }
}

// A model over the inline size (an ONNX file with its weights, 24 MiB here; the daemon test
// large_graph_test sends 300 MiB through the same client library) is uploaded once by hash.
TEST_F(RpcCliTest, SubmitUploadsALargeModelOnceAndNamesItByHash) {
  const std::string model = TempPath("model.onnx");
  const int64_t size = testing::WriteMatMulOnnx(model, 2048, 3072);
  ASSERT_GT(size, int64_t{24} << 20);
  const std::string args =
      model + " --task placement --target cluster-sim --strategy random " + "--budget 3 --watch";
  Result r = Submit(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("uploaded " + model + " (24.0 MiB, sha256 "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(": done (tasks placement"), std::string::npos) << r.out;

  // Again: nothing is sent, and the cache answers.
  r = Submit(args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json answer = nlohmann::json::parse(r.out);
  EXPECT_EQ(answer["cached"], true);
  EXPECT_EQ(answer["graph"]["already_stored"], true);
  EXPECT_EQ(answer["graph"]["bytes_sent"], 0);
  EXPECT_EQ(answer["graph"]["size"], size);
  EXPECT_EQ(answer["graph"]["sha256"].get<std::string>().size(), 64u);
  r = Submit(args);
  EXPECT_NE(r.err.find("is on the daemon already"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("answered from cache"), std::string::npos) << r.out;

  // lookup reads the file the same way; stats count the graph once.
  r = RunCli("lookup " + model + " --task placement" + server_);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = RunCli("stats --json" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json stats = nlohmann::json::parse(r.out);
  EXPECT_EQ(stats["stored_graphs"], 1) << r.out;
  EXPECT_EQ(stats["stored_graph_bytes"], size) << r.out;
  fs::remove(model);
}

TEST_F(RpcCliTest, LookupMissExits3) {
  Result r = RunCli("lookup " + Example() + server_);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no cached result for "), std::string::npos) << r.out;
  r = RunCli("lookup --fingerprint " + std::string(64, '0') + server_);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
}

TEST_F(RpcCliTest, WorkersStrategiesAndStats) {
  Result r = RunCli("workers" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("NAME", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("cpu"), std::string::npos) << r.out;
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;

  r = RunCli("strategies" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name :
       {"pass-order", "random", "greedy", "beam", "annealing", "evolutionary", "(default)"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
  }

  r = RunCli("stats" + server_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mltuned "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queue"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(daemon_->store_path()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cost models    retrained at 1000 new training rows, after 60 s without "
                       "jobs"),
            std::string::npos)
      << r.out;
}

TEST_F(RpcCliTest, EnvironmentSelectsTheServer) {
  Result r = RunCli("stats", "MLTUNE_SERVER=" + daemon_->address());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("at " + daemon_->address()), std::string::npos) << r.out;
}

TEST_F(RpcCliTest, UnknownJobIsAClearError) {
  for (const char* command : {"result", "watch", "cancel"}) {
    Result r = RunCli(std::string(command) + " no-such-job" + server_);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("no-such-job"), std::string::npos) << command << "\n" << r.err;
  }
}

TEST_F(RpcCliTest, MalformedHloNamesLineAndColumn) {
  const std::string path = TempPath("bad.hlo");
  std::ofstream(path) << "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n"
                         "  ROOT r = f32[2] bogus-op(p)\n}\n";
  Result r = Submit(path + " --watch");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("5:19"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bogus-op"), std::string::npos) << r.err;
  r = RunCli("lookup " + path + server_);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("5:19"), std::string::npos) << r.err;
  fs::remove(path);
}

TEST_F(RpcCliTest, BadOptionIsRejected) {
  Result r = Submit(Example() + " --option nonsense=1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("nonsense"), std::string::npos) << r.err;
  r = Submit(Example() + " --option novalue");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("key=value"), std::string::npos) << r.err;
}

TEST_F(RpcCliTest, AttachThenCancel) {
  // A search far too long to finish during the test.
  const std::string slow = WriteSlowHlo(TempPath("slow.hlo"));
  const std::string args =
      slow + " --budget 50000000 --seconds 120 --strategy random --option seed=7";
  Result first = Submit(args + " --json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  nlohmann::json submitted = nlohmann::json::parse(first.out);
  const std::string id = submitted["job_id"];
  ASSERT_FALSE(id.empty()) << first.out;
  EXPECT_EQ(submitted["cached"], false);

  Result second = Submit(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("attached to running job " + id), std::string::npos) << second.out;

  Result pending = RunCli("result " + id + server_);
  EXPECT_EQ(pending.exit_code, 3) << pending.out << pending.err;
  EXPECT_NE(pending.err.find("no result yet"), std::string::npos) << pending.err;

  Result cancel = RunCli("cancel " + id + server_);
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find(id), std::string::npos) << cancel.out;

  // watch follows it to the end: cancelled is a failure for a script (exit 1).
  Result watch = RunCli("watch " + id + server_);
  EXPECT_EQ(watch.exit_code, 1) << watch.out << watch.err;
  EXPECT_NE(watch.out.find("job " + id + ": cancelled"), std::string::npos) << watch.out;
  EXPECT_NE(watch.err.find("was cancelled"), std::string::npos) << watch.err;

  // A finished job cannot be cancelled again.
  cancel = RunCli("cancel " + id + server_);
  EXPECT_EQ(cancel.exit_code, 1) << cancel.out << cancel.err;
  EXPECT_NE(cancel.err.find(id), std::string::npos) << cancel.err;
  fs::remove(slow);
}

}  // namespace
}  // namespace mltune
