// What fleet store schema 4 removed from claim_units (src/fleet/fleet_store.cc, kSchemaV4Postgres),
// as PostgreSQL statements that put it back: the foreign key to claims, under the name PostgreSQL
// gave it (the one schema 4 drops), and the index on claim_id. The migration tests make a
// version-3 store with them; fleet_bench --schema3-units compares both schemas in one window.
#pragma once

namespace accel::test_support {

inline constexpr const char* kSchema3ClaimUnitsSql[] = {
    "ALTER TABLE claim_units ADD CONSTRAINT claim_units_claim_id_fkey FOREIGN KEY (claim_id) "
    "REFERENCES claims(id) ON DELETE CASCADE",
    "CREATE INDEX claim_units_by_claim ON claim_units(claim_id)",
};

}  // namespace accel::test_support
