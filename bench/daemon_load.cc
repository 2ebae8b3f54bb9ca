// Load on mltuned's cache path, the one every compile that hits the cache pays. (a) N concurrent
// clients (each its own Client and connection) call LookupCache on a cached graph: by fingerprint;
// with the whole graph, bytes the daemon has seen (a hash and its fingerprint cache); and with
// bytes that differ on every call (the daemon parses, verifies and fingerprints them). (b) Cached
// SubmitCompile round trips, one at a time. Starts its own mltuned child on ephemeral ports unless
// --server names a running daemon.
//
//   build/release/bench/daemon_load [--clients 8] [--seconds 10] [--server HOST:PORT]
//       [--daemon-args "--tls-cert ... --tokens ..."] [--ca CA.pem] [--token T]
// (scripts/bench_access runs it against a plaintext daemon and one serving TLS with tokens.)
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/daemon_process.h"
#include "client/rpc_client.h"

namespace {

using mltune::client::Client;
using Clock = std::chrono::steady_clock;

// How every client connects (--ca, --cert, --key, --token).
mltune::client::ClientOptions& ConnectOptions() {
  static mltune::client::ClientOptions options;
  return options;
}

#ifdef MLTUNE_DAEMON_PATH
constexpr char kDaemonPath[] = MLTUNE_DAEMON_PATH;
#else
constexpr char kDaemonPath[] = "";
#endif

// The targets the daemon is held to on a 2-core machine (docs/client.md).
constexpr double kTargetRate = 5000;  // lookups per second
constexpr double kTargetP99Ms = 5;

struct Row {
  std::string name;
  int clients = 0;
  int64_t calls = 0;
  int64_t errors = 0;
  double seconds = 0;
  std::vector<double> ms;  // latency of every successful call, sorted
  bool rate_target = true;
  std::string first_error;

