#include "cli/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "common/error.h"
#include "devices/backend.h"

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

/// The exit code for an error thrown while loading or starting.
int ExitCodeFor(const std::exception& e) {
  if (dynamic_cast<const InputError*>(&e) != nullptr) return kExitBadInput;
  if (dynamic_cast<const devices::BackendError*>(&e) != nullptr) return kExitBadInput;
  if (dynamic_cast<const SystemError*>(&e) != nullptr) return kExitSystem;
  return kExitInternal;
}

/// Waits for signals until SIGINT/SIGTERM; SIGHUP reloads.
void SignalLoop(const sigset_t& signals, const DaemonSpec& spec, agent::Agent* agent,
                const agent::Agent::Log& log) {
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) {
      log(std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", stopping");
      return;
    }
    log("SIGHUP, reloading");
    try {
      agent->Reload(spec.load());
      log("reloaded");
    } catch (const std::exception& e) {
      log(std::string("reload failed, keeping the previous config: ") + e.what());
    }
  }
}

}  // namespace

int RunDaemon(const DaemonSpec& spec) {
  const std::string prefix = spec.name + ": ";
  agent::Agent::Log log = [prefix](const std::string& line) { std::cerr << prefix << line << "\n"; };
  TuneAllocatorForALongRunningProcess();
  agent::AgentConfig config;
  try {
    config = spec.load();
  } catch (const std::exception& e) {
    log(e.what());
    return ExitCodeFor(e);
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  auto agent = std::make_unique<agent::Agent>(log);
  try {
    agent->Start(config);
  } catch (const std::exception& e) {  // nothing was left running
    log(e.what());
    return ExitCodeFor(e);
  }
  if (spec.once) {
    spec.once(*agent);
    std::cout.flush();
  } else {
    SignalLoop(signals, spec, agent.get(), log);
  }
  if (!agent->Stop()) {
    log("a vendor library call is still hung; exiting without it");
    agent.release();  // destroying it under a blocked call would crash
    std::cout.flush();
    _exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace accel::cli
