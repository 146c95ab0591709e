// ChildProcess: a program the tests start (the accel binary, a real Prometheus server) and stop.
//
// Not thread-safe; one owner. The destructor sends SIGKILL if the child still runs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace accel::test_support {

class ChildProcess {
 public:
  /// Starts argv[0] (a path) with argv, the current environment plus `env` (overriding), and
  /// stdout + stderr appended to `log_path`. Throws std::runtime_error when fork/exec fails.
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// True while the child has not exited (reaps it when it has).
  bool Running();
  /// Sends `signal` and waits up to `timeout` for the exit. Returns the exit status (WEXITSTATUS),
  /// 128 + signal number when killed by a signal, or -1 on timeout (the child is then SIGKILLed).
  int Stop(int signal, std::chrono::milliseconds timeout);
  /// Waits up to `timeout` for the child to exit by itself; same return values as Stop.
  int Wait(std::chrono::milliseconds timeout);
  /// The log so far.
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool exited_ = false;
  std::string log_path_;
};

/// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
int FreeLoopbackPort();

/// Polls `ready` every 50 ms until it returns true or `timeout` passes; returns the last result.
template <typename Predicate>
bool WaitUntil(Predicate ready, std::chrono::milliseconds timeout);

}  // namespace accel::test_support

#include <thread>

template <typename Predicate>
bool accel::test_support::WaitUntil(Predicate ready, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}
