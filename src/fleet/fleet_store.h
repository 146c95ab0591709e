// FleetStore: the fleet's inventory (hosts, their hardware, policy, labels, state) and every
// claim (placement in force), in one database: SQLite (`sqlite:PATH`, the embedded default and
// the file `accel place --claim` has always written) or PostgreSQL (`postgresql://...`, for many
// schedulers on many machines). Same schema, same SQL, same behaviour on both.
//
// Double booking is impossible by construction in the database, never by a lock in a process:
//   - every host CPU a claim consumes and every PCI device it takes is a row of claim_units
//     with PRIMARY KEY (host, unit): a second claim of the same unit is refused by the database;
//   - every claim made from a view of a host names the host generation it was computed at, and
//     the claim's transaction bumps it with `UPDATE hosts SET generation = generation + 1
//     WHERE name = $1 AND generation = $2 AND state = 'enabled'`: if another claim or release
//     reached the host meanwhile, no row changes and the claim is refused (pages and shared
//     vCPUs, which are counts, not units, are guarded this way);
//   - a claim is one transaction: a process killed at any moment leaves all of it or none.
//
// GPUs by model and size (placement::GpuPlacement, schema 5) are guarded the same way, in
// claim_units, by the database alone:
//   - a whole GPU takes the unit "pci:ADDRESS", as a passed-through device does;
//   - a MIG slice takes one unit per memory slice, "mig:ADDRESS:N": the primary key refuses an
//     overlapping GPU instance, so the geometry is exact;
//   - a GPU held in part has one *share row*: unit "pci:ADDRESS", claim_id '*shares'
//     (time-slicing/MPS) or '*mig' (MIG slices), milli = the thousandths its parts hold
//     (CHECK milli BETWEEN 0 AND 1000), holders = how many parts (CHECK holders >= 0); both columns
//     are NULL on every other row. A claim writes its units and share rows in one statement,
//     `INSERT ... ON CONFLICT (host, unit) DO UPDATE` that adds milli and holders to an existing
//     share row of the same mode and sets claim_id to NULL otherwise, which NOT NULL refuses. So
//     shares summing above 1000 (the CHECK), a share beside MIG slices (the modes differ), a part
//     of a GPU held whole or a whole claim or passthrough of a GPU held in part (the same unit:
//     the upsert, or the primary key for a plain insert) are constraint violations: the claim is
//     refused like a taken unit, on both engines, whatever the claimer believed. Concurrent
//     claimers of one GPU meet on its one row (PostgreSQL's upsert waits for the other and adds to
//     what it committed); every claim writes its rows in one order (CPUs, then units by name).
//   - Release deletes the claim's rows and takes its parts off the share rows, deleting a row
//     with its last holder, in the transaction that deletes the claim (the claim row first, so two
//     releases of one claim cannot both subtract). RemoveHost --force deletes the host's rows,
//     share rows included; UpdateHost's topology check names a GPU held in part that the new
//     hardware lacks; Audit recomputes every share row from the claims (mode, sum, holders) and
//     reports a difference, a missing or extra row, and any GPU whose claims sum above 1000.
// A ClaimBatch holds several claims (accel fleet place --count N) in one transaction, each after
// the first in a savepoint, so a refused candidate falls back to the next one and the batch
// commits whole.
//
// The change feed (schema 3): every write that changes what a scheduler sees of a host (a claim,
// a release, host add/update/upsert, an agent's heartbeat) sets the host row's `change` number,
// and removing a host leaves a tombstone in removed_hosts with its own change number. A
// scheduler keeps a high-water mark and asks ChangedSince(mark) for what changed after it,
// instead of reading every host's version. The numbers:
//   - SQLite: max(change over hosts and removed_hosts) + 1, computed inside the write
//     transaction; writers hold the database's write lock, so numbers are handed out in commit
//     order and the mark is the largest number read.
//   - PostgreSQL: the writing transaction's 64-bit id (pg_current_xact_id()). Under READ
//     COMMITTED a transaction that took a number commits whenever it commits, possibly after one
//     with a larger number that a poller has already seen, so "the largest number read" would
//     lose it. A sequence or max+1 has that flaw; transaction ids do not: a snapshot's xmin
//     (pg_snapshot_xmin) is a point below which every transaction has ended, so every row ever
//     to carry a number below it is already visible, and every later write carries a number
//     at or above it. The mark ChangedSince returns is xmin - 1 of the snapshot it read in;
//     rows at or above xmin may come back again on the next poll (cheap: the caller compares
//     generations), and a transaction left open somewhere in the cluster holds xmin back, which
//     makes polls re-read more, never miss anything.
//
// Schema versions (`accel fleet store migrate`): 1 = the claims table of accel's first claim
// store; 2 = hosts, topologies (one row per distinct hardware) and claim_units; 3 = the change
// feed (hosts.change, removed_hosts); 4 = claim_units without a foreign key to claims or an index
// on claim_id (a claim's units are written and deleted with it; Audit finds orphans); 5 = GPUs by
// model and size: claim_units' milli and holders columns (share rows), and the rows of the claims
// made before it that hold GPUs (whole GPUs and MIG slices as units, parts in share rows; a claim
// that would double-book under those rules stops the migration, naming it). SQLite stores are
// migrated when opened (one box, one user); a PostgreSQL store shared by many schedulers is
// migrated only by `accel fleet store migrate`, and opening an older one says so.
//
// Thread-safety: one FleetStore is one connection; use it from one thread at a time (open one
// per thread or process; never carry one across fork()).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fleet/host_record.h"
#include "fleet/sql_connection.h"
#include "fleet/store_url.h"
#include "placement/placement.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::fleet {

