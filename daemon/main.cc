// mltuned: the mltune autotuning daemon. Serves mltune.v1.CompileService until SIGTERM or SIGINT,
// then drains running jobs (--drain-seconds), checkpoints the rest and closes the store cleanly.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/version.h"

namespace {

// Written to a temporary name and renamed, so a reader never sees half a file.
bool WriteReadyFile(const std::string& path, const mltune::daemon::Daemon& daemon) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "listen=" << daemon.address() << "\n"
        << "metrics=" << daemon.metrics_address() << "\n"
        << "store=" << daemon.store_path() << "\n"
        << "pid=" << getpid() << "\n";
    if (!out.good()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

}  // namespace

int main(int argc, char** argv) {
  mltune::daemon::DaemonConfig config;
  if (std::optional<int> exit_code =
          mltune::daemon::ParseDaemonFlags(argc, argv, &config, std::cout, std::cerr)) {
    return *exit_code;
  }
  // Block the stop signals in every thread (gRPC's and the workers inherit the mask); the main
  // thread takes them with sigwait, so shutdown runs in ordinary code, not in a handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<mltune::daemon::Daemon>> daemon =
      mltune::daemon::Daemon::Start(config);
  if (!daemon.ok()) {
    std::cerr << "mltuned: error: " << daemon.status().message() << "\n";
    return 1;
  }
  std::cout << "mltuned " << mltune::daemon::kMltuneVersion << ": serving mltune.v1.CompileService"
            << " (with grpc.health.v1 and reflection) on " << (*daemon)->address() << "\n"
            << "  metrics: "
            << ((*daemon)->metrics_address().empty()
                    ? std::string("not served")
                    : absl::StrCat("http://", (*daemon)->metrics_address(), "/metrics"))
            << "\n"
            << "  store:   " << (*daemon)->store_path() << "\n"
            << "  access:  " << (*daemon)->access_summary() << "\n"
            << "  workers: " << config.worker_threads << " in-process, queue of "
            << config.queue_size << "\n"
            << "  stop with SIGTERM or Ctrl-C (kill " << getpid() << ")" << std::endl;
  if (!config.ready_file.empty() && !WriteReadyFile(config.ready_file, **daemon)) {
    std::cerr << "mltuned: error: cannot write the ready file " << config.ready_file << "\n";
    return 1;
  }

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::cout << "mltuned: " << (signal_number == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": draining running jobs (up to " << config.drain_seconds << " s)" << std::endl;
  (*daemon)->Shutdown();
  daemon->reset();
  if (!config.ready_file.empty()) std::remove(config.ready_file.c_str());
  std::cout << "mltuned: stopped cleanly" << std::endl;
  return 0;
}
