#include "backends/xla/xla_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace mltune::backends::xla {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

Json OptionValue(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  int64_t integer = 0;
  if (absl::SimpleAtoi(text, &integer)) return integer;
  return text;
}

Json OptionsJson(const XlaOptions& options) {
  Json j = Json::object();
  for (const auto& [name, value] : options) j[name] = OptionValue(value);
  return j;
}

// What a dead child's log says: XLA's fatal line ("F1128 ... Check failed: ...") where there is
// one, else the log's last `bytes`.
std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > 5 && line[0] == 'F' && absl::ascii_isdigit(line[1]) &&
        line.find("] ") != std::string::npos) {
      return line.substr(line.find("] ") + 2);
    }
  }
  in.clear();
  in.seekg(0);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  return std::string(absl::StripAsciiWhitespace(text));
}

}  // namespace

std::string XlaPythonPath() {
  return EnvOr("MLTUNE_XLA_PYTHON",
               (fs::path(MLTUNE_SOURCE_DIR) / "build/xla-venv/bin/python").string());
}

std::string XlaChildScriptPath() {
  return EnvOr("MLTUNE_XLA_CHILD",
               (fs::path(MLTUNE_SOURCE_DIR) / "backends/xla/xla_child.py").string());
}

// The running child: pipes to its stdin and stdout, its stderr in a log file of the worker's
// scratch folder (shown when it dies), and a lock that keeps one request at a time, since
// measurements in parallel would disturb each other's timings.
class XlaWorker::Child {
 public:
  explicit Child(std::string platform) : platform_(std::move(platform)) {}
  ~Child() {
    Stop();
    std::error_code ec;
    if (!scratch_.empty()) fs::remove_all(scratch_, ec);
  }