/// Seconds since the Unix epoch now: what the store records in heartbeats and host updates,
/// and what staleness is measured against.
int64_t NowUnix();

/// One stored placement.
struct Claim {
  std::string id;          ///< "c-" + 12 lower-case hex digits, unique in the store
  std::string host;        ///< host name the claim holds resources on
  std::string flavor;      ///< flavor name it was placed for
  std::string created_at;  ///< UTC ISO-8601 to the second, e.g. "2024-05-01T12:34:56Z"
  placement::Placement placement;  ///< what it holds
};

/// The store's answer to one claim (FleetStore::ClaimOnHost, ClaimBatch::TryClaim): stored, or
/// refused and why. A refusal is an answer, never an exception; exceptions are failures.
struct ClaimResult {
  std::optional<Claim> claim;  ///< the stored claim; unset when nothing was stored
  /// Why nothing was stored: the host is not enabled, changed or left the fleet, the placement
  /// books a CPU or device that a live claim holds, a GPU share or MIG slice does not fit ("GPU
  /// 0000:41:00.0 on host X: 810/1000 already shared, 470 more would exceed it"), the placement
  /// holds one GPU two ways, or it names another host. "" when stored, or
  /// when ClaimOnHost's callback returned nullopt (no placement: the caller knows why).
  std::string refused;
  bool claimed() const { return claim.has_value(); }
};

/// What `accel fleet host add|update` writes.
struct HostSpec {
  std::string name;                        ///< host name (unique)
  std::optional<topology::HostTopology> topology;  ///< required to add; unset = keep on update
  std::optional<placement::HostPolicy> policy;     ///< unset = default (add) / keep (update)
  Labels set_labels;                       ///< labels to set (add: the labels)
  std::vector<std::string> remove_labels;  ///< label keys to remove (update only)
  std::optional<HostAdminState> state;     ///< unset = enabled (add) / keep (update)
  /// Agent hosts: seconds without a heartbeat after which the host is stale; unset = keep.
  std::optional<int64_t> stale_after_s;
};

/// Everything a scheduler needs, read in one consistent snapshot.
struct FleetSnapshot {
  std::vector<HostRecord> hosts;  ///< by name
  /// Hardware by TopologyId, each held once however many hosts share it (hostname cleared).
  std::map<std::string, std::shared_ptr<const topology::HostTopology>> topologies;
  std::vector<Claim> claims;      ///< live claims, oldest first
  int64_t taken_at = 0;           ///< unix seconds when read (for staleness)
  /// The change feed's mark of this snapshot: pass it to ChangedSince to learn what changed
  /// after it.
  int64_t change = 0;
};

