// A throwaway PostgreSQL server for tests (Debian's postgresql package): initdb in a temporary
// folder, serving on a Unix socket in that folder only (no TCP port to collide on), stopped and
// removed with the object. As root it runs as the `postgres` user, since PostgreSQL refuses root.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace mltune::testing {

class PostgresServer {
 public:
  // Unavailable, saying why, where no server can be started here (PostgreSQL not installed, or
  // root without a `postgres` user): tests skip with that message.
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A libpq connection URI: postgresql:///postgres?host=DIR&port=5432&user=postgres
  const std::string& url() const { return url_; }

 private:
  PostgresServer() = default;
  std::string dir_, bin_, run_as_, url_;
};

}  // namespace mltune::testing