  // One request and its answer. `timeout_seconds` bounds the wait for the answer.
  absl::StatusOr<Json> Call(const Json& request, double timeout_seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = EnsureStarted(); !s.ok()) return s;
    return CallLocked(request, timeout_seconds);
  }

  // Writes `text` to a scratch file named by `stem` and returns its path. With `by_content`
  // the stem names the text, so an existing file is kept: the child caches a reference's outputs
  // by its path and modification time.
  absl::StatusOr<std::string> WriteScratch(const std::string& stem, const std::string& text,
                                           bool by_content = false) {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = EnsureScratch(); !s.ok()) return s;
    const std::string path = (fs::path(scratch_) / (stem + ".hlo")).string();
    if (by_content && fs::exists(path)) return path;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    return path;
  }

  absl::StatusOr<Json> hello() {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = EnsureStarted(); !s.ok()) return s;
    return hello_;
  }

  int64_t restarts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_ > 0 ? starts_ - 1 : 0;
  }

 private:
  absl::Status EnsureScratch() {
    // A folder removed under a long-running daemon (a temp cleaner) is made again.
    std::error_code ec;
    if (!scratch_.empty() && fs::is_directory(scratch_, ec)) return absl::OkStatus();
    std::string tmpl = (fs::temp_directory_path() / "mltune-xla-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp failed: ", std::strerror(errno)));
    }
    scratch_ = tmpl;
    return absl::OkStatus();
  }

  absl::Status EnsureStarted() {
    // A child that died between requests (killed from outside) is reaped and started again.
    if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == pid_) {
      close(fd_);
      pid_ = -1;
    }
    if (pid_ > 0) return absl::OkStatus();
    // A start that failed is not retried for a minute, and a missing device never (it does not
    // appear under a running daemon): listing workers must stay cheap where either is missing.
    if (!failed_start_.ok() &&
        (no_device_ || std::chrono::steady_clock::now() - failed_at_ < kRetryAfter)) {
      return failed_start_;
    }
    const std::string python = XlaPythonPath();
    const std::string script = XlaChildScriptPath();
    if (access(python.c_str(), X_OK) != 0) {
      return absl::UnavailableError(
          absl::StrCat("no Python with jax at ", python,
                       " (scripts/setup makes build/xla-venv; or set MLTUNE_XLA_PYTHON)"));
    }
    if (access(script.c_str(), R_OK) != 0) {
      return absl::UnavailableError(
          absl::StrCat("the XLA child script ", script, " is missing (or set MLTUNE_XLA_CHILD)"));
    }
    if (absl::Status s = EnsureScratch(); !s.ok()) return s;
    // One socket pair carries requests and answers: a write to a child that died fails with
    // EPIPE (MSG_NOSIGNAL) instead of raising SIGPIPE in the daemon.
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return absl::InternalError(absl::StrCat("socketpair failed: ", std::strerror(errno)));
    }
    log_path_ = (fs::path(scratch_) / "child.log").string();
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!absl::StartsWith(*e, "MLTUNE_XLA_PLATFORM=")) env_strings.emplace_back(*e);
    }
    env_strings.push_back("MLTUNE_XLA_PLATFORM=" + platform_);
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<char*> argv = {const_cast<char*>(python.c_str()), const_cast<char*>("-u"),
                               const_cast<char*>(script.c_str()), nullptr};
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      return absl::InternalError(absl::StrCat("fork failed: ", std::strerror(errno)));
    }
    if (pid == 0) {
      // The child dies with the daemon; between fork and exec only async-signal-safe calls.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      dup2(sv[1], 0);
      dup2(sv[1], 1);
      const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log >= 0) dup2(log, 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(sv[1]);
    pid_ = pid;
    fd_ = sv[0];
    buffer_.clear();
    ++starts_;
    // The first request imports jax (seconds); a failure here means the venv is broken.
    absl::StatusOr<Json> hello = CallLocked(Json{{"op", "hello"}}, 120);
    absl::Status started = absl::OkStatus();
    if (!hello.ok()) {
      started = absl::UnavailableError(absl::StrCat(
          "the XLA child (", python, " ", script, ") does not start: ", hello.status().message()));
    } else if (!hello->value("ok", false)) {
      // jax runs, but not on this platform (no GPU, or no CUDA plugin for xla-gpu).
      Stop();
      no_device_ = true;
      started = absl::UnavailableError(
          absl::StrCat("XLA has no ", platform_, " device here: ", hello->value("error", "")));
    } else {
      hello_ = *std::move(hello);
    }
    if (!started.ok()) {
      failed_start_ = started;
      failed_at_ = std::chrono::steady_clock::now();
      // Nothing of a child that never served is kept (its log's tail is in the error): a
      // process that exits without destroying the worker leaves no folder behind.
      Stop();
      std::error_code ec;
      fs::remove_all(scratch_, ec);
      scratch_.clear();
    }
    return started;
  }

  void Stop() {
    if (pid_ <= 0) return;
    close(fd_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Reaps a child that closed its output: the signal or exit status, and its log's tail.
  std::string DescribeDeath() {
    int status = 0;
    std::string how = "closed its output";
    if (waitpid(pid_, &status, 0) == pid_) {
      if (WIFSIGNALED(status)) {
        how = absl::StrCat("was killed by signal ", WTERMSIG(status), " (",
                           strsignal(WTERMSIG(status)), ")");
      } else if (WIFEXITED(status)) {
        how = absl::StrCat("exited with status ", WEXITSTATUS(status));
      }
    }
    close(fd_);
    pid_ = -1;
    const std::string tail = Tail(log_path_, 600);
    return tail.empty() ? how : absl::StrCat(how, ": ", tail);
  }

  absl::StatusOr<Json> CallLocked(const Json& request, double timeout_seconds) {
    const std::string line = request.dump() + "\n";
    size_t written = 0;
    while (written < line.size()) {
      const ssize_t n = send(fd_, line.data() + written, line.size() - written, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::AbortedError(absl::StrCat("the XLA child ", DescribeDeath()));
      }
      written += static_cast<size_t>(n);
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1e3));
    char chunk[65536];
    while (true) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        const std::string answer = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        Json j = Json::parse(answer, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) {
          return absl::InternalError(absl::StrCat("the XLA child answered '", answer.substr(0, 200),
                                                  "', not a JSON object"));
        }
        return j;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) {
        Stop();
        return absl::AbortedError(absl::StrCat("the XLA child took more than ", timeout_seconds,
                                               " s and was killed (restarted on the "
                                               "next request)"));
      }
      pollfd fd = {fd_, POLLIN, 0};
      const int ready = poll(&fd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (ready < 0 && errno != EINTR) return absl::InternalError("poll failed");
      if (ready <= 0) continue;
      const ssize_t got = read(fd_, chunk, sizeof(chunk));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return absl::AbortedError(
            absl::StrCat("the XLA child ", DescribeDeath(), " (restarted on the next request)"));
      }
      buffer_.append(chunk, static_cast<size_t>(got));
    }
  }

  const std::string platform_;
  mutable std::mutex mu_;
  pid_t pid_ = -1;
  int fd_ = -1;  // our end of the socket pair
  std::string buffer_;
  std::string scratch_, log_path_;
  Json hello_;
  int64_t starts_ = 0;
  static constexpr std::chrono::seconds kRetryAfter{60};
  absl::Status failed_start_ = absl::OkStatus();
  std::chrono::steady_clock::time_point failed_at_;
  bool no_device_ = false;
};

XlaWorker::XlaWorker(std::string platform)
    : platform_(std::move(platform)), child_(std::make_unique<Child>(platform_)) {}

XlaWorker::~XlaWorker() = default;

XlaWorker& XlaWorker::Shared(const std::string& platform) {
  static std::mutex mu;
  static auto* workers = new std::map<std::string, std::unique_ptr<XlaWorker>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<XlaWorker>& worker = (*workers)[platform];
  if (worker == nullptr) worker = std::make_unique<XlaWorker>(platform);
  return *worker;
}

