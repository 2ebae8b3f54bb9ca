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
  bool resolve_all = false;
  double resolve_seconds = 30;
  app.add_flag("--resolve-all", resolve_all,
               "Serve every address each --server HOST resolves to (the replicas behind a "
               "headless Service), checking their certificate against HOST; looked up again every "
               "--resolve-seconds");
  app.add_option("--resolve-seconds", resolve_seconds, "How often --resolve-all looks up again")
      ->capture_default_str();
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
  std::vector<std::string> servers;
  for (absl::string_view server : absl::StrSplit(o.server, ',', absl::SkipWhitespace())) {
    servers.push_back(std::string(absl::StripAsciiWhitespace(server)));
  }
  if (servers.empty()) {
    std::cerr << "mltune-worker: error: --server names no address\n";
    return 2;
  }
  // The options are checked once, before anything connects: a bad flag is exit 2.
  {
    mltune::worker::WorkerOptions first = o;
    first.server = servers.front();
    absl::StatusOr<std::unique_ptr<mltune::worker::RemoteWorker>> checked =
        mltune::worker::RemoteWorker::Create(first);
    if (!checked.ok()) {
      std::cerr << "mltune-worker: error: " << checked.status().message() << "\n";
      const absl::StatusCode code = checked.status().code();
      return code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kUnimplemented
                 ? 2
                 : 1;
    }
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

  const absl::Status status =
      mltune::worker::ServeAll(o, servers, resolve_all, resolve_seconds, g_stop, o.log);
  if (!status.ok()) {
    std::cerr << "mltune-worker: error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
