// Shared pieces of the profile renderers (render_*.cc); private to src/telemetry.
//
// Each profile first builds its label chunks once per device / MIG instance / pod ("series
// sets") into a Scratch, then writes family by family, so every family is one contiguous group
// and the per-sample work is copying bytes. A Scratch keeps its strings' capacity between
// renders; one Scratch per thread (RenderMetrics keeps a thread_local one).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/exposition.h"
#include "telemetry/render.h"
#include "telemetry/snapshot.h"

namespace accel::telemetry::internal {

using http::AppendEscapedHelp;
using http::AppendFixed6;
using http::AppendLabel;
using http::AppendShortest;
using http::ExpositionWriter;

/// A grow-only pool of T whose items survive Reset() with their capacity, so steady-state
/// renders allocate nothing. Items live in a deque: pointers to them stay valid while it grows.
template <typename T>
class Pool {
 public:
  void Reset() { used_ = 0; }
  /// The next item, cleared by T::Clear().
  T* Next() {
    if (used_ == items_.size()) items_.emplace_back();
    T* item = &items_[used_++];
    item->Clear();
    return item;
  }
  size_t size() const { return used_; }
  T& operator[](size_t i) { return items_[i]; }

 private:
  std::deque<T> items_;
  size_t used_ = 0;
};

/// The labels of one device or MIG instance, held by at most one pod.
struct SeriesSet {
  const DeviceState* device = nullptr;  ///< never null once built
  const MigState* mig = nullptr;        ///< the GPU instance, or null for the whole device
  const PodRef* pod = nullptr;          ///< the pod this row is for, or null
  /// Escaped label chunks; a family's own labels (err_code, clock, ...) go between them.
  std::string before;
  /// dcgm only: the first pod label (container), which sorts after a family's "Labels" map
  /// entries (window_size_in_ms, xid) and before its attributes (err_code); empty elsewhere.
  std::string middle;
  std::string after;

  void Clear() {
    device = nullptr;
    mig = nullptr;
    pod = nullptr;
    before.clear();
    middle.clear();
    after.clear();
  }
};

/// Adds to `rows` one row per pod holding `device` — skipping a pod that `same(pod, earlier)`
/// matches to an earlier row, since a vendor exporter without some of our pod labels would
/// otherwise repeat a series — or one row without pod labels when no pod holds it.
/// build(pod or nullptr, row) fills each new row.
template <typename Same, typename Build>
void AddRowPerDistinctPod(const DeviceState& device, Pool<SeriesSet>& rows, Same same, Build build) {
  if (device.pods.empty()) {
    build(nullptr, rows.Next());
    return;
  }
  size_t first = rows.size();
  for (const PodRef& pod : device.pods) {
    bool repeated = false;
    for (size_t i = first; i < rows.size() && !repeated; ++i) repeated = same(pod, *rows[i].pod);
    if (!repeated) build(&pod, rows.Next());
  }
}

/// dcgm: one family to print, under the name, HELP and type it is printed with.
struct DcgmPlanFamily {
  std::string_view name;
  std::string_view help;
  MetricType type;
  const DcgmField* field;
};

/// dcgm: one label field, printed in every series' head.
struct DcgmPlanLabel {
  std::string_view name;
  std::string_view (*value)(const Snapshot&, const DeviceState&);
};

struct Scratch {
  Pool<SeriesSet> sets;      ///< rows of the profile being rendered
  Pool<SeriesSet> mig_sets;  ///< accel_*: rows of MIG instances
  /// dcgm: this render's families and label fields, and one sample's own labels.
  std::vector<DcgmPlanFamily> dcgm_families;
  std::vector<DcgmPlanLabel> dcgm_labels;
  std::string own_labels;
  /// dcgm: canonical PCI address -> NVML busId spelling, kept across renders.
  std::vector<std::pair<std::string, std::string>> pci_bus_ids;
};

/// A number to print, or nothing (the device does not report it: the series is omitted).
struct Value {
  enum Kind { kNone, kInt, kReal } kind = kNone;
  int64_t i = 0;
  double d = 0;
};
inline Value None() { return {}; }
inline Value Int(int64_t v) { return {Value::kInt, v, 0}; }
inline Value Real(double v) { return {Value::kReal, 0, v}; }
/// Present optionals as Int / Real; absent as None.
template <typename T>
Value IntOf(const std::optional<T>& v) {
  return v ? Int(static_cast<int64_t>(*v)) : None();
}
inline Value RealOf(const std::optional<double>& v) { return v ? Real(*v) : None(); }

/// How a profile prints numbers.
enum class NumberStyle {
  kDcgm,    ///< integers %d, reals Go %f (dcgm-exporter)
  kNative,  ///< integers %d, reals shortest round-trip (accel_*)
  kGo,      ///< everything as a float in Go's shortest 'g' form (client_golang exporters)
};

/// One sample a family writes per row: the family's own labels and where the value comes from.
struct Variant {
  const char* labels = "";  ///< escaped `k="v"` pairs placed between a row's chunks, or ""
  Value (*value)(const devices::Sample&) = nullptr;  ///< null: no such variant
};

/// A family whose samples come straight from each row's Sample.
struct FamilySpec {
  const char* name;
  MetricType type;
  const char* help;
  Variant variants[2];
};

/// Writes `spec` for every healthy row of `rows` (each variant in turn; the row's MIG
/// instance sample when it has one, else its device's), skipping absent values.
void WriteFamily(const FamilySpec& spec, Pool<SeriesSet>& rows, NumberStyle style,
                 ExpositionWriter* w);

/// Appends `key="<prefix><n>"` to *chunk.
void AppendNumberLabel(std::string* chunk, std::string_view key, std::string_view prefix,
                       int64_t n);

/// Ratio 0..1 as a percentage rounded to 6 decimals, so 0.42 prints "42", not 42.00000000000001.
double Percent(double ratio);

/// True when the device's values may be rendered (fresh reading; not lost, not stale).
inline bool Healthy(const DeviceState& d) { return d.health == DeviceHealth::kHealthy; }

/// The driver version for `d`: its own, else the snapshot's for its vendor, else "".
std::string_view DriverVersion(const Snapshot& snapshot, const DeviceState& d);

/// True when `a` and `b` would give the same series: same namespace, pod, container and
/// replica (and resource when `with_resource`).
bool SamePodSeries(const PodRef& a, const PodRef& b, bool with_resource);

/// Ends the started sample with `value` (not kNone) in `style`.
void Finish(ExpositionWriter* w, const Value& value, NumberStyle style);

void RenderDcgm(const Snapshot& snapshot, const RenderOptions& options, Scratch* scratch,
                ExpositionWriter* w);
void RenderAmd(const Snapshot& snapshot, const RenderOptions& options, Scratch* scratch,
               ExpositionWriter* w);
void RenderGaudi(const Snapshot& snapshot, Scratch* scratch, ExpositionWriter* w);
void RenderAccel(const Snapshot& snapshot, Scratch* scratch, ExpositionWriter* w);

/// Short text of our own for an NVIDIA XID ("Unknown Error" for codes we do not describe).
std::string_view XidMessage(uint64_t xid);

}  // namespace accel::telemetry::internal
