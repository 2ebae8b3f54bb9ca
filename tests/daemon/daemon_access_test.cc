// mltuned's access control end to end: a real daemon serving TLS (and mutual TLS) with bearer
// tokens, certificates from a CA made at test time, the real client library. Roles, unknown and
// missing tokens, per-token queued-job limits, plaintext against TLS, and the refusal to serve a
// non-loopback address without TLS and tokens.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "client/rpc_client.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "gtest/gtest.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/test_ca.h"

namespace mltune::daemon {
namespace {

using client::Client;
using client::ClientOptions;
using client::SubmitRequest;
using testing::MustStart;
using testing::TempDir;
using testing::TestConfig;

constexpr char kSubmitToken[] = "ci-0123456789abcdef-submit";
constexpr char kReadToken[] = "dash-0123456789abcdef-read";
constexpr char kAdminToken[] = "ops-0123456789abcdef-admin";

std::string Write(const std::filesystem::path& dir, const std::string& name,
                  const std::string& text) {
  const std::filesystem::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

class DaemonAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = ca_.Issue("mltuned", {"127.0.0.1", "localhost"});
    client_ = ca_.Issue("a client");
    ca_file_ = Write(dir_.path(), "ca.pem", ca_.cert());
    Write(dir_.path(), "server.pem", server_.cert);
    Write(dir_.path(), "server.key", server_.key);
    cert_file_ = Write(dir_.path(), "client.pem", client_.cert);
    key_file_ = Write(dir_.path(), "client.key", client_.key);
    Write(dir_.path(), "tokens",
          absl::StrCat("ci ", kSubmitToken, " submit,read max_queued=1\ndash ", kReadToken,
                       " read\nops ", kAdminToken, " admin\n"));
  }

  DaemonConfig Config(bool mutual) {
    DaemonConfig c = TestConfig(dir_.path());
    c.worker_threads = 1;
    c.tls_cert = (dir_.path() / "server.pem").string();
    c.tls_key = (dir_.path() / "server.key").string();
    if (mutual) c.tls_client_ca = ca_file_;
    c.tokens_file = (dir_.path() / "tokens").string();
    return c;
  }

  std::unique_ptr<Client> Connect(const std::string& token, bool with_cert = false,
                                  bool tls = true) {
    ClientOptions o;
    o.call_timeout_seconds = 10;
    if (tls) o.ca_file = ca_file_;
    if (with_cert) {
      o.cert_file = cert_file_;
      o.key_file = key_file_;
    }
    o.token = token;
    return Client::Connect(daemon_->address(), o);
  }

  TempDir dir_;
  mltune::testing::TestCa ca_;
  mltune::testing::PemPair server_, client_;
  std::string ca_file_, cert_file_, key_file_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonAccessTest, TokensAndRolesDecideEachCallOverTls) {
  daemon_ = MustStart(Config(/*mutual=*/false));
  ASSERT_NE(daemon_, nullptr);
  EXPECT_NE(daemon_->access_summary().find("TLS, 3 bearer token(s)"), std::string::npos)
      << daemon_->access_summary();

  absl::StatusOr<std::vector<client::WorkerInfo>> workers = Connect(kReadToken)->ListWorkers();
  EXPECT_TRUE(workers.ok()) << workers.status();

  absl::StatusOr<std::vector<client::WorkerInfo>> anonymous = Connect("")->ListWorkers();
  EXPECT_TRUE(absl::IsUnauthenticated(anonymous.status())) << anonymous.status();
  EXPECT_NE(anonymous.status().message().find("ListWorkers needs a bearer token"),
            std::string::npos);
  EXPECT_TRUE(absl::IsUnauthenticated(Connect("not-a-token-0123456789")->GetStats().status()));

  SubmitRequest request;
  request.graph = testing::ExampleHlo();
  request.graph_name = "example.hlo";
  request.budget.steps = 5;
  absl::StatusOr<client::SubmitResponse> refused = Connect(kReadToken)->Submit(request);
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status())) << refused.status();
  EXPECT_EQ(refused.status().message(),
            "token 'dash' lacks the role 'submit' that SubmitCompile needs");

  // ci may hold one job queued or running: a second distinct one waits for it.
  SubmitRequest slow;
  slow.graph = testing::SlowHlo();
  slow.graph_name = "slow.hlo";
  slow.strategy = "random";
  slow.budget.steps = 50'000'000;
  slow.budget.seconds = 120;
  std::unique_ptr<Client> ci = Connect(kSubmitToken);
  absl::StatusOr<client::SubmitResponse> first = ci->Submit(slow);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<client::SubmitResponse> second = ci->Submit(request);
  EXPECT_TRUE(absl::IsResourceExhausted(second.status())) << second.status();
  EXPECT_NE(second.status().message().find("token 'ci' has 1 jobs queued or running"),
            std::string::npos)
      << second.status();

  // Cancelling is admin's.
  absl::StatusOr<client::JobInfo> not_yours = ci->Cancel(first->job_id);
  EXPECT_TRUE(absl::IsPermissionDenied(not_yours.status())) << not_yours.status();
  absl::StatusOr<client::JobInfo> cancelled = Connect(kAdminToken)->Cancel(first->job_id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  // Once it has ended, ci's place is free again.
  absl::StatusOr<client::JobInfo> ended = ci->Watch(first->job_id);
  ASSERT_TRUE(ended.ok()) << ended.status();
  absl::StatusOr<client::SubmitResponse> third = ci->Submit(request);
  EXPECT_TRUE(third.ok()) << third.status();

  // A plaintext client reaches no TLS server.
  absl::StatusOr<std::vector<client::WorkerInfo>> plain =
      Connect(kReadToken, false, /*tls=*/false)->ListWorkers();
  EXPECT_TRUE(absl::IsUnavailable(plain.status())) << plain.status();
}