  double rate() const { return seconds > 0 ? calls / seconds : 0; }
  double Percentile(double p) const {
    if (ms.empty()) return 0;
    const size_t i = std::min(ms.size() - 1, static_cast<size_t>(p * (ms.size() - 1) + 0.5));
    return ms[i];
  }
  bool Pass() const {
    return errors == 0 && !ms.empty() && Percentile(0.99) < kTargetP99Ms &&
           (!rate_target || rate() >= kTargetRate);
  }
};

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Runs `call` on `clients` threads, each with its own Client, for `seconds` after a short warm-up;
// `call(client, n)` makes one request and returns its status; `n` is unique across all calls.
template <typename Call>
Row Measure(const std::string& name, const std::string& address, int clients, double seconds,
            const Call& call) {
  Row row;
  row.name = name;
  row.clients = clients;
  std::vector<std::vector<double>> latencies(clients);
  std::vector<int64_t> errors(clients, 0);
  std::vector<std::string> first_error(clients);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start, stop;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Client> client = Client::Connect(address, ConnectOptions());
      (void)client->WaitForReady(10);
      int64_t n = int64_t{t} << 40;
      for (int i = 0; i < 20; ++i) (void)call(*client, n++);  // warm connection and caches
      latencies[t].reserve(1 << 16);
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      while (Clock::now() < stop) {
        const auto begin = Clock::now();
        absl::Status status = call(*client, n++);
        if (status.ok()) {
          latencies[t].push_back(MsSince(begin));
        } else if (errors[t]++ == 0) {
          first_error[t] = std::string(status.message());
        }
      }
    });
  }
  while (ready.load() < clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  start = Clock::now();
  stop =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (int t = 0; t < clients; ++t) {
    row.ms.insert(row.ms.end(), latencies[t].begin(), latencies[t].end());
    row.errors += errors[t];
    if (row.first_error.empty()) row.first_error = first_error[t];
  }
  row.calls = static_cast<int64_t>(row.ms.size());
  std::sort(row.ms.begin(), row.ms.end());
  return row;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Load on mltuned's cache path: concurrent LookupCache hits and cached SubmitCompile"};
  std::string server;
  std::string daemon_path = kDaemonPath;
  std::string graph_path = std::string(MLTUNE_SOURCE_DIR) + "/examples/mlp_train_step.hlo";
  int clients = 8;
  double seconds = 10;
  double submit_seconds = 3;
  int64_t budget = 200;
  bool omit_artifacts = false;
  app.add_option("--server", server, "Use this running mltuned instead of starting one");
  app.add_option("--mltuned", daemon_path, "The mltuned binary to start")->default_val(kDaemonPath);
  app.add_option("--graph", graph_path, "HLO graph to seed the cache with and look up");
  app.add_option("--clients", clients, "Concurrent lookup clients")->default_val(8);
  app.add_option("--seconds", seconds, "Seconds per lookup row")->default_val(10);
  app.add_option("--submit-seconds", submit_seconds, "Seconds of cached SubmitCompile calls")
      ->default_val(3);
  app.add_option("--budget", budget, "Search budget of the seeding job")->default_val(200);
  app.add_flag("--omit-artifacts", omit_artifacts,
               "Lookups leave the artifacts (optimized HLO) out of the answer");
  std::string daemon_args;
  app.add_option("--daemon-args", daemon_args,
                 "More mltuned flags for the child, space-separated (e.g. TLS and --tokens)");
  mltune::client::ClientOptions& connect = ConnectOptions();
  app.add_option("--ca", connect.ca_file, "TLS: the CA of the daemon's certificate (PEM)");
  app.add_option("--cert", connect.cert_file, "Mutual TLS: the clients' certificate (PEM)");
  app.add_option("--key", connect.key_file, "Mutual TLS: the clients' key (PEM)");
  app.add_option("--token", connect.token, "Bearer token of every call");
  CLI11_PARSE(app, argc, argv);

  const std::string graph = ReadFile(graph_path);
  if (graph.empty()) {
    std::cerr << "error: cannot read " << graph_path << "\n";
    return 1;
  }
  std::unique_ptr<mltune::client::DaemonProcess> daemon;
  std::string address = server;
  if (address.empty()) {
    if (daemon_path.empty()) {
      std::cerr << "error: built without mltuned: pass --mltuned PATH or --server HOST:PORT\n";
      return 1;
    }
    mltune::client::DaemonOptions options;
    options.binary = daemon_path;
    std::istringstream words(daemon_args);
    for (std::string w; words >> w;) options.extra_args.push_back(w);
    auto started = mltune::client::DaemonProcess::Start(options);
    if (!started.ok()) {
      std::cerr << "error: " << started.status().message() << "\n";
      return 1;
    }
    daemon = *std::move(started);
    address = daemon->address();
  }

  // Seed the cache: the submit is a hit when the daemon already has this graph.
  std::unique_ptr<Client> client = Client::Connect(address, connect);
  mltune::client::SubmitRequest submit;
  submit.graph = graph;
  submit.graph_name = graph_path;
  submit.budget.steps = budget;
  const auto seed_start = Clock::now();
  auto submitted = client->Submit(submit);
  if (!submitted.ok()) {
    std::cerr << "error: seeding submit: " << submitted.status().message() << "\n";
    return 1;
  }
  std::string fingerprint = submitted->job.fingerprint;
  if (!submitted->cached) {
    auto job = client->Watch(submitted->job_id);
    if (!job.ok() || job->state != mltune::client::JobState::kDone) {
      std::cerr << "error: seeding job " << submitted->job_id << " did not finish: "
                << (job.ok()
                        ? std::string(mltune::client::JobStateName(job->state)) + " " + job->error
                        : std::string(job.status().message()))
                << "\n";
      return 1;
    }
    fingerprint = job->fingerprint;
  }
  std::cout << absl::StrFormat(
      "mltuned at %s (%s), graph %s (%d bytes, fingerprint %.12s...), cache seeded in %.2f s\n",
      address, daemon ? absl::StrFormat("child pid %d", daemon->pid()) : "running daemon",
      graph_path, graph.size(), fingerprint, MsSince(seed_start) / 1000);
  std::cout << absl::StrFormat(
      "%d client threads, %g s per lookup row, %g s of submits, %s, %d cores\n", clients, seconds,
      submit_seconds, omit_artifacts ? "artifacts omitted" : "artifacts included",
      std::thread::hardware_concurrency());

  std::vector<Row> rows;
  mltune::client::LookupRequest by_fp;
  by_fp.fingerprint = fingerprint;
  by_fp.omit_artifacts = omit_artifacts;
  auto lookup = [](const mltune::client::LookupRequest& request) {
    return [request](Client& c, int64_t) -> absl::Status {
      auto response = c.Lookup(request);
      if (!response.ok()) return response.status();
      if (response->results.empty()) return absl::NotFoundError("lookup missed");
      return absl::OkStatus();
    };
  };
  rows.push_back(Measure("LookupCache by fingerprint", address, clients, seconds, lookup(by_fp)));
  mltune::client::LookupRequest by_graph;
  by_graph.graph = graph;
  by_graph.graph_name = graph_path;
  by_graph.omit_artifacts = omit_artifacts;
  rows.push_back(
      Measure("LookupCache by graph, seen", address, clients, seconds, lookup(by_graph)));
  // The daemon remembers the fingerprint of graph bytes it has seen, so the row above measures
  // that path; a comment that differs on every call makes it parse, verify and fingerprint.
  rows.push_back(Measure("LookupCache by graph, new", address, clients, seconds,
                         [&by_graph](Client& c, int64_t n) -> absl::Status {
                           mltune::client::LookupRequest request = by_graph;
                           absl::StrAppend(&request.graph, "\n// nonce ", n, "\n");
                           auto response = c.Lookup(request);
                           if (!response.ok()) return response.status();
                           if (response->results.empty()) {
                             return absl::NotFoundError("lookup missed");
                           }
                           return absl::OkStatus();
                         }));
  Row submits = Measure("SubmitCompile, cache hit", address, 1, submit_seconds,
                        [&submit](Client& c, int64_t) -> absl::Status {
                          auto response = c.Submit(submit);
                          if (!response.ok()) return response.status();
                          if (!response->cached) return absl::NotFoundError("not from the cache");
                          return absl::OkStatus();
                        });
  submits.rate_target = false;
  rows.push_back(std::move(submits));

  std::cout << absl::StrFormat("\n%-28s %7s %8s %9s %7s %7s %7s %7s %6s  %-26s %s\n", "row",
                               "clients", "calls", "calls/s", "p50 ms", "p90 ms", "p99 ms",
                               "max ms", "errors", "target", "result");
  bool any_error = false;
  for (const Row& row : rows) {
    const std::string target =
        row.rate_target ? absl::StrFormat(">= %.0f/s, p99 < %.0f ms", kTargetRate, kTargetP99Ms)
                        : absl::StrFormat("p99 < %.0f ms", kTargetP99Ms);
    std::cout << absl::StrFormat(
        "%-28s %7d %8d %9.0f %7.2f %7.2f %7.2f %7.2f %6d  %-26s %s\n", row.name, row.clients,
        row.calls, row.rate(), row.Percentile(0.5), row.Percentile(0.9), row.Percentile(0.99),
        row.ms.empty() ? 0.0 : row.ms.back(), row.errors, target, row.Pass() ? "PASS" : "MISS");
    if (row.errors > 0) {
      any_error = true;
      std::cout << "  first error: " << row.first_error << "\n";
    }
  }

  if (daemon) {
    auto code = daemon->Stop();
    if (!code.ok() || *code != 0) {
      std::cerr << "error: mltuned did not stop cleanly on SIGTERM (exit "
                << (code.ok() ? *code : -1) << "); its log:\n"
                << ReadFile(daemon->log_path());
      return 1;
    }
  }
  return any_error ? 1 : 0;
}
