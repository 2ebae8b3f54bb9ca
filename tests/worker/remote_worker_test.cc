// mltune-worker's RemoteWorker against an in-process fake mltune.v1.WorkerService: it measures a
// batch of real generated programs (a failing compile comes back as that candidate's error),
// heartbeats while it measures, registers again after NOT_FOUND and after the daemon was away,
// speaks mutual TLS, and stops at once on a token the daemon refuses.
#include "worker/remote_worker.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/lowering.h"
#include "backends/gpu/device.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "mltune/v1/worker_service.grpc.pb.h"
#include "remote/wire.h"
#include "tests/support/test_ca.h"

namespace mltune::worker {
namespace {

namespace cpu = backends::cpu;
using Clock = std::chrono::steady_clock;

constexpr char kToken[] = "worker-token-0123456789";

// What the fake saw, in order, with when.
struct Seen {
  std::vector<std::string> registered_ids;
  std::vector<v1::RegisterWorkerRequest> registrations;
  std::vector<std::string> take_batch_ids;
  std::vector<std::pair<std::string, Clock::time_point>> heartbeats;
  std::vector<v1::ReturnBatchRequest> returns;
  Clock::time_point handed_out{}, returned{};
};

class FakeWorkerService final : public v1::WorkerService::Service {
 public:
  std::string required_token;  // "" = any caller
  double heartbeat_seconds = 0.02;
  int forget_on_take_batch = 0;       // this many TakeBatch calls answer NOT_FOUND (a restart)
  std::function<void()> on_hand_out;  // when the batch goes out

  void Offer(v1::TakeBatchResponse batch) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::move(batch);
    has_pending_ = true;
  }

  Seen seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
  }