namespace {

// An answer's error as a status of the kind its "kind" names.
absl::Status AnswerError(const Json& answer) {
  const std::string kind = answer.value("kind", "");
  const std::string error = answer.value("error", "the XLA child failed");
  if (kind == "mismatch") return absl::DataLossError(error);
  if (kind == "parse" || kind == "compile" || kind == "option" || kind == "input") {
    return absl::InvalidArgumentError(error);
  }
  return absl::InternalError(error);
}

}  // namespace

absl::StatusOr<XlaWorkerInfo> XlaWorker::Describe() {
  absl::StatusOr<Json> hello = child_->hello();
  if (!hello.ok()) return hello.status();
  XlaWorkerInfo info;
  info.name = "xla-" + platform_;
  info.jax = hello->value("jax", "");
  info.platform = hello->value("platform", "");
  info.device = hello->value("device", "");
  info.child_pid = hello->value("pid", int64_t{0});
  return info;
}

absl::StatusOr<XlaTiming> XlaWorker::Measure(const XlaMeasureRequest& request) {
  absl::StatusOr<std::string> candidate = child_->WriteScratch("candidate", request.hlo_text);
  if (!candidate.ok()) return candidate.status();
  Json j = {{"op", "measure"},
            {"hlo_path", *candidate},
            {"options", OptionsJson(request.options)},
            {"seed", request.seed},
            {"rtol", request.rtol},
            {"atol", request.atol},
            {"min_reps", request.min_reps},
            {"max_reps", request.max_reps},
            {"max_seconds", request.max_seconds},
            {"target_spread", request.target_spread}};
  if (!request.reference_hlo_text.empty()) {
    // Named by content, so the child's cache of the reference's outputs holds across requests.
    const std::string stem =
        absl::StrCat("reference-", std::hash<std::string>()(request.reference_hlo_text));
    absl::StatusOr<std::string> reference =
        child_->WriteScratch(stem, request.reference_hlo_text, /*by_content=*/true);
    if (!reference.ok()) return reference.status();
    j["reference_path"] = *reference;
  }
  absl::StatusOr<Json> answer = child_->Call(j, request.timeout_seconds);
  if (!answer.ok()) return answer.status();
  if (!answer->value("ok", false)) return AnswerError(*answer);
  XlaTiming t;
  t.median_s = answer->value("median_s", 0.0);
  t.min_s = answer->value("min_s", 0.0);
  t.p25_s = answer->value("p25_s", 0.0);
  t.p75_s = answer->value("p75_s", 0.0);
  t.spread = answer->value("spread", 0.0);
  t.samples = answer->value("samples", int64_t{0});
  t.compile_s = answer->value("compile_s", 0.0);
  t.checked = answer->value("checked", false);
  t.max_abs_err = answer->value("max_abs_err", 0.0);
  return t;
}

absl::StatusOr<std::string> XlaWorker::OptimizedHlo(const std::string& hlo_text,
                                                    const XlaOptions& options) {
  absl::StatusOr<std::string> path = child_->WriteScratch("optimized", hlo_text);
  if (!path.ok()) return path.status();
  absl::StatusOr<Json> answer = child_->Call(
      Json{{"op", "optimized_hlo"}, {"hlo_path", *path}, {"options", OptionsJson(options)}}, 600);
  if (!answer.ok()) return answer.status();
  if (!answer->value("ok", false)) return AnswerError(*answer);
  return answer->value("text", "");
}

absl::StatusOr<std::map<std::string, std::string>> XlaWorker::RefusedOptions(
    const XlaOptions& options) {
  absl::StatusOr<Json> answer =
      child_->Call(Json{{"op", "check_options"}, {"options", OptionsJson(options)}}, 600);
  if (!answer.ok()) return answer.status();
  if (!answer->value("ok", false)) return AnswerError(*answer);
  std::map<std::string, std::string> refused;
  for (const auto& [name, why] : (*answer)["refused"].items())
    refused[name] = why.get<std::string>();
  return refused;
}

absl::StatusOr<std::vector<std::string>> XlaWorker::UnknownPassNames(
    const std::vector<std::string>& names) {
  absl::StatusOr<Json> answer =
      child_->Call(Json{{"op", "unknown_pass_names"}, {"names", names}}, 120);
  if (!answer.ok()) return answer.status();
  if (!answer->value("ok", false)) return AnswerError(*answer);
  return (*answer)["unknown"].get<std::vector<std::string>>();
}

std::string XlaOptionsJson(const XlaOptions& options) { return OptionsJson(options).dump(); }

int64_t XlaWorker::restarts() const { return child_->restarts(); }

}  // namespace mltune::backends::xla
