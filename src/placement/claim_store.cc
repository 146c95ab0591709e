#include "placement/claim_store.h"

#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>
#include <system_error>
#include <thread>

#include "common/error.h"
#include "placement/placement_json.h"

namespace accel::placement {

namespace {

constexpr int kBusyTimeoutMs = 10000;
constexpr int kSchemaVersion = 1;  // PRAGMA user_version of the layout below

constexpr const char* kCreateSchema =
    "CREATE TABLE IF NOT EXISTS claims("
    "  id TEXT PRIMARY KEY,"
    "  host TEXT NOT NULL,"
    "  flavor TEXT NOT NULL,"
    "  created_at TEXT NOT NULL,"  // UTC ISO-8601
    "  placement TEXT NOT NULL);"  // accel.placement/v1 JSON
    "CREATE INDEX IF NOT EXISTS claims_by_host ON claims(host);";

constexpr const char* kHintElsewhere = "or pass --state PATH / set ACCEL_STATE to use another file";

// Throws the error a person can act on for SQLite result code `rc`: InputError when the file
// named is not (or no longer) a claim database, SystemError when the filesystem or another
// process is in the way.
[[noreturn]] void Fail(const std::string& path, sqlite3* db, int rc, const std::string& doing) {
  std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string problem = doing + " failed: " + detail;
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      throw InputError(path, "", "is not a readable accel claim database (" + detail + ")",
                       "move the file aside to start with no claims, losing those in it, " +
                           std::string(kHintElsewhere));
    case SQLITE_ERROR:  // SQL that fails on this file: its tables are not accel's
      throw InputError(path, "", "is not an accel claim database (" + problem + ")",
                       "move the file aside, " + std::string(kHintElsewhere));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      throw SystemError("cannot use the claim store", path, problem,
                        "check the permissions of the file and its directory, " +
                            std::string(kHintElsewhere));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw SystemError("cannot use the claim store", path,
                        "locked by another process for over 10 s",
                        "retry; if it stays locked, look for a hung accel process");
    case SQLITE_FULL:
    case SQLITE_IOERR:
      throw SystemError("cannot use the claim store", path, problem,
                        "check free space and health of the filesystem");
    default:
      throw SystemError("cannot use the claim store", path, problem);
  }
}

void Exec(const std::string& path, sqlite3* db, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) Fail(path, db, rc, std::string("'") + sql + "'");
}

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(const std::string& path, sqlite3* db, const char* sql) : path_(path), db_(db) {
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) Fail(path, db, rc, "preparing a query");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int index, const std::string& text) {
    int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                               SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) Fail(path_, db_, rc, "binding a query");
    return *this;
  }
  /// True when a row is ready, false when done; throws on errors. `*rc_out` gets the raw code.
  bool Step(int* rc_out = nullptr) {
    int rc = sqlite3_step(stmt_);
    if (rc_out) *rc_out = rc;
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if (rc_out) return false;  // the caller handles the error
    Fail(path_, db_, rc, "running a query");
  }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string Text(int column) const {
    const unsigned char* s = sqlite3_column_text(stmt_, column);
    if (!s) return "";
    return std::string(reinterpret_cast<const char*>(s), sqlite3_column_bytes(stmt_, column));
  }
  int Int(int column) const { return sqlite3_column_int(stmt_, column); }

 private:
  const std::string& path_;
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE .. COMMIT; rolls back when left without Commit (a return or an exception).
// IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a read inside the
// transaction is never made stale by another writer before we write.
class Transaction {
 public:
  Transaction(const std::string& path, sqlite3* db) : path_(path), db_(db) {
    Exec(path, db, "BEGIN IMMEDIATE");
  }
  ~Transaction() {
    if (!committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void Commit() {
    Exec(path_, db_, "COMMIT");
    committed_ = true;
  }

 private:
  const std::string& path_;
  sqlite3* db_;
  bool committed_ = false;
};

// "c-" + 48 random bits: short enough to type into `accel release`, and a collision is retried.
std::string NewClaimId() {
  std::random_device rd;  // /dev/urandom: distinct across forked processes, unlike a seeded PRNG
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

void MakeParentDirectory(const std::string& path) {
  if (path == ":memory:") return;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    throw InputError(path, "", "cannot create directory " + parent.string() + ": " + ec.message(),
                     "create it with the right owner, " + std::string(kHintElsewhere));
  }
}

// WAL lets readers (accel claims) run while a claim is being made; the first statement is also
// where SQLite notices a file that is not a database. Switching a fresh file to WAL needs an
// exclusive lock and SQLite answers BUSY at once, without its busy handler, while another process
// is opening the same file: retry here up to the busy timeout.
void EnableWal(const std::string& path, sqlite3* db) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline) {
      Fail(path, db, rc, "switching to WAL mode");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Sets up a fresh database, or checks that an existing one has accel's layout.
void EnsureSchema(const std::string& path, sqlite3* db) {
  Transaction tx(path, db);
  Statement version(path, db, "PRAGMA user_version");
  int found = version.Step() ? version.Int(0) : 0;
  if (found > kSchemaVersion) {
    throw InputError(path, "", "was written by a newer accel (schema version " +
                                   std::to_string(found) + ")",
                     "use that accel version, " + std::string(kHintElsewhere));
  }
  Exec(path, db, kCreateSchema);
  if (found == 0) Exec(path, db, "PRAGMA user_version = 1");
  // A claims table of another layout (another program's database) fails here.
  sqlite3_stmt* probe = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT id, host, flavor, created_at, placement FROM claims", -1,
                          &probe, nullptr);
  sqlite3_finalize(probe);
  if (rc != SQLITE_OK) {
    throw InputError(path, "claims", "is not accel's claims table (" +
                                         std::string(sqlite3_errmsg(db)) + ")",
                     std::string("move the file aside, ") + kHintElsewhere);
  }
  tx.Commit();
}

}  // namespace

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