/// What FleetStore::ChangedSince returns: every host written after a mark, and the removed ones.
struct FleetChanges {
  /// Hosts added, updated, claimed on, released on or heartbeating after the mark, by name
  /// (may repeat hosts the caller already knows at the same generation; see the header comment),
  /// each as new as, or newer than, the mark.
  std::vector<HostRecord> hosts;
  /// Hosts removed after the mark (never also in `hosts`).
  std::vector<std::string> removed;
  /// The live claims, oldest first, of each host in `hosts` that the caller asked claims for
  /// (every one of them with no filter); a host without claims maps to an empty list.
  std::map<std::string, std::vector<Claim>> claims;
  /// The mark to pass next time.
  int64_t change = 0;
};

/// One host's state as a scheduler refreshes it: what changes with every claim, release and
/// update (generation) and with every agent heartbeat.
struct HostVersion {
  std::string name;
  int64_t generation = 0;
  std::optional<int64_t> heartbeat_at;  ///< unix seconds; unset for hosts without an agent
};

/// Where claims live unless told otherwise: $ACCEL_STATE when set; for root
/// /var/lib/accel/state.db; otherwise $XDG_STATE_HOME/accel/state.db, or
/// ~/.local/state/accel/state.db when XDG_STATE_HOME is unset or not absolute.
std::string DefaultStatePath();

class FleetStore {
 public:
  /// The schema version this accel writes.
  static constexpr int kSchemaVersion = 5;

  /// Opens the store at `url` (see store_url.h). SQLite: creates the file, its directory and
  /// the schema, migrating an older file. PostgreSQL: connects and checks the schema.
  /// Throws InputError for a malformed URL, a database that is not accel's, a store of a newer
  /// schema, or (PostgreSQL) one that needs `accel fleet store migrate`; SystemError when the
  /// file cannot be opened or the server cannot be reached.
  static std::unique_ptr<FleetStore> Open(const std::string& url);

  /// Opens without checking or creating the schema: for `accel fleet store migrate|status`.
  static std::unique_ptr<FleetStore> OpenForMigration(const std::string& url);

  const std::string& url() const { return db_->url(); }
  SqlConnection& connection() { return *db_; }

  /// The schema version found (0: empty database). Throws InputError when the tables are
  /// another program's.
  int SchemaVersion();
  /// Brings the schema to kSchemaVersion (one transaction; concurrent migrations wait for one
  /// another). Returns the version found before. Throws InputError for a newer schema or a
  /// version-1 claim that double-books another (names the claim).
  int Migrate();

  // --- Inventory -------------------------------------------------------------------------

  /// Adds a host. Throws InputError when `spec.name` exists already, has no topology, or a
  /// label/policy is malformed; nothing is written then.
  HostRecord AddHost(const HostSpec& spec);
  /// Changes the fields set in `spec`, bumping the generation. Throws InputError when there is
  /// no such host. Changing the topology of a host with claims is refused unless every claim
  /// still validates against the new hardware (checked in the transaction).
  HostRecord UpdateHost(const HostSpec& spec);
  /// Adds or updates the host as its agent reports it, and records a heartbeat now. Keeps the
  /// operator's state; labels in spec are merged over existing ones.
  HostRecord UpsertFromAgent(const HostSpec& spec);
  /// Records a heartbeat for `name`. Returns false when there is no such host.
  bool Heartbeat(const std::string& name);
  /// Removes a host. With live claims, throws InputError (naming how many and --force) unless
  /// `force`, which releases them in the same transaction. Returns false when absent.
  bool RemoveHost(const std::string& name, bool force);
  std::optional<HostRecord> GetHost(const std::string& name);
  std::vector<HostRecord> ListHosts();
  /// The hardware `id` (cached after the first read). Throws InputError when absent.
  std::shared_ptr<const topology::HostTopology> Topology(const std::string& id);
  /// Every host's name, generation and heartbeat.
  std::vector<HostVersion> HostVersions();

