// PostgresServer: a real, private PostgreSQL (Debian's postgresql-15) that a test or a benchmark
// starts for itself and throws away: initdb into a fresh /tmp/accel-pg-XXXXXX, the server on a unix
// socket in that directory (no TCP), trust authentication, fsync on. Never the system cluster:
// nothing here reads or writes /var/lib/postgresql, /var/run/postgresql or port 5432, and no PG*
// environment variable is read or set; every program gets its target on its command line.
//
//   TEST(FleetStore, ClaimsSurviveARestart) {
//     ACCEL_REQUIRE_POSTGRES();
//     test_support::PostgresServer pg;            // ~1 s: initdb + start
//     pg.CreateDatabase("claims");                // one fresh database per test
//     auto store = OpenStore(pg.Url("claims"));   // postgresql://postgres@/claims?host=%2Ftmp...
//     ...
//     pg.Stop();                                  // requests now fail clearly
//     pg.Start();                                 // same data directory, same socket
//   }
//
// Who runs the server: PostgreSQL refuses to run as root. When the test runs as root (CI does),
// initdb, pg_ctl, postgres and psql run as Debian's unprivileged `postgres` user (the postgresql
// package creates it); otherwise as the calling user. Either way the database superuser is named
// "postgres" (initdb -U postgres) and every connection is trusted, so clients connect as
// user=postgres whatever their OS user. The directory is 0700 and owned by the server's user:
// root (CAP_DAC_OVERRIDE) and that user can reach the socket, nobody else.
//
// Layout of directory(): data/ (the cluster), server.log (pg_ctl -l), .s.PGSQL.<port> (the
// socket), owner (the test process's pid, for the straggler reaper below).
//
// A test process killed with SIGKILL cannot stop its server (PostgreSQL has no parent-death
// option). The first PostgresServer of every later test process reaps such stragglers
// (ReapAbandonedServers): every /tmp/accel-pg-* whose owner pid no longer exists is stopped
// (pg_ctl stop -m immediate) and removed. By hand: `pgrep -a -f accel-pg-`, then `pg_ctl stop -m immediate -D /tmp/accel-pg-X/data`.
// Limitation: a server owned by a test in another pid namespace sharing /tmp looks abandoned.
//
// Thread-safety: one owner. The const methods (ConnInfo, Url, Query, Psql, Log, running, ...)
// may run concurrently from several threads while no non-const method runs.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

/// Skips the test (a failure in CI: scripts/check-skips.sh) when Debian's postgresql is absent.
/// Needs support/shared_fixture.h (ACCEL_REQUIRE_TOOL) where it is used.
#define ACCEL_REQUIRE_POSTGRES() ACCEL_REQUIRE_TOOL(::accel::test_support::PostgresBinary("initdb"), "postgresql")

namespace accel::test_support {

/// The absolute path of PostgreSQL server program `name` ("initdb", "pg_ctl", "postgres",
/// "psql") in the newest /usr/lib/postgresql/<major>/bin that has it; when none has it, the
/// PostgreSQL 15 path (which does not exist), so ACCEL_REQUIRE_TOOL's skip names what is missing.
/// psql is taken from there too, not /usr/bin/psql (Debian's pg_wrapper, which consults
/// ~/.postgresqlrc and the system clusters).
std::string PostgresBinary(const std::string& name);

class PostgresServer {
 public:
  /// True when initdb, pg_ctl, postgres and psql are installed and, when running as root, the
  /// `postgres` OS user exists: whether a PostgresServer can be constructed at all.
  static bool Available();

  /// Stops (pg_ctl stop -m immediate, then SIGKILL) and removes every /tmp/accel-pg-* whose
  /// owner process no longer exists: the servers of test processes that were killed. The
  /// constructor calls it once per process; tests may call it. Never throws.
  static void ReapAbandonedServers() noexcept;

  /// Creates /tmp/accel-pg-XXXXXX, runs initdb there (superuser "postgres", trust auth, UTF8, C
  /// locale, UTC), appends to data/postgresql.conf: port (a random 20000-59999, which only names
  /// the socket), listen_addresses = '' (no TCP), unix_socket_directories = directory(),
  /// max_connections = 200, fsync = on, then each line of `extra_settings` (e.g.
  /// "shared_buffers = '256MB'"; later lines win), and starts the server (Start()). First reaps
  /// stragglers of killed test processes (see above), once per process.
  /// Throws std::runtime_error (with initdb's output or the server log) when any step fails; the
  /// directory and any started server are removed before it throws.
  explicit PostgresServer(const std::vector<std::string>& extra_settings = {});

