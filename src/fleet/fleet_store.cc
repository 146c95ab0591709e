#include "fleet/fleet_store.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_text.h"
#include "fleet/host_policy_file.h"
#include "fleet/labels.h"
#include "placement/placement_json.h"
#include "topology/host_json.h"

namespace accel::fleet {

namespace {

// --- Schema ---------------------------------------------------------------------------------

// Version 1: the claims table of accel's first claim store (SQLite, PRAGMA user_version 1).
const char* const kSchemaV1[] = {
    "CREATE TABLE IF NOT EXISTS claims("
    "  id TEXT PRIMARY KEY,"
    "  host TEXT NOT NULL,"
    "  flavor TEXT NOT NULL,"
    "  created_at TEXT NOT NULL,"  // UTC ISO-8601
    "  placement TEXT NOT NULL)",  // accel.placement/v1 JSON
    "CREATE INDEX IF NOT EXISTS claims_by_host ON claims(host)",
};

// Version 2: the fleet. claim_units is what makes double booking impossible: one row per CPU and
// device a claim holds, unique per host. (Its foreign key and claim_id index went in version 4.)
const char* const kSchemaV2[] = {
    "CREATE TABLE accel_schema(version INTEGER NOT NULL)",
    "CREATE TABLE topologies("
    "  id TEXT PRIMARY KEY,"       // TopologyId: sha256 of the anonymized accel.host/v1 JSON
    "  body TEXT NOT NULL)",       // accel.host/v1 JSON, hostname cleared
    "CREATE TABLE hosts("
    "  name TEXT PRIMARY KEY,"
    "  topology_id TEXT NOT NULL REFERENCES topologies(id),"
    "  policy TEXT NOT NULL,"      // host policy JSON (host_policy_file.h)
    "  labels TEXT NOT NULL,"      // JSON object
    "  state TEXT NOT NULL CHECK (state IN ('enabled', 'disabled', 'maintenance')),"
    "  generation BIGINT NOT NULL DEFAULT 0,"
    "  heartbeat_at BIGINT,"       // unix seconds; NULL for hosts not run by an agent
    "  stale_after_s BIGINT NOT NULL DEFAULT 0,"
    "  updated_at TEXT NOT NULL)",
    "CREATE TABLE claim_units("
    "  host TEXT NOT NULL,"
    "  unit TEXT NOT NULL,"        // "cpu:N" or "pci:DDDD:BB:DD.F"
    "  claim_id TEXT NOT NULL REFERENCES claims(id) ON DELETE CASCADE,"
    "  PRIMARY KEY (host, unit))",
    "CREATE INDEX claim_units_by_claim ON claim_units(claim_id)",
    // Microseconds since the epoch: lists claims oldest first across processes and engines.
    "ALTER TABLE claims ADD COLUMN created_us BIGINT NOT NULL DEFAULT 0",
    "INSERT INTO accel_schema(version) VALUES (2)",
};

// Version 3: the change feed (fleet_store.h). Rows written before it carry change number 0: a
// scheduler starts from a Snapshot, whose mark is at least that.
const char* const kSchemaV3[] = {
    "ALTER TABLE hosts ADD COLUMN change_number BIGINT NOT NULL DEFAULT 0",
    "CREATE INDEX hosts_by_change ON hosts(change_number)",
    // One tombstone per removed name (the latest removal); deleted when the name is added again,
    // so a name is never both here and in hosts. Kept otherwise: a poller that was away for
    // any time still learns the host is gone, and the table holds one short row per name.
    "CREATE TABLE removed_hosts("
    "  name TEXT PRIMARY KEY,"
    "  change_number BIGINT NOT NULL)",
    "CREATE INDEX removed_hosts_by_change ON removed_hosts(change_number)",
    "INSERT INTO accel_schema(version) VALUES (3)",
};

// Version 4: claim_units without its foreign key to claims and without its claim_id index. Every
// writer inserts a claim's units with the claim (one statement on PostgreSQL, one transaction on
// SQLite) and deletes them with it (Release, RemoveHost: by host, which the primary key leads
// with), so the key guarded nothing the writers do not, and Audit() reports an orphan unit
// row if one ever appears. What it cost: PostgreSQL checks a foreign key once per inserted row
// (36 checks for a 4-GPU claim) and the second index took 36 more entries; together about a third
// of the server's CPU per claim (docs/benchmarks.md, "Schema 4"). The primary key (host, unit),
// which is what makes double booking impossible, stays. SQLite cannot drop a constraint, so the
// table is rebuilt (it never enforced the key: foreign_keys is off).
const char* const kSchemaV4Postgres[] = {
    "ALTER TABLE claim_units DROP CONSTRAINT IF EXISTS claim_units_claim_id_fkey",
    "DROP INDEX IF EXISTS claim_units_by_claim",
    "INSERT INTO accel_schema(version) VALUES (4)",
};
const char* const kSchemaV4Sqlite[] = {
    "CREATE TABLE claim_units_v4("
    "  host TEXT NOT NULL,"
    "  unit TEXT NOT NULL,"
    "  claim_id TEXT NOT NULL,"
    "  PRIMARY KEY (host, unit))",
    "INSERT INTO claim_units_v4(host, unit, claim_id) SELECT host, unit, claim_id FROM claim_units",
    "DROP TABLE claim_units",  // and its claim_units_by_claim index
    "ALTER TABLE claim_units_v4 RENAME TO claim_units",
    "INSERT INTO accel_schema(version) VALUES (4)",
};

// Version 5: GPUs held in part (fleet_store.h, "GPUs by model and size"). A GPU that claims hold
// in time-slicing/MPS shares or MIG slices has one share row in claim_units: unit
// 'pci:ADDRESS', claim_id '*shares' or '*mig' (claim ids start "c-"), milli = the thousandths its
// parts hold, holders = how many parts. The columns are NULL on every other row. The CHECKs make
// a sum above the GPU a constraint violation; the claim's upsert makes a clash of modes one.
const char* const kSchemaV5[] = {
    "ALTER TABLE claim_units ADD COLUMN milli INTEGER CONSTRAINT claim_units_gpu_milli CHECK (milli BETWEEN 0 AND 1000)",
    "ALTER TABLE claim_units ADD COLUMN holders INTEGER CONSTRAINT claim_units_gpu_holders CHECK (holders >= 0)",
};

// The change number a write stores (fleet_store.h explains both engines' choice).
const char* ChangeNumberSql(SqlConnection& db) {
  return db.engine() == SqlEngine::kPostgres
             ? "pg_current_xact_id()::text::bigint"
             : "(SELECT coalesce(max(c), 0) + 1 FROM (SELECT max(change_number) AS c FROM hosts "
               "UNION ALL SELECT max(change_number) FROM removed_hosts))";
}

// The mark of the snapshot a statement reads in: every change at or below it is visible.
const char* ChangeMarkSql(SqlConnection& db) {
  return db.engine() == SqlEngine::kPostgres
             ? "pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1"
             : "(SELECT coalesce(max(c), 0) FROM (SELECT max(change_number) AS c FROM hosts "
               "UNION ALL SELECT max(change_number) FROM removed_hosts))";
}

// A PostgreSQL text[] literal of `items` ({"a","b"}), for `= ANY($1::text[])`.
std::string TextArrayLiteral(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// `column IN (the items)` with the list as one parameter $n, so the statement text (and its
// prepared statement) is the same for any number of items.
std::string InListSql(SqlConnection& db, const std::string& column, int n) {
  const std::string p = "$" + std::to_string(n);
  return db.engine() == SqlEngine::kPostgres ? column + " = ANY(" + p + "::text[])"
                                             : column + " IN (SELECT value FROM json_each(" + p + "))";
}

std::string InListParam(SqlConnection& db, const std::vector<std::string>& items) {
  if (db.engine() == SqlEngine::kPostgres) return TextArrayLiteral(items);
  return nlohmann::json(items).dump();
}

constexpr const char* kHostColumns =
    "name, topology_id, policy, labels, state, generation, heartbeat_at, stale_after_s, updated_at";

// "c-" + 48 random bits: short enough to type into `accel release`.
std::string NewClaimId() {
  static thread_local std::random_device rd;  // /dev/urandom: distinct across forked processes
  uint64_t bits = (static_cast<uint64_t>(rd()) << 32 | rd()) & 0xffffffffffffULL;
  char buf[20];
  std::snprintf(buf, sizeof buf, "c-%012llx", static_cast<unsigned long long>(bits));
  return buf;
}

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NowMicros() {
  return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

int64_t ToInt(const SqlValue& v) { return v ? std::stoll(*v) : 0; }

// A read-only transaction that sees one state of the store for all its statements (SQLite's
// WAL read transaction does; PostgreSQL's default READ COMMITTED would not).
void BeginSnapshot(SqlConnection& db) {
  if (db.engine() == SqlEngine::kPostgres) db.Exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

constexpr const char* kClaimColumns = "id, host, flavor, created_at, placement";

std::string Text(const SqlValue& v) { return v.value_or(""); }

bool TableExists(SqlConnection& db, const std::string& table) {
  const char* sql = db.engine() == SqlEngine::kSqlite
                        ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1"
                        : "SELECT count(*) FROM information_schema.tables "
                          "WHERE table_schema = current_schema() AND table_name = $1";
  return ToInt(db.Exec(sql, {table}).rows.at(0).at(0)) > 0;
}

// Reads the placement stored for claim `id`; a bad one names the claim and how to get rid of it.
placement::Placement StoredPlacement(const std::string& url, const std::string& id, const std::string& json) {
  try {
    return placement::ReadPlacementJson(json, url + " (claim " + id + ")");
  } catch (const InputError& e) {
    throw InputError(e.where(), e.field(), e.problem(), "release it with `accel release " + id + "`");
  }
}

Claim ClaimFromRow(const std::string& url, const SqlRow& r) {
  std::string id = Text(r[0]);
  return Claim{id, Text(r[1]), Text(r[2]), Text(r[3]), StoredPlacement(url, id, Text(r[4]))};
}

HostRecord HostFromRow(const std::string& url, const SqlRow& r) {
  HostRecord h;
  h.name = Text(r[0]);
  h.topology_id = Text(r[1]);
  const std::string where = url + " (host " + h.name + ")";
  try {
    h.policy = HostPolicyFromJson(ParseJsonText(Text(r[2]), where + ": policy"), where);
    const nlohmann::json labels = ParseJsonText(Text(r[3]), where + ": labels");  // outlives the loop
    for (const auto& [k, v] : labels.items()) h.labels[k] = v.get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, "", std::string("stored policy or labels unreadable: ") + e.what(),
                     "set them again with `accel fleet host update`");
  }
  h.state = ParseHostAdminState(Text(r[4]), where);
  h.generation = ToInt(r[5]);
  if (r[6]) h.heartbeat_at = ToInt(r[6]);
  h.stale_after_s = ToInt(r[7]);
  h.updated_at = Text(r[8]);
  return h;
}

std::string LabelsJson(const Labels& labels) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  return j.dump();
}

// --- The rows of a claim ------------------------------------------------------------------

// claim_id of a share row: what the GPU's parts are (fleet_store.h). Never a claim id ("c-...").
constexpr const char* kSharesMode = "*shares";
constexpr const char* kMigMode = "*mig";

const char* ModeOf(const GpuShare& s) { return s.mig ? kMigMode : kSharesMode; }

// One row of claim_units a claim writes: its own unit (mode "") or a share row.
struct UnitRow {
  std::string unit;
  std::string mode;  // "" for the claim's own unit; kSharesMode or kMigMode for a share row
  int milli = 0;     // share rows only
  int holders = 0;   // share rows only
};

// Everything a claim writes to claim_units.
struct ClaimRows {
  std::vector<std::string> units;  // UnitsOf(p), in its order
  std::vector<GpuShare> shares;    // GpuSharesOf(p)
  // With shares: every row, CPUs first in UnitsOf's order, then the rest by unit (one order for
  // every writer, so PostgreSQL claimers lock rows in the same order).
  std::vector<UnitRow> ordered;
};

bool ValidMigRange(const placement::GpuPlacement& g) {
  return g.mig_start >= 0 && g.mig_slices >= 1 && g.mig_start < 32 && g.mig_slices <= 32 - g.mig_start;
}

// Fills *rows with what `p` writes. Returns "" or why `p` cannot be stored whatever the other
// claims hold: it holds one GPU two ways (whole and in part, shares and MIG slices, passed through
// and given by model, whole twice), a part out of range, or one unit twice beside a share row (the
// upsert would meet its own row). The database judges everything that depends on other claims.
std::string RowsOf(const placement::Placement& p, ClaimRows* rows) {
  std::set<std::string> whole;
  for (const placement::GpuPlacement& g : p.gpus) {
    const std::string& a = g.address;
    if (g.is_mig() && !ValidMigRange(g))
      return "GPU " + a + ": MIG slices " + std::to_string(g.mig_start) + "+" + std::to_string(g.mig_slices) +
             " are out of range";
    if ((g.is_mig() || g.is_share()) && (g.milli < 1 || g.milli > 1000))
      return "GPU " + a + ": a part of " + std::to_string(g.milli) + " thousandths is not 1..1000";
    if (!g.is_mig() && !g.is_share() && !whole.insert(a).second)
      return "GPU " + a + " appears twice in the placement";
  }
  rows->units = UnitsOf(p);
  rows->shares = GpuSharesOf(p);
  for (const GpuShare& s : rows->shares) {
    if (whole.count(s.address)) return "GPU " + s.address + " is held whole and in part by the placement";
    if (s.milli > 1000)
      return "GPU " + s.address + ": the placement's parts hold " + std::to_string(s.milli) + "/1000 thousandths";
    for (const placement::GpuPlacement& g : p.gpus)
      if (g.address == s.address && (g.is_mig() || g.is_share()) && g.is_mig() != s.mig)
        return "GPU " + s.address + " holds time-slicing shares and MIG slices in the same placement";
  }
  for (const placement::DevicePlacement& d : p.devices) {
    if (whole.count(d.address)) return "GPU " + d.address + " is passed through and given by model";
    for (const GpuShare& s : rows->shares)
      if (s.address == d.address) return "GPU " + d.address + " is passed through and shared by the placement";
  }
  if (rows->shares.empty()) return "";
  std::set<std::string> seen;
  for (const std::string& u : rows->units) {
    if (!seen.insert(u).second) return "unit " + u + " appears twice in the placement";
    rows->ordered.push_back({u, "", 0, 0});
  }
  for (const GpuShare& s : rows->shares) rows->ordered.push_back({"pci:" + s.address, ModeOf(s), s.milli, s.holders});
  const auto first_other = std::find_if(rows->ordered.begin(), rows->ordered.end(),
                                        [](const UnitRow& r) { return r.unit.rfind("cpu:", 0) != 0; });
  std::sort(first_other, rows->ordered.end(), [](const UnitRow& a, const UnitRow& b) { return a.unit < b.unit; });
  return "";
}

// What a share row's upsert does when the unit is there already: add to it when both rows are
// share rows of the same mode; otherwise set claim_id to NULL, which NOT NULL refuses (a whole
// holder, a passthrough device or a CPU is never shared, a share never lands on a whole holder's
// row, shares never meet MIG slices). The CHECKs refuse a sum above 1000.
constexpr const char* kShareUpsert =
    " ON CONFLICT (host, unit) DO UPDATE SET"
    " claim_id = CASE WHEN claim_units.milli IS NOT NULL AND excluded.milli IS NOT NULL"
    " AND claim_units.claim_id = excluded.claim_id THEN claim_units.claim_id END,"
    " milli = claim_units.milli + excluded.milli,"
    " holders = claim_units.holders + excluded.holders";

// A PostgreSQL int[] literal of the rows' `field` ({NULL,470}: NULL on a claim's own units).
std::string IntArrayLiteral(const std::vector<UnitRow>& rows, int UnitRow::*field) {
  std::string out = "{";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i) out += ',';
    out += rows[i].mode.empty() ? "NULL" : std::to_string(rows[i].*field);
  }
  return out + "}";
}

// The row list as parameters: PostgreSQL's four arrays (unit, mode, milli, holders), or SQLite's one
// JSON array of [unit, mode, milli, holders] (null for a claim's own unit).
std::vector<SqlValue> RowParams(SqlConnection& db, const std::vector<UnitRow>& rows) {
  if (db.engine() == SqlEngine::kPostgres) {
    std::vector<std::string> units, modes;
    for (const UnitRow& r : rows) {
      units.push_back(r.unit);
      modes.push_back(r.mode);
    }
    return {TextArrayLiteral(units), TextArrayLiteral(modes), IntArrayLiteral(rows, &UnitRow::milli),
            IntArrayLiteral(rows, &UnitRow::holders)};
  }
  nlohmann::json list = nlohmann::json::array();
  for (const UnitRow& r : rows) {
    if (r.mode.empty()) list.push_back({r.unit, nullptr, nullptr, nullptr});
    else list.push_back({r.unit, r.mode, r.milli, r.holders});
  }
  return {list.dump()};
}

// Writes the claim_units rows of claim `claim_id` on `host`. Returns the database's message when
// a constraint refused them (a unit is taken, a share would pass 1000 or meet a whole holder or
// the other mode) and nullopt when they are written.
std::optional<std::string> InsertRows(SqlConnection& db, const std::string& host, const std::string& claim_id,
                                      const ClaimRows& rows) {
  if (rows.shares.empty()) {
    if (rows.units.empty()) return std::nullopt;
    // One statement text for any number of units: the list travels as one parameter.
    return db
        .TryExec(db.engine() == SqlEngine::kPostgres
                     ? "INSERT INTO claim_units(host, unit, claim_id) SELECT $1, unnest($3::text[]), $2"
                     : "INSERT INTO claim_units(host, unit, claim_id) SELECT $1, value, $2 FROM json_each($3)",
                 {host, claim_id, InListParam(db, rows.units)})
        .refused;
  }
  std::vector<SqlValue> params = {host, claim_id};
  for (SqlValue& v : RowParams(db, rows.ordered)) params.push_back(std::move(v));
  return db
      .TryExec(std::string(db.engine() == SqlEngine::kPostgres
                               ? "INSERT INTO claim_units(host, unit, claim_id, milli, holders)"
                                 " SELECT $1, r.unit, coalesce(nullif(r.mode, ''), $2), r.milli, r.holders"
                                 " FROM unnest($3::text[], $4::text[], $5::int[], $6::int[])"
                                 " WITH ORDINALITY AS r(unit, mode, milli, holders, n) ORDER BY r.n"
                               : "INSERT INTO claim_units(host, unit, claim_id, milli, holders)"
                                 " SELECT $1, json_extract(value, '$[0]'), coalesce(json_extract(value, '$[1]'), $2),"
                                 " json_extract(value, '$[2]'), json_extract(value, '$[3]') FROM json_each($3)"
                                 " WHERE true") +  // SQLite: WHERE keeps ON CONFLICT from reading as a join's ON
                   kShareUpsert,
               params)
      .refused;
}

// Inserts the claim row and its claim_units rows. Returns the database's message when a
// constraint refused them — a unit is taken, a share does not fit (or, once in 2^48, the id): the
// caller rolls back what was written — and nullopt when both are written.
std::optional<std::string> InsertClaim(SqlConnection& db, const Claim& c, const ClaimRows& rows) {
  SqlResult claim = db.TryExec(
      "INSERT INTO claims(id, host, flavor, created_at, placement, created_us) VALUES ($1, $2, $3, $4, $5, $6)",
      {c.id, c.host, c.flavor, c.created_at, placement::WritePlacementJson(c.placement), NowMicros()});
  if (claim.refused) return std::move(claim.refused);
  return InsertRows(db, c.host, c.id, rows);
}

// After claim `id`'s own rows are deleted: takes its parts off the share rows, deleting a row
// with its last holder. Clamped at 0, so a store corrupted by hand can still release (Audit
// reports the rest).
void ReleaseShares(SqlConnection& db, const std::string& host, const std::vector<GpuShare>& shares) {
  for (const GpuShare& s : shares) {
    const std::string unit = "pci:" + s.address, milli = std::to_string(s.milli), holders = std::to_string(s.holders);
    db.Exec("DELETE FROM claim_units WHERE host = $1 AND unit = $2 AND claim_id = $3 AND holders <= $4",
            {host, unit, ModeOf(s), holders});
    db.Exec("UPDATE claim_units SET milli = CASE WHEN milli > $4 THEN milli - $4 ELSE 0 END,"
            " holders = CASE WHEN holders > $5 THEN holders - $5 ELSE 0 END"
            " WHERE host = $1 AND unit = $2 AND claim_id = $3",
            {host, unit, ModeOf(s), milli, holders});
  }
}

// The PCI address a unit names: "cpu:N" -> "", "pci:A" -> A, "mig:A:N" -> A.
std::string AddressOfUnit(const std::string& unit) {
  if (unit.rfind("pci:", 0) == 0) return unit.substr(4);
  if (unit.rfind("mig:", 0) == 0) {
    const size_t last = unit.rfind(':');
    return last > 4 ? unit.substr(4, last - 4) : "";
  }
  return "";
}

// Why a claim of `rows` on `host` was refused, when a GPU is the reason: read after the refusal
// (outside the refused statement), so a claim that raced away leaves nothing to explain and the
// caller keeps the database's message. "" when no GPU row explains it.
std::string ExplainGpuRefusal(SqlConnection& db, const std::string& host, const ClaimRows& rows) {
  std::vector<std::string> wanted = rows.units;
  for (const GpuShare& s : rows.shares) wanted.push_back("pci:" + s.address);
  if (wanted.empty()) return "";
  std::map<std::string, SqlRow> held;
  for (SqlRow& row : db.Exec("SELECT unit, claim_id, milli, holders FROM claim_units WHERE host = $1 AND " +
                                 InListSql(db, "unit", 2),
                             {host, InListParam(db, wanted)})
                         .rows)
    held[Text(row[0])] = std::move(row);
  const std::string on = " on host " + host;
  for (const GpuShare& s : rows.shares) {
    auto it = held.find("pci:" + s.address);
    if (it == held.end()) continue;
    const std::string& holder = Text(it->second[1]);
    const std::string gpu = "GPU " + s.address + on;
    if (!it->second[2]) return gpu + " is held whole by claim " + holder;
    if (holder != ModeOf(s))
      return gpu + (s.mig ? " holds time-slicing shares, not MIG slices" : " holds MIG slices, not time-slicing shares");
    const int64_t milli = ToInt(it->second[2]);
    if (milli + s.milli > 1000)
      return gpu + ": " + std::to_string(milli) + "/1000 already " + (s.mig ? "held by MIG slices" : "shared") + ", " +
             std::to_string(s.milli) + " more would exceed it";
  }
  for (const std::string& unit : rows.units) {
    auto it = held.find(unit);
    if (it == held.end()) continue;
    const std::string address = AddressOfUnit(unit);
    if (address.empty()) continue;
    const std::string& holder = Text(it->second[1]);
    if (it->second[2])
      return "GPU " + address + on + (holder == kMigMode ? " holds MIG slices" : " is shared (" + Text(it->second[2]) + "/1000 held)") +
             ", not free whole";
    if (unit.rfind("mig:", 0) == 0)
      return "GPU " + address + on + ": MIG memory slice " + unit.substr(unit.rfind(':') + 1) + " is in claim " + holder;
  }
  return "";
}

// PostgreSQL: one claim in one statement — the generation check and bump (with the change
// number), the claim row and its units. A data-modifying CTE runs to completion whether or not
// it is read, and the claim and units are inserted only from the row the UPDATE returned, so a
// stale generation inserts nothing (claimed = 0) and a taken unit fails the whole statement.
constexpr const char* kClaimStatementPostgres =
    "WITH bumped AS ("
    "  UPDATE hosts SET generation = generation + 1, change_number = pg_current_xact_id()::text::bigint"
    "  WHERE name = $1 AND generation = $2 AND state = 'enabled' RETURNING name),"
    " claim AS ("
    "  INSERT INTO claims(id, host, flavor, created_at, placement, created_us)"
    "  SELECT $3, name, $4, $5, $6, $7::bigint FROM bumped RETURNING id),"
    " units AS ("
    "  INSERT INTO claim_units(host, unit, claim_id) SELECT $1, u, id FROM claim, unnest($8::text[]) AS u"
    "  RETURNING 1)"
    " SELECT (SELECT count(*) FROM claim), (SELECT count(*) FROM units)";

// The same for a claim that holds GPUs in part: its units and share rows in one upsert, in the
// rows' order ($8..$11: unit, mode, milli, holders; see InsertRows). A share that does not fit
// fails the whole statement as a taken unit does.
const std::string kClaimStatementPostgresShares =
    std::string(
        "WITH bumped AS ("
        "  UPDATE hosts SET generation = generation + 1, change_number = pg_current_xact_id()::text::bigint"
        "  WHERE name = $1 AND generation = $2 AND state = 'enabled' RETURNING name),"
        " claim AS ("
        "  INSERT INTO claims(id, host, flavor, created_at, placement, created_us)"
        "  SELECT $3, name, $4, $5, $6, $7::bigint FROM bumped RETURNING id),"
        " units AS ("
        "  INSERT INTO claim_units(host, unit, claim_id, milli, holders)"
        "  SELECT $1, r.unit, coalesce(nullif(r.mode, ''), claim.id), r.milli, r.holders"
        "  FROM claim, unnest($8::text[], $9::text[], $10::int[], $11::int[])"
        "  WITH ORDINALITY AS r(unit, mode, milli, holders, n) ORDER BY r.n") +
    kShareUpsert +
    "  RETURNING 1)"
    " SELECT (SELECT count(*) FROM claim), (SELECT count(*) FROM units)";

void MigrateV1ToV2(SqlConnection& db) {
  for (const char* sql : kSchemaV2) db.Exec(sql);
  // Every existing claim's units, so the database guards them from now on.
  SqlResult claims = db.Exec("SELECT id, host, flavor, created_at, placement FROM claims ORDER BY id");
  for (const SqlRow& row : claims.rows) {
    Claim c = ClaimFromRow(db.url(), row);
    const std::vector<std::string> units = UnitsOf(c.placement);
    for (const std::string& unit : units) {
      if (db.TryExec("INSERT INTO claim_units(host, unit, claim_id) VALUES ($1, $2, $3)", {c.host, unit, c.id}).refused)
        throw InputError(db.url() + " (claim " + c.id + ")", "", unit + " is also held by another claim",
                         "release one of them with `accel release ID` and migrate again");
    }
  }
}

// Version 5 for the claims made before it: a claim that holds GPUs by model and size gets the
// rows it would get now (whole GPUs and MIG slices as units, its parts in share rows). Claims
// without "gpus" in their placement are not read: their rows are already what they would be.
void MigrateToV5(SqlConnection& db) {
  for (const char* sql : kSchemaV5) db.Exec(sql);
  SqlResult claims = db.Exec("SELECT id, host, flavor, created_at, placement FROM claims "
                             "WHERE placement LIKE '%\"gpus\"%' ORDER BY created_us, created_at, id");
  for (const SqlRow& row : claims.rows) {
    const Claim c = ClaimFromRow(db.url(), row);
    if (c.placement.gpus.empty()) continue;
    const std::string where = db.url() + " (claim " + c.id + ")";
    const std::string hint = "release one of them with `accel release ID` and migrate again";
    ClaimRows rows;
    if (std::string bad = RowsOf(c.placement, &rows); !bad.empty()) throw InputError(where, "", bad, hint);
    db.Exec("DELETE FROM claim_units WHERE host = $1 AND claim_id = $2", {c.host, c.id});
    if (std::optional<std::string> refused = InsertRows(db, c.host, c.id, rows)) {
      // SQLite: the statement alone failed, so the rows can be read; PostgreSQL: the transaction
      // is aborted, and the database's message names the constraint.
      std::string why = db.engine() == SqlEngine::kSqlite ? ExplainGpuRefusal(db, c.host, rows) : "";
      throw InputError(where, "", (why.empty() ? "its GPUs" : why) + ": also held by another claim (" + *refused + ")",
                       hint);
    }
  }
  db.Exec("INSERT INTO accel_schema(version) VALUES (5)");
}

}  // namespace