  /// What changed after `change` (a mark from Snapshot or an earlier ChangedSince): the hosts
  /// written since, the names removed since, and the live claims of those changed hosts for
  /// which `wants_claims` returns true (all of them when it is empty). One statement when no
  /// host needs its claims, two otherwise, whatever the number of hosts, and no transaction: a
  /// host whose claims are returned comes with its record from the same (second) statement, so
  /// the two agree; a host removed between the statements is left out (the next poll reports
  /// the removal). A caller that applies each answer to a view made from the snapshot or answer
  /// the mark came from misses no change (see the header comment). Throws SystemError when the
  /// store fails, InputError for an unreadable row.
  FleetChanges ChangedSince(int64_t change,
                            const std::function<bool(const HostRecord&)>& wants_claims = {});

  /// Hosts, their hardware and every live claim, read consistently, with the change feed's mark.
  FleetSnapshot Snapshot();

  // --- Claims -----------------------------------------------------------------------------

  /// For `accel place --claim` on one named host (in the inventory or not): atomically reads the
  /// host's usage, calls place(usage) and, when it returns a placement, checks it against the
  /// usage (HostUsage::Apply) and stores it with its units. The database serializes claimers of
  /// the host (SQLite: the write lock; PostgreSQL: the host row's lock, or a transaction-scoped
  /// advisory lock for a host not in the inventory). Returns the claim, or no claim when place
  /// returns nullopt, the host is in the inventory but not enabled, or the re-check refuses it
  /// (reason in `refused`; nothing stored). If place
  /// throws, nothing is stored and the exception propagates.
  ClaimResult ClaimOnHost(const std::string& host,
                          const std::function<std::optional<placement::Placement>(
                              const placement::HostUsage&)>& place);

  /// The sum of the live claims on `host` (empty usage when none). Throws InputError when a
  /// stored placement cannot be read or two stored claims overlap (naming the claim id).
  placement::HostUsage UsageOf(const std::string& host);

  /// Deletes claim `id` and its units and takes its GPU parts off the share rows, bumping its
  /// host's generation. Returns true when it existed, false when there is no such claim (or a
  /// concurrent release took it). A claim whose stored placement cannot be read is deleted with
  /// its units; its parts stay in the share rows, which Audit then reports.
  bool Release(const std::string& id);

  /// Live claims, oldest first; only those on `host` when given.
  std::vector<Claim> ListClaims(const std::optional<std::string>& host = std::nullopt);
  /// Claim `id`, or nullopt when there is none.
  std::optional<Claim> GetClaim(const std::string& id);

  /// Recomputes every host's usage from its claims and checks claim_units against them:
  /// returns one line per double-booked CPU, page pool, device or GPU (shares summing above 1000,
  /// shares beside MIG slices), per unit row that does not match its claim, and per share row
  /// whose mode, thousandths or holders differ from what the claims hold (or that no claim
  /// explains, or that is missing); empty when the store is consistent.
  std::vector<std::string> Audit();

  explicit FleetStore(std::unique_ptr<SqlConnection> db) : db_(std::move(db)) {}

 private:
  friend class ClaimBatch;
  /// The claim in `row` (id, host, flavor, created_at, placement), its placement parsed once per
  /// claim: a poller reads a host's claims again with every change of the host, and parsing
  /// placement JSON was most of a poll's client CPU. A claim never changes once stored, and a
  /// cached one is used only when the stored text is the same.
  Claim CachedClaim(const SqlRow& row);

  std::unique_ptr<SqlConnection> db_;
  std::map<std::string, std::shared_ptr<const topology::HostTopology>> topology_cache_;
  /// Claim id -> (placement JSON as stored, the claim); emptied when it passes kClaimCacheSize.
  std::unordered_map<std::string, std::pair<std::string, Claim>> claim_cache_;
  static constexpr size_t kClaimCacheSize = 100000;
};

