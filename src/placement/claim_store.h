// ClaimStore: the claims (placements in force) of every host, kept in one SQLite database file.
//
// Claim() reads a host's usage, asks the engine for a placement and stores it in one
// BEGIN IMMEDIATE transaction, so processes sharing the file serialize and never double-book;
// a process killed at any moment leaves either the whole claim or none. One ClaimStore is one
// connection: use it from one thread at a time (open one per thread or process; never carry an
// open store across fork()).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "placement/placement.h"
#include "placement/usage.h"

struct sqlite3;

namespace accel::placement {

/// One stored placement.
struct Claim {
  std::string id;          ///< "c-" + 12 lower-case hex digits, unique in the store
  std::string host;        ///< host name the claim holds resources on
  std::string flavor;      ///< flavor name it was placed for
  std::string created_at;  ///< UTC ISO-8601 to the second, e.g. "2024-05-01T12:34:56Z"
  Placement placement;     ///< what it holds
};

/// The answer of ClaimStore::Claim.
struct ClaimResult {
  std::optional<Claim> claim;  ///< the stored claim; unset when nothing was stored
  /// Why a placement the callback returned was refused (it books a CPU or device that a live
  /// claim holds, or names another host); "" when stored or when the callback returned nullopt.
  std::string refused;
  bool claimed() const { return claim.has_value(); }
};

/// Where claims live unless --state says otherwise: $ACCEL_STATE when set; for root
/// /var/lib/accel/state.db; otherwise $XDG_STATE_HOME/accel/state.db, or
/// ~/.local/state/accel/state.db when XDG_STATE_HOME is unset or not absolute.
std::string DefaultStatePath();

class ClaimStore {
 public:
  /// Opens (creating the parent directory, the file and the schema when missing) the store at
  /// `path`, in WAL mode with a 10 s busy timeout. Throws InputError naming `path` and how to fix
  /// it when the directory cannot be made or the file is not an accel claim database (corrupt,
  /// another program's, or a newer schema); SystemError when the file cannot be opened
  /// (permissions, read-only filesystem), the disk fails or another process holds the lock.
  static ClaimStore Open(const std::string& path);

  ClaimStore(ClaimStore&& other) noexcept;
  ClaimStore& operator=(ClaimStore&& other) noexcept;
  ClaimStore(const ClaimStore&) = delete;
  ClaimStore& operator=(const ClaimStore&) = delete;
  ~ClaimStore();

  const std::string& path() const { return path_; }

  /// The sum of the live claims on `host` (empty usage when none). Throws InputError when a
  /// stored placement cannot be read or two stored claims overlap (naming the claim id).
  HostUsage UsageOf(const std::string& host);

  /// Atomically: reads `host`'s usage, calls place(usage) and, when it returns a placement,
  /// checks it against the usage again (HostUsage::Apply) and stores it under a new id. The whole
  /// step holds the database's write lock, so concurrent Claims (threads or processes) see each
  /// other's results. Returns the claim; or no claim when place returns nullopt (nothing stored)
  /// or when the re-check refuses the placement (reason in `refused`, nothing stored). If place
  /// throws, nothing is stored and the exception propagates. Throws SystemError on database errors
  /// (e.g. still locked after the busy timeout, disk full).
  ClaimResult Claim(const std::string& host,
                    const std::function<std::optional<Placement>(const HostUsage&)>& place);

  /// Deletes claim `id`. Returns true when it existed, false when there is no such claim.
  bool Release(const std::string& id);

  /// Live claims, oldest first; only those on `host` when given.
  std::vector<placement::Claim> List(const std::optional<std::string>& host = std::nullopt);

  /// Claim `id`, or nullopt when there is none.
  std::optional<placement::Claim> Get(const std::string& id);

 private:
  ClaimStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace accel::placement
