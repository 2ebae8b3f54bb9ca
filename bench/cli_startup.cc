// Wall time of one `mltune` RPC subcommand, process start to exit, against a running mltuned: the
// lean `mltune` (no LibTorch) beside `mltune-full` (the whole CLI, LibTorch loaded), the same
// command and daemon, alternated run by run. Starts its own mltuned child on ephemeral ports.
//
//   build/release/bench/cli_startup [--runs 30]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "client/daemon_process.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kTargetMs = 50;  // issue 50: RPC subcommands start and answer within this

// Runs `args` with stdout and stderr on /dev/null; returns the wall milliseconds, or -1 when it
// could not start or exited non-zero.
double TimeCommand(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const Clock::time_point start = Clock::now();
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Start-up and answer time of mltune's RPC subcommands, lean vs full CLI"};
  int runs = 30;
  std::string bin_dir = fs::path(MLTUNE_CLI_PATH).parent_path().string();
  std::string example = std::string(MLTUNE_SOURCE_DIR) + "/examples/mlp_train_step_jax.hlo";
  app.add_option("--runs", runs, "Runs of each command and binary")->default_val(30);
  app.add_option("--bin-dir", bin_dir, "Where mltune and mltune-full are");
  CLI11_PARSE(app, argc, argv);

  mltune::client::DaemonOptions options;
  options.binary = MLTUNE_DAEMON_PATH;
  options.serve_metrics = false;
  absl::StatusOr<std::unique_ptr<mltune::client::DaemonProcess>> daemon =
      mltune::client::DaemonProcess::Start(options);
  if (!daemon.ok()) {
    std::cerr << "cannot start mltuned: " << daemon.status() << "\n";
    return 1;
  }
  const std::string server = (*daemon)->address();
  const std::string lean = bin_dir + "/mltune";
  const std::string full = bin_dir + "/mltune-full";
  // One tuned job, so that lookup and submit are answered from the cache.
  if (TimeCommand({lean, "submit", example, "--budget", "50", "--watch", "--server", server}) < 0) {
    std::cerr << "the first submit failed (see " << (*daemon)->log_path() << ")\n";
    return 1;
  }

  const std::vector<std::vector<std::string>> commands = {
      {"stats"},
      {"strategies"},
      {"workers"},
      {"lookup", example},
      {"submit", example, "--budget", "50"},
  };
  std::cout << absl::StrFormat(
      "mltune RPC subcommands against a local mltuned, %d runs each "
      "(ms, process start to exit)\n",
      runs);
  std::cout << absl::StrFormat("%-12s %12s %12s %12s %12s %9s\n", "command", "lean p50", "lean p90",
                               "full p50", "full p90", "speed-up");
  bool pass = true;
  for (const std::vector<std::string>& command : commands) {
    std::vector<double> lean_ms, full_ms;
    for (int i = 0; i < runs; ++i) {
      for (const std::string* bin : {&lean, &full}) {
        std::vector<std::string> args = {*bin};
        args.insert(args.end(), command.begin(), command.end());
        args.insert(args.end(), {"--server", server});
        const double ms = TimeCommand(args);
        if (ms < 0) {
          std::cerr << *bin << " " << command[0] << " failed\n";
          return 1;
        }
        (bin == &lean ? lean_ms : full_ms).push_back(ms);
      }
    }
    const double lean50 = Percentile(lean_ms, 0.5), full50 = Percentile(full_ms, 0.5);
    std::cout << absl::StrFormat("%-12s %12.1f %12.1f %12.1f %12.1f %8.1fx\n", command[0], lean50,
                                 Percentile(lean_ms, 0.9), full50, Percentile(full_ms, 0.9),
                                 full50 / lean50);
    pass = pass && Percentile(lean_ms, 0.9) <= kTargetMs;
  }
  std::cout << absl::StrFormat("target: lean p90 <= %.0f ms: %s\n", kTargetMs,
                               pass ? "met" : "MISSED");
  return 0;
}
