// The PostgreSQL harness the fleet store's tests and benchmarks stand on
// (tests/support/postgres_server.h): a private server per test, reached only through its socket
// directory, that stops, starts again with its data, and leaves nothing behind. Checked with psql
// in a subprocess, so these tests need no client library.
#include "support/postgres_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/shared_fixture.h"

namespace accel::test_support {
namespace postgres_server_test {

namespace fs = std::filesystem;


// True when `pid` exists and is not a zombie (an exited postmaster is reparented to PID 1, which
// in a container may be slow to reap it).
bool ProcessExists(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// The pids whose parent is `parent` (the postmaster's backends and auxiliary processes).
std::set<pid_t> ChildrenOf(pid_t parent) {
  std::set<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 2));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) children.insert(std::stoi(name));
  }
  return children;
}

// True when some process has `text` on its command line.
bool AnyProcessMentions(const std::string& text) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(PostgresServer, FindsTheServerPrograms) {
  ACCEL_REQUIRE_POSTGRES();
  EXPECT_TRUE(PostgresServer::Available());
  for (const char* program : {"initdb", "pg_ctl", "postgres", "psql"}) {
    const std::string path = PostgresBinary(program);
    EXPECT_EQ(path.rfind("/usr/lib/postgresql/", 0), 0u) << path;
    EXPECT_TRUE(IsExecutable(path)) << path;
  }
}

TEST(PostgresServer, StartsPrivatelyWithFsyncOnAndAnswersPsql) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  EXPECT_TRUE(pg.running());
  EXPECT_EQ(pg.directory().rfind("/tmp/accel-pg-", 0), 0u) << pg.directory();
  EXPECT_TRUE(fs::exists(pg.directory() + "/.s.PGSQL." + std::to_string(pg.port())));
  EXPECT_EQ(pg.Query("SELECT 1"), "1");
  EXPECT_EQ(pg.Query("SHOW fsync"), "on");
  EXPECT_EQ(pg.Query("SHOW max_connections"), "200");
  EXPECT_EQ(pg.Query("SHOW listen_addresses"), "");  // no TCP at all
  EXPECT_EQ(pg.Query("SHOW unix_socket_directories"), pg.directory());
  EXPECT_EQ(pg.Query("SHOW data_directory"), pg.data_directory());
  EXPECT_EQ(pg.Query("SELECT current_user"), "postgres");
  EXPECT_EQ(pg.Query("SELECT 1, 'a'; SELECT 2, 'b'"), "1|a\n2|b");  // every statement's rows

  std::string output;
  EXPECT_EQ(pg.Psql(pg.ConnInfo(), "SELECT 40 + 2", &output), 0) << output;
  EXPECT_EQ(output, "42\n");
  EXPECT_NE(pg.Log().find("database system is ready to accept connections"), std::string::npos)
      << pg.Log();
}

TEST(PostgresServer, ExtraSettingsApply) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg({"shared_buffers = '32MB'", "max_connections = 50"});
  EXPECT_EQ(pg.Query("SHOW shared_buffers"), "32MB");
  EXPECT_EQ(pg.Query("SHOW max_connections"), "50");  // later lines win
}

TEST(PostgresServer, AServerThatCannotStartThrowsItsLogAndLeavesNothing) {
  ACCEL_REQUIRE_POSTGRES();
  try {
    PostgresServer pg({"no_such_setting = 1"});
    FAIL() << "expected the start to fail";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--- server log ---"), std::string::npos) << message;
    EXPECT_NE(message.find("no_such_setting"), std::string::npos) << message;
    const size_t at = message.find("/tmp/accel-pg-");
    ASSERT_NE(at, std::string::npos) << message;
    const std::string directory = message.substr(at, message.find('/', at + 5) - at);
    EXPECT_FALSE(fs::exists(directory)) << directory;
  }
}

TEST(PostgresServer, QueryThrowsWithPsqlsMessage) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  try {
    pg.Query("SELECT * FROM no_such_table");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_table"), std::string::npos) << e.what();
  }
  // Notices go to stderr, not into the rows.
  EXPECT_EQ(pg.Query("CREATE TABLE IF NOT EXISTS t (x int); CREATE TABLE IF NOT EXISTS t (x int);"
                     "SELECT count(*) FROM t"),
            "0");
}

// The store code connects from the test process itself (root in CI, while the server runs as
// `postgres`): the socket directory must be reachable by it, not only by the server's user.
TEST(PostgresServer, TheTestProcessItselfReachesTheSocket) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  for (const std::string& target : {pg.Url(), pg.ConnInfo()}) {
    const std::string command =
        "env -i " + PostgresBinary("psql") + " -XAtq -d '" + target + "' -c 'SELECT 7' 2>&1";
    FILE* psql = popen(command.c_str(), "r");
    ASSERT_NE(psql, nullptr);
    std::string output;
    char buffer[256];
    while (fgets(buffer, sizeof buffer, psql)) output += buffer;
    EXPECT_EQ(pclose(psql), 0) << command << "\n" << output;
    EXPECT_EQ(output, "7\n") << command;
  }
}

TEST(PostgresServer, CreateDatabaseGivesEachTestItsOwnDatabase) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("fleet_a");
  pg.CreateDatabase("fleet \"b\" with spaces");
  pg.Query("CREATE TABLE hosts (name text); INSERT INTO hosts VALUES ('h1')", "fleet_a");
  EXPECT_EQ(pg.Query("SELECT name FROM hosts", "fleet_a"), "h1");
  EXPECT_EQ(pg.Query("SELECT to_regclass('hosts') IS NULL", "fleet \"b\" with spaces"), "t");
  EXPECT_EQ(pg.Query("SELECT to_regclass('hosts') IS NULL"), "t");
  EXPECT_EQ(pg.Query("SELECT current_database()", "fleet \"b\" with spaces"),
            "fleet \"b\" with spaces");
  EXPECT_THROW(pg.CreateDatabase("fleet_a"), std::runtime_error);  // already exists
}

