#include "client/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace mltune::client {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string LogTail(const std::string& path) {
  std::string log = ReadAll(path);
  if (log.size() > 2000) log = "..." + log.substr(log.size() - 2000);
  return log.empty() ? "(empty log)" : log;
}

// 128 + signal for a signal, like a shell's $?.
int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DaemonProcess>> DaemonProcess::Start(const DaemonOptions& options) {
  if (access(options.binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("mltuned not found or not executable: ", options.binary));
  }
  std::string pattern = (fs::temp_directory_path() / "mltuned-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  std::unique_ptr<DaemonProcess> daemon(new DaemonProcess());
  daemon->dir_ = pattern;
  daemon->log_path_ = (fs::path(pattern) / "mltuned.log").string();
  const std::string data_dir = (fs::path(pattern) / "data").string();
  const std::string ready_file = (fs::path(pattern) / "ready").string();
  fs::create_directories(data_dir);

  std::vector<std::string> args = {
      options.binary, "--listen",         "127.0.0.1:0",
      "--data-dir",   data_dir,           "--ready-file",
      ready_file,     "--metrics-listen", options.serve_metrics ? "127.0.0.1:0" : ""};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int log_fd =
      open(daemon->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("open log: ", std::strerror(errno)));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    // A crashed test or benchmark must not leave a daemon behind.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  daemon->pid_ = pid;

  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.ready_timeout_seconds));
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      daemon->pid_ = -1;
      return absl::InternalError(absl::StrCat("mltuned exited with code ", ExitCode(status),
                                              " before it was ready; its log:\n",
                                              LogTail(daemon->log_path_)));
    }
    if (fs::exists(ready_file)) break;  // written atomically: complete once it exists
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("mltuned wrote no ready file within ", options.ready_timeout_seconds,
                       " s; its log:\n", LogTail(daemon->log_path_)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (absl::string_view line : absl::StrSplit(ReadAll(ready_file), '\n')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.first == "listen") daemon->address_ = kv.second;
    if (kv.first == "metrics") daemon->metrics_address_ = kv.second;
    if (kv.first == "store") daemon->store_path_ = kv.second;
  }
  if (daemon->address_.empty()) {
    return absl::InternalError(
        absl::StrCat("mltuned's ready file has no listen= line: ", ReadAll(ready_file)));
  }
  return daemon;
}

absl::StatusOr<int> DaemonProcess::Stop(double timeout_seconds) {
  if (pid_ <= 0) return absl::InternalError("mltuned is not running");
  kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (Clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  return ExitCode(status);
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) Stop().IgnoreError();
  std::error_code ignored;
  if (!dir_.empty()) fs::remove_all(dir_, ignored);
}

}  // namespace mltune::client