std::vector<std::string> UnitsOf(const placement::Placement& p) {
  CpuSet cpus = p.emulator_consumed_cpus;
  for (const placement::CellPlacement& c : p.cells) cpus = cpus.Union(c.consumed_cpus);
  std::vector<std::string> units;
  for (int cpu : cpus.ToVector()) units.push_back("cpu:" + std::to_string(cpu));
  for (const placement::DevicePlacement& d : p.devices) units.push_back("pci:" + d.address);
  for (const placement::GpuPlacement& g : p.gpus) {
    if (g.is_mig()) {
      if (!ValidMigRange(g)) continue;  // refused before any write (RowsOf)
      for (int slice = g.mig_start; slice < g.mig_start + g.mig_slices; ++slice)
        units.push_back("mig:" + g.address + ":" + std::to_string(slice));
    } else if (!g.is_share()) {
      units.push_back("pci:" + g.address);
    }
  }
  return units;
}

std::optional<std::string> InsertClaimRows(SqlConnection& db, const Claim& c) {
  ClaimRows rows;
  if (std::string bad = RowsOf(c.placement, &rows); !bad.empty()) return "host " + c.host + ": " + bad;
  return InsertClaim(db, c, rows);
}

std::vector<GpuShare> GpuSharesOf(const placement::Placement& p) {
  std::map<std::string, GpuShare> by_address;
  for (const placement::GpuPlacement& g : p.gpus) {
    if (!g.is_mig() && !g.is_share()) continue;
    GpuShare& s = by_address[g.address];
    if (s.holders == 0) {
      s.address = g.address;
      s.mig = g.is_mig();
    }
    s.milli += g.milli;
    ++s.holders;
  }
  std::vector<GpuShare> out;
  for (auto& [address, s] : by_address) out.push_back(std::move(s));
  return out;
}

