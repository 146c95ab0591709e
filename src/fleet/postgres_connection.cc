// The PostgreSQL engine of the fleet store (postgresql://...), through libpqxx 6.4.
//
// Statements run in a pqxx::nontransaction, with BEGIN/COMMIT sent as SQL, so the store's code
// is the same on both engines. A broken connection is dropped; the next call connects again, so
// a database restart fails the requests made during it and nothing after.
//
// Every statement with parameters runs as a prepared statement, prepared on its first use on
// this connection (a cache keyed by the SQL text; the store's statement texts are fixed, so the
// cache stays small): the server parses and plans a claim's statements once per connection,
// not once per claim. A new connection starts with an empty cache, since the server forgot the
// old one's statements.
#include <pqxx/pqxx>

#include <memory>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "fleet/sql_connection.h"

namespace accel::fleet {

namespace {

constexpr const char* kReachHint =
    "check that the server is up and the URL (host, port, dbname, user) is right; "
    "accel connects again on the next request";

class PostgresConnection final : public SqlConnection {
 public:
  PostgresConnection(std::string conninfo, std::string url)
      : conninfo_(std::move(conninfo)), url_(std::move(url)) {
    Connect();
  }

  SqlEngine engine() const override { return SqlEngine::kPostgres; }
  const std::string& url() const override { return url_; }

  SqlResult TryExec(const std::string& sql, const std::vector<SqlValue>& params) override {
    Connect();
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const SqlValue& v : params) values.push_back(v ? v->c_str() : nullptr);
    try {
      pqxx::nontransaction tx(*conn_);
      const std::string* prepared = values.empty() ? nullptr : PreparedName(sql);
      pqxx::result r = prepared ? tx.exec_prepared(*prepared, pqxx::prepare::make_dynamic_params(values))
                       : values.empty() ? tx.exec(sql)
                                        : tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
      SqlResult result;
      result.affected = static_cast<long>(r.affected_rows());
      result.rows.reserve(r.size());
      for (const pqxx::row& row : r) {
        SqlRow out(row.size());
        for (pqxx::row::size_type c = 0; c < row.size(); ++c)
          if (!row[c].is_null()) out[c] = std::string(row[c].c_str(), row[c].size());
        result.rows.push_back(std::move(out));
      }
      return result;
    } catch (const pqxx::integrity_constraint_violation& e) {
      // SQLSTATE class 23 (libpqxx throws this class or a subclass of it for every 23xxx): the
      // answer TryExec returns, not an error. libpqxx reports it only by throwing.
      SqlResult refused;
      refused.refused = e.what();
      return refused;
    } catch (const pqxx::broken_connection& e) {
      Drop();
      throw SystemError("lost the connection to the store", url_, Trimmed(e.what()), kReachHint);
    } catch (const pqxx::in_doubt_error& e) {
      Drop();
      throw SystemError("lost the connection to the store during a commit", url_, Trimmed(e.what()),
                        "the last change may or may not have been made; `accel fleet claims` shows");
    } catch (const pqxx::undefined_table& e) {
      throw InputError(url_, "", "is not an accel store (" + Trimmed(e.what()) + ")",
                       "run `accel fleet store migrate --store URL` on an empty database");
    } catch (const pqxx::sql_error& e) {
      // Server-side refusals (admin shutdown 57P01, serialization, disk full): the server's text.
      const std::string state = e.sqlstate();
      if (state.rfind("57", 0) == 0 || state.rfind("08", 0) == 0) Drop();
      throw SystemError("the store refused a statement", url_,
                        Trimmed(e.what()) + (state.empty() ? "" : " (SQLSTATE " + state + ")"));
    } catch (const pqxx::failure& e) {
      Drop();
      throw SystemError("cannot use the store", url_, Trimmed(e.what()), kReachHint);
    }
  }

  void Begin(bool /*write*/) override {
    Exec("BEGIN", {});
    in_transaction_ = true;
  }
  void Commit() override {
    Exec("COMMIT", {});
    in_transaction_ = false;
  }
  void Rollback() noexcept override {
    in_transaction_ = false;
    if (!conn_) return;  // the server rolled back when the connection died
    try {
      pqxx::nontransaction tx(*conn_);
      tx.exec("ROLLBACK");
    } catch (...) {
      Drop();
    }
  }

 private:
  static std::string Trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  void Connect() {
    if (conn_ && conn_->is_open()) return;
    // A new connection inside a transaction would run the rest of it outside one.
    if (in_transaction_)
      throw SystemError("lost the connection to the store in a transaction", url_,
                        "the server rolled it back", kReachHint);
    try {
      prepared_.clear();
      conn_ = std::make_unique<pqxx::connection>(conninfo_);
    } catch (const std::exception& e) {
      conn_.reset();
      throw SystemError("cannot connect to the store", url_, Trimmed(e.what()), kReachHint);
    }
  }

  void Drop() noexcept {
    conn_.reset();
    prepared_.clear();
  }

  // The name `sql` is prepared under on this connection, registering it on first use (libpqxx
  // sends the PREPARE with the first exec_prepared, and again after a failed one); nullptr past
  // kMaxPrepared texts, which then run unprepared: nothing the store runs gets there, but a bug
  // must not grow the server's memory without bound.
  const std::string* PreparedName(const std::string& sql) {
    if (auto it = prepared_.find(sql); it != prepared_.end()) return &it->second;
    constexpr size_t kMaxPrepared = 256;
    if (prepared_.size() >= kMaxPrepared) return nullptr;
    std::string name = "accel_" + std::to_string(prepared_.size() + 1);
    conn_->prepare(name, sql);
    return &prepared_.emplace(sql, std::move(name)).first->second;
  }

  std::string conninfo_;
  std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
  std::unordered_map<std::string, std::string> prepared_;  ///< SQL text -> prepared name on conn_
  bool in_transaction_ = false;  ///< between Begin and Commit/Rollback
};

}  // namespace

std::unique_ptr<SqlConnection> OpenPostgres(const std::string& conninfo, const std::string& url) {
  return std::make_unique<PostgresConnection>(conninfo, url);
}

}  // namespace accel::fleet
