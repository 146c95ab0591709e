// The SQLite engine of the fleet store (sqlite:PATH): one file, WAL, 10 s busy timeout.
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <thread>

#include "common/error.h"
#include "fleet/sql_connection.h"

namespace accel::fleet {

namespace {

constexpr int kBusyTimeoutMs = 10000;
constexpr const char* kHintElsewhere = "or pass --store URL / set ACCEL_FLEET_STORE to use another store";

// Throws the error a person can act on for SQLite result code `rc`: InputError when the file is
// not (or no longer) accel's database, SystemError when the filesystem or another process is in
// the way. (A constraint that refuses a statement's write is TryExec's answer, not a Fail.)
[[noreturn]] void Fail(const std::string& url, sqlite3* db, int rc, const std::string& doing) {
  std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string problem = doing + " failed: " + detail;
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      throw InputError(url, "", "is not a readable accel store (" + detail + ")",
                       "move the file aside to start empty, losing what it holds, " +
                           std::string(kHintElsewhere));
    case SQLITE_ERROR:  // SQL that fails on this file: its tables are not accel's
      throw InputError(url, "", "is not an accel store (" + problem + ")",
                       "move the file aside, " + std::string(kHintElsewhere));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      throw SystemError("cannot use the store", url, problem,
                        "check the permissions of the file and its directory, " +
                            std::string(kHintElsewhere));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw SystemError("cannot use the store", url, "locked by another process for over 10 s",
                        "retry; if it stays locked, look for a hung accel process");
    case SQLITE_FULL:
    case SQLITE_IOERR:
      throw SystemError("cannot use the store", url, problem,
                        "check free space and health of the filesystem");
    default:
      throw SystemError("cannot use the store", url, problem);
  }
}

void MakeParentDirectory(const std::string& path, const std::string& url) {
  if (path == ":memory:") return;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    throw InputError(url, "", "cannot create directory " + parent.string() + ": " + ec.message(),
                     "create it with the right owner, " + std::string(kHintElsewhere));
  }
}

class SqliteConnection final : public SqlConnection {
 public:
  SqliteConnection(std::string url, sqlite3* db) : url_(std::move(url)), db_(db) {}
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }

  SqlEngine engine() const override { return SqlEngine::kSqlite; }
  const std::string& url() const override { return url_; }

  SqlResult TryExec(const std::string& sql, const std::vector<SqlValue>& params) override {
    sqlite3_stmt* stmt = Prepare(sql);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string name = "$" + std::to_string(i + 1);
      int index = sqlite3_bind_parameter_index(stmt, name.c_str());
      if (index == 0) continue;  // not used by this statement
      int rc = params[i] ? sqlite3_bind_text(stmt, index, params[i]->data(),
                                             static_cast<int>(params[i]->size()), SQLITE_TRANSIENT)
                         : sqlite3_bind_null(stmt, index);
      if (rc != SQLITE_OK) Fail(url_, db_, rc, "binding a query");
    }
    SqlResult result;
    const int columns = sqlite3_column_count(stmt);
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        sqlite3_reset(stmt);
        if ((rc & 0xff) == SQLITE_CONSTRAINT) {  // the statement's changes are undone (ABORT)
          SqlResult refused;
          refused.refused = sqlite3_errmsg(db_);
          return refused;
        }
        Fail(url_, db_, rc, "running a query");
      }
      SqlRow row(columns);
      for (int c = 0; c < columns; ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) continue;
        const unsigned char* text = sqlite3_column_text(stmt, c);
        row[c] = std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt, c));
      }
      result.rows.push_back(std::move(row));
    }
    result.affected = sqlite3_changes(db_);
    sqlite3_reset(stmt);
    return result;
  }

  void Begin(bool write) override { Raw(write ? "BEGIN IMMEDIATE" : "BEGIN"); }
  void Commit() override { Raw("COMMIT"); }
  void Rollback() noexcept override {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

  // WAL lets readers run while a claim is being made; the first statement is also where SQLite
  // notices a file that is not a database. Switching a fresh file to WAL needs an exclusive lock
  // and SQLite answers BUSY at once, without its busy handler, while another process is opening
  // the same file: retry here up to the busy timeout.
  void EnableWal() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (;;) {
      int rc = sqlite3_exec(db_, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) return;
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
        Fail(url_, db_, rc, "switching to WAL mode");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  void Raw(const char* sql) {
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) Fail(url_, db_, rc, std::string("'") + sql + "'");
  }

  sqlite3_stmt* Prepare(const std::string& sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    if (rc != SQLITE_OK) Fail(url_, db_, rc, "preparing '" + sql.substr(0, 60) + "'");
    cache_.emplace(sql, stmt);
    return stmt;
  }

  std::string url_;
  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace

std::unique_ptr<SqlConnection> OpenSqlite(const std::string& path, const std::string& url) {
  MakeParentDirectory(path, url);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  auto conn = std::make_unique<SqliteConnection>(url, db);  // owns db: every throw closes it
  if (rc != SQLITE_OK) Fail(url, db, rc, "opening");
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  conn->EnableWal();
  // NORMAL is durable in WAL mode except for the last commits on power loss; FULL syncs every
  // commit, which is what a claim needs: a claim reported made is on disk.
  conn->Exec("PRAGMA synchronous = FULL", {});
  return conn;
}

}  // namespace accel::fleet
