// Schema migrations, applied in order by PRAGMA user_version. Internal to storage/.
#pragma once

#include "absl/status/status.h"
#include "storage/sqlite.h"

namespace mltune::storage {

// The schema version the last migration produces (Store::kSchemaVersion).
int LatestSchemaVersion();

// Brings `db` to LatestSchemaVersion() in one write transaction: a new file gets every
// migration, a current one none. A file whose user_version is newer than this code knows is
// refused with FailedPrecondition (an older mltune must not write a newer schema).
absl::Status Migrate(Database& db);

}  // namespace mltune::storage
