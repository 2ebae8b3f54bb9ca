// ONNX models through mltuned: a zoo export (models/onnx/dlrm) submitted as bytes goes through
// pass-order, tile and fusion on the CPU worker and placement on the simulated cluster; its
// optimized graph computes what the model does; and the result is found again by the HLO text of
// the imported module, since the cache is keyed by the IR's fingerprint.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/rpc_client.h"
#include "daemon/daemon.h"
#include "frontends/onnx/onnx_import.h"
#include "gtest/gtest.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/equivalence.h"

namespace mltune::daemon {
namespace {

using client::JobInfo;
using client::JobState;
using client::SubmitRequest;
using testing::MustStart;
using testing::TempDir;
using testing::TestConfig;

std::string ModelBytes() {
  std::ifstream in(std::filesystem::path(MLTUNE_SOURCE_DIR) / "models/onnx/dlrm.infer.b1.onnx",
                   std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class OnnxSubmitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = MustStart(TestConfig(dir_.path()));
    ASSERT_NE(daemon_, nullptr);
    client_ = client::Client::Connect(daemon_->address());
    ASSERT_TRUE(client_->WaitForReady(10).ok());
  }

  JobInfo Finish(SubmitRequest request) {
    absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    EXPECT_TRUE(client_->Watch(submitted->job_id).ok());
    absl::StatusOr<JobInfo> job = client_->GetJob(submitted->job_id);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return {};
    EXPECT_EQ(job->state, JobState::kDone) << job->error;
    return *job;
  }

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(OnnxSubmitTest, AZooExportRunsEveryTaskAndSharesTheCacheWithItsHlo) {
  const std::string bytes = ModelBytes();
  ASSERT_FALSE(bytes.empty());
  absl::StatusOr<ir::onnx::OnnxImport> imported = ir::onnx::ImportOnnxModel(bytes);
  ASSERT_TRUE(imported.ok()) << imported.status();

  SubmitRequest cpu;
  cpu.graph = bytes;  // the format is left as HLO text: the daemon tells by content
  cpu.graph_name = "dlrm.onnx";
  cpu.tasks = {"pass-order", "tile", "fusion"};
  cpu.target = "cpu";
  cpu.strategy = "random";
  cpu.budget.steps = 3;
  JobInfo job = Finish(cpu);
  ASSERT_EQ(job.results.size(), 3u);
  for (const client::TaskResult& r : job.results) {
    EXPECT_GT(r.baseline_score, 0) << r.task;
    EXPECT_GT(r.tuned_score, 0) << r.task;
  }
  // The pass-ordered graph computes what the ONNX model does.
  const client::TaskResult& order = job.results[0];
  ASSERT_EQ(order.task, "pass-order");
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized =
      ir::ParseHloText(order.artifacts.at("optimized_hlo"));
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_TRUE(mltune::testing::CheckEquivalent(*imported->module, **optimized).ok());

  SubmitRequest placement = cpu;
  placement.tasks = {"placement"};
  placement.target = "cluster-sim";
  placement.budget.steps = 50;
  JobInfo placed = Finish(placement);
  ASSERT_EQ(placed.results.size(), 1u);
  EXPECT_EQ(placed.results[0].task, "placement");
  EXPECT_LE(placed.results[0].tuned_score, placed.results[0].baseline_score);

  // The same IR given as HLO text finds the ONNX model's results.
  client::LookupRequest lookup;
  lookup.graph = ir::PrintModule(*imported->module);
  lookup.task = "pass-order";
  absl::StatusOr<client::LookupResponse> found = client_->Lookup(lookup);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->fingerprint, ir::Fingerprint(*imported->module));
  ASSERT_EQ(found->results.size(), 1u);
  EXPECT_EQ(found->results[0].tuned_score, order.tuned_score);
}

TEST_F(OnnxSubmitTest, BrokenOrUnsupportedModelsAreClearErrors) {
  SubmitRequest truncated;
  truncated.graph = ModelBytes().substr(0, 1000);
  truncated.graph_name = "cut.onnx";
  truncated.format = client::GraphFormat::kOnnx;
  absl::StatusOr<client::SubmitResponse> r = client_->Submit(truncated);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("cut.onnx"), std::string::npos) << r.status();
  // Nothing was queued or stored.
  absl::StatusOr<client::ServerStats> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->jobs_by_state.empty());
}

}  // namespace
}  // namespace mltune::daemon
