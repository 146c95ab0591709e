// MpsDaemons: a state machine per daemon (down → start attempt → up → died → down with a
// backoff), driven by Tick from the watcher thread or a test's clock.
#include "kube/mps_daemons.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "kube/mps_control.h"
#include "kube/mps_paths.h"

namespace accel::kube {

namespace {

using Clock = MpsDaemons::Clock;

/// The query NVIDIA's AssertHealthy sends: cheap, and answered only by a working daemon.
constexpr const char* kHealthQuery = "get_default_active_thread_percentage";
/// How long a started daemon may take to write its PID file.
constexpr std::chrono::milliseconds kPidFileWait{2000};

}  // namespace

// Named, not anonymous: MpsDaemons::Impl (a class with linkage) holds a vector of them.
namespace mps_daemons_state {

struct Daemon {
  std::string resource;
  MpsPaths paths;
  /// NodeDevice indices of the resource's units (what SetServiceDown marks).
  std::vector<size_t> units;
  std::vector<std::string> limits;

  std::unique_ptr<MpsControl> control;  ///< null until a binary was found
  bool up = false;
  pid_t pid = 0;
  bool ever_started = false;
  int restarts = 0;
  /// Failures since the daemon last stayed up for max_backoff.
  int failures = 0;
  Clock::time_point next_attempt{};
  Clock::time_point up_since{};
  std::string error;
};

}  // namespace mps_daemons_state

using mps_daemons_state::Daemon;

struct MpsDaemons::Impl {
  const PluginConfig* config = nullptr;
  DeviceHealth* health = nullptr;
  MpsDaemons::Log log;
  MpsDaemonOptions options;

  /// Guards the daemons' state; held across a whole Tick (control calls included), so Tick,
  /// status and Stop never interleave.
  mutable std::mutex mu;
  std::vector<Daemon> daemons;

  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  bool stopped = false;
  std::thread watcher;

  void Say(const std::string& line) const {
    if (log) log("mps: " + line);
  }

  void MarkDown(Daemon& d, bool down) {
    if (health) health->SetServiceDown(d.units, down);
  }

  std::chrono::milliseconds Backoff(int failures) const {
    auto wait = options.first_backoff;
    for (int i = 1; i < failures && wait < options.max_backoff; ++i) wait *= 2;
    return std::min(wait, options.max_backoff);
  }

  // One start attempt; needs mu. On failure the daemon is left down with the next attempt set.
  void TryStart(Daemon& d, Clock::time_point now) {
    std::string path = options.path_env;
    if (path.empty() && std::getenv("PATH")) path = std::getenv("PATH");
    std::string binary = FindMpsControl(config->mps_settings, config->driver_root, path);
    try {
      if (binary.empty()) {
        bool searched = config->mps_settings.control_path.empty();
        throw SystemError(
            "cannot start the MPS control daemon:", std::string(kMpsControlBinary) + " not found",
            searched ? "searched PATH and " + config->driver_root + "{usr/bin,bin}"
                     : config->mps_settings.control_path + " is not an executable file",
            searched ? "set flags.mpsControlPath" : "");
      }
      if (!d.control || d.control->binary() != binary) {
        d.control = std::make_unique<MpsControl>(binary, d.paths, options.command_timeout);
      }
      // A daemon from before (a previous agent, or one that stopped answering) would refuse our
      // start or keep old limits: make the pipe directory ours.
      if (d.control->RunningPid() != 0) {
        Say(d.resource + ": a control daemon already runs in " + d.paths.pipe_dir + ": " +
            d.control->Quit());
      }
      d.control->StartDaemon();
      d.pid = WaitForPid(d);
      if (d.pid == 0) {
        throw SystemError("cannot start the MPS control daemon:", binary,
                          "the control daemon exited right after it started" + LastLogSuffix(d));
      }
      for (const std::string& command : d.limits) {
        try {
          d.control->Send(command);
        } catch (...) {
          d.control->Quit();  // never leave a daemon without its limits
          throw;
        }
      }
    } catch (const std::exception& e) {
      ++d.failures;
      d.error = e.what();
      d.next_attempt = now + Backoff(d.failures);
      Say(d.resource + ": cannot start the MPS control daemon: " + d.error + "; its " +
          std::to_string(d.units.size()) + " GPU(s) are Unhealthy; retrying in " +
          std::to_string(Backoff(d.failures).count()) + " ms");
      return;
    }
    d.up = true;
    d.error.clear();
    d.up_since = now;
    if (d.ever_started) ++d.restarts;
    d.ever_started = true;
    MarkDown(d, false);
    Say(d.resource + ": control daemon PID " + std::to_string(d.pid) + " serves " +
        d.paths.pipe_dir + " (" + std::to_string(d.units.size()) + " GPU(s); " +
        (d.limits.empty() ? std::string("no limits") : d.limits.back()) + ")");
  }

