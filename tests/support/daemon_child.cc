#include "tests/support/daemon_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace mltune::testing {
namespace {

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::unique_ptr<DaemonChild> DaemonChild::Start(const std::string& binary,
                                                const std::filesystem::path& data_dir,
                                                std::vector<std::string> extra) {
  auto child = std::unique_ptr<DaemonChild>(new DaemonChild);
  std::filesystem::create_directories(data_dir);
  const std::filesystem::path ready = data_dir / "ready";
  std::filesystem::remove(ready);
  child->log_ = (data_dir / "mltuned.log").string();
  std::vector<std::string> args = {binary,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--metrics-listen",
                                   "",
                                   "--data-dir",
                                   data_dir.string(),
                                   "--ready-file",
                                   ready.string(),
                                   "--max-budget-steps",
                                   "100000000",
                                   "--worker-threads",
                                   "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  child->pid_ = fork();
  if (child->pid_ == 0) {
    const int fd = open(child->log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(ready) && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(child->pid_, &status, WNOHANG) == child->pid_) {
      ADD_FAILURE() << "mltuned exited early:\n" << ReadText(child->log_);
      child->pid_ = -1;
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (absl::string_view line : absl::StrSplit(ReadText(ready), '\n')) {
    if (absl::ConsumePrefix(&line, "listen=")) child->address_ = std::string(line);
  }
  EXPECT_FALSE(child->address_.empty()) << ReadText(child->log_);
  return child;
}

DaemonChild::~DaemonChild() {
  if (pid_ > 0) Signal(SIGKILL);
}

int DaemonChild::Signal(int signal) {
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

}  // namespace mltune::testing
