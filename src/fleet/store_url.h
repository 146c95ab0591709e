// Where the fleet store lives: `sqlite:PATH` (the embedded default: one box, no server) or
// `postgresql://...` / `postgres://...` (a libpq connection URI, for many schedulers on many
// machines). `--store URL` names it; $ACCEL_FLEET_STORE is the default; without either, the
// SQLite file `accel place --claim` has always used (DefaultStatePath(), fleet_store.h).
#pragma once

#include <string>

namespace accel::fleet {

struct StoreUrl {
  enum Engine { kSqlite, kPostgres };
  Engine engine = kSqlite;  ///< which database engine
  std::string target;       ///< SQLite: the file path; PostgreSQL: the libpq conninfo (the URL)
  /// For messages: the SQLite file's path; the PostgreSQL URL with any password as "***".
  std::string display;
};

/// Parses `url`. Accepts `sqlite:PATH` (PATH relative or absolute; `sqlite://PATH` too),
/// `postgresql://...`, `postgres://...`, and a plain path ending in .db/.sqlite (taken as
/// sqlite). Throws InputError naming the flag `where` and the accepted forms otherwise.
StoreUrl ParseStoreUrl(const std::string& url, const std::string& where = "--store");

/// The store to use when --store is not given: $ACCEL_FLEET_STORE, else
/// "sqlite:" + DefaultStatePath() (the same file `accel place --claim` writes).
std::string DefaultStoreUrl();

}  // namespace accel::fleet
