#include "cli/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/exit_code.h"
#include "common/error.h"

namespace accel::cli {

namespace {

/// A few threads allocate the same large buffers (rendered text, gzip copies) over and over;
/// glibc's defaults would keep a 64 MiB arena per thread and hold freed big buffers in them. Two
/// arenas and fixed mmap/trim thresholds keep RSS at what is live.
void TuneAllocatorForALongRunningProcess() {
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

}  // namespace

int WaitForSignals(const sigset_t& signals, const std::function<bool()>& on_hangup,
                   const std::function<void(const std::string&)>& log) {
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) {
      log(std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", stopping");
      return kExitOk;
    }
    log("SIGHUP, reloading");
    if (!on_hangup()) return kExitSystem;
  }
}

sigset_t PrepareDaemonProcess() {
  TuneAllocatorForALongRunningProcess();
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int RunDaemon(const DaemonSpec& spec) {
  const std::string prefix = spec.name + ": ";
  agent::Agent::Log log = [prefix](const std::string& line) { std::cerr << prefix << line << "\n"; };
  agent::AgentConfig config;
  try {
    config = spec.load();
  } catch (const std::exception& e) {
    log(e.what());
    return ExitCodeFor(e);
  }
  const sigset_t signals = PrepareDaemonProcess();  // before any thread starts

  auto agent = std::make_unique<agent::Agent>(log);
  try {
    agent->Start(config);
  } catch (const std::exception& e) {  // nothing was left running
    log(e.what());
    return ExitCodeFor(e);
  }
  int exit_code = kExitOk;
  if (spec.once) {
    spec.once(*agent);
    std::cout.flush();
  } else {
    // A reload that leaves nothing running stops the process (kExitSystem), so the supervisor
    // (systemd, the kubelet) restarts accel instead of a process that serves nothing.
    exit_code = WaitForSignals(signals, [&] {
      try {
        agent->Reload(spec.load());
        log("reloaded");
        return true;
      } catch (const std::exception& e) {
        if (agent->running()) {
          log(std::string("reload failed, keeping the previous config: ") + e.what());
          return true;
        }
        log(std::string("reload failed and the previous config does not run either: ") + e.what() + "; exiting");
        return false;
      }
    }, log);
  }
  if (exit_code != kExitOk) {  // a failed reload may have left a hung vendor call behind
    std::cout.flush();
    _exit(exit_code);
  }
  if (!agent->Stop()) {
    log("a vendor library call is still hung; exiting without it");
    agent.release();  // destroying it under a blocked call would crash
    std::cout.flush();
    _exit(exit_code);
  }
  return exit_code;
}

}  // namespace accel::cli
