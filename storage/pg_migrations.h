// The PostgreSQL store's schema migrations: SQLite's (migrations.cc), version for version, in
// PostgreSQL's types. Internal to storage/.
#pragma once

#include "absl/status/status.h"
#include "storage/postgres.h"

namespace mltune::storage {

// Brings the database behind `conn` to Store::kSchemaVersion in one transaction, holding an
// advisory lock so that daemons starting together migrate once. FailedPrecondition for a schema
// newer than this code knows.
absl::Status MigratePostgres(PgConnection& conn, const std::string& where);

// The version recorded in mltune_schema (0 for an empty database).
absl::StatusOr<int> PostgresSchemaVersion(PgConnection& conn);

}  // namespace mltune::storage