std::string DefaultStatePath() {
  if (const char* env = std::getenv("ACCEL_STATE"); env && *env) return env;
  if (geteuid() == 0) return "/var/lib/accel/state.db";
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && xdg[0] == '/') {
    return std::string(xdg) + "/accel/state.db";
  }
  std::string home;
  if (const char* env = std::getenv("HOME"); env && *env) {
    home = env;
  } else if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  }
  return home + "/.local/state/accel/state.db";
}

// --- Opening and migrating ------------------------------------------------------------------

std::unique_ptr<FleetStore> FleetStore::OpenForMigration(const std::string& url) {
  StoreUrl parsed = ParseStoreUrl(url);
  std::unique_ptr<SqlConnection> db = parsed.engine == StoreUrl::kSqlite
                                          ? OpenSqlite(parsed.target, parsed.display)
                                          : OpenPostgres(parsed.target, parsed.display);
  return std::make_unique<FleetStore>(std::move(db));
}

std::unique_ptr<FleetStore> FleetStore::Open(const std::string& url) {
  std::unique_ptr<FleetStore> store = OpenForMigration(url);
  int found = store->SchemaVersion();
  if (found == kSchemaVersion) return store;
  if (found > kSchemaVersion) {
    throw InputError(store->url(), "", "was written by a newer accel (schema version " + std::to_string(found) +
                                           ", this accel knows " + std::to_string(kSchemaVersion) + ")",
                     "use that accel version, or pass --store URL / set ACCEL_FLEET_STORE to use another store");
  }
  if (store->db_->engine() == SqlEngine::kPostgres) {
    throw InputError(store->url(), "", "has schema version " + std::to_string(found) + ", this accel needs " +
                                           std::to_string(kSchemaVersion),
                     "run `accel fleet store migrate --store URL` once (every scheduler replica shares it)");
  }
  store->Migrate();
  return store;
}

