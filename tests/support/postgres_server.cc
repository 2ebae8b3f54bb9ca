#include "tests/support/postgres_server.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/support/corpus.h"
#include "tests/support/run_command.h"

namespace mltune::testing {
namespace {

namespace fs = std::filesystem;

// The newest /usr/lib/postgresql/VERSION/bin that has initdb and pg_ctl, or "".
std::string PostgresBin() {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (fs::exists(e.path() / "bin" / "initdb") && fs::exists(e.path() / "bin" / "pg_ctl")) {
      found.push_back(e.path() / "bin");
    }
  }
  if (found.empty()) return "";
  std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
    return std::atoi(a.parent_path().filename().c_str()) <
           std::atoi(b.parent_path().filename().c_str());
  });
  return found.back().string();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  const std::string bin = PostgresBin();
  if (bin.empty()) {
    return absl::UnavailableError(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; scripts/setup "
        "installs Debian's postgresql)");
  }
  std::string tmpl = (fs::temp_directory_path() / "mltune-pg-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  auto server = std::unique_ptr<PostgresServer>(new PostgresServer());
  server->dir_ = tmpl;
  server->bin_ = bin;
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr) {
      return absl::UnavailableError(
          "running as root and there is no `postgres` user to run PostgreSQL as (it refuses "
          "root)");
    }
    if (chown(tmpl.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot give ", tmpl, " to the postgres user"));
    }
    server->run_as_ = "runuser -u postgres -- ";
  }
  const std::string data = tmpl + "/data";
  CommandResult init = RunCommand(absl::StrCat(server->run_as_, bin, "/initdb -D ", data,
                                               " -U postgres -A trust -E UTF8 --no-sync"));
  if (init.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("initdb failed: ", init.err.substr(0, 400)));
  }
  // A Unix socket in the folder only; fsync off: a test's data need not survive a crash.
  CommandResult start = RunCommand(absl::StrCat(
      server->run_as_, bin, "/pg_ctl -D ", data, " -l ", tmpl, "/server.log -w -t 60 -o \"-k ",
      tmpl, " -c listen_addresses='' -p 5432 -c fsync=off -c full_page_writes=off\" start"));
  if (start.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("pg_ctl start failed: ", start.err.substr(0, 200),
                                               ReadFile(tmpl + "/server.log").substr(0, 400)));
  }
  server->url_ = absl::StrCat("postgresql:///postgres?host=", tmpl, "&port=5432&user=postgres");
  return server;
}

PostgresServer::~PostgresServer() {
  if (!url_.empty()) {
    RunCommand(absl::StrCat(run_as_, bin_, "/pg_ctl -D ", dir_, "/data -m immediate -w stop"));
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace mltune::testing