/// Several claims made all or nothing, in one transaction. A refused candidate costs nothing and
/// the caller tries its next: until the first claim succeeds there is nothing to keep, so a
/// refusal by a unique constraint rolls the transaction back and begins a new one (no savepoint:
/// a batch's first claim is BEGIN, one claim statement, COMMIT on PostgreSQL, or the statement
/// alone with `one_claim` below); later claims run in a savepoint each. Destroying an uncommitted
/// batch rolls every claim of it back.
///
/// `one_claim`: the batch will make at most one claim (a one-instance request trying its
/// candidates in turn). On PostgreSQL each TryClaim is then one statement in its own implicit
/// transaction — no BEGIN and COMMIT round trips, durable when it returns, atomic as any
/// statement (the generation check, the claim and its units, or nothing) — and Commit does
/// nothing. A second TryClaim after a success throws std::logic_error. SQLite keeps the explicit
/// transaction (its write lock is what orders claimers there).
class ClaimBatch {
 public:
  explicit ClaimBatch(FleetStore& store, bool one_claim = false);
  ~ClaimBatch();
  ClaimBatch(const ClaimBatch&) = delete;
  ClaimBatch& operator=(const ClaimBatch&) = delete;

  /// Claims `p` on `host` if the host is still at `expected_generation`, enabled, and every
  /// unit of `p` is free and its GPU parts fit beside the others (see the header comment). Returns
  /// the claim (in the batch; durable with Commit), or no claim with `refused` saying why not
  /// ("host X changed (generation 4 -> 5)", "host X is disabled", "host X left the fleet", "host
  /// X: a unit is taken (the database's message)", "GPU A on host X: 810/1000 already shared,
  /// 470 more would exceed it", "GPU A on host X holds MIG slices, not time-slicing shares").
  /// Throws SystemError when the database fails (the whole batch is lost then).
  ClaimResult TryClaim(const std::string& host, int64_t expected_generation, const placement::Placement& p);

  /// Makes every successful TryClaim durable. Throws SystemError when the commit fails.
  void Commit();

 private:
  FleetStore& store_;
  bool autocommit_ = false;  ///< one_claim on PostgreSQL: no explicit transaction
  bool open_ = false;
  int savepoints_ = 0;
  int claimed_ = 0;  ///< successful TryClaims so far
};

/// The units a placement holds, as claim_units keys: "cpu:N" for each host CPU it consumes
/// (pinned, isolated siblings, emulator), "pci:ADDRESS" for each device and each whole GPU, and
/// "mig:ADDRESS:N" for each memory slice of each MIG slice. (Shares are not units: GpuSharesOf.)
std::vector<std::string> UnitsOf(const placement::Placement& p);

/// What a placement holds of one GPU in part, as its share row counts it (header comment).
struct GpuShare {
  std::string address;  ///< the GPU's PCI address
  bool mig = false;     ///< MIG slices (claim_id '*mig'); false: time-slicing/MPS shares ('*shares')
  int milli = 0;        ///< thousandths its parts hold (GpuPlacement::milli summed)
  int holders = 0;      ///< its parts (GpuPlacement entries) on this GPU
};

/// The GPUs `p` holds in part (shares or MIG slices), one entry per GPU, by address.
std::vector<GpuShare> GpuSharesOf(const placement::Placement& p);

/// The lowest-level claim path, under ClaimOnHost and ClaimBatch::TryClaim: writes claim `c` (its
/// row, its units and its share rows) on the connection as it is — in the caller's transaction, or
/// each statement on its own — with no generation check and no look at the host's usage, so the
/// database's constraints are the only guard. For migrations and for tests that race it. Returns
/// nullopt when written; otherwise why not: a placement that holds one GPU two ways or a part out
/// of range (nothing sent), or the database's message (PostgreSQL inside a transaction: aborted,
/// roll it back; SQLite: the refused statement alone is undone, so roll back too).
std::optional<std::string> InsertClaimRows(SqlConnection& db, const Claim& c);

}  // namespace accel::fleet