int FleetStore::SchemaVersion() {
  SqlConnection& db = *db_;
  // SQLite files also carry the version in PRAGMA user_version (accel's first claim store kept
  // it only there); the larger of the two wins, so a newer accel's file is never mistaken.
  int user_version = 0;
  if (db.engine() == SqlEngine::kSqlite)
    user_version = static_cast<int>(ToInt(db.Exec("PRAGMA user_version").rows.at(0).at(0)));
  if (TableExists(db, "accel_schema")) {
    SqlResult r = db.Exec("SELECT max(version) FROM accel_schema");
    return std::max(user_version, static_cast<int>(ToInt(r.rows.at(0).at(0))));
  }
  if (user_version > 1) return user_version;
  if (!TableExists(db, "claims")) return 0;
  try {
    db.Exec("SELECT id, host, flavor, created_at, placement FROM claims WHERE 1 = 0");
  } catch (const InputError& e) {
    throw InputError(url(), "claims", "is not accel's claims table (" + e.problem() + ")",
                     "move the file aside, or pass --store URL / set ACCEL_FLEET_STORE to use another store");
  } catch (const SystemError& e) {
    throw InputError(url(), "claims", "is not accel's claims table (" + e.reason() + ")",
                     "use an empty database for the fleet store");
  }
  return 1;
}

