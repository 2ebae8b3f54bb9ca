// The shared job queue's throughput: daemons (each its own Store, so its own connections) claim
// and finish jobs from one store as fast as they can, as mltuned's workers do between searches.
// Reports jobs per second and the ClaimJob latency (p50, p99), for comparing one daemon with two
// on one PostgreSQL. scripts/bench_job_queue starts a throwaway server and runs the rows.
//   build/release/bench/job_queue --store URL [--daemons 2] [--threads 2] [--jobs 2000]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "storage/store.h"

namespace {

using mltune::storage::JobRecord;
using mltune::storage::JobState;
using mltune::storage::Store;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The shared job queue's jobs/s and claim latency with several daemons"};
  std::string url;
  int daemons = 1, threads = 2, jobs = 2000;
  app.add_option("--store", url, "The store (a postgresql:// URL or a SQLite file)")->required();
  app.add_option("--daemons", daemons, "Daemons, each with its own Store")->capture_default_str();
  app.add_option("--threads", threads, "Worker threads per daemon")->capture_default_str();
  app.add_option("--jobs", jobs, "Jobs queued, then claimed and finished")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::unique_ptr<Store>> stores;
  for (int d = 0; d < daemons; ++d) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url);
    if (!store.ok()) {
      std::fprintf(stderr, "job_queue: %s\n", std::string(store.status().message()).c_str());
      return 1;
    }
    stores.push_back(*std::move(store));
  }
  for (int i = 0; i < jobs; ++i) {
    JobRecord job;
    job.key = {absl::StrCat("fp", i), "pass-order", "cpu", "1"};
    job.budget_steps = 100;
    job.strategy = "beam";
    job.request = std::string(512, 'r');  // about a small graph's request
    job.dedup_key = absl::StrCat("bench-", i);
    if (absl::Status s = stores[0]->SubmitJob(job, 0).status(); !s.ok()) {
      std::fprintf(stderr, "job_queue: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }

  std::mutex mu;
  std::vector<double> claim_ms;
  std::atomic<int> finished{0}, errors{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (int d = 0; d < daemons; ++d) {
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, d, t] {
        const std::string owner = absl::StrCat("daemon-", d, "-", t);
        std::vector<double> mine;
        while (true) {
          const Clock::time_point before = Clock::now();
          absl::StatusOr<std::optional<JobRecord>> claimed = stores[d]->ClaimJob(owner, 30'000, 3);
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - before).count());
          if (!claimed.ok()) {
            ++errors;
            continue;
          }
          if (!claimed->has_value()) break;
          absl::Status done =
              stores[d]->UpdateJobState((*claimed)->id, JobState::kDone, 1, 1.0, "", owner);
          if (done.ok())
            ++finished;
          else
            ++errors;
        }
        std::lock_guard<std::mutex> lock(mu);
        claim_ms.insert(claim_ms.end(), mine.begin(), mine.end());
      });
    }
  }
  for (std::thread& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "daemons %d x %d threads: %d jobs in %.2f s = %.0f jobs/s; claim p50 %.2f ms, "
      "p99 %.2f ms; errors %d\n",
      daemons, threads, finished.load(), seconds, finished.load() / seconds,
      Percentile(claim_ms, 0.5), Percentile(claim_ms, 0.99), errors.load());
  return finished.load() == jobs && errors.load() == 0 ? 0 : 1;
}
