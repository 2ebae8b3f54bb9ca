#include "frontends/xla/xla_round_trip.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace mltune::frontends::xla {
namespace {

namespace fs = std::filesystem;

// Exit status of xla_round_trip.py when its worker cannot start (no jax in that Python).
constexpr int kNoJaxExitCode = 3;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch folder removed with its contents when the object goes.
class ScratchDir {
 public:
  absl::Status Make() {
    std::string tmpl = (fs::temp_directory_path() / "mltune-xla-check-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp failed: ", std::strerror(errno)));
    }
    path_ = tmpl;
    return absl::OkStatus();
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

std::string XlaPython() {
  const char* value = std::getenv("MLTUNE_XLA_PYTHON");
  if (value != nullptr && *value != '\0') return value;
  return (fs::path(MLTUNE_SOURCE_DIR) / "build/xla-venv/bin/python").string();
}

absl::Status XlaAvailable() {
  const std::string python = XlaPython();
  if (access(python.c_str(), X_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("no Python with jax at ", python,
                     " (scripts/setup makes build/xla-venv; or set MLTUNE_XLA_PYTHON)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<XlaVerdict>> CheckWithXla(const std::vector<XlaCheckRequest>& requests) {
  if (absl::Status s = XlaAvailable(); !s.ok()) return s;
  ScratchDir scratch;
  if (absl::Status s = scratch.Make(); !s.ok()) return s;
  const fs::path requests_path = scratch.path() / "requests.jsonl";
  const fs::path verdicts_path = scratch.path() / "verdicts.jsonl";
  const fs::path log_path = scratch.path() / "child.log";
  {
    std::ofstream out(requests_path);
    for (const XlaCheckRequest& r : requests) {
      out << nlohmann::json{{"path", r.path}, {"compile", r.compile}}.dump() << "\n";
    }
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", requests_path.string()));
  }

  // The child's output goes to a log shown when it fails: XLA writes warnings there.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const std::string python = XlaPython();
  const std::string script =
      (fs::path(MLTUNE_SOURCE_DIR) / "frontends/xla/xla_round_trip.py").string();
  std::vector<std::string> args = {python, "-u", script, requests_path.string(),
                                   verdicts_path.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot start ", python, ": ", std::strerror(spawned)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string log = ReadFile(log_path);
    const std::string tail = log.size() > 4000 ? log.substr(log.size() - 4000) : log;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kNoJaxExitCode) {
      return absl::UnavailableError(absl::StrCat(python, " cannot run XLA: ", tail));
    }
    return absl::InternalError(absl::StrCat(script, " failed (status ", status, "): ", tail));
  }

  std::vector<XlaVerdict> verdicts;
  std::ifstream in(verdicts_path);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return absl::InternalError(absl::StrCat("bad verdict line: ", line));
    XlaVerdict v;
    v.path = j.value("path", "");
    v.ok = j.value("ok", false);
    v.stage = j.value("stage", "");
    v.error = j.value("error", "");
    v.seconds = j.value("seconds", 0.0);
    verdicts.push_back(std::move(v));
  }
  if (verdicts.size() != requests.size()) {
    return absl::InternalError(
        absl::StrCat(script, " answered ", verdicts.size(), " of ", requests.size(), " requests"));
  }
  return verdicts;
}

}  // namespace mltune::frontends::xla