int FleetStore::Migrate() {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  // Replicas started together migrate one after the other; the second finds the work done.
  if (db.engine() == SqlEngine::kPostgres) db.Exec("SELECT pg_advisory_xact_lock(7427746521)");
  const int found = SchemaVersion();
  if (found > kSchemaVersion) {
    throw InputError(url(), "", "was written by a newer accel (schema version " + std::to_string(found) + ")",
                     "use that accel version");
  }
  if (found < 1) {
    for (const char* sql : kSchemaV1) db.Exec(sql);
  }
  if (found < 2) MigrateV1ToV2(db);
  if (found < 3)
    for (const char* sql : kSchemaV3) db.Exec(sql);
  if (found < 4) {
    if (db.engine() == SqlEngine::kPostgres)
      for (const char* sql : kSchemaV4Postgres) db.Exec(sql);
    else
      for (const char* sql : kSchemaV4Sqlite) db.Exec(sql);
  }
  if (found < 5) MigrateToV5(db);
  if (db.engine() == SqlEngine::kSqlite) db.Exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  tx.Commit();
  return found;
}

// --- Inventory ------------------------------------------------------------------------------

namespace {

// A name added again is a host, not a removal. Called after the host row is written: on SQLite
// the change number is max + 1, and the tombstone may hold the max, so deleting it first would
// hand the new row a number a poller has already passed. (Likewise RemoveHost writes the
// tombstone before deleting the row.)
void DropTombstone(SqlConnection& db, const std::string& name) {
  db.Exec("DELETE FROM removed_hosts WHERE name = $1", {name});
}

void PutTopology(SqlConnection& db, const topology::HostTopology& host, std::string* id) {
  *id = TopologyId(host);
  db.Exec("INSERT INTO topologies(id, body) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
          {*id, topology::ToJson(Anonymized(host))});
}

std::optional<HostRecord> ReadHost(SqlConnection& db, const std::string& name) {
  SqlResult r = db.Exec(std::string("SELECT ") + kHostColumns + " FROM hosts WHERE name = $1", {name});
  if (r.rows.empty()) return std::nullopt;
  return HostFromRow(db.url(), r.rows[0]);
}

// What `usage` holds beyond `hw`'s pools: one sentence per node it names that `hw` lacks, and per
// hugepage pool it takes more pages of than the node has. Base pages (4 KiB) are memory, bounded
// by the engine's reserve rules, and not checked. Empty when the pools hold it.
std::vector<std::string> PoolOverbooking(const topology::HostTopology& hw, const placement::HostUsage& usage) {
  std::vector<std::string> problems;
  for (const auto& [node_id, node] : usage.nodes) {
    const int index = hw.NodeIndex(node_id);
    if (index < 0) {
      problems.push_back("claims on node " + std::to_string(node_id) + ", which it lacks");
      continue;
    }
    for (const auto& [size_kib, used] : node.pages_used) {
      if (size_kib == 4) continue;
      uint64_t total = 0;
      for (const topology::HugepagePool& pool : hw.numa_nodes[index].pages)
        if (pool.size_kib == size_kib) total = pool.total;
      if (used > total)
        problems.push_back("node " + std::to_string(node_id) + " has " + std::to_string(total) + " pages of " +
                           std::to_string(size_kib) + " KiB, claims hold " + std::to_string(used));
    }
  }
  return problems;
}

// Every CPU and device the host's claims hold must exist on `hw`, and every page pool must
// still hold the pages its claims take (the check Audit makes afterwards).
void CheckClaimsFit(SqlConnection& db, const std::string& host, const topology::HostTopology& hw) {
  const CpuSet cpus = hw.AllCpus();
  SqlResult units = db.Exec("SELECT unit, claim_id FROM claim_units WHERE host = $1", {host});
  for (const SqlRow& row : units.rows) {
    const std::string unit = Text(row[0]);
    bool present = unit.rfind("cpu:", 0) == 0 ? cpus.Contains(std::stoi(unit.substr(4)))
                                              : hw.FindPci(AddressOfUnit(unit)) != nullptr;
    if (present) continue;
    const std::string holder = Text(row[1]);
    if (holder.rfind('*', 0) == 0)  // a share row: name the GPU, the claims are listed by host
      throw InputError("--topology", "", "host " + host + " has claims on a part of GPU " + AddressOfUnit(unit) +
                                             ", which the new topology lacks",
                       "release them first (`accel fleet claims --host " + host + "`)");
    throw InputError("--topology", "", "host " + host + " has claim " + holder + " on " + unit +
                                           ", which the new topology lacks",
                     "release the claim first (`accel fleet release " + holder + "`)");
  }
  placement::HostUsage usage;
  for (const SqlRow& row : db.Exec("SELECT id, host, flavor, created_at, placement FROM claims WHERE host = $1", {host}).rows)
    usage.Apply(ClaimFromRow(db.url(), row).placement);
  if (std::vector<std::string> over = PoolOverbooking(hw, usage); !over.empty())
    throw InputError("--topology", "", "on the new topology, host " + host + "'s " + over.front(),
                     "release them first (`accel fleet claims --host " + host + "`)");
}

}  // namespace

HostRecord FleetStore::AddHost(const HostSpec& spec) {
  if (!spec.topology) throw InputError("accel fleet host add", "--topology", "is required to add a host");
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  if (ReadHost(db, spec.name))
    throw InputError("--name", "", "host '" + spec.name + "' is already in the fleet (" + url() + ")",
                     "change it with `accel fleet host update --name " + spec.name + "`");
  std::string topology_id;
  PutTopology(db, *spec.topology, &topology_id);
  const placement::HostPolicy policy = spec.policy.value_or(placement::HostPolicy{});
  const HostAdminState state = spec.state.value_or(HostAdminState::kEnabled);
  if (db.TryExec(std::string("INSERT INTO hosts(") + kHostColumns + ", change_number" +
                    ") VALUES ($1, $2, $3, $4, $5, 0, NULL, $6, $7, " + ChangeNumberSql(db) + ")",
                {spec.name, topology_id, HostPolicyToJson(policy).dump(), LabelsJson(spec.set_labels),
                 HostAdminStateName(state), std::to_string(spec.stale_after_s.value_or(0)), NowUtc()})
          .refused)  // another process added it between our read and insert
    throw InputError("--name", "", "host '" + spec.name + "' is already in the fleet (" + url() + ")",
                     "change it with `accel fleet host update --name " + spec.name + "`");
  DropTombstone(db, spec.name);
  HostRecord added = *ReadHost(db, spec.name);
  tx.Commit();
  return added;
}

HostRecord FleetStore::UpdateHost(const HostSpec& spec) {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  std::optional<HostRecord> current = ReadHost(db, spec.name);
  if (!current)
    throw InputError("--name", "", "no host '" + spec.name + "' in the fleet (" + url() + ")",
                     "add it with `accel fleet host add`; `accel fleet host list` shows the fleet");
  HostRecord h = *current;
  if (spec.topology) {
    CheckClaimsFit(db, h.name, *spec.topology);
    PutTopology(db, *spec.topology, &h.topology_id);
  }
  if (spec.policy) h.policy = *spec.policy;
  for (const auto& [k, v] : spec.set_labels) h.labels[k] = v;
  for (const std::string& k : spec.remove_labels) h.labels.erase(k);
  if (spec.state) h.state = *spec.state;
  if (spec.stale_after_s) h.stale_after_s = *spec.stale_after_s;
  db.Exec(std::string("UPDATE hosts SET topology_id = $2, policy = $3, labels = $4, state = $5, stale_after_s = $6, "
                      "updated_at = $7, generation = generation + 1, change_number = ") +
              ChangeNumberSql(db) + " WHERE name = $1",
          {h.name, h.topology_id, HostPolicyToJson(h.policy).dump(), LabelsJson(h.labels),
           HostAdminStateName(h.state), std::to_string(h.stale_after_s), NowUtc()});
  HostRecord updated = *ReadHost(db, h.name);
  tx.Commit();
  return updated;
}