// Storing a graph is a submitter's: a read-only token cannot upload one, but finds one that a
// submitter uploaded by its hash, without sending it.
TEST_F(DaemonAccessTest, OnlySubmittersUploadGraphsAndReadersFindThemByHash) {
  daemon_ = MustStart(Config(/*mutual=*/false));
  ASSERT_NE(daemon_, nullptr);
  const std::string large = testing::SlowHlo(5000);  // over the 1 MiB sent inline
  ASSERT_GT(static_cast<int64_t>(large.size()), client::kInlineGraphBytes);
  client::LookupRequest lookup;
  lookup.graph = large;
  lookup.graph_name = "large.hlo";
  absl::StatusOr<client::LookupResponse> refused = Connect(kReadToken)->Lookup(lookup);
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status())) << refused.status();
  EXPECT_EQ(refused.status().message(),
            "token 'dash' lacks the role 'submit' that UploadGraph needs");

  absl::StatusOr<client::GraphRef> uploaded = Connect(kSubmitToken)->UploadGraph(large);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  EXPECT_EQ(uploaded->bytes_sent, static_cast<int64_t>(large.size()));
  absl::StatusOr<client::LookupResponse> found = Connect(kReadToken)->Lookup(lookup);
  ASSERT_TRUE(found.ok()) << found.status();  // a miss: nothing was tuned, but the graph is read
  EXPECT_EQ(found->fingerprint.size(), 64u);
  EXPECT_TRUE(found->results.empty());
}

TEST_F(DaemonAccessTest, MutualTlsTurnsAwayClientsWithoutACertificate) {
  daemon_ = MustStart(Config(/*mutual=*/true));
  ASSERT_NE(daemon_, nullptr);
  EXPECT_NE(daemon_->access_summary().find("mutual TLS"), std::string::npos);
  absl::StatusOr<std::vector<client::WorkerInfo>> with =
      Connect(kReadToken, /*with_cert=*/true)->ListWorkers();
  EXPECT_TRUE(with.ok()) << with.status();
  absl::StatusOr<std::vector<client::WorkerInfo>> without = Connect(kReadToken)->ListWorkers();
  EXPECT_TRUE(absl::IsUnavailable(without.status())) << without.status();
}

TEST(DaemonAccessConfigTest, ANonLoopbackListenNeedsTlsAndTokensOrInsecure) {
  DaemonConfig c;
  c.listen = "0.0.0.0:8470";
  absl::Status refused = ValidateConfig(c);
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(refused.message().find("is not a loopback address"), std::string::npos) << refused;
  c.tls_cert = "server.pem";
  c.tls_key = "server.key";
  EXPECT_FALSE(ValidateConfig(c).ok());  // TLS without tokens
  c.tokens_file = "tokens";
  EXPECT_TRUE(ValidateConfig(c).ok());
  DaemonConfig insecure;
  insecure.listen = "[::]:8470";
  insecure.insecure = true;
  EXPECT_TRUE(ValidateConfig(insecure).ok());
  for (const char* loopback : {"127.0.0.1:0", "localhost:8470", "[::1]:8470", "127.0.0.2:1"}) {
    DaemonConfig l;
    l.listen = loopback;
    EXPECT_TRUE(ValidateConfig(l).ok()) << loopback;
  }
  DaemonConfig half;
  half.tls_cert = "server.pem";
  EXPECT_FALSE(ValidateConfig(half).ok());  // a certificate without its key
}

TEST(DaemonAccessConfigTest, UnreadableCredentialsAreNamed) {
  TempDir dir;
  DaemonConfig c = TestConfig(dir.path());
  c.tls_cert = (dir.path() / "missing.pem").string();
  c.tls_key = c.tls_cert;
  absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Start(c);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("--tls-cert="), std::string::npos) << d.status();
  ClientOptions o;
  o.ca_file = (dir.path() / "missing-ca.pem").string();
  absl::Status s = Client::Connect("127.0.0.1:1", o)->GetStats().status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("cannot read the CA file (--ca)"), std::string::npos) << s;
}

}  // namespace
}  // namespace mltune::daemon
