// FakeModel: the vendor-neutral core of the fake ROCm SMI and fake HLML libraries.
//
// Holds the devices described by a JSON file named in an environment variable: identity fields,
// values (a number; a list that cycles one step per read; {"start", "per_second"} ramps),
// functions reported unsupported, injected faults (an error after N calls or T ms, a call that
// hangs), lost devices, and health events due at T ms after init. Each fake library wraps one
// Model in its vendor's C ABI; the schemas are in docs/fake-rocm-smi.md and docs/fake-hlml.md.
//
// Thread-safe: every member takes the model's mutex, except that a hanging call sleeps outside
// it (Call()), so one hung device never blocks the others.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "rocm_smi/fake_value.h"

namespace accel::fakes {

/// What a fake library needs to know about its vendor.
struct Vendor {
  const char* label;    ///< "fake ROCm SMI": prefix of every stderr line
  const char* env_var;  ///< "FAKE_ROCM_SMI_CONFIG"
  int uninitialized;    ///< returned by calls made before init
  int bad_index;        ///< returned for a device index past the end
  int lost;             ///< returned by every call on a lost device
  int not_supported;    ///< returned by functions listed in "unsupported"
  std::set<std::string> identity_keys;  ///< allowed identity keys of a device object
  std::set<std::string> top_keys;       ///< allowed top-level keys besides devices / events
  /// Whether a flattened value key ("temperature.edge") is one the vendor's fake reads.
  std::function<bool(const std::string&)> value_key_ok;
};

/// A health event due `at_ms` after init.
struct Event {
  unsigned device = 0;
  double at_ms = 0;
  uint64_t type = 0;
  std::string message;
  bool delivered = false;
};

class Model {
 public:
  explicit Model(Vendor vendor) : vendor_(std::move(vendor)) {}

  /// Ref-counted init: from zero, (re)reads the config, restarting the clock, cycles and call
  /// counters. Returns false (after printing one line to stderr) when the config is missing or
  /// malformed; the model is then left uninitialised.
  bool Init() {
    std::lock_guard<std::mutex> lock(mu_);
    if (refs_ > 0) return ++refs_, true;
    const char* path = std::getenv(vendor_.env_var);
    State next;
    if (path && *path) {
      try {
        next = Load(path);
      } catch (const ConfigError& e) {
        std::fprintf(stderr, "%s: %s: %s\n", vendor_.label, path, e.what());
        return false;
      }
    }
    state_ = std::move(next);
    start_ = std::chrono::steady_clock::now();
    refs_ = 1;
    return true;
  }

  /// Returns false when not initialised.
  bool Shutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    if (refs_ == 0) return false;
    --refs_;
    return true;
  }

  bool initialised() {
    std::lock_guard<std::mutex> lock(mu_);
    return refs_ > 0;
  }