HostRecord FleetStore::UpsertFromAgent(const HostSpec& spec) {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  std::optional<HostRecord> current = ReadHost(db, spec.name);
  std::string topology_id;
  if (spec.topology) {
    if (current) CheckClaimsFit(db, spec.name, *spec.topology);
    PutTopology(db, *spec.topology, &topology_id);
  }
  if (!current) {
    if (!spec.topology) throw InputError("fleet", "", "the agent must report its topology to join the fleet");
    db.Exec(std::string("INSERT INTO hosts(") + kHostColumns + ", change_number) VALUES ($1, $2, $3, $4, 'enabled', 0, $5, $6, $7, " +
                ChangeNumberSql(db) + ")",
            {spec.name, topology_id, HostPolicyToJson(spec.policy.value_or(placement::HostPolicy{})).dump(),
             LabelsJson(spec.set_labels), std::to_string(NowUnix()),
             std::to_string(spec.stale_after_s.value_or(0)), NowUtc()});
    DropTombstone(db, spec.name);
  } else {
    HostRecord h = *current;
    if (spec.topology) h.topology_id = topology_id;
    if (spec.policy) h.policy = *spec.policy;
    for (const auto& [k, v] : spec.set_labels) h.labels[k] = v;
    if (spec.stale_after_s) h.stale_after_s = *spec.stale_after_s;
    const bool changed = h.topology_id != current->topology_id || spec.policy || h.labels != current->labels;
    db.Exec(std::string("UPDATE hosts SET topology_id = $2, policy = $3, labels = $4, stale_after_s = $5, "
                        "heartbeat_at = $6, updated_at = $7, change_number = ") +
                ChangeNumberSql(db) + (changed ? ", generation = generation + 1" : "") + " WHERE name = $1",
            {h.name, h.topology_id, HostPolicyToJson(h.policy).dump(), LabelsJson(h.labels),
             std::to_string(h.stale_after_s), std::to_string(NowUnix()), NowUtc()});
  }
  HostRecord result = *ReadHost(db, spec.name);
  tx.Commit();
  return result;
}

// A heartbeat is a change too: staleness is part of what a scheduler sees of a host. Pollers
// re-read such a host's row only (its generation did not move, so not its claims).
bool FleetStore::Heartbeat(const std::string& name) {
  return db_->Exec(std::string("UPDATE hosts SET heartbeat_at = $2, change_number = ") + ChangeNumberSql(*db_) +
                       " WHERE name = $1",
                   {name, std::to_string(NowUnix())})
             .affected > 0;
}

bool FleetStore::RemoveHost(const std::string& name, bool force) {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  if (!ReadHost(db, name)) return false;
  const int64_t live = ToInt(db.Exec("SELECT count(*) FROM claims WHERE host = $1", {name}).rows.at(0).at(0));
  if (live > 0 && !force)
    throw InputError("--name", "", "host '" + name + "' holds " + std::to_string(live) + " live claim(s)",
                     "release them (`accel fleet claims --host " + name +
                         "`), or pass --force to release them with the host");
  db.Exec("DELETE FROM claim_units WHERE host = $1", {name});
  db.Exec("DELETE FROM claims WHERE host = $1", {name});
  db.Exec(std::string("INSERT INTO removed_hosts(name, change_number) VALUES ($1, ") + ChangeNumberSql(db) +
              ") ON CONFLICT (name) DO UPDATE SET change_number = excluded.change_number",
          {name});
  db.Exec("DELETE FROM hosts WHERE name = $1", {name});
  tx.Commit();
  return true;
}

std::optional<HostRecord> FleetStore::GetHost(const std::string& name) { return ReadHost(*db_, name); }

std::vector<HostRecord> FleetStore::ListHosts() {
  std::vector<HostRecord> hosts;
  for (const SqlRow& row : db_->Exec(std::string("SELECT ") + kHostColumns + " FROM hosts ORDER BY name").rows)
    hosts.push_back(HostFromRow(url(), row));
  return hosts;
}

std::shared_ptr<const topology::HostTopology> FleetStore::Topology(const std::string& id) {
  if (auto it = topology_cache_.find(id); it != topology_cache_.end()) return it->second;
  SqlResult r = db_->Exec("SELECT body FROM topologies WHERE id = $1", {id});
  if (r.rows.empty())
    throw InputError(url(), "topologies", "has no topology " + id, "add the host again with --topology");
  auto hw = std::make_shared<const topology::HostTopology>(
      topology::HostFromJson(Text(r.rows[0][0]), url() + " (topology " + id + ")"));
  topology_cache_[id] = hw;
  return hw;
}

std::vector<HostVersion> FleetStore::HostVersions() {
  std::vector<HostVersion> out;
  for (const SqlRow& row : db_->Exec("SELECT name, generation, heartbeat_at FROM hosts ORDER BY name").rows) {
    HostVersion v{Text(row[0]), ToInt(row[1]), std::nullopt};
    if (row[2]) v.heartbeat_at = ToInt(row[2]);
    out.push_back(std::move(v));
  }
  return out;
}

FleetChanges FleetStore::ChangedSince(int64_t change, const std::function<bool(const HostRecord&)>& wants_claims) {
  SqlConnection& db = *db_;
  FleetChanges out;
  // No transaction (a poll is the most frequent thing a scheduler does; BEGIN and COMMIT would
  // be two of its four round trips): each statement reads in one snapshot of its own.
  // Statement 1, at snapshot S1: the mark of S1, the hosts written after `change`, the names
  // removed after it.
  const SqlResult rows = db.Exec(std::string("SELECT 'm', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ") +
                                     ChangeMarkSql(db) +
                                     " UNION ALL SELECT 'h', " + kHostColumns +
                                     ", NULL FROM hosts WHERE change_number > $1"
                                     " UNION ALL SELECT 'r', name, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
                                     "FROM removed_hosts WHERE change_number > $1",
                                 {std::to_string(change)});
  std::vector<std::string> wanted;
  std::set<std::string> asked;
  for (const SqlRow& row : rows.rows) {
    const std::string kind = Text(row.at(0));
    if (kind == "m") {
      out.change = ToInt(row.at(10));
    } else if (kind == "r") {
      out.removed.push_back(Text(row.at(1)));
    } else {
      out.hosts.push_back(HostFromRow(url(), SqlRow(row.begin() + 1, row.begin() + 10)));
      if (!wants_claims || wants_claims(out.hosts.back())) {
        wanted.push_back(out.hosts.back().name);
        asked.insert(wanted.back());
      }
    }
  }
  if (!wanted.empty()) {
    // Statement 2, at a later snapshot S2: those hosts again with their claims, so each host
    // and its claims are one consistent state (the S2 row replaces the S1 one). The answer is
    // then S1 for the other hosts and S2 for these: every change up to the mark is in it, and
    // what S2 adds beyond the mark comes back in the next poll (compared by generation). A
    // host gone by S2 is left out here; its removal is after S1, so the next poll has it.
    std::map<std::string, HostRecord> fresh;
    for (const SqlRow& row :
         db.Exec(std::string("SELECT 'h', ") + kHostColumns + ", NULL, NULL, NULL, NULL, NULL, NULL FROM hosts WHERE " +
                     InListSql(db, "name", 1) + " UNION ALL SELECT 'c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
                     "NULL, " + kClaimColumns + ", created_us FROM claims WHERE " + InListSql(db, "host", 1) +
                     " ORDER BY 1 DESC, 16, 14, 11",  // hosts, then claims oldest first
                 {InListParam(db, wanted)})
             .rows) {
      if (Text(row.at(0)) == "h") {
        HostRecord h = HostFromRow(url(), SqlRow(row.begin() + 1, row.begin() + 10));
        out.claims[h.name];
        fresh.emplace(h.name, std::move(h));
      } else {
        Claim c = CachedClaim(SqlRow(row.begin() + 10, row.begin() + 15));
        if (fresh.count(c.host)) out.claims[c.host].push_back(std::move(c));
      }
    }
    std::vector<HostRecord> hosts;
    for (HostRecord& h : out.hosts) {
      auto it = fresh.find(h.name);
      if (!asked.count(h.name)) hosts.push_back(std::move(h));
      else if (it != fresh.end()) hosts.push_back(std::move(it->second));
    }
    out.hosts = std::move(hosts);
  }
  std::sort(out.hosts.begin(), out.hosts.end(),
            [](const HostRecord& a, const HostRecord& b) { return a.name < b.name; });
  return out;
}

