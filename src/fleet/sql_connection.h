// SqlConnection: the one seam between the fleet store and a database engine. The store writes
// its SQL once, in the dialect SQLite and PostgreSQL share ($1..$n parameters, SAVEPOINT,
// INSERT ... ON CONFLICT, text values), and runs it through this interface on either engine:
//   - SQLite (the embedded default, `sqlite:PATH`): one file, WAL, a write transaction takes the
//     database's write lock up front (BEGIN IMMEDIATE), so writers serialize in the database;
//   - PostgreSQL (`postgresql://...`, libpqxx): READ COMMITTED; concurrent writers are kept apart
//     by row locks the UPDATEs take and by unique constraints, all held by the server.
// Either way nothing is locked inside one process: the guarantees live in the database.
//
// Values travel as text (NULL as nullopt): both engines convert them to the column's type, and
// every value the store keeps is an integer, a name or a JSON document.
//
// A write a constraint refuses (UNIQUE, PRIMARY KEY, CHECK, NOT NULL: SQLite's SQLITE_CONSTRAINT,
// PostgreSQL's SQLSTATE class 23) is an answer, not an error: TryExec returns it in
// SqlResult::refused, for the statements where the store expects one ("another claimer got there
// first"); Exec, for every other statement, throws SystemError for it. Errors: a lost
// connection, a refused login, a full disk or a lock held too long throw SystemError naming the
// store's URL (a PostgreSQL connection reconnects on the next call, so one failed request does
// not poison the next); a database that is not accel's throws InputError. One connection is used
// by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace accel::fleet {

/// One value: text, or nullopt for SQL NULL.
using SqlValue = std::optional<std::string>;
/// One result row, columns in SELECT order.
using SqlRow = std::vector<SqlValue>;

struct SqlResult {
  std::vector<SqlRow> rows;  ///< rows returned (empty for writes without RETURNING)
  long affected = 0;         ///< rows changed by an INSERT/UPDATE/DELETE
  /// Set by TryExec when a constraint refused the write (the statement changed nothing; rows
  /// and affected are empty): the engine's message, e.g.
  /// "UNIQUE constraint failed: claim_units.host, claim_units.unit". Unset otherwise.
  std::optional<std::string> refused;
};

enum class SqlEngine { kSqlite, kPostgres };

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  virtual SqlEngine engine() const = 0;
  /// The store's URL as the user wrote it, password removed: for messages.
  virtual const std::string& url() const = 0;

  /// Runs one statement with parameters $1..$n (params[0] is $1). Returns its rows and the
  /// number of rows it changed, or, when a constraint refused the write, `refused` set (on
  /// PostgreSQL inside a transaction, the transaction is then aborted: roll back, to a savepoint
  /// or whole). Throws SystemError or InputError (above).
  virtual SqlResult TryExec(const std::string& sql, const std::vector<SqlValue>& params = {}) = 0;

  /// TryExec for a statement no constraint should refuse: returns its rows and the number of rows
  /// it changed (`refused` never set). Throws SystemError naming the store's URL and the engine's
  /// message when a constraint refused it anyway, and what TryExec throws.
  SqlResult Exec(const std::string& sql, const std::vector<SqlValue>& params = {}) {
    SqlResult result = TryExec(sql, params);
    if (result.refused) RefusedUnexpectedly(*result.refused);
    return result;
  }

  /// Starts a transaction. `write`: on SQLite take the write lock now (BEGIN IMMEDIATE, waiting
  /// up to the busy timeout), so what the transaction reads cannot change before it writes.
  virtual void Begin(bool write) = 0;
  virtual void Commit() = 0;
  /// Rolls the open transaction back; never throws (a dead connection has rolled back already).
  virtual void Rollback() noexcept = 0;

 private:
  [[noreturn]] void RefusedUnexpectedly(const std::string& detail) const {
    throw SystemError("the store refused a write", url(), detail,
                      "another process may have written the same row at the same moment; retry");
  }
};

/// Opens (creating the file and its directory) the SQLite database at `path`; `url` is what
/// messages name. Throws InputError when the directory cannot be made or the file is not a
/// database, SystemError when it cannot be opened or is locked.
std::unique_ptr<SqlConnection> OpenSqlite(const std::string& path, const std::string& url);

/// Connects to PostgreSQL with a libpq connection string (URI or key=value). Throws SystemError
/// naming `url` when the server cannot be reached or refuses the login.
std::unique_ptr<SqlConnection> OpenPostgres(const std::string& conninfo, const std::string& url);

/// A transaction that rolls back unless committed: RAII over Begin/Commit/Rollback.
class SqlTransaction {
 public:
  SqlTransaction(SqlConnection& db, bool write) : db_(db) { db_.Begin(write); }
  ~SqlTransaction() {
    if (!done_) db_.Rollback();
  }
  SqlTransaction(const SqlTransaction&) = delete;
  SqlTransaction& operator=(const SqlTransaction&) = delete;
  void Commit() {
    db_.Commit();
    done_ = true;
  }

 private:
  SqlConnection& db_;
  bool done_ = false;
};

}  // namespace accel::fleet
