// Building blocks of the fake vendor libraries' JSON configs: a configured reading (Value), the
// config error, and helpers to hand text to C callers.
//
// Value is not thread-safe (a list advances on every read); Model serialises access to it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace accel::fakes {

using Json = nlohmann::json;

/// A config file problem; what() is the problem, without the file name.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A configured reading: a constant, a list cycled one step per read, or a linear ramp.
class Value {
 public:
  static Value Parse(const Json& j, const std::string& where) {
    Value v;
    if (j.is_number()) {
      v.numbers_.push_back(j.get<double>());
    } else if (j.is_array() && !j.empty() &&
               std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_number(); })) {
      for (const Json& e : j) v.numbers_.push_back(e.get<double>());
    } else if (IsRamp(j)) {
      v.ramp_ = true;
      v.start_ = NumberOr(j, "start", 0, where);
      v.per_second_ = NumberOr(j, "per_second", 0, where);
    } else {
      throw ConfigError(where + ": expected a number, a non-empty list of numbers or "
                        "{\"start\": x, \"per_second\": y}");
    }
    return v;
  }

  static bool IsRamp(const Json& j) {
    return j.is_object() && (j.contains("start") || j.contains("per_second"));
  }

  /// The reading at `seconds` after init; a list advances one step per call.
  double Read(double seconds) {
    if (ramp_) return start_ + per_second_ * seconds;
    double v = numbers_[next_];
    next_ = (next_ + 1) % numbers_.size();
    return v;
  }

 private:
  static double NumberOr(const Json& j, const char* key, double fallback, const std::string& where) {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_number()) throw ConfigError(where + "." + key + ": expected a number");
    return j[key].get<double>();
  }

  std::vector<double> numbers_;
  size_t next_ = 0;
  bool ramp_ = false;
  double start_ = 0, per_second_ = 0;
};

/// Copies `text` into a caller's buffer of `length` bytes, NUL-terminated; false when it does
/// not fit.
inline bool CopyOut(const std::string& text, char* buffer, size_t length) {
  if (!buffer || length == 0 || text.size() + 1 > length) return false;
  std::copy(text.begin(), text.end(), buffer);
  buffer[text.size()] = '\0';
  return true;
}

/// A JSON identity value as text (numbers printed as integers when whole).
inline std::string Text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number_unsigned()) return std::to_string(j.get<uint64_t>());
  if (j.is_number()) return std::to_string(j.get<double>());
  return "";
}

}  // namespace accel::fakes
