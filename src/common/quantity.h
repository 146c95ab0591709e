// Kubernetes resource quantities ("500m", "1Gi", "1.5G", "2e3") and Go durations ("10s",
// "1m30s"): the two value syntaxes of a KubeletConfiguration (kubeReserved, evictionHard,
// reservedMemory limits; cpuManagerReconcilePeriod, shutdownGracePeriod).
//
// The quantity grammar is apimachinery's resource.Quantity (k8s.io/apimachinery
// pkg/api/resource/quantity.go):
//   quantity ::= [+-] number suffix
//   number   ::= digits | digits "." digits | digits "." | "." digits
//   suffix   ::= "" | binary SI (Ki Mi Gi Ti Pi Ei) | decimal SI (n u m k M G T P E)
//              | ("e" | "E") [+-] digits                       (a decimal exponent: "2e3")
// No space, no other unit: "1GB", "1K" and "1 Gi" are refused, with the accepted spelling as the
// hint. Values are kept in thousandths (milli-units) rounded up, as Quantity.MilliValue() does,
// so 1 byte = 1000 and 1 CPU = 1000; the largest value is about 9.2e15 units (8 EiB / 1000).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace accel {

/// Bytes in a mebibyte (Mi) and a gibibyte (Gi).
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

/// A parsed quantity.
struct Quantity {
  int64_t milli = 0;  ///< the value times 1000, rounded up (toward +infinity)

  /// The value in whole units (bytes, CPUs), rounded up as resource.Quantity.Value() does.
  int64_t Value() const;
  bool operator==(const Quantity& other) const { return milli == other.milli; }
};

/// Parses `text` as above. Returns the quantity, or nullopt with *error set to a sentence naming
/// what is wrong and the accepted spelling ("'1GB' is not a quantity: use 1G (10^9) or 1Gi
/// (2^30)"). Also nullopt for values beyond the range above ("too large").
std::optional<Quantity> ParseQuantity(std::string_view text, std::string* error);

/// `units` in the shortest exact binary-SI form Kubernetes writes: 3221225472 -> "3Gi",
/// 2252341248 -> "2148Mi", 104857600 -> "100Mi", 1000 -> "1000", 0 -> "0". Negative values keep
/// their sign ("-1Gi").
std::string FormatBinaryQuantity(int64_t units);

/// Parses a Go time.Duration string (time.ParseDuration): a sequence of decimal numbers, each
/// with an optional fraction and a unit of ns, us (or µs), ms, s, m, h, with an optional sign in
/// front: "300ms", "-1.5h", "2h45m", "0". Returns nanoseconds, or nullopt with *error set
/// (also for durations beyond about 292 years, Go's int64 range).
std::optional<int64_t> ParseGoDuration(std::string_view text, std::string* error);

}  // namespace accel
