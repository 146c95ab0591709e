#include "telemetry/render.h"

#include <charconv>
#include <cmath>

#include "common/error.h"
#include "telemetry/render_internal.h"

namespace accel::telemetry {
namespace internal {

double Percent(double ratio) { return std::round(ratio * 1e8) / 1e6; }

std::string_view DriverVersion(const Snapshot& snapshot, const DeviceState& d) {
  if (!d.identity.driver_version.empty()) return d.identity.driver_version;
  auto it = snapshot.driver_versions.find(devices::VendorName(d.identity.vendor));
  return it == snapshot.driver_versions.end() ? std::string_view() : it->second;
}

bool SamePodSeries(const PodRef& a, const PodRef& b, bool with_resource) {
  return a.replica == b.replica && a.pod == b.pod && a.namespace_name == b.namespace_name &&
         a.container == b.container && (!with_resource || a.resource == b.resource);
}

void Finish(ExpositionWriter* w, const Value& value, NumberStyle style) {
  if (style == NumberStyle::kGo) {
    w->FinishShortest(value.kind == Value::kInt ? static_cast<double>(value.i) : value.d);
  } else if (value.kind == Value::kInt) {
    w->FinishInt(value.i);
  } else if (style == NumberStyle::kDcgm) {
    w->FinishFixed6(value.d);
  } else {
    w->FinishShortest(value.d);
  }
}

void WriteFamily(const FamilySpec& spec, Pool<SeriesSet>& rows, NumberStyle style,
                 ExpositionWriter* w) {
  w->BeginFamily(spec.name, spec.help, spec.type);
  for (size_t i = 0; i < rows.size(); ++i) {
    const SeriesSet& row = rows[i];
    if (!Healthy(*row.device)) continue;
    const devices::Sample& sample = row.mig ? row.mig->instance.sample : row.device->sample;
    for (const Variant& variant : spec.variants) {
      if (!variant.value) break;
      Value v = variant.value(sample);
      if (v.kind == Value::kNone) continue;
      w->StartSample();
      w->AddLabels(row.before);
      w->AddLabels(variant.labels);
      w->AddLabels(row.after);
      Finish(w, v, style);
    }
  }
}

void AppendNumberLabel(std::string* chunk, std::string_view key, std::string_view prefix,
                       int64_t n) {
  char buf[48];
  size_t length = prefix.copy(buf, 16);
  auto r = std::to_chars(buf + length, buf + sizeof buf, n);
  AppendLabel(chunk, key, std::string_view(buf, r.ptr - buf));
}

}  // namespace internal

namespace {

bool IsLabelName(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9') || s.starts_with("__")) return false;
  for (char c : s) {
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void RenderMetrics(const Snapshot& snapshot, const RenderOptions& options, std::string* out) {
  if (!options.dcgm_hostname_label.empty() && !IsLabelName(options.dcgm_hostname_label)) {
    throw InputError("render options", "dcgm_hostname_label",
                     "\"" + options.dcgm_hostname_label + "\" is not a Prometheus label name",
                     "use Hostname, hostname, or empty to omit the label");
  }
  // Label chunks are rebuilt every render but into strings that keep their capacity, so a
  // scrape thread stops allocating once it has rendered its largest snapshot.
  thread_local internal::Scratch scratch;
  out->clear();
  http::ExpositionWriter writer(out);
  if (options.dcgm) internal::RenderDcgm(snapshot, options, &scratch, &writer);
  if (options.amd) internal::RenderAmd(snapshot, options, &scratch, &writer);
  if (options.gaudi) internal::RenderGaudi(snapshot, &scratch, &writer);
  if (options.accel) internal::RenderAccel(snapshot, &scratch, &writer);
}

}  // namespace accel::telemetry
