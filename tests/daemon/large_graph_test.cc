// Real model files through mltuned, whatever their size: a generated ONNX model of 300 MiB (its
// weights an initializer) goes through the client library the CLI uses to a daemon on a real
// port. It is uploaded in chunks and stored once by its SHA-256; a second submit sends nothing
// and is answered from the cache; jobs keep the hash, not the bytes. Broken upload streams (a
// flipped byte, a truncated stream, chunks out of order, a size over the limit) are refused with
// errors that say so, and store nothing.
//
// Cost: about 15 s on one core; the daemon's import of the model peaks near 3x its size (~1 GB),
// the client holds one 4 MiB chunk at a time.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <memory>
#include <string>

#include "client/rpc_client.h"
#include "daemon/daemon.h"
#include "gtest/gtest.h"
#include "mltune/v1/compile_service.grpc.pb.h"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/large_onnx.h"

namespace mltune::daemon {
namespace {

namespace v1 = ::mltune::v1;
using client::JobInfo;
using client::JobState;
using client::SubmitRequest;
using testing::MustStart;
using testing::TempDir;
using testing::TestConfig;

// 8192 x 9600 f32 weights: 300 MiB, a model the size of BERT-base and 3x ResNet-50.
constexpr int64_t kRows = 8192;
constexpr int64_t kCols = 9600;

class LargeGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = MustStart(TestConfig(dir_.path() / "daemon"));
    ASSERT_NE(daemon_, nullptr);
    client_ = client::Client::Connect(daemon_->address());
    ASSERT_TRUE(client_->WaitForReady(10).ok());
    stub_ = v1::CompileService::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }

  // A placement on the simulated cluster: it needs the graph's shapes, not its weights' values,
  // so the test spends its time on moving the model, not on a search.
  SubmitRequest Placement(const std::string& file) {
    SubmitRequest request;
    request.graph_file = file;
    request.graph_name = std::filesystem::path(file).filename().string();
    request.tasks = {"placement"};
    request.target = "cluster-sim";
    request.strategy = "random";
    request.budget.steps = 5;
    return request;
  }

  // Sends `chunks` as one UploadGraph stream with the raw stub.
  grpc::Status Upload(const std::vector<v1::GraphChunk>& chunks, v1::GraphRef* ref) {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientWriter<v1::GraphChunk>> writer = stub_->UploadGraph(&context, ref);
    for (const v1::GraphChunk& chunk : chunks) {
      if (!writer->Write(chunk)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  client::ServerStats Stats() {
    absl::StatusOr<client::ServerStats> stats = client_->GetStats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? *stats : client::ServerStats{};
  }

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<v1::CompileService::Stub> stub_;
};

TEST_F(LargeGraphTest, AModelOfHundredsOfMegabytesIsUploadedOnceAndAnsweredFromItsHash) {
  const std::string file = (dir_.path() / "large.onnx").string();
  const int64_t size = mltune::testing::WriteMatMulOnnx(file, kRows, kCols);
  ASSERT_GT(size, int64_t{300} << 20);

  absl::StatusOr<client::SubmitResponse> first = client_->Submit(Placement(file));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->cached);
  EXPECT_EQ(first->graph.size, size);
  EXPECT_EQ(first->graph.bytes_sent, size);  // uploaded in chunks, the request names the hash
  EXPECT_FALSE(first->graph.already_stored);
  ASSERT_EQ(first->graph.sha256.size(), 64u);
  absl::StatusOr<JobInfo> job = client_->Watch(first->job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state, JobState::kDone) << job->error;
  ASSERT_EQ(job->results.size(), 1u);
  EXPECT_GT(job->results[0].baseline_score, 0);
  EXPECT_EQ(job->graph_name, "large.onnx");

  // Stored once, with every byte.
  client::ServerStats stats = Stats();
  EXPECT_EQ(stats.stored_graphs, 1);
  EXPECT_EQ(stats.stored_graph_bytes, size);

  // Again: the daemon has the graph, so nothing is sent; its fingerprint is known, so the cache
  // answers without reading the graph.
  absl::StatusOr<client::SubmitResponse> second = client_->Submit(Placement(file));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->cached);
  EXPECT_TRUE(second->graph.already_stored);
  EXPECT_EQ(second->graph.bytes_sent, 0);
  EXPECT_EQ(second->graph.sha256, first->graph.sha256);
  ASSERT_EQ(second->job.results.size(), 1u);
  EXPECT_EQ(second->job.results[0].tuned_score, job->results[0].tuned_score);
  absl::StatusOr<client::GraphRef> again = client_->UploadGraphFile(file);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_stored);
  EXPECT_EQ(again->bytes_sent, 0);

