// Store::Open: a PostgreSQL URL opens the shared store, anything else a SQLite file.
#include <memory>
#include <string>

#include "storage/sqlite_store.h"
#include "storage/store.h"
#ifdef MLTUNE_HAVE_POSTGRES
#include "storage/pg_store.h"
#endif

namespace mltune::storage {

bool Store::IsPostgresUrl(std::string_view path) {
  return path.starts_with("postgresql://") || path.starts_with("postgres://");
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
  if (!IsPostgresUrl(path)) return SqliteStore::Open(path, options);
#ifdef MLTUNE_HAVE_POSTGRES
  return PgStore::Open(path, options);
#else
  return absl::UnimplementedError(
      "this mltune was built without libpq, so it cannot open a PostgreSQL store; install "
      "libpq-dev (scripts/setup) and rebuild, or give a SQLite file");
#endif
}

}  // namespace mltune::storage
