// The `amd` profile: ROCm device-metrics-exporter gpu_* families (reference §3.4) for AMD
// devices — all of them, or those a config.json's GPUConfig.Fields lists, with its
// MetricsFieldPrefix in front. That exporter writes through client_golang: every family a gauge,
// labels sorted by name, floats in Go's shortest 'g' form; we do the same.
#include <algorithm>
#include <cctype>
#include <deque>

#include "telemetry/render_internal.h"

namespace accel::telemetry::internal {
namespace {

using devices::Sample;
using enum MetricType;

Value Mb(const std::optional<uint64_t>& bytes) {
  return bytes ? Int(static_cast<int64_t>(*bytes >> 20)) : None();
}
Value PercentOf(const std::optional<double>& ratio) {
  return ratio ? Real(Percent(*ratio)) : None();
}

const FamilySpec kAmdFamilies[] = {
    {"gpu_power_usage", kGauge, "Current socket power (in W).",
     {{"", [](const Sample& s) { return RealOf(s.power_w); }}}},
    {"gpu_average_package_power", kGauge, "Average package power (in W).",
     {{"", [](const Sample& s) { return RealOf(s.power_w); }}}},
    {"gpu_energy_consumed", kGauge, "Energy used since the driver was loaded (in uJ).",
     {{"", [](const Sample& s) {
        return s.energy_mj ? Int(static_cast<int64_t>(*s.energy_mj * 1000)) : None();
      }}}},
    {"gpu_junction_temperature", kGauge, "Junction (hotspot) temperature (in C).",
     {{"", [](const Sample& s) { return RealOf(s.temperature_c); }}}},
    {"gpu_memory_temperature", kGauge, "HBM temperature (in C).",
     {{"", [](const Sample& s) { return RealOf(s.memory_temperature_c); }}}},
    {"gpu_gfx_activity", kGauge, "Graphics engine busy (in %).",
     {{"", [](const Sample& s) { return PercentOf(s.gpu_utilization); }}}},
    {"gpu_umc_activity", kGauge, "Memory controller busy (in %).",
     {{"", [](const Sample& s) { return PercentOf(s.memory_utilization); }}}},
    {"gpu_clock", kGauge, "Current clock (in MHz).",
     {{R"(clock_index="0",clock_type="system")",
       [](const Sample& s) { return RealOf(s.sm_clock_mhz); }},
      {R"(clock_index="0",clock_type="memory")",
       [](const Sample& s) { return RealOf(s.memory_clock_mhz); }}}},
    {"gpu_total_vram", kGauge, "Total VRAM (in MB).",
     {{"", [](const Sample& s) { return Mb(s.memory_total_bytes); }}}},
    {"gpu_used_vram", kGauge, "Used VRAM (in MB).",
     {{"", [](const Sample& s) { return Mb(s.memory_used_bytes); }}}},
    {"gpu_free_vram", kGauge, "Free VRAM (in MB).",
     {{"", [](const Sample& s) { return Mb(s.memory_free_bytes); }}}},
    {"pcie_replay_count", kGauge, "PCIe replays so far.",
     {{"", [](const Sample& s) { return IntOf(s.pcie_replays); }}}},
    {"gpu_ecc_correct_total", kGauge, "Correctable ECC errors, all blocks.",
     {{"", [](const Sample& s) { return IntOf(s.ecc_correctable); }}}},
    {"gpu_ecc_uncorrect_total", kGauge, "Uncorrectable ECC errors, all blocks.",
     {{"", [](const Sample& s) { return IntOf(s.ecc_uncorrectable); }}}},
};

// Sorted by name, split around clock_index/clock_type (the only family labels in this profile).
void BuildAmdRow(const Snapshot& snapshot, const DeviceState& d, const PodRef* pod, SeriesSet* row) {
  const devices::DeviceIdentity& id = d.identity;
  row->device = &d;
  row->pod = pod;
  AppendLabel(&row->before, "card_model", id.model);
  AppendLabel(&row->before, "card_vendor", "AMD");
  std::string* a = &row->after;
  AppendLabel(a, "container", pod ? pod->container : "");
  AppendLabel(a, "deployment_mode", "baremetal");
  AppendLabel(a, "driver_version", DriverVersion(snapshot, d));
  AppendLabel(a, "gpu_compute_partition_type", "");
  AppendNumberLabel(a, "gpu_id", "", id.index);
  AppendLabel(a, "gpu_memory_partition_type", "");
  AppendLabel(a, "gpu_partition_id", "0");
  AppendLabel(a, "gpu_uuid", id.uuid);
  AppendLabel(a, "hostname", snapshot.hostname);
  AppendLabel(a, "job_id", "");
  AppendLabel(a, "job_partition", "");
  AppendLabel(a, "job_user", "");
  AppendLabel(a, "namespace", pod ? pod->namespace_name : "");
  AppendLabel(a, "pod", pod ? pod->pod : "");
  AppendLabel(a, "serial_number", id.serial);
  AppendLabel(a, "vbios_version", id.firmware_version);
}

// One row per distinct pod holding the device, or one row with empty pod labels.
void AddAmdDevice(const Snapshot& snapshot, const DeviceState& d, Scratch* scratch) {
  // The exporter has no replica label: replicas of one pod share a row.
  AddRowPerDistinctPod(
      d, scratch->sets,
      [](const PodRef& a, const PodRef& b) {
        return a.pod == b.pod && a.namespace_name == b.namespace_name && a.container == b.container;
      },
      [&](const PodRef* pod, SeriesSet* row) { BuildAmdRow(snapshot, d, pod, row); });
}

/// Which families to print and under what names (the config's prefix + the family name).
class Selection {
 public:
  explicit Selection(const RenderOptions& options)
      : config_(options.fields && options.fields->amd ? &*options.fields->amd : nullptr) {}

