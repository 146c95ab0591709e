#include "telemetry/collector.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <map>

#include "common/error.h"
#include "telemetry/field_selection.h"
#include "telemetry/pod_attribution.h"

namespace accel::telemetry {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// What the exporter knows of one device between passes (guarded by Collector::mu_).
struct Collector::Slot {
  devices::DeviceReading reading;  ///< last complete reading
  bool has_reading = false;
  std::chrono::system_clock::time_point sampled_at{};
  uint64_t done_generation = 0;    ///< last pass this worker finished
  uint64_t last_xid = 0;
  std::map<uint64_t, uint64_t> xid_counts;
  /// With track_event_windows: XIDs and clock-event masks seen within the window, oldest first.
  std::deque<std::pair<std::chrono::system_clock::time_point, uint64_t>> recent_xids;
  std::deque<std::pair<std::chrono::system_clock::time_point, uint64_t>> recent_clock_events;
};

/// Maps a health event's (vendor, index) to its slot.
struct Collector::EventLog {
  std::map<std::pair<devices::Vendor, unsigned>, size_t> slot_of;
};

Collector::Collector(std::vector<std::unique_ptr<devices::DeviceBackend>> backends,
                     CollectorOptions options)
    : options_(std::move(options)), backends_(std::move(backends)),
      events_(std::make_unique<EventLog>()) {
  devices::ExtraReads extra;
  if (options_.render.fields) {
    extra = ExtraReadsFor(*options_.render.fields);
    track_event_windows_ = NeedsEventWindows(*options_.render.fields);
  }
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (extra.any()) backends_[b]->SetExtraReads(extra);
    const auto& devs = backends_[b]->devices();
    for (size_t pos = 0; pos < devs.size(); ++pos) {
      events_->slot_of[{devs[pos].vendor, devs[pos].index}] = identities_.size();
      identities_.push_back(devs[pos]);
      slot_source_.emplace_back(b, pos);
      slots_.push_back(std::make_unique<Slot>());
    }
  }
  snapshot_ = std::make_shared<Snapshot>();
  exposition_ = std::make_shared<std::string>();
}

Collector::~Collector() {
  if (started_) Stop();
}

void Collector::SetIdentities(std::vector<devices::DeviceIdentity> identities) {
  if (identities.size() == identities_.size()) identities_ = std::move(identities);
}

milliseconds Collector::stale_after() const {
  return options_.stale_after.count() > 0 ? options_.stale_after : 3 * options_.interval;
}

void Collector::Spawn(void (Collector::*body)(size_t), size_t arg) {
  size_t me = threads_.size();
  finished_.push_back(false);
  threads_.emplace_back([this, body, arg, me] {
    (this->*body)(arg);
    std::lock_guard<std::mutex> lock(mu_);
    finished_[me] = true;
    stop_cv_.notify_all();
  });
}

void Collector::Start() {
  started_ = true;
  if (!options_.pod_resources_socket.empty()) {
    pod_client_ = std::make_unique<kube::PodResourcesClient>(options_.pod_resources_socket);
    stats_.pod_resources_enabled = true;
    std::vector<kube::ContainerDevices> pods;
    std::string error;
    if (pod_client_->List(milliseconds(2000), &pods, &error)) {
      pods_ = std::move(pods);
      stats_.pod_resources_ok = true;
    } else {
      ++stats_.pod_resources_errors;
    }
  }
  for (size_t i = 0; i < slots_.size(); ++i) Spawn(&Collector::RunDeviceWorker, i);
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (!backends_[b]->devices().empty()) Spawn(&Collector::RunEventWatcher, b);
  }
  Pass();
  if (pod_client_) Spawn(&Collector::RunPodWatcher, 0);
  Spawn(&Collector::RunPassLoop, 0);
}

bool Collector::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return true;
  stopping_ = true;
  work_cv_.notify_all();
  done_cv_.notify_all();
  stop_cv_.notify_all();
  // Event waits return within their timeout; a device read blocked in the vendor library may
  // never return. Give everything a moment, then leave the stragglers behind.
  stop_cv_.wait_for(lock, milliseconds(3000), [&] {
    return std::all_of(finished_.begin(), finished_.end(), [](bool f) { return f; });
  });
  std::vector<bool> finished = finished_;
  lock.unlock();
  bool all = true;
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (finished[i]) {
      threads_[i].join();
    } else {
      threads_[i].detach();
      all = false;
    }
  }
  threads_.clear();
  return all;
}

std::shared_ptr<const Snapshot> Collector::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

std::shared_ptr<const std::string> Collector::exposition() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exposition_;
}

namespace {

/// Drops entries of `recent` older than `start`; the rest are within the window.
void Prune(std::deque<std::pair<std::chrono::system_clock::time_point, uint64_t>>* recent,
           std::chrono::system_clock::time_point start) {
  while (!recent->empty() && recent->front().first < start) recent->pop_front();
}

}  // namespace

void Collector::CountWindow(Slot& slot, std::chrono::system_clock::time_point start,
                            DeviceState* d) {
  Prune(&slot.recent_xids, start);
  Prune(&slot.recent_clock_events, start);
  for (const auto& [when, code] : slot.recent_xids) ++d->xid_window[code];
  for (const auto& [when, mask] : slot.recent_clock_events) {
    for (uint64_t bit = 1; bit != 0 && bit <= mask; bit <<= 1) {
      if (mask & bit) ++d->clock_event_window[bit];
    }
  }
}