Claim FleetStore::CachedClaim(const SqlRow& row) {
  const std::string id = Text(row.at(0));
  auto it = claim_cache_.find(id);
  if (it != claim_cache_.end() && row.at(4) && it->second.first == *row.at(4)) return it->second.second;
  Claim c = ClaimFromRow(url(), row);
  if (claim_cache_.size() >= kClaimCacheSize) claim_cache_.clear();
  claim_cache_[id] = {Text(row.at(4)), c};
  return c;
}

FleetSnapshot FleetStore::Snapshot() {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, false);
  BeginSnapshot(db);
  FleetSnapshot snap;
  snap.taken_at = NowUnix();
  // First statement: on PostgreSQL it fixes the snapshot whose xmin the mark is.
  snap.change = ToInt(db.Exec(std::string("SELECT ") + ChangeMarkSql(db)).rows.at(0).at(0));
  for (const SqlRow& row : db.Exec(std::string("SELECT ") + kHostColumns + " FROM hosts ORDER BY name").rows)
    snap.hosts.push_back(HostFromRow(url(), row));
  for (const HostRecord& h : snap.hosts)
    if (!snap.topologies.count(h.topology_id)) snap.topologies[h.topology_id] = Topology(h.topology_id);
  for (const SqlRow& row :
       db.Exec("SELECT id, host, flavor, created_at, placement FROM claims ORDER BY created_us, created_at, id").rows)
    snap.claims.push_back(CachedClaim(row));
  tx.Commit();
  return snap;
}

// --- Claims ---------------------------------------------------------------------------------

placement::HostUsage FleetStore::UsageOf(const std::string& host) {
  SqlResult rows = db_->Exec(
      "SELECT id, host, flavor, created_at, placement FROM claims WHERE host = $1 ORDER BY created_us, created_at, id",
      {host});
  placement::HostUsage usage;
  for (const SqlRow& row : rows.rows) {
    Claim c = ClaimFromRow(url(), row);
    std::string overlap = usage.Apply(c.placement);
    if (!overlap.empty())
      throw InputError(url() + " (claim " + c.id + ")", "", "overlaps earlier claims: " + overlap,
                       "release it with `accel release " + c.id + "`");
  }
  return usage;
}

ClaimResult FleetStore::ClaimOnHost(
    const std::string& host,
    const std::function<std::optional<placement::Placement>(const placement::HostUsage&)>& place) {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  // Serialize with every other claimer of this host inside the database: the host row's lock
  // (the UPDATE), or for a host outside the inventory a lock on its name that ends with the
  // transaction. SQLite's write transaction already excludes every other writer.
  const long in_inventory =
      db.Exec(std::string("UPDATE hosts SET generation = generation + 1, change_number = ") + ChangeNumberSql(db) +
                  " WHERE name = $1",
              {host})
          .affected;
  if (in_inventory > 0) {
    const std::string state = Text(db.Exec("SELECT state FROM hosts WHERE name = $1", {host}).rows.at(0).at(0));
    if (state != "enabled") {
      ClaimResult refused;
      refused.refused = "host " + host + " is " + state + " in the fleet: no new placements";
      return refused;  // rolled back: nothing changed
    }
  }
  if (in_inventory == 0 && db.engine() == SqlEngine::kPostgres)
    db.Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {host});
  placement::HostUsage usage = UsageOf(host);
  std::optional<placement::Placement> p = place(usage);
  if (!p) return {};
  ClaimResult result;
  if (p->host != host) {
    result.refused = "placement is for host '" + p->host + "', not '" + host + "'";
    return result;
  }
  // Defence in depth: the engine should never double-book, but a claim must not if it does.
  if (std::string err = usage.Apply(*p); !err.empty()) {
    result.refused = err;
    return result;
  }
  Claim claim{NewClaimId(), host, p->flavor, NowUtc(), std::move(*p)};
  ClaimRows rows;
  if (std::string bad = RowsOf(claim.placement, &rows); !bad.empty()) {
    result.refused = "host " + host + ": " + bad;
    return result;
  }
  if (std::optional<std::string> refused = InsertClaim(db, claim, rows)) {
    result.refused = "the store refused it: " + *refused;
    return result;  // rolled back: nothing stored
  }
  tx.Commit();
  result.claim = std::move(claim);
  return result;
}

bool FleetStore::Release(const std::string& id) {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, true);
  // Deleting the claim row first makes this transaction the one that releases it: a concurrent
  // release of the same claim waits on the row and then deletes nothing, so parts are never
  // taken off the share rows twice.
  SqlResult r = db.Exec("DELETE FROM claims WHERE id = $1 RETURNING host, placement", {id});
  if (r.rows.empty()) return false;
  const std::string host = Text(r.rows[0][0]);
  // The host row before any unit or share row, in the order every claimer takes them (the claim
  // statement bumps the generation first): a release and a claim of the same GPU's share row
  // would otherwise each hold what the other waits for (PostgreSQL: a deadlock, one aborted).
  db.Exec(std::string("UPDATE hosts SET generation = generation + 1, change_number = ") + ChangeNumberSql(db) +
              " WHERE name = $1",
          {host});
  // By host first: the primary key's leading column finds the host's few hundred rows at most.
  db.Exec("DELETE FROM claim_units WHERE host = $1 AND claim_id = $2", {host, id});
  const std::string placement_json = Text(r.rows[0][1]);
  if (placement_json.find("\"gpus\"") != std::string::npos) {
    // A placement that cannot be read holds nothing this accel can take off; Audit names the
    // share rows it leaves.
    try {
      ReleaseShares(db, host, GpuSharesOf(StoredPlacement(url(), id, placement_json)));
    } catch (const InputError&) {
    }
  }
  tx.Commit();
  return true;
}

std::vector<Claim> FleetStore::ListClaims(const std::optional<std::string>& host) {
  SqlResult r = host ? db_->Exec("SELECT id, host, flavor, created_at, placement FROM claims "
                                 "WHERE host = $1 ORDER BY created_us, created_at, id",
                                 {*host})
                     : db_->Exec("SELECT id, host, flavor, created_at, placement FROM claims "
                                 "ORDER BY created_us, created_at, id");
  std::vector<Claim> claims;
  for (const SqlRow& row : r.rows) claims.push_back(ClaimFromRow(url(), row));
  return claims;
}

std::optional<Claim> FleetStore::GetClaim(const std::string& id) {
  SqlResult r = db_->Exec("SELECT id, host, flavor, created_at, placement FROM claims WHERE id = $1", {id});
  if (r.rows.empty()) return std::nullopt;
  return ClaimFromRow(url(), r.rows[0]);
}

