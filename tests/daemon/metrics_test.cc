// mltune_metrics: the exposition's names, labels and values; a real HTTP scrape of the served
// endpoint; bind failures; and, when installed, promtool's opinion of the exposition.
#include "daemon/metrics/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/http_get.h"

namespace mltune::daemon {
namespace {

using ::mltune::testing::Body;
using ::mltune::testing::HttpGet;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::unique_ptr<Metrics> Unserved() {
  auto metrics = Metrics::Create("");
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  return std::move(metrics).value();
}

TEST(MetricsTest, UnservedHasNoAddress) {
  auto metrics = Unserved();
  EXPECT_EQ(metrics->address(), "");
  EXPECT_EQ(metrics->port(), 0);
}

TEST(MetricsTest, GaugesAndBuildInfoAreExportedFromTheStart) {
  auto metrics = Unserved();
  std::string text = metrics->Serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE mltune_queue_depth gauge\nmltune_queue_depth 0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE mltune_jobs_running gauge\nmltune_jobs_running 0\n"));
  EXPECT_THAT(text, HasSubstr("mltune_build_info{version=\"0.1.0\"} 1\n"));

  metrics->SetQueueDepth(7);
  metrics->SetJobsRunning(3);
  text = metrics->Serialize();
  EXPECT_THAT(text, HasSubstr("\nmltune_queue_depth 7\n"));
  EXPECT_THAT(text, HasSubstr("\nmltune_jobs_running 3\n"));
  metrics->SetQueueDepth(0);
  EXPECT_THAT(metrics->Serialize(), HasSubstr("\nmltune_queue_depth 0\n"));
}

TEST(MetricsTest, RequestsCountByMethodAndCodeAndTimeByMethod) {
  auto metrics = Unserved();
  metrics->ObserveRequest("Compile", "OK", 0.002);
  metrics->ObserveRequest("Compile", "OK", 0.003);
  metrics->ObserveRequest("Compile", "INVALID_ARGUMENT", 0.0001);
  metrics->ObserveRequest("GetJob", "NOT_FOUND", 90);  // beyond the last bound: +Inf only
  const std::string text = metrics->Serialize();

  EXPECT_THAT(text, HasSubstr("# TYPE mltune_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("mltune_requests_total{code=\"OK\",method=\"Compile\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("mltune_requests_total{code=\"INVALID_ARGUMENT\",method=\"Compile\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mltune_requests_total{code=\"NOT_FOUND\",method=\"GetJob\"} 1\n"));

  EXPECT_THAT(text, HasSubstr("# TYPE mltune_request_duration_seconds histogram\n"));
  // The three Compile calls share one series whatever their code.
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_count{method=\"Compile\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_sum{method=\"Compile\"} 0.0051"));
  // Buckets are cumulative: 0.1 ms falls in le=0.0001 (bounds are inclusive upper limits), the
  // 2 ms and 3 ms calls join at le=0.005.
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_bucket{method=\"Compile\","
                              "le=\"5e-05\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_bucket{method=\"Compile\","
                              "le=\"0.0025\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_bucket{method=\"Compile\","
                              "le=\"0.005\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_bucket{method=\"Compile\","
                              "le=\"60\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_bucket{method=\"GetJob\","
                              "le=\"60\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_bucket{method=\"GetJob\","
                              "le=\"+Inf\"} 1\n"));
}

TEST(MetricsTest, JobsCacheAndCandidates) {
  auto metrics = Unserved();
  metrics->ObserveJob("pass_order", "done", 42);
  metrics->ObserveJob("pass_order", "failed", 0.5);
  metrics->ObserveJob("pass_order", "done", 3000);
  metrics->CacheHit("pass_order");
  metrics->CacheHit("pass_order");
  metrics->CacheMiss("pass_order");
  metrics->CacheMiss("tiling");
  metrics->CandidatesEvaluated("pass_order", "beam", "local-0", 128);
  metrics->CandidatesEvaluated("pass_order", "beam", "local-0", 72);
  metrics->CandidatesEvaluated("pass_order", "annealing", "local-1", 5);
  metrics->CandidatesEvaluated("pass_order", "annealing", "local-1", 0);   // no-op
  metrics->CandidatesEvaluated("pass_order", "annealing", "local-1", -3);  // ignored
  const std::string text = metrics->Serialize();

  EXPECT_THAT(text, HasSubstr("# TYPE mltune_job_duration_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_count{state=\"done\","
                              "task=\"pass_order\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_sum{state=\"done\","
                              "task=\"pass_order\"} 3042\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_bucket{state=\"done\","
                              "task=\"pass_order\",le=\"60\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_bucket{state=\"done\","
                              "task=\"pass_order\",le=\"3600\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_bucket{state=\"done\","
                              "task=\"pass_order\",le=\"7200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_bucket{state=\"failed\","
                              "task=\"pass_order\",le=\"0.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mltune_job_duration_seconds_bucket{state=\"failed\","
                              "task=\"pass_order\",le=\"0.01\"} 0\n"));

  EXPECT_THAT(text, HasSubstr("# TYPE mltune_cache_hits_total counter\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cache_hits_total{task=\"pass_order\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cache_misses_total{task=\"pass_order\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cache_misses_total{task=\"tiling\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("mltune_cache_hits_total{task=\"tiling\"}")));

  EXPECT_THAT(text, HasSubstr("# TYPE mltune_candidates_evaluated_total counter\n"));
  EXPECT_THAT(text, HasSubstr("mltune_candidates_evaluated_total{strategy=\"beam\","
                              "task=\"pass_order\",worker=\"local-0\"} 200\n"));
  EXPECT_THAT(text, HasSubstr("mltune_candidates_evaluated_total{strategy=\"annealing\","
                              "task=\"pass_order\",worker=\"local-1\"} 5\n"));
}

TEST(MetricsTest, WinnersCheckedAndRevertedAddUpPerTask) {
  auto metrics = Unserved();
  metrics->WinnersConfirmed("tile", 5, 2);
  metrics->WinnersConfirmed("tile", 3, 0);
  metrics->WinnersConfirmed("fusion", 0, 0);  // nothing checked: no series
  const std::string text = metrics->Serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE mltune_winners_checked_total counter\n"));
  EXPECT_THAT(text, HasSubstr("mltune_winners_checked_total{task=\"tile\"} 8\n"));
  EXPECT_THAT(text, HasSubstr("mltune_winners_reverted_total{task=\"tile\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("task=\"fusion\"")));
}

TEST(MetricsTest, LoggedMeasurementsAddUpPerTaskAndTarget) {
  auto metrics = Unserved();
  metrics->MeasurementsLogged("fusion-kernel-in-module", "cpu", 30);
  metrics->MeasurementsLogged("fusion-kernel-in-module", "cpu", 12);
  metrics->MeasurementsLogged("tile-kernel", "tpu-v4-core", 5);
  metrics->MeasurementsLogged("fusion", "cpu", 0);  // nothing logged: no series
  const std::string text = metrics->Serialize();
  EXPECT_THAT(text, HasSubstr("# TYPE mltune_measurements_logged_total counter\n"));
  EXPECT_THAT(text, HasSubstr("mltune_measurements_logged_total{target=\"cpu\","
                              "task=\"fusion-kernel-in-module\"} 42\n"));
  EXPECT_THAT(text, HasSubstr("mltune_measurements_logged_total{target=\"tpu-v4-core\","
                              "task=\"tile-kernel\"} 5\n"));
  EXPECT_THAT(text, Not(HasSubstr("task=\"fusion\"")));
}

TEST(MetricsTest, LabelValuesAreEscapedAndKeptApart) {
  auto metrics = Unserved();
  // Label sets that would collide if the per-label cache joined values naively.
  metrics->CandidatesEvaluated("a", "bc", "w", 1);
  metrics->CandidatesEvaluated("ab", "c", "w", 2);
  metrics->CacheHit("quote\"back\\slash\nnewline");
  const std::string text = metrics->Serialize();
  EXPECT_THAT(text, HasSubstr("{strategy=\"bc\",task=\"a\",worker=\"w\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("{strategy=\"c\",task=\"ab\",worker=\"w\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("mltune_cache_hits_total{task=\"quote\\\"back\\\\slash\\nnewline\"} 1\n"));
}

TEST(MetricsTest, ConcurrentUpdatesAreAllCounted) {
  auto metrics = Unserved();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    // Built outside the loop: "w" + std::to_string(...) trips GCC 12's -Wrestrict false positive.
    const std::string worker = (t % 2) ? "w1" : "w0";
    threads.emplace_back([&metrics, worker] {
      for (int i = 0; i < kPerThread; ++i) {
        metrics->ObserveRequest("Compile", (i % 2) ? "OK" : "UNAVAILABLE", 0.001);
        metrics->CandidatesEvaluated("pass_order", "random", worker, 1);
        if (i % 100 == 0) metrics->Serialize();  // scrapes race with updates
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const std::string text = metrics->Serialize();
  const int half = kThreads * kPerThread / 2;
  EXPECT_THAT(text, HasSubstr("mltune_requests_total{code=\"OK\",method=\"Compile\"} " +
                              std::to_string(half) + "\n"));
  EXPECT_THAT(text, HasSubstr("mltune_requests_total{code=\"UNAVAILABLE\",method=\"Compile\"} " +
                              std::to_string(half) + "\n"));
  EXPECT_THAT(text, HasSubstr("mltune_request_duration_seconds_count{method=\"Compile\"} " +
                              std::to_string(2 * half) + "\n"));
  EXPECT_THAT(text, HasSubstr("{strategy=\"random\",task=\"pass_order\",worker=\"w0\"} " +
                              std::to_string(half) + "\n"));
  EXPECT_THAT(text, HasSubstr("{strategy=\"random\",task=\"pass_order\",worker=\"w1\"} " +
                              std::to_string(half) + "\n"));
}

TEST(MetricsTest, ServesOnAnEphemeralPortOverPlainHttp) {
  auto created = Metrics::Create("127.0.0.1:0");
  ASSERT_TRUE(created.ok()) << created.status();
  auto metrics = std::move(created).value();
  ASSERT_GT(metrics->port(), 0);
  EXPECT_EQ(metrics->address(), "127.0.0.1:" + std::to_string(metrics->port()));

  metrics->ObserveRequest("Compile", "OK", 0.01);
  metrics->SetQueueDepth(4);
  metrics->CacheMiss("pass_order");

  const std::string response = HttpGet(metrics->port(), "/metrics");
  ASSERT_THAT(response, StartsWith("HTTP/1.1 200")) << response;
  EXPECT_THAT(response, HasSubstr("Content-Type: text/plain"));
  const std::string body = Body(response);
  EXPECT_THAT(body, HasSubstr("mltune_requests_total{code=\"OK\",method=\"Compile\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("\nmltune_queue_depth 4\n"));
  EXPECT_THAT(body, HasSubstr("mltune_cache_misses_total{task=\"pass_order\"} 1\n"));
  EXPECT_THAT(body, HasSubstr("mltune_build_info{version=\"0.1.0\"} 1\n"));
  // The served page is Serialize()'s (nothing changes between the two reads).
  for (const char* name : {"mltune_request_duration_seconds_bucket{method=\"Compile\",le=\"0.01\"}",
                           "mltune_jobs_running 0"}) {
    EXPECT_THAT(body, HasSubstr(name));
    EXPECT_THAT(metrics->Serialize(), HasSubstr(name));
  }
}

TEST(MetricsTest, ATakenPortIsUnavailable) {
  auto first = Metrics::Create("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = (*first)->address();

  auto second = Metrics::Create(taken);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_THAT(std::string(second.status().message()), HasSubstr(taken));

  // The first server is unaffected by the failed attempt.
  EXPECT_THAT(HttpGet((*first)->port(), "/metrics"), StartsWith("HTTP/1.1 200"));
}

TEST(MetricsTest, MalformedListenAddressIsInvalidArgument) {
  for (const char* listen : {"localhost", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000"}) {
    auto metrics = Metrics::Create(listen);
    ASSERT_FALSE(metrics.ok()) << listen;
    EXPECT_EQ(metrics.status().code(), absl::StatusCode::kInvalidArgument) << metrics.status();
  }
}

// Runs `promtool check metrics` on `text`; returns its exit status and sets `lint` to what it
// printed. promtool reads stdin only, so the text goes through a temp file.
int Promtool(const std::string& text, std::string* lint) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string stem = "mltune_metrics_test_" + std::to_string(getpid());
  const std::filesystem::path input = dir / (stem + ".prom");
  const std::filesystem::path output = dir / (stem + ".out");
  {
    std::ofstream out(input);
    out << text;
  }
  const std::string command =
      "promtool check metrics < " + input.string() + " > " + output.string() + " 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream in(output);
  lint->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove(input);
  std::filesystem::remove(output);
  return rc;
}

// promtool (Debian's `prometheus` package) parses the exposition the way the server does and
// lints names, units and help texts.
TEST(MetricsTest, CostModelTrainingsCountByModelAndOutcomeWithTheirTime) {
  auto metrics = Unserved();
  EXPECT_THAT(metrics->Serialize(), HasSubstr("mltune_cost_model_trainer_running 0\n"));
  metrics->SetCostModelTrainerRunning(true);
  EXPECT_THAT(metrics->Serialize(), HasSubstr("mltune_cost_model_trainer_running 1\n"));
  metrics->SetCostModelTrainerRunning(false);
  metrics->CostModelTrained("cost-model/tile-cpu", "stored", 30);
  metrics->CostModelTrained("cost-model/tile-cpu", "preempted", 2.5);
  metrics->CostModelTrained("cost-model/tile-cpu", "stored", 10);
  metrics->CostModelTrained("cost-model/fusion-cpu", "failed", 1);
  const std::string text = metrics->Serialize();
  EXPECT_THAT(text, HasSubstr("mltune_cost_model_trainer_running 0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE mltune_cost_model_trainings_total counter\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cost_model_trainings_total{model=\"cost-model/tile-cpu\","
                              "outcome=\"stored\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cost_model_trainings_total{model=\"cost-model/tile-cpu\","
                              "outcome=\"preempted\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cost_model_trainings_total{model=\"cost-model/fusion-cpu\","
                              "outcome=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mltune_cost_model_training_seconds_total{model=\"cost-model/"
                              "tile-cpu\"} 42.5\n"));
  metrics->SetCostModelNewRows("cost-model/tile-cpu", 700);
  metrics->SetCostModelNewRows("cost-model/tile-cpu", 12);  // a new version: counted again
  EXPECT_THAT(metrics->Serialize(),
              HasSubstr("mltune_cost_model_new_rows{model=\"cost-model/tile-cpu\"} 12\n"));
}

TEST(MetricsTest, PromtoolAcceptsTheExposition) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is not on PATH (Debian package `prometheus`); exposition not linted";
  }
  auto created = Metrics::Create("127.0.0.1:0");
  ASSERT_TRUE(created.ok()) << created.status();
  auto metrics = std::move(created).value();
  metrics->ObserveRequest("Compile", "OK", 0.002);
  metrics->ObserveJob("pass_order", "done", 12);
  metrics->CacheHit("pass_order");
  metrics->CacheMiss("pass_order");
  metrics->CandidatesEvaluated("pass_order", "beam", "local-0", 10);
  metrics->CostModelTrained("cost-model/tile-cpu", "stored", 12);

  std::string lint;
  // Lint findings make promtool exit non-zero, so an empty report is required too.
  EXPECT_EQ(Promtool(metrics->Serialize(), &lint), 0) << lint;
  EXPECT_EQ(lint, "");
  const std::string response = HttpGet(metrics->port(), "/metrics");
  ASSERT_THAT(response, StartsWith("HTTP/1.1 200")) << response;
  EXPECT_EQ(Promtool(Body(response), &lint), 0) << lint;
  EXPECT_EQ(lint, "");
}

}  // namespace
}  // namespace mltune::daemon