TEST(PostgresServer, UrlReachesTheSameServer) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("fleet a");
  EXPECT_EQ(pg.Url(), "postgresql://postgres@/postgres?host=%2Ftmp%2F" +
                          pg.directory().substr(5) + "&port=" + std::to_string(pg.port()));
  std::string output;
  EXPECT_EQ(pg.Psql(pg.Url("fleet a"), "SELECT current_database()", &output), 0) << output;
  EXPECT_EQ(output, "fleet a\n");
  output.clear();
  EXPECT_EQ(pg.Psql(pg.ConnInfo("fleet a"), "SELECT current_database()", &output), 0)
      << output;
  EXPECT_EQ(output, "fleet a\n");
}

TEST(PostgresServer, StoppedServerRefusesAndRestartedServerHasTheData) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("store");
  pg.Query("CREATE TABLE claims (id int PRIMARY KEY); INSERT INTO claims VALUES (1), (2)", "store");
  const std::string socket = pg.directory() + "/.s.PGSQL." + std::to_string(pg.port());

  pg.Stop();
  EXPECT_FALSE(pg.running());
  EXPECT_FALSE(fs::exists(socket));
  std::string output;
  EXPECT_NE(pg.Psql(pg.ConnInfo("store"), "SELECT 1", &output), 0);
  EXPECT_NE(output.find(socket), std::string::npos) << output;  // libpq names the socket
  EXPECT_THROW(pg.Query("SELECT 1", "store"), std::runtime_error);
  pg.Stop();  // a second Stop does nothing

  pg.Start();
  EXPECT_TRUE(pg.running());
  pg.Start();  // a second Start does nothing
  EXPECT_EQ(pg.Query("SELECT string_agg(id::text, ',' ORDER BY id) FROM claims", "store"), "1,2");

  pg.Query("INSERT INTO claims VALUES (3)", "store");
  pg.Restart();
  EXPECT_EQ(pg.Query("SELECT count(*) FROM claims", "store"), "3");
}

TEST(PostgresServer, CommittedDataSurvivesAnImmediateStop) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.Query("CREATE TABLE claims (id int); INSERT INTO claims SELECT generate_series(1, 1000)");
  const pid_t before = pg.postmaster_pid();
  pg.StopImmediately();  // no checkpoint: the next start replays the WAL
  EXPECT_FALSE(pg.running());
  EXPECT_FALSE(ProcessExists(before));
  pg.Start();
  EXPECT_EQ(pg.Query("SELECT count(*) FROM claims"), "1000");
  EXPECT_NE(pg.Log().find("not properly shut down"), std::string::npos) << pg.Log();
}

TEST(PostgresServer, TwoServersDoNotClash) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer a;
  PostgresServer b;
  EXPECT_NE(a.directory(), b.directory());
  a.Query("CREATE TABLE only_in_a (x int)");
  EXPECT_EQ(a.Query("SELECT to_regclass('only_in_a') IS NULL"), "f");
  EXPECT_EQ(b.Query("SELECT to_regclass('only_in_a') IS NULL"), "t");
  b.Stop();
  EXPECT_EQ(a.Query("SELECT 1"), "1");  // stopping one leaves the other
  EXPECT_TRUE(a.running());
}

TEST(PostgresServer, DestructorLeavesNoProcessAndNoDirectory) {
  ACCEL_REQUIRE_POSTGRES();
  std::string directory;
  pid_t postmaster = -1;
  std::set<pid_t> children;
  {
    PostgresServer pg;
    pg.Query("SELECT 1");
    directory = pg.directory();
    postmaster = pg.postmaster_pid();
    ASSERT_GT(postmaster, 0);
    children = ChildrenOf(postmaster);
    EXPECT_FALSE(children.empty());  // checkpointer, walwriter, ...
    EXPECT_TRUE(AnyProcessMentions(directory));
  }
  EXPECT_FALSE(fs::exists(directory));
  EXPECT_FALSE(ProcessExists(postmaster));
  for (pid_t child : children) EXPECT_FALSE(ProcessExists(child)) << child;
  EXPECT_FALSE(AnyProcessMentions(directory));
}

TEST(PostgresServer, ReapsTheServerOfAKilledTestProcess) {
  ACCEL_REQUIRE_POSTGRES();
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t test_process = fork();
  ASSERT_GE(test_process, 0);
  if (test_process == 0) {
    // A test process that dies without running destructors, as under SIGKILL.
    close(pipe_fds[0]);
    std::string message;
    try {
      auto* leaked = new PostgresServer();
      message = leaked->directory();
    } catch (const std::exception& e) {
      message = std::string("error: ") + e.what();
    }
    (void)!write(pipe_fds[1], message.data(), message.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string directory;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) directory.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(test_process, &status, 0), test_process);
  ASSERT_EQ(directory.rfind("/tmp/accel-pg-", 0), 0u) << directory;
  ASSERT_TRUE(AnyProcessMentions(directory)) << "the straggler's postmaster should still run";

  PostgresServer::ReapAbandonedServers();
  EXPECT_FALSE(fs::exists(directory));
  EXPECT_FALSE(AnyProcessMentions(directory));
}

TEST(PostgresServer, ReaperLeavesLiveServersAlone) {
  ACCEL_REQUIRE_POSTGRES();
  PostgresServer pg;
  PostgresServer::ReapAbandonedServers();
  EXPECT_TRUE(pg.running());
  EXPECT_EQ(pg.Query("SELECT 1"), "1");
}

}  // namespace
}  // namespace accel::test_support