  /// True when `family` (e.g. "gpu_power_usage") is to be printed.
  bool Wants(std::string_view family) const {
    if (!config_ || config_->all_fields) return true;
    std::string upper(family);
    std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
    return std::find(config_->fields.begin(), config_->fields.end(), upper) != config_->fields.end();
  }
  /// The name to print; stays valid until this Selection is destroyed.
  std::string_view Name(std::string_view family) {
    if (!config_ || config_->prefix.empty()) return family;
    return names_.emplace_back(config_->prefix + std::string(family));
  }

 private:
  const AmdMetricsConfig* config_;
  std::deque<std::string> names_;
};

void WriteHealth(Pool<SeriesSet>& rows, std::string_view name, ExpositionWriter* w) {
  w->BeginFamily(name, "1 when the GPU is healthy, 0 when it is lost or not answering.", kGauge);
  for (size_t i = 0; i < rows.size(); ++i) {
    w->StartSample();
    w->AddLabels(rows[i].before);
    w->AddLabels(rows[i].after);
    w->FinishShortest(Healthy(*rows[i].device) ? 1 : 0);
  }
}

void WriteNodes(const Snapshot& snapshot, int64_t count, std::string_view name,
                ExpositionWriter* w) {
  if (count == 0) return;
  w->BeginFamily(name, "Number of AMD GPUs on the node.", kGauge);
  w->StartSample();
  w->AddLabel("hostname", snapshot.hostname);
  w->FinishShortest(static_cast<double>(count));
}

}  // namespace

void RenderAmd(const Snapshot& snapshot, const RenderOptions& options, Scratch* scratch,
               ExpositionWriter* w) {
  Selection selection(options);
  scratch->sets.Reset();
  int64_t count = 0;
  for (const DeviceState& d : snapshot.devices) {
    if (d.identity.vendor != devices::Vendor::kAmd) continue;
    ++count;
    AddAmdDevice(snapshot, d, scratch);
  }
  for (const FamilySpec& spec : kAmdFamilies) {
    if (!selection.Wants(spec.name)) continue;
    FamilySpec named = spec;
    std::string_view name = selection.Name(spec.name);
    if (name.data() != spec.name) {
      // FamilySpec holds a C string; the prefixed name lives in `selection` until we return.
      named.name = name.data();
    }
    WriteFamily(named, scratch->sets, NumberStyle::kGo, w);
  }
  if (selection.Wants("gpu_health")) WriteHealth(scratch->sets, selection.Name("gpu_health"), w);
  if (selection.Wants("gpu_nodes_total")) {
    WriteNodes(snapshot, count, selection.Name("gpu_nodes_total"), w);
  }
}

}  // namespace accel::telemetry::internal
