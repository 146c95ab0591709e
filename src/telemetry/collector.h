// Collector: reads every device in the background and publishes complete snapshots.
//
// One worker thread per device calls DeviceBackend::Read, so a vendor call that hangs stalls
// only its own device; one thread per backend waits for health events (XIDs); one thread asks
// the kubelet which pods hold which devices. Every `interval` a pass starts all device reads,
// waits for them up to a deadline, and publishes a new Snapshot plus its rendered exposition.
// Scrapes read the published text only (exposition()), so their cost does not depend on the
// vendor libraries. All public methods are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "devices/backend.h"
#include "kube/pod_resources.h"
#include "telemetry/render.h"
#include "telemetry/snapshot.h"

namespace accel::telemetry {

struct CollectorOptions {
  /// Time between collection passes.
  std::chrono::milliseconds interval{5000};
  /// A device whose newest reading is older than this is reported stale (a hung vendor call).
  /// Zero means 3 × interval.
  std::chrono::milliseconds stale_after{0};
  /// Node name for the hostname labels.
  std::string hostname;
  /// Kubelet pod-resources socket; empty turns pod attribution off.
  std::string pod_resources_socket;
  /// Time between kubelet List calls.
  std::chrono::milliseconds pod_refresh_interval{10000};
  /// What to render. render.fields (a field selection) also decides what the collector reads
  /// beyond the default set (ExtraReadsFor, handed to every backend before the first read) and
  /// whether it keeps per-device XID and clock-event history for the sliding-window counts
  /// (NeedsEventWindows); without a selection neither costs anything.
  RenderOptions render;
  /// Length of the sliding window (dcgm-exporter's default: 5 minutes).
  std::chrono::milliseconds event_window{300000};
  /// Called with every health event, on the backend's event thread, outside the collector's
  /// lock (the node agent's device plugin takes device health from here). May be empty.
  std::function<void(const devices::HealthEvent&)> on_event;
  /// Called after every device read with (vendor, vendor index, reading), on that device's
  /// worker thread, outside the lock. May be empty. Must not block.
  std::function<void(devices::Vendor, unsigned, const devices::DeviceReading&)> on_reading;
};

class Collector {
 public:
  /// Takes ownership of the backends; their devices() are the devices collected, in backend
  /// order. Hands the extra reads of options.render.fields to each backend first (which may
  /// fill identity details).
  /// Does not start anything.
  Collector(std::vector<std::unique_ptr<devices::DeviceBackend>> backends,
            CollectorOptions options);
  /// Stops the threads it can; see Stop().
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  /// Overrides device identities (e.g. with NUMA nodes joined from the topology). `identities`
  /// must have one entry per device, in order. Call before Start().
  void SetIdentities(std::vector<devices::DeviceIdentity> identities);

  /// Starts the threads and runs the first pass before returning, so the first scrape has data.
  void Start();

  /// Stops every thread. Returns true when all of them finished; false when some device read
  /// (or event wait) is still blocked inside a vendor library — those threads are detached and
  /// the caller must then leave the process with _exit, without destroying the backends.
  bool Stop();

  /// Latest published snapshot / its exposition text; never null after Start().
  std::shared_ptr<const Snapshot> snapshot() const;
  std::shared_ptr<const std::string> exposition() const;

  /// Runs one more pass now and publishes it (`--once` uses it so rates such as GPM activity,
  /// which need two readings, have a value). Safe alongside the background pass loop.
  void RefreshNow();

  /// Devices collected, in snapshot order.
  const std::vector<devices::DeviceIdentity>& identities() const { return identities_; }

 private:
  struct Slot;
  struct EventLog;

  void RunDeviceWorker(size_t slot);
  void RunEventWatcher(size_t backend);
  void RunPodWatcher(size_t unused);
  void RunPassLoop(size_t unused);
  void Spawn(void (Collector::*body)(size_t), size_t arg);
  void Pass();
  void Publish(std::chrono::steady_clock::time_point started);
  /// Fills d's window counts from slot's history since `start` (drops older entries). Call
  /// with mu_ held.
  void CountWindow(Slot& slot, std::chrono::system_clock::time_point start, DeviceState* d);
  std::chrono::milliseconds stale_after() const;

  CollectorOptions options_;
  /// Derived from options_.render.fields: keep XID / clock-event history for window counts.
  bool track_event_windows_ = false;
  std::vector<std::unique_ptr<devices::DeviceBackend>> backends_;
  std::vector<devices::DeviceIdentity> identities_;
  /// (backend, position in that backend) of each slot.
  std::vector<std::pair<size_t, size_t>> slot_source_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<EventLog> events_;

  std::mutex pass_mu_;     ///< one pass at a time (the loop and RefreshNow)
  size_t render_size_hint_ = 0;  ///< last exposition size, to reserve the next one (pass_mu_)
  mutable std::mutex mu_;  ///< guards everything below and every Slot
  std::condition_variable work_cv_;  ///< workers wait here for a new pass
  std::condition_variable done_cv_;  ///< the pass waits here for workers
  std::condition_variable stop_cv_;  ///< sleeping loops wait here
  uint64_t generation_ = 0;
  bool stopping_ = false;
  bool started_ = false;
  std::vector<kube::ContainerDevices> pods_;
  CollectorStats stats_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::shared_ptr<const std::string> exposition_;

  std::vector<std::thread> threads_;
  /// finished_[i]: threads_[i] has returned (guarded by mu_).
  std::vector<bool> finished_;
  std::unique_ptr<kube::PodResourcesClient> pod_client_;
};

/// The node name for hostname labels: $NODE_NAME (a DaemonSet sets it from the downward API),
/// else gethostname().
std::string NodeName();

/// Parses a duration flag: "500ms", "5s", "2m", or a bare number of milliseconds (dcgm-exporter's
/// -c convention). Throws InputError(where=flag) on anything else or on zero/negative.
std::chrono::milliseconds ParseDuration(const std::string& text, const std::string& flag);

}  // namespace accel::telemetry
