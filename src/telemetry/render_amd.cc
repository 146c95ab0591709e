// The `amd` profile: ROCm device-metrics-exporter gpu_* families (reference §3.4) for AMD
// devices. That exporter writes through client_golang: every family a gauge, labels sorted by
// name, floats in Go's shortest 'g' form; we do the same.
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

const FamilySpec kFamilies[] = {
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
void BuildRow(const Snapshot& snapshot, const DeviceState& d, const PodRef* pod, SeriesSet* row) {
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
void AddDevice(const Snapshot& snapshot, const DeviceState& d, Scratch* scratch) {
  // The exporter has no replica label: replicas of one pod share a row.
  AddRowPerDistinctPod(
      d, scratch->sets,
      [](const PodRef& a, const PodRef& b) {
        return a.pod == b.pod && a.namespace_name == b.namespace_name && a.container == b.container;
      },
      [&](const PodRef* pod, SeriesSet* row) { BuildRow(snapshot, d, pod, row); });
}

void WriteHealth(Pool<SeriesSet>& rows, ExpositionWriter* w) {
  w->BeginFamily("gpu_health", "1 when the GPU is healthy, 0 when it is lost or not answering.",
                 kGauge);
  for (size_t i = 0; i < rows.size(); ++i) {
    w->StartSample();
    w->AddLabels(rows[i].before);
    w->AddLabels(rows[i].after);
    w->FinishShortest(Healthy(*rows[i].device) ? 1 : 0);
  }
}

void WriteNodes(const Snapshot& snapshot, int64_t count, ExpositionWriter* w) {
  if (count == 0) return;
  w->BeginFamily("gpu_nodes_total", "Number of AMD GPUs on the node.", kGauge);
  w->StartSample();
  w->AddLabel("hostname", snapshot.hostname);
  w->FinishShortest(static_cast<double>(count));
}

}  // namespace

void RenderAmd(const Snapshot& snapshot, Scratch* scratch, ExpositionWriter* w) {
  scratch->sets.Reset();
  int64_t count = 0;
  for (const DeviceState& d : snapshot.devices) {
    if (d.identity.vendor != devices::Vendor::kAmd) continue;
    ++count;
    AddDevice(snapshot, d, scratch);
  }
  for (const FamilySpec& spec : kFamilies) WriteFamily(spec, scratch->sets, NumberStyle::kGo, w);
  WriteHealth(scratch->sets, w);
  WriteNodes(snapshot, count, w);
}

}  // namespace accel::telemetry::internal
