// What fleet store schema 5 added to claim_units (src/fleet/fleet_store.cc, kSchemaV5): the
// share-row columns milli and holders, with their CHECKs, and the version row. Statements that
// take a current store back to schema 4's claim_units (same SQL on SQLite and PostgreSQL; on
// SQLite set PRAGMA user_version too), for the migration tests that start from an older store.
// Run them on a store without share rows (claims holding GPUs in part need them).
#pragma once

namespace accel::test_support {

inline constexpr const char* kUndoSchema5Sql[] = {
    "ALTER TABLE claim_units DROP COLUMN milli",
    "ALTER TABLE claim_units DROP COLUMN holders",
    "DELETE FROM accel_schema WHERE version = 5",
};

}  // namespace accel::test_support