void Collector::RunDeviceWorker(size_t i) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || generation_ > seen; });
      if (stopping_) return;
      seen = generation_;
    }
    auto [backend, position] = slot_source_[i];
    devices::DeviceReading reading = backends_[backend]->Read(position);
    if (options_.on_reading) {
      const devices::DeviceIdentity& id = backends_[backend]->devices()[position];
      options_.on_reading(id.vendor, id.index, reading);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = *slots_[i];
      slot.reading = std::move(reading);
      slot.has_reading = true;
      slot.sampled_at = std::chrono::system_clock::now();
      slot.done_generation = seen;
      if (track_event_windows_ && slot.reading.sample.clock_event_reasons) {
        slot.recent_clock_events.emplace_back(slot.sampled_at,
                                              *slot.reading.sample.clock_event_reasons);
      }
    }
    done_cv_.notify_all();
  }
}

void Collector::RunEventWatcher(size_t b) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    std::vector<devices::HealthEvent> events = backends_[b]->WaitEvents(milliseconds(500));
    if (options_.on_event) {
      for (const devices::HealthEvent& e : events) options_.on_event(e);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const devices::HealthEvent& e : events) {
      auto it = events_->slot_of.find({e.vendor, e.device_index});
      if (it == events_->slot_of.end()) continue;
      Slot& slot = *slots_[it->second];
      slot.last_xid = e.code;
      ++slot.xid_counts[e.code];
      if (track_event_windows_) slot.recent_xids.emplace_back(e.when, e.code);
    }
  }
}

void Collector::RunPodWatcher(size_t) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_cv_.wait_for(lock, options_.pod_refresh_interval, [&] { return stopping_; })) return;
    }
    std::vector<kube::ContainerDevices> pods;
    std::string error;
    bool ok = pod_client_->List(milliseconds(5000), &pods, &error);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.pod_resources_ok = ok;
    if (ok) {
      pods_ = std::move(pods);
    } else {
      ++stats_.pod_resources_errors;
    }
  }
}

void Collector::RunPassLoop(size_t) {
  Clock::time_point next = Clock::now() + options_.interval;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_cv_.wait_until(lock, next, [&] { return stopping_; })) return;
    }
    Pass();
    next += options_.interval;
    if (next < Clock::now()) next = Clock::now() + options_.interval;
  }
}

void Collector::RefreshNow() { Pass(); }

void Collector::Pass() {
  std::lock_guard<std::mutex> one_pass(pass_mu_);
  Clock::time_point started = Clock::now();
  // Reads that take longer than this miss the pass; they are published by a later one, or the
  // device turns stale.
  milliseconds budget = std::clamp(options_.interval / 2, milliseconds(100), milliseconds(5000));
  {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t generation = ++generation_;
    work_cv_.notify_all();
    done_cv_.wait_until(lock, started + budget, [&] {
      if (stopping_) return true;
      return std::all_of(slots_.begin(), slots_.end(), [&](const std::unique_ptr<Slot>& s) {
        return s->done_generation >= generation;
      });
    });
  }
  Publish(started);
}

void Collector::Publish(Clock::time_point started) {
  auto snap = std::make_shared<Snapshot>();
  snap->hostname = options_.hostname;
  snap->taken_at = std::chrono::system_clock::now();
  snap->event_window = options_.event_window;
  const auto window_start = snap->taken_at - options_.event_window;
  for (const auto& backend : backends_) {
    if (!backend->driver_version().empty()) {
      snap->driver_versions[devices::VendorName(backend->vendor())] = backend->driver_version();
    }
  }
  std::vector<kube::ContainerDevices> pods;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snap->devices.reserve(slots_.size());
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = *slots_[i];
      DeviceState& d = snap->devices.emplace_back();
      if (track_event_windows_) CountWindow(slot, window_start, &d);
      d.identity = identities_[i];
      d.sample = slot.reading.sample;
      d.mig_enabled = slot.reading.mig_enabled;
      for (const devices::MigInstance& m : slot.reading.mig) d.mig.push_back({m, {}});
      d.sampled_at = slot.sampled_at;
      d.last_xid = slot.last_xid;
      d.xid_counts = slot.xid_counts;
      d.error = slot.reading.error;
      d.p2p = slot.reading.p2p;
      if (slot.reading.lost) {
        d.health = DeviceHealth::kLost;
      } else if (!slot.has_reading || snap->taken_at - slot.sampled_at > stale_after()) {
        d.health = DeviceHealth::kStale;
      }
    }
    pods = pods_;
    snap->stats = stats_;
  }
  AttributePods(pods, &snap->devices);
  snap->stats.passes += 1;
  snap->stats.last_pass_seconds =
      std::chrono::duration<double>(Clock::now() - started).count();

  auto text = std::make_shared<std::string>();
  text->reserve(render_size_hint_ + render_size_hint_ / 8);
  RenderMetrics(*snap, options_.render, text.get());
  render_size_hint_ = text->size();

  std::lock_guard<std::mutex> lock(mu_);
  stats_.passes = snap->stats.passes;
  stats_.last_pass_seconds = snap->stats.last_pass_seconds;
  snapshot_ = std::move(snap);
  exposition_ = std::move(text);
}

std::chrono::milliseconds ParseDuration(const std::string& text, const std::string& flag) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string unit = text.substr(digits);
  long long value = 0;
  bool number_ok = digits > 0 && digits <= 9;
  if (number_ok) value = std::stoll(text.substr(0, digits));
  long long scale = unit.empty() || unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : 0;
  if (!number_ok || scale == 0 || value <= 0) {
    throw InputError(flag, "", "'" + text + "' is not a positive duration",
                     "write e.g. 500ms, 5s or 2m; a bare number means milliseconds");
  }
  return milliseconds(value * scale);
}

std::string NodeName() {
  if (const char* n = std::getenv("NODE_NAME"); n && *n) return n;
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace accel::telemetry
