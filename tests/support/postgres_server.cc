#include "support/postgres_server.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/strings.h"

namespace accel::test_support {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTempPrefix = "accel-pg-";
// Always /tmp, not $TMPDIR: the socket path (.s.PGSQL.<port> inside the directory) must fit in
// sun_path (107 bytes), and every parent must be searchable by the `postgres` user, which a
// TMPDIR under /root is not.
constexpr const char* kTempParent = "/tmp";
// pg_ctl's own -t, and a little more for our wait on pg_ctl itself.
constexpr int kPgCtlTimeoutSeconds = 120;
constexpr int kRunTimeoutSeconds = kPgCtlTimeoutSeconds + 60;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A conninfo value: bare when it is a plain word, else single-quoted with \ and ' escaped
// (libpq's rule, "34.1.1.1. Keyword/Value Connection Strings").
std::string ConnInfoValue(const std::string& value) {
  bool plain = !value.empty();
  for (char c : value)
    if (c == ' ' || c == '\'' || c == '\\' || c == '\t' || c == '\n' || c == '=') plain = false;
  if (plain) return value;
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

// An SQL identifier in double quotes, embedded quotes doubled.
std::string QuoteIdentifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The postmaster's pid from data/postmaster.pid (first line), or -1.
pid_t PidFromFile(const std::string& data_directory) {
  std::ifstream in(data_directory + "/postmaster.pid");
  long pid = -1;
  if (!(in >> pid) || pid <= 0) return -1;
  return static_cast<pid_t>(pid);
}

// True when `pid` exists, is not a zombie, and (when /proc tells) runs with `data_directory` on
// its command line: a stale postmaster.pid whose pid was reused by another process is not ours.
bool PostmasterAlive(pid_t pid, const std::string& data_directory) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') return false;
  std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (cmdline.empty()) return true;  // unreadable (hidepid): trust kill()
  for (char& c : cmdline)
    if (c == '\0') c = ' ';
  return cmdline.find(data_directory) != std::string::npos;
}

// Waits until `pid` is gone (not our child: the postmaster is pg_ctl's grandchild, reparented).
bool WaitGone(pid_t pid, const std::string& data_directory, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (PostmasterAlive(pid, data_directory)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Kills a postmaster that pg_ctl could not stop, and waits for it.
void KillPostmaster(const std::string& data_directory) {
  const pid_t pid = PidFromFile(data_directory);
  if (!PostmasterAlive(pid, data_directory)) return;
  kill(pid, SIGKILL);
  WaitGone(pid, data_directory, std::chrono::seconds(10));
}

// Removes `directory`, retrying briefly: backends of a killed postmaster may still be exiting.
void RemoveDirectory(const std::string& directory) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::error_code ec;
    fs::remove_all(directory, ec);
    if (!ec || !fs::exists(directory)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string WithoutFinalNewline(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::string PostgresBinary(const std::string& name) {
  int best_major = -1;
  std::string best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string version = entry.path().filename().string();
    char* end = nullptr;
    const long major = std::strtol(version.c_str(), &end, 10);
    if (end == version.c_str() || *end != '\0') continue;
    const std::string path = entry.path().string() + "/bin/" + name;
    if (major > best_major && access(path.c_str(), X_OK) == 0) {
      best_major = static_cast<int>(major);
      best = path;
    }
  }
  return best.empty() ? "/usr/lib/postgresql/15/bin/" + name : best;
}

bool PostgresServer::Available() {
  for (const char* program : {"initdb", "pg_ctl", "postgres", "psql"})
    if (access(PostgresBinary(program).c_str(), X_OK) != 0) return false;
  return geteuid() != 0 || getpwnam("postgres") != nullptr;
}

PostgresServer::Identity PostgresServer::ResolveIdentity() {
  Identity who;
  if (geteuid() != 0) {
    who.uid = geteuid();
    who.gid = getegid();
    return who;
  }
  // Root: PostgreSQL refuses to run as root ("root" execution of the PostgreSQL server is not
  // permitted), so every program runs as the unprivileged user Debian's postgresql package
  // creates. Resolved here, before any fork: getpwnam and getgrouplist read files and allocate,
  // which a forked child of a multi-threaded test must not do.
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwnam_r("postgres", &pw, buffer.data(), buffer.size(), &found) != 0 || !found)
    throw std::runtime_error(
        "running as root, and there is no 'postgres' user to run PostgreSQL as (the server "
        "refuses root); install Debian's postgresql package (scripts/setup.sh does), which "
        "creates it, or run the tests as an unprivileged user");
  who.switch_user = true;
  who.uid = pw.pw_uid;
  who.gid = pw.pw_gid;
  int count = 32;
  who.groups.resize(count);
  while (getgrouplist(pw.pw_name, pw.pw_gid, who.groups.data(), &count) < 0)
    who.groups.resize(count);
  who.groups.resize(count);
  return who;
}

int PostgresServer::RunAs(const Identity& who, const std::string& cwd,
                          const std::vector<std::string>& argv, std::string* out, std::string* err,
                          int timeout_seconds) {
  // Why fork + setgroups/setgid/setuid and not `runuser -u postgres --`: runuser goes through
  // PAM (its "runuser" service: pam_limits, pam_systemd, logging) and so depends on the PAM
  // setup of the machine or container, and it adds a process between us and pg_ctl. The three
  // system calls need nothing but the ids, resolved before fork. Everything the child needs is
  // prepared here too: after fork, only async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // A clean environment: the caller's PGHOST, PGPORT, PGDATA, PGOPTIONS... must not leak in;
  // HOME in our directory so nothing reads or writes the user's ~/.psqlrc or history; C locale
  // and UTC so initdb is quick (no time zone probe) and messages are stable.
  std::vector<std::string> env_strings = {"PATH=/usr/bin:/bin", "HOME=" + cwd, "LC_ALL=C",
                                          "LANG=C", "TZ=UTC"};
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || (err && pipe2(err_pipe, O_CLOEXEC) != 0)) {
    for (int fd : {devnull, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) close(fd);
    throw std::runtime_error("cannot create pipes to run " + argv[0] + ": " + strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {devnull, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) close(fd);
    throw std::runtime_error("fork failed running " + argv[0]);
  }
  if (pid == 0) {
    // Default dispositions: ignored signals stay ignored across exec, and a postmaster that
    // inherits SIG_IGN for SIGPIPE or SIGCHLD from a test process misbehaves.
    for (int sig : {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2})
      signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err ? err_pipe[1] : out_pipe[1], 2);
    // The postmaster lives on after pg_ctl: it must hold none of the test's descriptors (a
    // listening socket, a peer's pipe), or those never close.
    close_range(3, ~0U, 0);
    auto fail = [](const char* what) {
      const char* message = strerror(errno);
      (void)!write(2, what, strlen(what));
      (void)!write(2, message, strlen(message));
      (void)!write(2, "\n", 1);
      _exit(126);
    };
    if (who.switch_user) {
      if (setgroups(who.groups.size(), who.groups.data()) != 0) fail("setgroups: ");
      if (setgid(who.gid) != 0) fail("setgid: ");
      if (setuid(who.uid) != 0) fail("setuid: ");
    }
    if (chdir(cwd.c_str()) != 0) fail("chdir: ");
    execve(args[0], args.data(), envp.data());
    fail("execve: ");
  }
  close(devnull);
  close(out_pipe[1]);
  if (err) close(err_pipe[1]);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  std::vector<pollfd> fds = {{out_pipe[0], POLLIN, 0}};
  std::vector<std::string*> sinks = {out};
  if (err) {
    fds.push_back({err_pipe[0], POLLIN, 0});
    sinks.push_back(err);
  }
  bool timed_out = false;
  size_t open_fds = fds.size();
  char buffer[4096];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        if (sinks[i]) sinks[i]->append(buffer, n);
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) close(p.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int PostgresServer::Run(const std::vector<std::string>& argv, std::string* output,
                        int timeout_seconds) const {
  return RunAs(identity_, directory_, argv, output, nullptr, timeout_seconds);
}

void PostgresServer::ReapAbandonedServers() noexcept {
  try {
    const Identity who = ResolveIdentity();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(kTempParent, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(kTempPrefix, 0) != 0) continue;
      const std::string directory = entry.path().string();
      // No owner file: a server being created right now (the owner is written first thing).
      std::ifstream owner_file(directory + "/owner");
      long owner = 0;
      if (!(owner_file >> owner) || owner <= 0) continue;
      if (kill(static_cast<pid_t>(owner), 0) == 0 || errno != ESRCH) continue;  // owner alive
      const std::string data = directory + "/data";
      if (PostmasterAlive(PidFromFile(data), data)) {
        std::string ignored;
        RunAs(who, directory,
              {PostgresBinary("pg_ctl"), "stop", "-m", "immediate", "-w", "-t", "30", "-D", data},
              &ignored, nullptr, 60);
        KillPostmaster(data);  // pg_ctl may run as the wrong user for that cluster
      }
      RemoveDirectory(directory);
    }
  } catch (...) {
    // Best effort: a straggler we cannot remove is not this test's failure.
  }
}

PostgresServer::PostgresServer(const std::vector<std::string>& extra_settings) {
  identity_ = ResolveIdentity();
  static std::once_flag reaped;
  std::call_once(reaped, [] { ReapAbandonedServers(); });

  std::string pattern = std::string(kTempParent) + "/" + kTempPrefix + "XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a directory like " + pattern + ": " + strerror(errno));
  directory_ = pattern;
  try {
    {
      std::ofstream owner(directory_ + "/owner");
      owner << getpid() << "\n";
      if (!owner) throw std::runtime_error("cannot write " + directory_ + "/owner");
    }
    if (identity_.switch_user && chown(directory_.c_str(), identity_.uid, identity_.gid) != 0)
      throw std::runtime_error("cannot chown " + directory_ + " to user postgres: " +
                               strerror(errno));
    // The port only names the socket file (.s.PGSQL.<port>) in our own directory, so two servers
    // never clash on it; random anyway so that the SysV shared memory keys PostgreSQL derives
    // from it rarely need probing.
    std::random_device random;
    port_ = std::uniform_int_distribution<int>(20000, 59999)(random);

    std::string output;
    // --no-sync: only initdb's own final fsync of the fresh cluster is skipped (a test cluster
    // that a power cut loses is fine); the server runs with fsync on.
    const int rc = Run({PostgresBinary("initdb"), "-D", data_directory(), "-U", user_, "-A",
                        "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"},
                       &output, kRunTimeoutSeconds);
    if (rc != 0)
      throw std::runtime_error("initdb -D " + data_directory() + " failed (exit " +
                               std::to_string(rc) + "):\n" + output);
    // postgresql.conf rather than pg_ctl -o: pg_ctl hands -o to /bin/sh, and settings in the file
    // hold for every later Start() on this data directory. Later lines override earlier ones.
    std::ofstream conf(data_directory() + "/postgresql.conf", std::ios::app);
    conf << "\n# tests/support/postgres_server.cc\n"
         << "port = " << port_ << "\n"
         << "listen_addresses = ''\n"
         << "unix_socket_directories = '" << directory_ << "'\n"
         << "max_connections = 200\n"
         << "fsync = on\n";
    for (const std::string& line : extra_settings) conf << line << "\n";
    conf.close();
    if (!conf) throw std::runtime_error("cannot append to " + data_directory() + "/postgresql.conf");
    Start();
  } catch (...) {
    Destroy();
    throw;
  }
}

PostgresServer::~PostgresServer() { Destroy(); }

void PostgresServer::Destroy() noexcept {
  if (directory_.empty()) return;
  try {
    StopWithMode("immediate", false);
  } catch (...) {
  }
  KillPostmaster(data_directory());
  RemoveDirectory(directory_);
  directory_.clear();
}

void PostgresServer::Start() {
  if (running()) return;
  std::string output;
  const int rc = Run({PostgresBinary("pg_ctl"), "start", "-w", "-t",
                      std::to_string(kPgCtlTimeoutSeconds), "-D", data_directory(), "-l",
                      directory_ + "/server.log"},
                     &output, kRunTimeoutSeconds);
  if (rc != 0)
    throw std::runtime_error("pg_ctl start -D " + data_directory() + " failed (exit " +
                             std::to_string(rc) + "):\n" + output + "--- server log ---\n" + Log());
}

void PostgresServer::StopWithMode(const char* mode, bool must_stop) {
  if (!running()) return;
  std::string output;
  const int rc = Run({PostgresBinary("pg_ctl"), "stop", "-m", mode, "-w", "-t",
                      std::to_string(kPgCtlTimeoutSeconds), "-D", data_directory()},
                     &output, kRunTimeoutSeconds);
  if (rc != 0 && must_stop)
    throw std::runtime_error(std::string("pg_ctl stop -m ") + mode + " -D " + data_directory() +
                             " failed (exit " + std::to_string(rc) + "):\n" + output +
                             "--- server log ---\n" + Log());
}

void PostgresServer::Stop() { StopWithMode("fast", true); }

void PostgresServer::StopImmediately() { StopWithMode("immediate", true); }

void PostgresServer::Restart() {
  Stop();
  Start();
}

pid_t PostgresServer::postmaster_pid() const {
  const pid_t pid = PidFromFile(data_directory());
  return PostmasterAlive(pid, data_directory()) ? pid : -1;
}

bool PostgresServer::running() const { return postmaster_pid() > 0; }

std::string PostgresServer::ConnInfo(const std::string& db) const {
  return "host=" + ConnInfoValue(directory_) + " port=" + std::to_string(port_) +
         " dbname=" + ConnInfoValue(db) + " user=" + ConnInfoValue(user_);
}

std::string PostgresServer::Url(const std::string& db) const {
  return "postgresql://" + PercentEncode(user_) + "@/" + PercentEncode(db) +
         "?host=" + PercentEncode(directory_) + "&port=" + std::to_string(port_);
}

int PostgresServer::Psql(const std::string& target, const std::string& sql,
                         std::string* output) const {
  std::string ignored;
  return Run({PostgresBinary("psql"), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d",
              target, "-c", sql},
             output ? output : &ignored, kRunTimeoutSeconds);
}

std::string PostgresServer::Query(const std::string& sql, const std::string& db) const {
  std::string out;
  std::string err;
  const int rc = RunAs(identity_, directory_,
                       {PostgresBinary("psql"), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                        "-d", ConnInfo(db), "-c", sql},
                       &out, &err, kRunTimeoutSeconds);
  if (rc != 0)
    throw std::runtime_error("psql in database " + db + " failed (exit " + std::to_string(rc) +
                             ") on: " + sql + "\n" + err + out);
  return WithoutFinalNewline(out);
}

void PostgresServer::CreateDatabase(const std::string& name) {
  Query("CREATE DATABASE " + QuoteIdentifier(name));
}

std::string PostgresServer::Log() const { return ReadFile(directory_ + "/server.log"); }

}  // namespace accel::test_support
