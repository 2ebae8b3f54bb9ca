#include "backends/cpu/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace mltune::backends::cpu {

std::string ChildResult::Describe() const {
  if (timed_out) return absl::StrCat("timed out after ", static_cast<int64_t>(seconds), " s");
  if (signal != 0) {
    return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  }
  return absl::StrCat("exit ", exit_code);
}

absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv, double timeout_seconds,
                                     const std::vector<std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::InternalError("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const std::string& e : env) env_strings.push_back(e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start '", argv[0], "': ", std::strerror(rc)));
  }
  ChildResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  while (open_fds > 0) {
    const double left = timeout_seconds - elapsed();
    if (left <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    for (pollfd& f : fds) {
      if (f.fd < 0 || (f.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t got = read(f.fd, buf, sizeof(buf));
      if (got > 0) {
        (&f == &fds[0] ? result.out : result.err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  // Grandchildren (cc1plus under g++) go with the group.
  kill(-pid, SIGKILL);
  result.seconds = elapsed();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace mltune::backends::cpu
