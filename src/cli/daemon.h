// RunDaemon: the one way accel runs its long-running agent — `accel serve` (every part) and
// `accel exporter` (the exporter part only) — so both handle signals, memory, start-up errors
// and a hung vendor library alike. `accel fleet serve` runs no agent but uses the same process
// set-up (PrepareDaemonProcess) and signal wait (WaitForSignals).
#pragma once

#include <signal.h>

#include <functional>
#include <string>

#include "agent/agent.h"
#include "agent/agent_config.h"

namespace accel::cli {

struct DaemonSpec {
  /// Log prefix and name in messages: "accel serve", "accel exporter".
  std::string name;
  /// Builds the config: called at start and again on every SIGHUP. Throws InputError.
  std::function<agent::AgentConfig()> load;
  /// Start, call `once` with the running agent, stop, exit — instead of serving until a signal.
  std::function<void(agent::Agent&)> once;
};

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread started
/// after), and tunes glibc's allocator for a long-running process. Returns the blocked set, for
/// sigwait. Call before starting any thread: `accel fleet serve` uses it too.
sigset_t PrepareDaemonProcess();

/// Waits in the calling thread for the signals PrepareDaemonProcess blocked: SIGINT or SIGTERM
/// logs "SIGTERM, stopping" (or SIGINT) and returns kExitOk; SIGHUP logs "SIGHUP, reloading"
/// and calls `on_hangup`, which returns true to keep serving or false when nothing is left
/// running (the wait then returns kExitSystem, so the supervisor restarts the process).
int WaitForSignals(const sigset_t& signals, const std::function<bool()>& on_hangup,
                   const std::function<void(const std::string&)>& log);

/// Runs the agent described by `spec` until SIGINT/SIGTERM (or `once` returns):
///   - tunes glibc's allocator for a long-running process with a few busy threads;
///   - blocks SIGINT, SIGTERM and SIGHUP in every thread before any starts, then waits for them
///     in this one: SIGHUP reloads (spec.load again; a failure is logged and the running config
///     kept), SIGINT/SIGTERM stop;
///   - on stop, leaves a vendor call that is still hung behind and exits at once (_exit).
/// Returns the exit code (cli/exit_code.h): kExitOk after a signal or `once`; kExitBadInput when
/// the config, a vendor library (BackendError) or the web config is wrong; kExitSystem when the
/// system refuses (cannot listen, cannot create a socket) or a SIGHUP reload left nothing
/// running; kExitInternal for a bug. Nothing is left running on an error.
int RunDaemon(const DaemonSpec& spec);

}  // namespace accel::cli
