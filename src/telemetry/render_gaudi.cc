// The `gaudi` profile: the habanalabs_* families of Habana's metric exporter (reference §4.2)
// that a Sample can fill, for Gaudi devices. Every family is a gauge; labels in the exporter's
// order (Serial, UUID, device, id, fit, spi, driver, pod_namespace, pod_name); floats in Go's
// shortest 'g' form like its client_golang output.
#include <cmath>

#include "telemetry/render_internal.h"

namespace accel::telemetry::internal {
namespace {

using devices::Sample;
using enum MetricType;

Value MilliWatts(const std::optional<double>& watts) {
  return watts ? Int(std::llround(*watts * 1000)) : None();
}

const FamilySpec kGaudiFamilies[] = {
    {"habanalabs_clock_soc_mhz", kGauge, "SOC clock (in MHz).",
     {{"", [](const Sample& s) { return RealOf(s.sm_clock_mhz); }}}},
    {"habanalabs_memory_free_bytes", kGauge, "Free device memory (in bytes).",
     {{"", [](const Sample& s) { return IntOf(s.memory_free_bytes); }}}},
    {"habanalabs_memory_used_bytes", kGauge, "Used device memory (in bytes).",
     {{"", [](const Sample& s) { return IntOf(s.memory_used_bytes); }}}},
    {"habanalabs_memory_total_bytes", kGauge, "Total device memory (in bytes).",
     {{"", [](const Sample& s) { return IntOf(s.memory_total_bytes); }}}},
    {"habanalabs_temperature_onchip", kGauge, "On-chip temperature (in C).",
     {{"", [](const Sample& s) { return RealOf(s.temperature_c); }}}},
    {"habanalabs_power_mW", kGauge, "Power draw (in mW).",
     {{"", [](const Sample& s) { return MilliWatts(s.power_w); }}}},
    {"habanalabs_power_default_limit_mW", kGauge, "Power limit (in mW).",
     {{"", [](const Sample& s) { return MilliWatts(s.power_limit_w); }}}},
    {"habanalabs_utilization", kGauge, "AIP busy (in %).",
     {{"", [](const Sample& s) {
        return s.gpu_utilization ? Real(Percent(*s.gpu_utilization)) : None();
      }}}},
    {"habanalabs_energy", kGauge, "Energy used since the driver was loaded (in mJ).",
     {{"", [](const Sample& s) { return IntOf(s.energy_mj); }}}},
    {"habanalabs_pcie_replay_count", kGauge, "PCIe replays so far.",
     {{"", [](const Sample& s) { return IntOf(s.pcie_replays); }}}},
    {"habanalabs_pending_rows_state", kGauge, "1 when memory rows are waiting to be replaced.",
     {{"", [](const Sample& s) {
        return s.row_remap_pending ? Int(*s.row_remap_pending ? 1 : 0) : None();
      }}}},
};

void BuildGaudiRow(const Snapshot& snapshot, const DeviceState& d, const PodRef* pod, SeriesSet* row) {
  const devices::DeviceIdentity& id = d.identity;
  row->device = &d;
  row->pod = pod;
  std::string* a = &row->before;
  AppendLabel(a, "Serial", id.serial);
  AppendLabel(a, "UUID", id.uuid);
  AppendLabel(a, "device", id.serial);
  AppendNumberLabel(a, "id", "", id.index);
  AppendLabel(a, "fit", id.firmware_version);
  AppendLabel(a, "spi", "");
  AppendLabel(a, "driver", DriverVersion(snapshot, d));
  AppendLabel(a, "pod_namespace", pod ? pod->namespace_name : "");
  AppendLabel(a, "pod_name", pod ? pod->pod : "");
}

// One row per distinct pod holding the device (the exporter has no container label), or one
// row with empty pod labels.
void AddGaudiDevice(const Snapshot& snapshot, const DeviceState& d, Scratch* scratch) {
  AddRowPerDistinctPod(
      d, scratch->sets,
      [](const PodRef& a, const PodRef& b) {
        return a.pod == b.pod && a.namespace_name == b.namespace_name;
      },
      [&](const PodRef* pod, SeriesSet* row) { BuildGaudiRow(snapshot, d, pod, row); });
}

}  // namespace

void RenderGaudi(const Snapshot& snapshot, Scratch* scratch, ExpositionWriter* w) {
  scratch->sets.Reset();
  for (const DeviceState& d : snapshot.devices) {
    if (d.identity.vendor == devices::Vendor::kHabana) AddGaudiDevice(snapshot, d, scratch);
  }
  for (const FamilySpec& spec : kGaudiFamilies) WriteFamily(spec, scratch->sets, NumberStyle::kGo, w);
  // Present for every device, lost or not: the exporter's "this device exists" series.
  w->BeginFamily("habanalabs_device_config", "1 for every Gaudi device on the node.", kGauge);
  for (size_t i = 0; i < scratch->sets.size(); ++i) {
    w->StartSample();
    w->AddLabels(scratch->sets[i].before);
    w->FinishShortest(1);
  }
}

}  // namespace accel::telemetry::internal
