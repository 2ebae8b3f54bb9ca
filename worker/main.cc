// mltune-worker: measures mltuned's candidates on this machine's hardware, connecting out to the
// daemon's mltune.v1.WorkerService, until SIGTERM or SIGINT (which finish the batch in hand).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "daemon/version.h"
#include "worker/remote_worker.h"

namespace {

// Static: the signal thread outlives main's frame once main returns.
std::atomic<bool> g_stop{false};

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals in every thread (gRPC's inherit the mask); one thread takes them with
  // sigwait, so a stop is an ordinary store, not work in a handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  mltune::worker::WorkerOptions o;
  CLI::App app{
      "mltune-worker: measures mltuned's candidates on this machine's hardware. It connects out "
      "to mltuned (mltune.v1.WorkerService, a token with the \"worker\" role where mltuned has "
      "--tokens), takes batches of generated programs, compiles and times them here and returns "
      "the timings. SIGTERM or Ctrl-C finish the batch in hand and exit 0; a second one exits at "
      "once.",
      "mltune-worker"};
  app.set_version_flag("--version", std::string(mltune::daemon::kMltuneVersion));
  app.add_option("--server", o.server,
                 "mltuned's address HOST:PORT; several, comma-separated, to serve every replica "
                 "sharing a store (one timing at a time on this machine)")
      ->envname("MLTUNE_SERVER")
      ->required();
  app.add_option("--target", o.target, "What this worker measures on: cpu, or gpu (device 0)")
      ->capture_default_str();
  app.add_option("--gpu-runner", o.gpu_runner,
                 "gpu: the program that times GPU runs (default mltune-gpu-runner; "
                 "mltune-gpu-emulator runs them on the CPU, for tests)");
  app.add_option("--gpu-arch", o.gpu_arch,
                 "gpu: claim this architecture (sm_90) instead of probing device 0 (for tests, "
                 "with --gpu-runner mltune-gpu-emulator)");
  app.add_option("--ca", o.ca_file, "TLS: the CA (PEM) that signed mltuned's certificate")
      ->envname("MLTUNE_CA");
  app.add_option("--cert", o.cert_file, "Mutual TLS: this worker's certificate (PEM)")
      ->envname("MLTUNE_CERT");
  app.add_option("--key", o.key_file, "Mutual TLS: this worker's private key (PEM)")
      ->envname("MLTUNE_KEY");
  app.add_option("--token", o.token, "Bearer token for mltuned's --tokens (role \"worker\")")
      ->envname("MLTUNE_TOKEN");
  app.add_option("--host", o.host, "The name this worker registers under (default: host name)");
  app.add_option("--wait-ms", o.wait_ms,
                 "How long one request waits for work (and so how soon a stop is noticed)")
      ->capture_default_str();
  app.add_option("--reconnect-seconds", o.reconnect_seconds,
                 "First wait before trying an unreachable mltuned again (doubles, up to "
                 "--max-reconnect-seconds)")
      ->capture_default_str();
  app.add_option("--max-reconnect-seconds", o.max_reconnect_seconds, "Longest wait between tries")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::cout << "mltune-worker " << mltune::daemon::kMltuneVersion << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "mltune-worker: error: " << e.what() << "\n";
    return 2;
  }

  o.log = [](std::string_view line) { std::cout << "mltune-worker: " << line << std::endl; };
  std::vector<std::unique_ptr<mltune::worker::RemoteWorker>> workers;
  for (absl::string_view server : absl::StrSplit(o.server, ',', absl::SkipWhitespace())) {
    mltune::worker::WorkerOptions one = o;
    one.server = std::string(absl::StripAsciiWhitespace(server));
    absl::StatusOr<std::unique_ptr<mltune::worker::RemoteWorker>> worker =
        mltune::worker::RemoteWorker::Create(one);
    if (!worker.ok()) {
      std::cerr << "mltune-worker: error: " << worker.status().message() << "\n";
      const absl::StatusCode code = worker.status().code();
      return code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kUnimplemented
                 ? 2
                 : 1;
    }
    std::cout << "mltune-worker: serving " << (*worker)->host() << " (" << (*worker)->device()
              << ") to " << one.server << std::endl;
    workers.push_back(*std::move(worker));
  }
  if (workers.empty()) {
    std::cerr << "mltune-worker: error: --server names no address\n";
    return 2;
  }

  std::thread signals([stop_signals] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    std::cout << "mltune-worker: " << (signal_number == SIGTERM ? "SIGTERM" : "SIGINT")
              << ": finishing the batch in hand, then exiting (again to exit at once)" << std::endl;
    g_stop = true;
    sigwait(&stop_signals, &signal_number);
    std::cerr << "mltune-worker: second signal: exiting without returning the batch" << std::endl;
    std::_Exit(1);
  });
  signals.detach();

  // One loop per daemon; the first to fail for good stops the others.
  std::vector<absl::Status> statuses(workers.size());
  std::vector<std::thread> loops;
  for (size_t i = 0; i < workers.size(); ++i) {
    loops.emplace_back([&, i] {
      statuses[i] = workers[i]->Run(g_stop);
      if (!statuses[i].ok()) g_stop = true;
    });
  }
  for (std::thread& t : loops) t.join();
  int exit_code = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    const mltune::worker::WorkerStats stats = workers[i]->stats();
    std::cout << "mltune-worker: " << stats.batches << " batches, " << stats.candidates
              << " candidates (" << stats.failed_candidates << " failed) measured for "
              << workers[i]->server() << std::endl;
    if (!statuses[i].ok()) {
      std::cerr << "mltune-worker: error: " << statuses[i].message() << "\n";
      exit_code = 1;
    }
  }
  return exit_code;
}
