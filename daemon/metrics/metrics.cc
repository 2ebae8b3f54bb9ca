#include "daemon/metrics/metrics.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "daemon/metrics/http_server.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

#ifndef MLTUNE_VERSION
#define MLTUNE_VERSION "0.1.0"
#endif

namespace mltune::daemon {
namespace {

// Bucket bounds in a 1-2.5-5 series (roughly exponential, but readable in `le` labels and
// dashboards; prometheus-cpp 1.0.1 has no exponential helper anyway).
// Requests: 50 us .. 60 s. A cached lookup is tens of microseconds; a synchronous tune can take
// most of a minute.
const prometheus::Histogram::BucketBoundaries& RequestBuckets() {
  static const auto* const kBounds = new prometheus::Histogram::BucketBoundaries{
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05,
      0.1,   0.25,   0.5,    1,      2.5,  5,      10,   30,   60};
  return *kBounds;
}

// Jobs: 10 ms (a cache hit answered as a job) .. 2 h (a large search budget); above a minute
// the bounds follow wall-clock units so p95 panels read naturally.
const prometheus::Histogram::BucketBoundaries& JobBuckets() {
  static const auto* const kBounds = new prometheus::Histogram::BucketBoundaries{
      0.01, 0.025, 0.05, 0.1, 0.25, 0.5,  1,    2.5,  5,   10,
      30,   60,    120,  300, 600,  1200, 1800, 3600, 7200};
  return *kBounds;
}

// Key for the per-label-set caches: label values joined by a byte that cannot occur in the
// values we are given in practice (NUL), so ("a", "bc") and ("ab", "c") differ.
std::string CacheKey(std::initializer_list<std::string_view> values) {
  std::string key;
  for (std::string_view v : values) {
    key.append(v);
    key.push_back('\0');
  }
  return key;
}

// Splits "HOST:PORT" at the last colon ("[::1]:0" keeps its brackets in HOST).
absl::Status SplitHostPort(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return absl::InvalidArgumentError("metrics listen address \"" + listen + "\" is not HOST:PORT");
  }
  *host = listen.substr(0, colon);
  if (!absl::SimpleAtoi(listen.substr(colon + 1), port) || *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError("metrics listen address \"" + listen +
                                      "\" has an invalid port");
  }
  return absl::OkStatus();
}

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  // Families are owned by the registry; the references stay valid as long as it lives.
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("mltune_requests_total")
          .Help("RPCs handled by mltuned, by method and gRPC status code.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& request_duration =
      prometheus::BuildHistogram()
          .Name("mltune_request_duration_seconds")
          .Help("Time mltuned spent handling an RPC, by method.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& queue_depth_family =
      prometheus::BuildGauge()
          .Name("mltune_queue_depth")
          .Help("Jobs waiting in mltuned's queue.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& jobs_running_family =
      prometheus::BuildGauge()
          .Name("mltune_jobs_running")
          .Help("Jobs mltuned is running now.")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& job_duration =
      prometheus::BuildHistogram()
          .Name("mltune_job_duration_seconds")
          .Help("Run time of finished jobs, by task and final state.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& cache_hits =
      prometheus::BuildCounter()
          .Name("mltune_cache_hits_total")
          .Help("Requests answered from the results cache, by task.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& cache_misses =
      prometheus::BuildCounter()
          .Name("mltune_cache_misses_total")
          .Help("Requests the results cache could not answer, by task.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& candidates =
      prometheus::BuildCounter()
          .Name("mltune_candidates_evaluated_total")
          .Help("Candidates scored by search, by task, strategy and worker.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& winners_checked =
      prometheus::BuildCounter()
          .Name("mltune_winners_checked_total")
          .Help("Search winners measured again against the defaults, by task.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& winners_reverted =
      prometheus::BuildCounter()
          .Name("mltune_winners_reverted_total")
          .Help("Search winners set back to the defaults when measured again, by task.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& measurements_logged =
      prometheus::BuildCounter()
          .Name("mltune_measurements_logged_total")
          .Help("Rows appended to the measurement log (training data), by log task and target.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& trainings =
      prometheus::BuildCounter()
          .Name("mltune_cost_model_trainings_total")
          .Help("Cost model retrainings the daemon ran, by model and outcome.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& training_seconds =
      prometheus::BuildCounter()
          .Name("mltune_cost_model_training_seconds_total")
          .Help("Time the daemon's cost model trainers ran, by model.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& trainer_running_family =
      prometheus::BuildGauge()
          .Name("mltune_cost_model_trainer_running")
          .Help("1 while the daemon retrains a cost model, else 0.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& new_rows =
      prometheus::BuildGauge()
          .Name("mltune_cost_model_new_rows")
          .Help("Training rows logged for a cost model since its newest version, as last counted.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& build_info =
      prometheus::BuildGauge()
          .Name("mltune_build_info")
          .Help("Always 1; the version label says which mltuned is running.")
          .Register(*registry);

  // Unlabelled gauges: created once so they are exported (as 0) before the first update.
  prometheus::Gauge& queue_depth = queue_depth_family.Add({});
  prometheus::Gauge& jobs_running = jobs_running_family.Add({});
  prometheus::Gauge& trainer_running = trainer_running_family.Add({});

  // Family::Add hashes the label map under the family's lock and, for histograms, allocates a
  // fresh bucket vector even when the series exists; these caches make the hot path one
  // string-keyed lookup. Series are never removed, so the pointers stay valid.
  std::mutex mu;
  std::unordered_map<std::string, prometheus::Counter*> request_counters;
  std::unordered_map<std::string, prometheus::Histogram*> request_histograms;
  std::unordered_map<std::string, prometheus::Histogram*> job_histograms;
  std::unordered_map<std::string, prometheus::Counter*> hit_counters;
  std::unordered_map<std::string, prometheus::Counter*> miss_counters;
  std::unordered_map<std::string, prometheus::Counter*> candidate_counters;
  std::unordered_map<std::string, prometheus::Counter*> checked_counters;
  std::unordered_map<std::string, prometheus::Counter*> reverted_counters;
  std::unordered_map<std::string, prometheus::Counter*> logged_counters;
  std::unordered_map<std::string, prometheus::Counter*> training_counters;
  std::unordered_map<std::string, prometheus::Counter*> training_second_counters;
  std::unordered_map<std::string, prometheus::Gauge*> new_row_gauges;

  // Declared last, so destroyed first: no scrape can run while the families go away.
  std::unique_ptr<MetricsHttpServer> server;
  std::string address;
  int port = 0;

  Impl() { build_info.Add({{"version", MLTUNE_VERSION}}).Set(1); }

  // Returns the series for `labels`, creating it on first use. `key` identifies the label set.
  template <typename T, typename... Args>
  T& Series(std::unordered_map<std::string, T*>& cache, prometheus::Family<T>& family,
            std::string key, const prometheus::Labels& labels, Args&&... args) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return *it->second;
    T& series = family.Add(labels, std::forward<Args>(args)...);
    cache.emplace(std::move(key), &series);
    return series;
  }
};

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(const std::string& listen) {
  auto impl = std::make_unique<Impl>();
  if (!listen.empty()) {
    std::string host;
    int requested_port = 0;
    absl::Status split = SplitHostPort(listen, &host, &requested_port);
    if (!split.ok()) return split;
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
        MetricsHttpServer::Start(host, requested_port, [registry = impl->registry] {
          return prometheus::TextSerializer().Serialize(registry->Collect());
        });
    if (!server.ok()) return server.status();
    impl->server = *std::move(server);
    impl->port = impl->server->port();
    impl->address = host + ":" + std::to_string(impl->port);
  }
  return std::unique_ptr<Metrics>(new Metrics(std::move(impl)));
}

Metrics::Metrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Metrics::~Metrics() = default;

std::string Metrics::address() const { return impl_->address; }
int Metrics::port() const { return impl_->port; }

void Metrics::ObserveRequest(std::string_view method, std::string_view code, double seconds) {
  impl_
      ->Series(impl_->request_counters, impl_->requests, CacheKey({method, code}),
               {{"method", std::string(method)}, {"code", std::string(code)}})
      .Increment();
  impl_
      ->Series(impl_->request_histograms, impl_->request_duration, CacheKey({method}),
               {{"method", std::string(method)}}, RequestBuckets())
      .Observe(seconds);
}

void Metrics::SetQueueDepth(int64_t depth) { impl_->queue_depth.Set(static_cast<double>(depth)); }

void Metrics::SetJobsRunning(int64_t running) {
  impl_->jobs_running.Set(static_cast<double>(running));
}

void Metrics::ObserveJob(std::string_view task, std::string_view state, double seconds) {
  impl_
      ->Series(impl_->job_histograms, impl_->job_duration, CacheKey({task, state}),
               {{"task", std::string(task)}, {"state", std::string(state)}}, JobBuckets())
      .Observe(seconds);
}

void Metrics::CacheHit(std::string_view task) {
  impl_
      ->Series(impl_->hit_counters, impl_->cache_hits, CacheKey({task}),
               {{"task", std::string(task)}})
      .Increment();
}

void Metrics::CacheMiss(std::string_view task) {
  impl_
      ->Series(impl_->miss_counters, impl_->cache_misses, CacheKey({task}),
               {{"task", std::string(task)}})
      .Increment();
}

void Metrics::CandidatesEvaluated(std::string_view task, std::string_view strategy,
                                  std::string_view worker, int64_t count) {
  // Counters only go up; a negative count would be a caller bug, not a reason to throw.
  if (count <= 0) return;
  impl_
      ->Series(impl_->candidate_counters, impl_->candidates, CacheKey({task, strategy, worker}),
               {{"task", std::string(task)},
                {"strategy", std::string(strategy)},
                {"worker", std::string(worker)}})
      .Increment(static_cast<double>(count));
}

void Metrics::WinnersConfirmed(std::string_view task, int64_t checked, int64_t reverted) {
  // Both series appear with the first check, so a reverted share reads 0 rather than missing.
  if (checked <= 0 && reverted <= 0) return;
  const std::string key = CacheKey({task});
  const prometheus::Labels labels = {{"task", std::string(task)}};
  impl_->Series(impl_->checked_counters, impl_->winners_checked, key, labels)
      .Increment(static_cast<double>(std::max<int64_t>(0, checked)));
  impl_->Series(impl_->reverted_counters, impl_->winners_reverted, key, labels)
      .Increment(static_cast<double>(std::max<int64_t>(0, reverted)));
}

void Metrics::MeasurementsLogged(std::string_view task, std::string_view target, int64_t count) {
  if (count <= 0) return;
  impl_
      ->Series(impl_->logged_counters, impl_->measurements_logged, CacheKey({task, target}),
               {{"task", std::string(task)}, {"target", std::string(target)}})
      .Increment(static_cast<double>(count));
}

void Metrics::CostModelTrained(std::string_view model, std::string_view outcome, double seconds) {
  impl_
      ->Series(impl_->training_counters, impl_->trainings, CacheKey({model, outcome}),
               {{"model", std::string(model)}, {"outcome", std::string(outcome)}})
      .Increment();
  impl_
      ->Series(impl_->training_second_counters, impl_->training_seconds, CacheKey({model}),
               {{"model", std::string(model)}})
      .Increment(std::max(0.0, seconds));
}

void Metrics::SetCostModelTrainerRunning(bool running) {
  impl_->trainer_running.Set(running ? 1 : 0);
}

void Metrics::SetCostModelNewRows(std::string_view model, int64_t rows) {
  impl_
      ->Series(impl_->new_row_gauges, impl_->new_rows, CacheKey({model}),
               {{"model", std::string(model)}})
      .Set(static_cast<double>(rows));
}

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

}  // namespace mltune::daemon