  // The daemon's PID once its PID file names a live process: `-d` may return before the forked
  // daemon wrote it (unconfirmed for NVIDIA's binary), so wait a moment.
  pid_t WaitForPid(const Daemon& d) const {
    auto deadline = Clock::now() + std::min(options.command_timeout, kPidFileWait);
    while (true) {
      if (pid_t pid = d.control->RunningPid()) return pid;
      if (Clock::now() >= deadline) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string LastLogSuffix(const Daemon& d) const {
    std::string last = d.control ? d.control->LastLogLine() : "";
    return last.empty() ? "" : " (control.log: " + last + ")";
  }

  // Needs mu. Whether the running daemon is alive and answers.
  bool Healthy(Daemon& d, std::string* why) {
    pid_t pid = d.control->RunningPid();
    if (pid == 0) {
      *why = "the control daemon (PID " + std::to_string(d.pid) + ") is gone";
      return false;
    }
    try {
      d.control->Send(kHealthQuery);
    } catch (const std::exception& e) {
      *why = std::string("the control daemon does not answer: ") + e.what();
      return false;
    }
    d.pid = pid;
    return true;
  }

  void TickLocked(Clock::time_point now) {
    for (Daemon& d : daemons) {
      if (d.up) {
        std::string why;
        if (Healthy(d, &why)) {
          if (d.failures > 0 && now - d.up_since >= options.max_backoff) d.failures = 0;
          continue;
        }
        d.up = false;
        d.pid = 0;
        ++d.failures;
        d.error = why + LastLogSuffix(d);
        d.next_attempt = now + Backoff(d.failures);
        MarkDown(d, true);
        Say(d.resource + ": " + d.error + "; its " + std::to_string(d.units.size()) +
            " GPU(s) are Unhealthy; restarting in " +
            std::to_string(Backoff(d.failures).count()) + " ms");
        continue;
      }
      if (now >= d.next_attempt) TryStart(d, now);
    }
  }

  void Watch() {
    std::unique_lock<std::mutex> lock(stop_mu);
    while (!stop_cv.wait_for(lock, options.check_interval, [&] { return stopping; })) {
      lock.unlock();
      {
        std::lock_guard<std::mutex> daemons_lock(mu);
        TickLocked(Clock::now());
      }
      lock.lock();
    }
  }
};

MpsDaemons::MpsDaemons(const std::vector<PluginResource>& resources,
                       const std::vector<NodeDevice>& devices, const PluginConfig& config,
                       DeviceHealth* health, Log log, MpsDaemonOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = &config;
  impl_->health = health;
  impl_->log = std::move(log);
  impl_->options = std::move(options);
  for (const PluginResource& r : resources) {
    if (r.sharing != SharingStrategy::kMps) continue;
    Daemon d;
    d.resource = r.name;
    d.paths = MpsPathsFor(config.mps_settings.root, r.name);
    for (const AdvertisedDevice& a : r.devices) {
      if (std::find(d.units.begin(), d.units.end(), a.device) == d.units.end()) {
        d.units.push_back(a.device);
      }
    }
    d.limits = MpsLimitCommands(r, devices);
    impl_->daemons.push_back(std::move(d));
  }
}

MpsDaemons::~MpsDaemons() { Stop(); }

void MpsDaemons::Start() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    Clock::time_point now = Clock::now();
    for (Daemon& d : impl_->daemons) {
      impl_->MarkDown(d, true);  // out of service until its daemon runs with its limits
      impl_->TryStart(d, now);
    }
  }
  if (impl_->options.watch && !impl_->daemons.empty()) {
    impl_->watcher = std::thread([this] { impl_->Watch(); });
  }
}

void MpsDaemons::Tick(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopped) return;
  impl_->TickLocked(now);
}

void MpsDaemons::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->watcher.joinable()) impl_->watcher.join();
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  for (Daemon& d : impl_->daemons) {
    if (!d.control || (!d.up && d.control->RunningPid() == 0)) continue;
    impl_->Say(d.resource + ": stopping the control daemon: " + d.control->Quit());
    d.up = false;
    d.pid = 0;
  }
}

std::vector<MpsDaemonStatus> MpsDaemons::status() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<MpsDaemonStatus> out;
  for (const Daemon& d : impl_->daemons) {
    MpsDaemonStatus s;
    s.resource = d.resource;
    s.pipe_dir = d.paths.pipe_dir;
    s.binary = d.control ? d.control->binary() : "";
    s.up = d.up;
    s.pid = d.up ? d.pid : 0;
    s.restarts = d.restarts;
    s.error = d.error;
    s.limits = d.limits;
    out.push_back(std::move(s));
  }
  return out;
}

size_t MpsDaemons::size() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->daemons.size();
}

}  // namespace accel::kube