  grpc::Status RegisterWorker(grpc::ServerContext* context, const v1::RegisterWorkerRequest* r,
                              v1::RegisterWorkerResponse* out) override {
    if (grpc::Status s = Authorize(*context); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    const std::string id = absl::StrCat("w", seen_.registrations.size() + 1);
    seen_.registrations.push_back(*r);
    seen_.registered_ids.push_back(id);
    known_.insert(id);
    out->set_worker_id(id);
    out->set_heartbeat_seconds(heartbeat_seconds);
    return grpc::Status::OK;
  }

  grpc::Status TakeBatch(grpc::ServerContext* context, const v1::TakeBatchRequest* r,
                         v1::TakeBatchResponse* out) override {
    if (grpc::Status s = Authorize(*context); !s.ok()) return s;
    std::function<void()> hook;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!known_.contains(r->worker_id())) return grpc::Status(grpc::NOT_FOUND, "unknown worker");
      seen_.take_batch_ids.push_back(r->worker_id());
      if (forget_on_take_batch > 0) {
        --forget_on_take_batch;
        known_.erase(r->worker_id());
        return grpc::Status(grpc::NOT_FOUND, "unknown worker (the fake forgot it)");
      }
      cv_.wait_for(lock, std::chrono::milliseconds(r->wait_ms()),
                   [&] { return has_pending_ || stopping_; });
      if (!has_pending_) return grpc::Status::OK;  // no work
      *out = std::move(pending_);
      has_pending_ = false;
      seen_.handed_out = Clock::now();
      hook = on_hand_out;
    }
    if (hook) hook();
    return grpc::Status::OK;
  }

  grpc::Status ReturnBatch(grpc::ServerContext* context, const v1::ReturnBatchRequest* r,
                           v1::ReturnBatchResponse*) override {
    if (grpc::Status s = Authorize(*context); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (!known_.contains(r->worker_id())) return grpc::Status(grpc::NOT_FOUND, "unknown worker");
    seen_.returns.push_back(*r);
    seen_.returned = Clock::now();
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* r,
                         v1::HeartbeatResponse*) override {
    if (grpc::Status s = Authorize(*context); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (!known_.contains(r->worker_id())) return grpc::Status(grpc::NOT_FOUND, "unknown worker");
    seen_.heartbeats.emplace_back(r->worker_id(), Clock::now());
    return grpc::Status::OK;
  }

 private:
  grpc::Status Authorize(const grpc::ServerContext& context) const {
    if (required_token.empty()) return grpc::Status::OK;
    const auto& metadata = context.client_metadata();
    auto it = metadata.find("authorization");
    if (it == metadata.end() ||
        std::string(it->second.data(), it->second.size()) != "Bearer " + required_token) {
      return grpc::Status(grpc::UNAUTHENTICATED, "unknown token");
    }
    return grpc::Status::OK;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> known_;
  v1::TakeBatchResponse pending_;
  bool has_pending_ = false;
  bool stopping_ = false;
  Seen seen_;
};

// The fake served on 127.0.0.1 (`port` 0: a free one).
class FakeServer {
 public:
  explicit FakeServer(FakeWorkerService* service, int port = 0,
                      std::shared_ptr<grpc::ServerCredentials> credentials = nullptr)
      : service_(service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port),
                             credentials ? credentials : grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { Shutdown(); }
  void Shutdown() {
    if (!server_) return;
    service_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  FakeWorkerService* service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// A real generated program: the CPU backend's code for a small element-wise module, with a
// constant large enough to travel in the program's constants segment.
cpu::Program AddProgram() {
  std::string values;
  for (int i = 0; i < 256; ++i) absl::StrAppend(&values, i == 0 ? "" : ",", i % 7);
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(absl::StrCat(R"(
HloModule add
ENTRY e {
  a = f32[256] parameter(0)
  b = f32[256] parameter(1)
  c = f32[256] constant({)",
                                                                                values, R"(})
  s = f32[256] add(a, b)
  ROOT r = f32[256] add(s, c)
})"));
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**m);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<cpu::Program> program = cpu::GenerateModule(*lowered);
  EXPECT_TRUE(program.ok()) << program.status();
  EXPECT_NE(program->constants, nullptr);
  return *program;
}

// Batch "b1": candidate 7 the program as generated, candidate 8 the same with a line no compiler
// accepts.
v1::TakeBatchResponse TwoCandidateBatch() {
  const cpu::Program good = AddProgram();
  cpu::Program bad = good;
  bad.source += "\nthis is not C++;\n";
  cpu::MeasureOptions options;
  options.max_seconds = 0.02;
  options.timeout_seconds = 30;
  v1::TakeBatchResponse batch;
  batch.set_batch_id("b1");
  for (const auto& [id, program] :
       {std::pair<uint64_t, const cpu::Program*>{7, &good}, {8, &bad}}) {
    v1::Candidate* c = batch.add_candidates();
    c->set_id(id);
    c->set_seed(42);
    remote::ToProto(*program, c->mutable_program());
    remote::ToProto(options, c->mutable_options());
  }
  return batch;
}

WorkerOptions FastOptions(const std::string& server) {
  WorkerOptions o;
  o.server = server;
  o.host = "test-host";
  o.wait_ms = 50;
  o.reconnect_seconds = 0.05;
  o.max_reconnect_seconds = 0.2;
  o.call_timeout_seconds = 10;
  return o;
}

// Run on its own thread; the test's deadline stops it rather than hanging the suite.
class Running {
 public:
  explicit Running(RemoteWorker* worker, std::shared_ptr<std::atomic<bool>> stop =
                                             std::make_shared<std::atomic<bool>>(false))
      : stop_(std::move(stop)),
        result_(std::async(std::launch::async, [this, worker] { return worker->Run(*stop_); })) {}
  ~Running() {
    *stop_ = true;
    if (result_.valid()) result_.wait();
  }
  // Run's result, stopping it first unless `let_finish`; DeadlineExceeded after 60 s.
  absl::Status Finish(bool let_finish = false) {
    if (!let_finish) *stop_ = true;
    if (result_.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      *stop_ = true;
      return absl::DeadlineExceededError("Run did not return within 60 s");
    }
    return result_.get();
  }

 private:
  std::shared_ptr<std::atomic<bool>> stop_;
  std::future<absl::Status> result_;
};

bool WaitUntil(const std::function<bool()>& done, double seconds = 30) {
  const Clock::time_point end = Clock::now() + std::chrono::milliseconds(int(seconds * 1000));
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

class RemoteWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST_F(RemoteWorkerTest, MeasuresABatchHeartbeatsAndFinishesItAfterAStop) {
  FakeWorkerService service;
  FakeServer server(&service);
  ASSERT_TRUE(server.ok());
  service.Offer(TwoCandidateBatch());
  absl::StatusOr<std::unique_ptr<RemoteWorker>> worker =
      RemoteWorker::Create(FastOptions(server.address()));
  ASSERT_TRUE(worker.ok()) << worker.status();
  EXPECT_NE((*worker)->device().find("cores"), std::string::npos) << (*worker)->device();
  EXPECT_NE((*worker)->device().back(), ' ') << "trailing space";

  // Stopped the moment the batch goes out: the worker must still measure and return it.
  auto stop = std::make_shared<std::atomic<bool>>(false);
  service.on_hand_out = [stop] { *stop = true; };
  Running running(worker->get(), stop);
  ASSERT_TRUE(running.Finish(/*let_finish=*/true).ok());

  const Seen seen = service.seen();
  ASSERT_EQ(seen.registrations.size(), 1u);
  EXPECT_EQ(seen.registrations[0].host(), "test-host");
  EXPECT_EQ(seen.registrations[0].target(), "cpu");
  EXPECT_EQ(seen.registrations[0].device(), (*worker)->device());
  EXPECT_FALSE(seen.registrations[0].version().empty());

  ASSERT_EQ(seen.returns.size(), 1u);
  const v1::ReturnBatchRequest& returned = seen.returns[0];
  EXPECT_EQ(returned.worker_id(), "w1");
  EXPECT_EQ(returned.batch_id(), "b1");
  ASSERT_EQ(returned.measurements_size(), 2);
  const v1::Measurement& good = returned.measurements(0);
  EXPECT_EQ(good.id(), 7u);
  EXPECT_TRUE(good.error().empty()) << good.error();
  EXPECT_GT(good.timing().median_s(), 0);
  EXPECT_GT(good.timing().samples(), 0);
  const v1::Measurement& bad = returned.measurements(1);
  EXPECT_EQ(bad.id(), 8u);
  EXPECT_NE(bad.error().find("compiling generated code failed"), std::string::npos) << bad.error();
  EXPECT_EQ(bad.error_code(), static_cast<int>(absl::StatusCode::kInternal));

  // Heartbeats went on while it measured (the compiles and runs take far longer than 20 ms).
  int during = 0;
  for (const auto& [id, when] : seen.heartbeats) {
    if (id == "w1" && when > seen.handed_out && when < seen.returned) ++during;
  }
  EXPECT_GE(during, 1) << seen.heartbeats.size() << " heartbeats in all";

  const WorkerStats stats = (*worker)->stats();
  EXPECT_EQ(stats.registrations, 1);
  EXPECT_EQ(stats.batches, 1);
  EXPECT_EQ(stats.candidates, 2);
  EXPECT_EQ(stats.failed_candidates, 1);
  EXPECT_GE(stats.heartbeats, 1);
}

TEST_F(RemoteWorkerTest, RegistersAgainAfterNotFound) {
  FakeWorkerService service;
  service.forget_on_take_batch = 1;
  FakeServer server(&service);
  ASSERT_TRUE(server.ok());
  absl::StatusOr<std::unique_ptr<RemoteWorker>> worker =
      RemoteWorker::Create(FastOptions(server.address()));
  ASSERT_TRUE(worker.ok()) << worker.status();
  Running running(worker->get());
  EXPECT_TRUE(WaitUntil([&] {
    const Seen seen = service.seen();
    for (const std::string& id : seen.take_batch_ids) {
      if (id == "w2") return true;
    }
    return false;
  })) << "no TakeBatch from a second registration";
  EXPECT_TRUE(running.Finish().ok());
  const Seen seen = service.seen();
  ASSERT_GE(seen.registered_ids.size(), 2u);
  EXPECT_EQ(seen.take_batch_ids.front(), "w1");
  EXPECT_EQ((*worker)->stats().registrations, static_cast<int64_t>(seen.registered_ids.size()));
}

TEST_F(RemoteWorkerTest, WaitsForAnUnreachableDaemonAndRegistersOnceItIsUp) {
  int port = 0;
  {
    FakeWorkerService placeholder;
    FakeServer probe(&placeholder);  // a port that is free, then closed again
    ASSERT_TRUE(probe.ok());
    port = probe.port();
  }
  absl::StatusOr<std::unique_ptr<RemoteWorker>> worker =
      RemoteWorker::Create(FastOptions(absl::StrCat("127.0.0.1:", port)));
  ASSERT_TRUE(worker.ok()) << worker.status();
  Running running(worker->get());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // several failed tries
  EXPECT_EQ((*worker)->stats().registrations, 0);

  FakeWorkerService service;
  FakeServer server(&service, port);
  ASSERT_TRUE(server.ok()) << "port " << port << " was taken meanwhile";
  EXPECT_TRUE(WaitUntil([&] { return !service.seen().take_batch_ids.empty(); }));
  EXPECT_TRUE(running.Finish().ok());
  EXPECT_EQ((*worker)->stats().registrations, 1);
}

TEST_F(RemoteWorkerTest, AWrongTokenIsFatalAndATokenFilesNewlineIsDropped) {
  FakeWorkerService service;
  service.required_token = kToken;
  FakeServer server(&service);
  ASSERT_TRUE(server.ok());

  WorkerOptions wrong = FastOptions(server.address());
  wrong.token = "not-the-token-0123456789";
  absl::StatusOr<std::unique_ptr<RemoteWorker>> refused = RemoteWorker::Create(wrong);
  ASSERT_TRUE(refused.ok()) << refused.status();
  std::atomic<bool> stop{false};
  const absl::Status status = (*refused)->Run(stop);  // returns by itself
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("refused this worker"), std::string::npos) << status;
  EXPECT_NE(status.message().find("--token"), std::string::npos) << status;

  WorkerOptions right = FastOptions(server.address());
  right.token = absl::StrCat("  ", kToken, "\n");
  absl::StatusOr<std::unique_ptr<RemoteWorker>> accepted = RemoteWorker::Create(right);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  Running running(accepted->get());
  EXPECT_TRUE(WaitUntil([&] { return !service.seen().take_batch_ids.empty(); }));
  EXPECT_TRUE(running.Finish().ok());

  WorkerOptions control = FastOptions(server.address());
  control.token = "bad\001token";
  EXPECT_EQ(RemoteWorker::Create(control).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RemoteWorkerTest, SpeaksMutualTls) {
  const testing::TestCa ca;
  const testing::PemPair server_pair = ca.Issue("mltuned", {"127.0.0.1"});
  const testing::PemPair client_pair = ca.Issue("worker");
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = ca.cert();
  ssl.pem_key_cert_pairs.push_back({server_pair.key, server_pair.cert});
  FakeWorkerService service;
  FakeServer server(&service, 0, grpc::SslServerCredentials(ssl));
  ASSERT_TRUE(server.ok());

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("mltune_worker_tls_", getpid());
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  WorkerOptions o = FastOptions(server.address());
  o.ca_file = write("ca.pem", ca.cert());
  o.cert_file = write("worker.pem", client_pair.cert);
  o.key_file = write("worker.key", client_pair.key);
  absl::StatusOr<std::unique_ptr<RemoteWorker>> worker = RemoteWorker::Create(o);
  ASSERT_TRUE(worker.ok()) << worker.status();
  {
    Running running(worker->get());
    EXPECT_TRUE(WaitUntil([&] { return !service.seen().take_batch_ids.empty(); }));
    EXPECT_TRUE(running.Finish().ok());
  }

  o.key_file = (dir / "missing.key").string();
  const absl::Status missing = RemoteWorker::Create(o).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("--key"), std::string::npos) << missing;
  std::filesystem::remove_all(dir);
}

TEST_F(RemoteWorkerTest, ResolveAllListsEveryAddressOfAName) {
  absl::StatusOr<std::vector<std::string>> local = ResolveAll("localhost:8470");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_NE(std::find(local->begin(), local->end(), "127.0.0.1:8470"), local->end());
  EXPECT_TRUE(absl::IsUnavailable(ResolveAll("no-such-host.invalid:1").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ResolveAll("no-port").status()));
}

// A worker given two daemons serves both; given a name to resolve, every address of it, each loop
// to check the daemon's certificate against the name.
TEST_F(RemoteWorkerTest, ServeAllServesEveryDaemonAndEveryAddressOfAName) {
  FakeWorkerService a, b;
  FakeServer server_a(&a), server_b(&b);
  ASSERT_TRUE(server_a.ok() && server_b.ok());
  auto stop = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::string> lines;
  std::mutex mu;
  auto announce = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  };
  std::future<absl::Status> served = std::async(std::launch::async, [&] {
    return ServeAll(FastOptions(""), {server_a.address(), server_b.address()}, false, 0.2, *stop,
                    announce);
  });
  EXPECT_TRUE(WaitUntil([&] {
    return !a.seen().take_batch_ids.empty() && !b.seen().take_batch_ids.empty();
  })) << "not both daemons served";
  *stop = true;
  ASSERT_EQ(served.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(served.get().ok());

  // localhost:PORT resolves to 127.0.0.1 (and perhaps ::1, where nothing listens: retried).
  FakeWorkerService c;
  FakeServer server_c(&c);
  ASSERT_TRUE(server_c.ok());
  *stop = false;
  served = std::async(std::launch::async, [&] {
    return ServeAll(FastOptions(""), {absl::StrCat("localhost:", server_c.port())}, true, 0.2,
                    *stop, announce);
  });
  EXPECT_TRUE(WaitUntil([&] { return !c.seen().take_batch_ids.empty(); }))
      << "the resolved address was not served";
  *stop = true;
  ASSERT_EQ(served.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(served.get().ok());
  std::lock_guard<std::mutex> lock(mu);
  bool named = false;
  for (const std::string& line : lines) {
    named |=
        line.find(absl::StrCat("127.0.0.1:", server_c.port(), " (localhost)")) != std::string::npos;
  }
  EXPECT_TRUE(named) << "no loop for 127.0.0.1 checking the name localhost";
}

TEST_F(RemoteWorkerTest, TargetsAreTheCpuAndAGpuThatIsThere) {
  EXPECT_TRUE(CheckTarget("cpu").ok());
  EXPECT_TRUE(CheckTarget("gpu").ok());
  WorkerOptions o = FastOptions("127.0.0.1:1");
  o.target = "gpu";
  // Without a GPU (this machine's case in CI) a gpu worker says so; with one it serves it.
  absl::StatusOr<std::unique_ptr<RemoteWorker>> probed = RemoteWorker::Create(o);
  if (backends::gpu::AttachedDevice().ok()) {
    ASSERT_TRUE(probed.ok()) << probed.status();
    EXPECT_EQ((*probed)->device(), backends::gpu::AttachedDevice()->Key());
  } else {
    EXPECT_EQ(probed.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(probed.status().message().find("no GPU here"), std::string::npos) << probed.status();
  }
  // A claimed architecture (tests, with the emulator as the runner) registers as that device.
  o.gpu_arch = "sm_90";
  absl::StatusOr<std::unique_ptr<RemoteWorker>> claimed = RemoteWorker::Create(o);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_EQ((*claimed)->device(), backends::gpu::DescriptorForArch("sm_90")->Key());
  o.target = "tpu";
  EXPECT_EQ(RemoteWorker::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mltune::worker