std::vector<std::string> FleetStore::Audit() {
  SqlConnection& db = *db_;
  SqlTransaction tx(db, false);
  BeginSnapshot(db);
  std::vector<std::string> problems;
  std::map<std::string, placement::HostUsage> usage;
  std::map<std::pair<std::string, std::string>, std::string> expected_units;  // (host, unit) -> claim
  // (host, GPU address) -> what the claims' parts sum to, recomputed from the claims alone; a
  // GPU whose claims mix shares and MIG slices is named once.
  std::map<std::pair<std::string, std::string>, GpuShare> expected_shares;
  std::set<std::pair<std::string, std::string>> mixed;
  for (const SqlRow& row :
       db.Exec("SELECT id, host, flavor, created_at, placement FROM claims ORDER BY created_us, created_at, id").rows) {
    Claim c = ClaimFromRow(url(), row);
    if (std::string overlap = usage[c.host].Apply(c.placement); !overlap.empty())
      problems.push_back("host " + c.host + ": claim " + c.id + " double-books: " + overlap);
    for (const std::string& unit : UnitsOf(c.placement)) expected_units[{c.host, unit}] = c.id;
    for (const GpuShare& s : GpuSharesOf(c.placement)) {
      auto [it, fresh] = expected_shares.try_emplace({c.host, s.address}, s);
      if (fresh) continue;
      if (it->second.mig != s.mig && mixed.insert(it->first).second)
        problems.push_back("GPU " + s.address + " on host " + c.host +
                           ": claims hold both time-slicing shares and MIG slices of it");
      it->second.milli += s.milli;
      it->second.holders += s.holders;
    }
  }
  for (const auto& [key, s] : expected_shares)
    if (s.milli > 1000)
      problems.push_back("GPU " + key.second + " on host " + key.first + ": claims hold " + std::to_string(s.milli) +
                         "/1000 thousandths of it");
  // Pages and memory: a node's pools must hold what the claims on it take.
  for (const HostRecord& h : ListHosts()) {
    auto it = usage.find(h.name);
    if (it == usage.end()) continue;
    for (const std::string& over : PoolOverbooking(*Topology(h.topology_id), it->second))
      problems.push_back("host " + h.name + ": " + over);
  }
  size_t rows = 0;
  std::set<std::pair<std::string, std::string>> share_rows;
  for (const SqlRow& row : db.Exec("SELECT host, unit, claim_id, milli, holders FROM claim_units").rows) {
    const std::string host = Text(row[0]), unit = Text(row[1]), holder = Text(row[2]);
    if (holder.rfind('*', 0) == 0) {
      // A share row: the GPU's parts as the claims hold them.
      const std::string address = AddressOfUnit(unit);
      const std::string said = holder + " " + Text(row[3]) + "/1000 by " + Text(row[4]) + " part(s)";
      share_rows.insert({host, address});
      auto it = expected_shares.find({host, address});
      if (unit.rfind("pci:", 0) != 0 || (holder != kSharesMode && holder != kMigMode) || !row[3] || !row[4]) {
        problems.push_back("share row " + unit + " on " + host + " is malformed (" + said + ")");
      } else if (it == expected_shares.end()) {
        problems.push_back("GPU " + address + " on host " + host + ": the share row says " + said +
                           " but no claim holds a part of it");
      } else if (ModeOf(it->second) != holder || ToInt(row[3]) != it->second.milli ||
                 ToInt(row[4]) != it->second.holders) {
        problems.push_back("GPU " + address + " on host " + host + ": the share row says " + said + ", the claims hold " +
                           ModeOf(it->second) + " " + std::to_string(it->second.milli) + "/1000 by " +
                           std::to_string(it->second.holders) + " part(s)");
      }
      continue;
    }
    ++rows;
    auto it = expected_units.find({host, unit});
    if (it == expected_units.end() || it->second != holder)
      problems.push_back("unit " + unit + " on " + host + " is booked for claim " + holder +
                         " but no such claim holds it");
    else if (row[3] || row[4])
      problems.push_back("unit " + unit + " on " + host + " of claim " + holder + " carries share counts");
  }
  for (const auto& [key, s] : expected_shares)
    if (!share_rows.count(key))
      problems.push_back("GPU " + key.second + " on host " + key.first + ": claims hold " + ModeOf(s) + " " +
                         std::to_string(s.milli) + "/1000 by " + std::to_string(s.holders) +
                         " part(s), but there is no share row");
  if (rows != expected_units.size())
    problems.push_back(std::to_string(expected_units.size()) + " units held by claims, " + std::to_string(rows) +
                       " rows in claim_units");
  tx.Commit();
  return problems;
}

// --- ClaimBatch -----------------------------------------------------------------------------

ClaimBatch::ClaimBatch(FleetStore& store, bool one_claim)
    : store_(store), autocommit_(one_claim && store.db_->engine() == SqlEngine::kPostgres) {
  if (autocommit_) return;
  store_.db_->Begin(true);
  open_ = true;
}

ClaimBatch::~ClaimBatch() {
  if (open_) store_.db_->Rollback();
}

ClaimResult ClaimBatch::TryClaim(const std::string& host, int64_t expected_generation,
                                 const placement::Placement& p) {
  SqlConnection& db = *store_.db_;
  if (autocommit_ && claimed_ > 0) throw std::logic_error("ClaimBatch: a one-claim batch has made its claim");
  // Before the first success there is nothing to keep: no savepoint (two statements fewer for
  // the common one-instance batch); a refusal by a constraint then starts the batch afresh.
  const bool savepoint = claimed_ > 0;
  const std::string name = "claim_" + std::to_string(++savepoints_);
  Claim claim{NewClaimId(), host, p.flavor, NowUtc(), p};
  claim.placement.host = host;
  ClaimResult result;
  ClaimRows rows;
  if (std::string bad = RowsOf(claim.placement, &rows); !bad.empty()) {
    result.refused = "host " + host + ": " + bad;  // nothing was sent
    return result;
  }
  if (savepoint) db.Exec("SAVEPOINT " + name);
  bool bumped = false;
  std::optional<std::string> refused;  // a unit is taken or a share does not fit: the database's message
  if (db.engine() == SqlEngine::kPostgres) {
    std::vector<SqlValue> params = {host, std::to_string(expected_generation), claim.id, claim.flavor,
                                    claim.created_at, placement::WritePlacementJson(claim.placement), NowMicros()};
    if (rows.shares.empty()) {
      params.push_back(TextArrayLiteral(rows.units));
    } else {
      for (SqlValue& v : RowParams(db, rows.ordered)) params.push_back(std::move(v));
    }
    SqlResult r = db.TryExec(rows.shares.empty() ? kClaimStatementPostgres : kClaimStatementPostgresShares, params);
    if (r.refused) refused = std::move(r.refused);
    else bumped = ToInt(r.rows.at(0).at(0)) == 1;
  } else {
    bumped = db.Exec(std::string("UPDATE hosts SET generation = generation + 1, change_number = ") +
                         ChangeNumberSql(db) + " WHERE name = $1 AND generation = $2 AND state = 'enabled'",
                     {host, std::to_string(expected_generation)})
                 .affected == 1;
    if (bumped) refused = InsertClaim(db, claim, rows);
  }
  if (refused) {
    if (savepoint) {
      db.Exec("ROLLBACK TO SAVEPOINT " + name);
      db.Exec("RELEASE SAVEPOINT " + name);
    } else if (!autocommit_) {  // autocommit: the failed statement was its own transaction
      // PostgreSQL has aborted the transaction; SQLite kept the UPDATE. Nothing of the batch is
      // claimed yet, so a new transaction loses nothing. Begin throws SystemError on a lost
      // connection (the batch is lost then, as documented).
      open_ = false;
      db.Rollback();
      db.Begin(true);
      open_ = true;
    }
    // A GPU's rows say why in the caller's words ("GPU A on host X: 810/1000 already shared, 470
    // more would exceed it"); any other unit keeps the database's message.
    // (Claims without GPUs by model skip the read: refusals are frequent under contention.)
    std::string why = claim.placement.gpus.empty() ? "" : ExplainGpuRefusal(db, host, rows);
    result.refused = why.empty() ? "host " + host + ": a unit is taken (" + refused->substr(0, 160) + ")" : why;
    return result;
  }
  if (!bumped) {
    SqlResult r = db.Exec("SELECT generation, state FROM hosts WHERE name = $1", {host});
    if (savepoint) db.Exec("RELEASE SAVEPOINT " + name);
    if (r.rows.empty()) result.refused = "host " + host + " left the fleet";
    else if (Text(r.rows[0][1]) != "enabled") result.refused = "host " + host + " is " + Text(r.rows[0][1]);
    else
      result.refused = "host " + host + " changed (generation " + std::to_string(expected_generation) + " -> " +
                       Text(r.rows[0][0]) + ")";
    return result;
  }
  if (savepoint) db.Exec("RELEASE SAVEPOINT " + name);
  ++claimed_;
  result.claim = std::move(claim);
  return result;
}

void ClaimBatch::Commit() {
  if (!open_) return;  // autocommit: each claim was durable when TryClaim returned
  store_.db_->Commit();
  open_ = false;
}

int64_t NowUnix() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace accel::fleet