ClaimStore ClaimStore::Open(const std::string& path) {
  MakeParentDirectory(path);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  ClaimStore store(path, db);  // owns db from here, so every throw below closes it
  if (rc != SQLITE_OK) Fail(path, db, rc, "opening");
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  EnableWal(path, db);
  EnsureSchema(path, db);
  return store;
}

ClaimStore::ClaimStore(ClaimStore&& other) noexcept
    : path_(std::move(other.path_)), db_(other.db_) {
  other.db_ = nullptr;
}

ClaimStore& ClaimStore::operator=(ClaimStore&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    path_ = std::move(other.path_);
    db_ = other.db_;
    other.db_ = nullptr;
  }
  return *this;
}

ClaimStore::~ClaimStore() { sqlite3_close_v2(db_); }

namespace {

// Reads the placement stored for claim `id`; a bad one names the claim and how to get rid of it.
Placement StoredPlacement(const std::string& path, const std::string& id, const std::string& json) {
  try {
    return ReadPlacementJson(json, path + " (claim " + id + ")");
  } catch (const InputError& e) {
    throw InputError(e.where(), e.field(), e.problem(), "release it with `accel release " + id + "`");
  }
}

}  // namespace

HostUsage ClaimStore::UsageOf(const std::string& host) {
  Statement rows(path_, db_, "SELECT id, placement FROM claims WHERE host = ?1 ORDER BY rowid");
  rows.Bind(1, host);
  HostUsage usage;
  while (rows.Step()) {
    std::string id = rows.Text(0);
    std::string overlap = usage.Apply(StoredPlacement(path_, id, rows.Text(1)));
    if (!overlap.empty()) {
      throw InputError(path_ + " (claim " + id + ")", "", "overlaps earlier claims: " + overlap,
                       "release it with `accel release " + id + "`");
    }
  }
  return usage;
}

ClaimResult ClaimStore::Claim(
    const std::string& host,
    const std::function<std::optional<Placement>(const HostUsage&)>& place) {
  Transaction tx(path_, db_);
  HostUsage usage = UsageOf(host);
  std::optional<Placement> p = place(usage);
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
  placement::Claim claim{NewClaimId(), host, p->flavor, NowUtc(), std::move(*p)};
  Statement insert(path_, db_,
                   "INSERT INTO claims(id, host, flavor, created_at, placement) "
                   "VALUES(?1, ?2, ?3, ?4, ?5)");
  std::string json = WritePlacementJson(claim.placement);
  for (int attempt = 0;; ++attempt) {
    insert.Bind(1, claim.id).Bind(2, claim.host).Bind(3, claim.flavor).Bind(4, claim.created_at);
    insert.Bind(5, json);
    int rc = SQLITE_OK;
    insert.Step(&rc);
    if (rc == SQLITE_DONE) break;
    if ((rc & 0xff) != SQLITE_CONSTRAINT || attempt == 3) Fail(path_, db_, rc, "storing a claim");
    insert.Reset();
    claim.id = NewClaimId();  // 48-bit id collided: draw again
  }
  tx.Commit();
  result.claim = std::move(claim);
  return result;
}

bool ClaimStore::Release(const std::string& id) {
  Statement del(path_, db_, "DELETE FROM claims WHERE id = ?1");
  del.Bind(1, id).Step();
  return sqlite3_changes(db_) > 0;
}

std::vector<placement::Claim> ClaimStore::List(const std::optional<std::string>& host) {
  const char* sql = host ? "SELECT id, host, flavor, created_at, placement FROM claims "
                           "WHERE host = ?1 ORDER BY rowid"
                         : "SELECT id, host, flavor, created_at, placement FROM claims "
                           "ORDER BY rowid";
  Statement rows(path_, db_, sql);
  if (host) rows.Bind(1, *host);
  std::vector<placement::Claim> claims;
  while (rows.Step()) {
    std::string id = rows.Text(0);
    claims.push_back({id, rows.Text(1), rows.Text(2), rows.Text(3),
                      StoredPlacement(path_, id, rows.Text(4))});
  }
  return claims;
}

std::optional<placement::Claim> ClaimStore::Get(const std::string& id) {
  Statement row(path_, db_,
                "SELECT id, host, flavor, created_at, placement FROM claims WHERE id = ?1");
  row.Bind(1, id);
  if (!row.Step()) return std::nullopt;
  return placement::Claim{id, row.Text(1), row.Text(2), row.Text(3),
                          StoredPlacement(path_, id, row.Text(4))};
}

}  // namespace accel::placement