  size_t device_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return state_.devices.size();
  }

  /// The status a vendor call on `device` returns before producing data: 0 to go on, or the
  /// uninitialised / bad index / lost / unsupported / injected-fault code. Counts the call and
  /// sleeps (outside the lock) for an injected hang.
  int Call(unsigned device, const char* function) {
    uint64_t hang_ms = 0;
    int status = Enter(device, function, &hang_ms);
    if (hang_ms) std::this_thread::sleep_for(std::chrono::milliseconds(hang_ms));
    return status;
  }

  /// The status of a call that names no device: 0, or the uninitialised code.
  int CallGlobal() { return initialised() ? 0 : vendor_.uninitialized; }

  /// The device's value `key` (flattened, e.g. "temperature.edge") now; nullopt when not given.
  std::optional<double> Read(unsigned device, const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (device >= state_.devices.size()) return std::nullopt;
    auto& values = state_.devices[device].values;
    auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    return it->second.Read(SecondsLocked());
  }

  /// Flattened value keys of a device that start with `prefix`.
  std::vector<std::string> Keys(unsigned device, const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> keys;
    if (device >= state_.devices.size()) return keys;
    for (const auto& [key, value] : state_.devices[device].values) {
      if (key.rfind(prefix, 0) == 0) keys.push_back(key);
    }
    return keys;
  }

  /// The device's identity field `key`; null when not given.
  Json Identity(unsigned device, const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (device >= state_.devices.size()) return nullptr;
    const Json& d = state_.devices[device].identity;
    return d.contains(key) ? d[key] : Json();
  }

  /// The top-level field `key`; null when not given.
  Json Top(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return state_.top.contains(key) ? state_.top[key] : Json();
  }

  /// Takes up to `max` undelivered events that are due and `accept`ed, marking them delivered.
  /// When none is due, sets *next_ms to the time of the next acceptable one (or -1).
  std::vector<Event> TakeDueEvents(size_t max, const std::function<bool(const Event&)>& accept,
                                   double* next_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Event> due;
    *next_ms = -1;
    const double now_ms = SecondsLocked() * 1000.0;
    for (Event& e : state_.events) {
      if (e.delivered || !accept(e)) continue;
      if (e.at_ms <= now_ms) {
        if (due.size() < max) {
          e.delivered = true;
          due.push_back(e);
        }
      } else if (*next_ms < 0 || e.at_ms < *next_ms) {
        *next_ms = e.at_ms;
      }
    }
    return due;
  }

  double ElapsedMs() {
    std::lock_guard<std::mutex> lock(mu_);
    return SecondsLocked() * 1000.0;
  }

 private:
  struct Fault {
    std::string function;   ///< exact function name, or "*" for every call on the device
    int status = 0;         ///< returned once the fault fires; 0 = go on (a pure hang)
    uint64_t after_calls = 0;
    double after_ms = 0;
    uint64_t times = UINT64_MAX;  ///< how many calls it fires on before clearing
    uint64_t hang_ms = 0;
    uint64_t calls = 0, fired = 0;
  };

  struct Device {
    Json identity;
    std::map<std::string, Value> values;
    std::set<std::string> unsupported;
    std::vector<Fault> faults;
    std::optional<double> lost_after_ms;
    std::optional<uint64_t> lost_after_calls;
    uint64_t calls = 0;
    bool lost = false;
  };

  struct State {
    Json top = Json::object();
    std::vector<Device> devices;
    std::vector<Event> events;
  };

  double SecondsLocked() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  int Enter(unsigned device, const char* function, uint64_t* hang_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    if (refs_ == 0) return vendor_.uninitialized;
    if (device >= state_.devices.size()) return vendor_.bad_index;
    Device& d = state_.devices[device];
    ++d.calls;
    const double now_ms = SecondsLocked() * 1000.0;
    if ((d.lost_after_ms && now_ms >= *d.lost_after_ms) ||
        (d.lost_after_calls && d.calls > *d.lost_after_calls)) {
      d.lost = true;
    }
    if (d.lost) return vendor_.lost;
    if (d.unsupported.count(function)) return vendor_.not_supported;
    for (Fault& f : d.faults) {
      if (f.function != "*" && f.function != function) continue;
      ++f.calls;
      if (f.calls <= f.after_calls || now_ms < f.after_ms || f.fired >= f.times) continue;
      ++f.fired;
      *hang_ms = f.hang_ms;
      if (f.status != 0) return f.status;
    }
    return 0;
  }

  State Load(const std::string& path) const {
    std::ifstream in(path);
    if (!in) throw ConfigError("cannot read the file (set " + std::string(vendor_.env_var) +
                               " to an existing JSON file)");
    std::stringstream text;
    text << in.rdbuf();
    Json j;
    try {
      j = Json::parse(text.str());
    } catch (const Json::exception& e) {
      throw ConfigError(std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object()) throw ConfigError("the top level must be an object");
    State s;
    for (const auto& [key, value] : j.items()) {
      if (key == "devices" || key == "events") continue;
      if (!vendor_.top_keys.count(key)) throw ConfigError("unknown top-level key \"" + key + "\"");
      s.top[key] = value;
    }
    if (j.contains("devices")) {
      if (!j["devices"].is_array()) throw ConfigError("devices: expected a list");
      for (size_t i = 0; i < j["devices"].size(); ++i) {
        s.devices.push_back(LoadDevice(j["devices"][i], "devices[" + std::to_string(i) + "]"));
      }
    }
    if (j.contains("events")) s.events = LoadEvents(j["events"], s.devices.size());
    return s;
  }

  Device LoadDevice(const Json& j, const std::string& where) const {
    if (!j.is_object()) throw ConfigError(where + ": expected an object");
    Device d;
    d.identity = Json::object();
    for (const auto& [key, value] : j.items()) {
      const std::string at = where + "." + key;
      if (key == "values") {
        if (!value.is_object()) throw ConfigError(at + ": expected an object");
        Flatten(value, "", at, &d.values);
      } else if (key == "unsupported") {
        if (!value.is_array()) throw ConfigError(at + ": expected a list of function names");
        for (const Json& f : value) {
          if (!f.is_string()) throw ConfigError(at + ": expected a list of function names");
          d.unsupported.insert(f.get<std::string>());
        }
      } else if (key == "faults") {
        if (!value.is_array()) throw ConfigError(at + ": expected a list");
        for (size_t i = 0; i < value.size(); ++i) {
          d.faults.push_back(LoadFault(value[i], at + "[" + std::to_string(i) + "]"));
        }
      } else if (key == "lost") {
        if (!value.is_object()) throw ConfigError(at + ": expected {\"after_ms\": T} or {\"after_calls\": N}");
        if (value.contains("after_ms")) d.lost_after_ms = Number(value["after_ms"], at + ".after_ms");
        if (value.contains("after_calls")) {
          d.lost_after_calls = static_cast<uint64_t>(Number(value["after_calls"], at + ".after_calls"));
        }
        if (!d.lost_after_ms && !d.lost_after_calls) d.lost_after_ms = 0;
      } else if (vendor_.identity_keys.count(key)) {
        if (!value.is_string() && !value.is_number()) throw ConfigError(at + ": expected a string or a number");
        d.identity[key] = value;
      } else {
        throw ConfigError(at + ": unknown key");
      }
    }
    return d;
  }

  void Flatten(const Json& j, const std::string& prefix, const std::string& where,
               std::map<std::string, Value>* out) const {
    for (const auto& [key, value] : j.items()) {
      const std::string name = prefix.empty() ? key : prefix + "." + key;
      if (value.is_object() && !Value::IsRamp(value)) {
        Flatten(value, name, where, out);
        continue;
      }
      if (!vendor_.value_key_ok(name)) throw ConfigError(where + "." + name + ": unknown value");
      out->emplace(name, Value::Parse(value, where + "." + name));
    }
  }

  static double Number(const Json& j, const std::string& where) {
    if (!j.is_number() || j.get<double>() < 0) throw ConfigError(where + ": expected a number >= 0");
    return j.get<double>();
  }

  Fault LoadFault(const Json& j, const std::string& where) const {
    if (!j.is_object() || !j.contains("function") || !j["function"].is_string()) {
      throw ConfigError(where + ": expected {\"function\": name, ...}");
    }
    Fault f;
    f.function = j["function"].get<std::string>();
    for (const auto& [key, value] : j.items()) {
      const std::string at = where + "." + key;
      if (key == "function") continue;
      if (key == "status") {
        if (!value.is_number_integer()) throw ConfigError(at + ": expected an integer");
        f.status = value.get<int>();
      } else if (key == "after_calls") {
        f.after_calls = static_cast<uint64_t>(Number(value, at));
      } else if (key == "after_ms") {
        f.after_ms = Number(value, at);
      } else if (key == "times") {
        f.times = static_cast<uint64_t>(Number(value, at));
      } else if (key == "hang_ms") {
        f.hang_ms = static_cast<uint64_t>(Number(value, at));
      } else {
        throw ConfigError(at + ": unknown key");
      }
    }
    if (f.status == 0 && f.hang_ms == 0) throw ConfigError(where + ": needs a status or hang_ms");
    return f;
  }

  static std::vector<Event> LoadEvents(const Json& j, size_t device_count) {
    if (!j.is_array()) throw ConfigError("events: expected a list");
    std::vector<Event> events;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string at = "events[" + std::to_string(i) + "]";
      const Json& e = j[i];
      if (!e.is_object() || !e.contains("device") || !e.contains("type")) {
        throw ConfigError(at + ": expected {\"at_ms\": T, \"device\": i, \"type\": n}");
      }
      Event ev;
      ev.device = static_cast<unsigned>(Number(e["device"], at + ".device"));
      if (ev.device >= device_count) throw ConfigError(at + ".device: no such device");
      ev.type = static_cast<uint64_t>(Number(e["type"], at + ".type"));
      if (e.contains("at_ms")) ev.at_ms = Number(e["at_ms"], at + ".at_ms");
      if (e.contains("message")) {
        if (!e["message"].is_string()) throw ConfigError(at + ".message: expected a string");
        ev.message = e["message"].get<std::string>();
      }
      events.push_back(ev);
    }
    return events;
  }

  const Vendor vendor_;
  std::mutex mu_;
  int refs_ = 0;
  State state_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// Waits up to `timeout_ms` for due, accepted events (see Model::TakeDueEvents); empty on
/// timeout. Sleeps in short steps so events injected at T ms arrive close to T.
inline std::vector<Event> WaitForEvents(Model& model, size_t max,
                                        const std::function<bool(const Event&)>& accept,
                                        double timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(timeout_ms));
  for (;;) {
    double next_ms = -1;
    std::vector<Event> due = model.TakeDueEvents(max, accept, &next_ms);
    if (!due.empty()) return due;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return due;
    Clock::time_point wake = std::min(deadline, now + std::chrono::milliseconds(5));
    if (next_ms >= 0) {
      const Clock::time_point event_at =
          now + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(next_ms - model.ElapsedMs()));
      wake = std::min(wake, std::max(now, event_at));
    }
    std::this_thread::sleep_until(wake);
  }
}

}  // namespace accel::fakes