  /// Stops the server at once (pg_ctl stop -m immediate; SIGKILL to the postmaster if that fails)
  /// and removes directory(). Never throws.
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  /// Starts the server on the existing data directory (pg_ctl start -w, up to 120 s) and returns
  /// once it accepts connections. Does nothing when it already runs. Throws std::runtime_error
  /// with pg_ctl's output and the server log when it does not come up.
  void Start();

  /// Clean shutdown (pg_ctl stop -m fast -w): open sessions are cut, a checkpoint is written.
  /// Clients then fail to connect until Start(). Does nothing when not running. Throws
  /// std::runtime_error when the server does not stop within 120 s.
  void Stop();

  /// Shutdown without a checkpoint (pg_ctl stop -m immediate -w), as close to a crash as pg_ctl
  /// goes: the next Start() runs crash recovery; committed transactions survive (fsync is on).
  /// Does nothing when not running. Throws std::runtime_error when it does not stop.
  void StopImmediately();

  /// Stop() then Start().
  void Restart();

  /// True while the postmaster named in data/postmaster.pid exists.
  bool running() const;

  /// The postmaster's pid, or -1 when not running.
  pid_t postmaster_pid() const;

  /// libpq key=value connection string for database `db`:
  /// "host=<directory()> port=<port()> dbname=<db> user=postgres" (values quoted when needed).
  std::string ConnInfo(const std::string& db = "postgres") const;

  /// The same as a libpq URI: "postgresql://postgres@/<db>?host=%2Ftmp%2Faccel-pg-X&port=<port>"
  /// (the socket directory percent-encoded, as libpq requires for a path in a URI).
  std::string Url(const std::string& db = "postgres") const;

  /// CREATE DATABASE `name` (any name; it is quoted as an identifier), owned by user postgres.
  /// Throws std::runtime_error with psql's message when it fails (e.g. the name exists).
  void CreateDatabase(const std::string& name);

  /// Runs `sql` (one or more statements) in database `db` with psql -XAtq -v ON_ERROR_STOP=1 and
  /// returns what it printed on stdout: the rows of every statement (psql 15 prints them all),
  /// one per line, '|' between columns, without the final newline; notices (stderr) are not
  /// included. Throws std::runtime_error with psql's message on any error.
  std::string Query(const std::string& sql, const std::string& db = "postgres") const;

  /// Runs psql -XAtq -v ON_ERROR_STOP=1 -d `target` -c `sql` (`target`: a conninfo string or a
  /// URL, e.g. ConnInfo() or Url()) and returns its exit status (0 ok, 1 or 2 error, -1 timed out
  /// after 120 s); stores stdout + stderr in `*output` when given. Never throws for SQL or
  /// connection errors (tests use it to see that a stopped server refuses).
  int Psql(const std::string& target, const std::string& sql, std::string* output = nullptr) const;

  /// The server log (pg_ctl -l) so far; empty when unreadable.
  std::string Log() const;

  /// /tmp/accel-pg-XXXXXX: the socket directory (libpq's host).
  const std::string& directory() const { return directory_; }
  /// directory() + "/data".
  std::string data_directory() const { return directory_ + "/data"; }
  /// The port number that names the socket (.s.PGSQL.<port>); nothing listens on TCP.
  int port() const { return port_; }
  /// The database superuser every connection uses: "postgres".
  const std::string& user() const { return user_; }

 private:
  struct Identity {
    bool switch_user = false;  ///< true when root: run programs as the `postgres` OS user
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  ///< supplementary groups of that user
  };

  /// Who runs the programs: the calling user, or `postgres` when root. Throws
  /// std::runtime_error when root and there is no `postgres` user.
  static Identity ResolveIdentity();
  /// Runs argv (argv[0] a path) as `who` in directory `cwd` with a clean environment (PATH, HOME
  /// = cwd, C locale, TZ=UTC; no PG* variable), stdin /dev/null, stdout into `*out` and stderr
  /// into `*err` (into `*out` too when `err` is null). Returns the exit status, 128 + signal, or
  /// -1 on timeout (the child is then killed).
  static int RunAs(const Identity& who, const std::string& cwd, const std::vector<std::string>& argv,
                   std::string* out, std::string* err, int timeout_seconds);
  /// RunAs(identity_, directory_, argv, output, nullptr, timeout_seconds).
  int Run(const std::vector<std::string>& argv, std::string* output, int timeout_seconds) const;
  /// pg_ctl stop -m `mode` -w; throws std::runtime_error when `must_stop` and it fails.
  void StopWithMode(const char* mode, bool must_stop);
  /// Best-effort: stop whatever runs and remove directory_.
  void Destroy() noexcept;

  Identity identity_;
  std::string directory_;
  std::string user_ = "postgres";
  int port_ = 0;
};

}  // namespace accel::test_support