  // A lookup by the file and a submit by the hash alone find the same graph.
  client::LookupRequest lookup;
  lookup.graph_file = file;
  lookup.task = "placement";
  absl::StatusOr<client::LookupResponse> found = client_->Lookup(lookup);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->fingerprint, job->fingerprint);
  ASSERT_EQ(found->results.size(), 1u);
  SubmitRequest by_hash = Placement("");
  by_hash.graph_file.clear();
  by_hash.graph_sha256 = first->graph.sha256;
  absl::StatusOr<client::SubmitResponse> third = client_->Submit(by_hash);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_TRUE(third->cached);

  stats = Stats();
  EXPECT_EQ(stats.stored_graphs, 1);
  EXPECT_EQ(stats.stored_graph_bytes, size);
  // The job's stored request names the graph by hash instead of carrying it.
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::Store::Open(daemon_->store_path());
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<storage::JobRecord>> jobs = (*store)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_LT((*jobs)[0].request.size(), 1024u);
  EXPECT_NE((*jobs)[0].request.find(first->graph.sha256), std::string::npos);
}

TEST_F(LargeGraphTest, BrokenUploadsAreRefusedWithClearErrorsAndStoreNothing) {
  const std::string file = (dir_.path() / "model.onnx").string();
  const int64_t size = mltune::testing::WriteMatMulOnnx(file, 1024, 1536);  // 6 MiB
  ASSERT_GT(size, client::kUploadChunkBytes);
  const std::string bytes = testing::ReadFile(file);
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), size);
  const std::string sha256 = mltune::testing::Sha256Hex(bytes);
  auto chunks = [&](const std::string& data, int64_t piece) {
    std::vector<v1::GraphChunk> out;
    for (int64_t offset = 0; offset < static_cast<int64_t>(data.size()); offset += piece) {
      v1::GraphChunk& c = out.emplace_back();
      if (offset == 0) {
        c.set_sha256(sha256);
        c.set_size(size);
      }
      c.set_offset(offset);
      c.set_data(data.substr(offset, piece));
    }
    return out;
  };
  auto expect_refused = [&](const std::vector<v1::GraphChunk>& stream, const std::string& needle) {
    v1::GraphRef ref;
    grpc::Status status = Upload(stream, &ref);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << needle;
    EXPECT_NE(status.error_message().find(needle), std::string::npos) << status.error_message();
  };

  // One flipped byte in the second chunk: the hash does not match.
  std::string flipped = bytes;
  flipped[(1 << 20) + 17] ^= 0x40;
  expect_refused(chunks(flipped, 1 << 20), "the upload was corrupted");
  // The stream ends a chunk early.
  std::vector<v1::GraphChunk> truncated = chunks(bytes, 1 << 20);
  truncated.pop_back();
  expect_refused(truncated, "the upload was truncated");
  // Two chunks swapped.
  std::vector<v1::GraphChunk> swapped = chunks(bytes, 1 << 20);
  std::swap(swapped[1], swapped[2]);
  expect_refused(swapped, "chunks must be sent in order");
  // More bytes than declared.
  std::vector<v1::GraphChunk> longer = chunks(bytes + "tail", 1 << 20);
  expect_refused(longer, "runs past the declared size");
  // A size over the daemon's limit is refused before any byte.
  v1::GraphChunk huge;
  huge.set_sha256(sha256);
  huge.set_size(int64_t{3} << 30);
  expect_refused({huge}, "--max-graph-bytes");
  // No hash.
  v1::GraphChunk anonymous;
  anonymous.set_size(size);
  anonymous.set_data(bytes.substr(0, 100));
  expect_refused({anonymous}, "sha256");

  // None of it was stored, and no spool file is left; a submit by the hash says so.
  client::ServerStats stats = Stats();
  EXPECT_EQ(stats.stored_graphs, 0);
  EXPECT_EQ(stats.stored_graph_bytes, 0);
  const std::filesystem::path spool = dir_.path() / "daemon" / "uploads";
  EXPECT_TRUE(!std::filesystem::exists(spool) || std::filesystem::is_empty(spool));
  SubmitRequest by_hash;
  by_hash.graph_sha256 = sha256;
  absl::StatusOr<client::SubmitResponse> missing = client_->Submit(by_hash);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_NE(missing.status().message().find("upload it first"), std::string::npos)
      << missing.status();

  // The intact stream is stored, and the graph then submits by hash.
  v1::GraphRef ref;
  grpc::Status ok = Upload(chunks(bytes, 1 << 20), &ref);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(ref.sha256(), sha256);
  EXPECT_EQ(ref.size(), size);
  EXPECT_FALSE(ref.already_stored());
  by_hash.tasks = {"placement"};
  by_hash.target = "cluster-sim";
  by_hash.strategy = "random";
  by_hash.budget.steps = 3;
  absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(by_hash);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<JobInfo> job = client_->Watch(submitted->job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state, JobState::kDone) << job->error;
}

}  // namespace
}  // namespace mltune::daemon
