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
// Errors: a write refused by a UNIQUE or CHECK constraint throws SqlConstraintError (the store
// treats it as "another claimer got there first"); a lost connection, a refused login, a full
// disk or a lock held too long throw SystemError naming the store's URL (a PostgreSQL connection
// reconnects on the next call, so one failed request does not poison the next); a database that
// is not accel's throws InputError. One connection is used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace accel::fleet {

/// One value: text, or nullopt for SQL NULL.
using SqlValue = std::optional<std::string>;
/// One result row, columns in SELECT order.
using SqlRow = std::vector<SqlValue>;

struct SqlResult {
  std::vector<SqlRow> rows;  ///< rows returned (empty for writes without RETURNING)
  long affected = 0;         ///< rows changed by an INSERT/UPDATE/DELETE
};

/// A write broke a UNIQUE, PRIMARY KEY or CHECK constraint: the unit it books is taken.
class SqlConstraintError : public std::runtime_error {
 public:
  explicit SqlConstraintError(const std::string& what) : std::runtime_error(what) {}
};

enum class SqlEngine { kSqlite, kPostgres };

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  virtual SqlEngine engine() const = 0;
  /// The store's URL as the user wrote it, password removed: for messages.
  virtual const std::string& url() const = 0;

  /// Runs one statement with parameters $1..$n (params[0] is $1). Returns its rows and the
  /// number of rows it changed. Throws SqlConstraintError, SystemError or InputError (above).
  virtual SqlResult Exec(const std::string& sql, const std::vector<SqlValue>& params = {}) = 0;

  /// Starts a transaction. `write`: on SQLite take the write lock now (BEGIN IMMEDIATE, waiting
  /// up to the busy timeout), so what the transaction reads cannot change before it writes.
  virtual void Begin(bool write) = 0;
  virtual void Commit() = 0;
  /// Rolls the open transaction back; never throws (a dead connection has rolled back already).
  virtual void Rollback() noexcept = 0;
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
