// The vendor-neutral accel_* families for every device of every vendor (the contract the
// dashboard and alert rules are written against; see docs/metrics.md). Lint-clean for
// `promtool check metrics`: snake_case, base units, _total on counters.
#include <charconv>
#include <chrono>

#include "common/version.h"
#include "telemetry/render_internal.h"

namespace accel::telemetry::internal {
namespace {

using devices::Sample;
using enum MetricType;

Value Scaled(const std::optional<double>& v, double factor) {
  return v ? Real(*v * factor) : None();
}
Value Flag(const std::optional<bool>& v) { return v ? Int(*v ? 1 : 0) : None(); }

const FamilySpec kDeviceFamilies[] = {
    {"accel_utilization_ratio", kGauge, "Fraction of time the GPU / AIP was busy.",
     {{"", [](const Sample& s) { return RealOf(s.gpu_utilization); }}}},
    {"accel_memory_utilization_ratio", kGauge, "Fraction of time the memory controller was busy.",
     {{"", [](const Sample& s) { return RealOf(s.memory_utilization); }}}},
    {"accel_encoder_utilization_ratio", kGauge, "Fraction of time the video encoder was busy.",
     {{"", [](const Sample& s) { return RealOf(s.encoder_utilization); }}}},
    {"accel_decoder_utilization_ratio", kGauge, "Fraction of time the video decoder was busy.",
     {{"", [](const Sample& s) { return RealOf(s.decoder_utilization); }}}},
    {"accel_engine_active_ratio", kGauge, "Fraction of time a graphics/compute engine was active.",
     {{"", [](const Sample& s) { return RealOf(s.engine_active); }}}},
    {"accel_sm_active_ratio", kGauge, "Fraction of time SMs were active.",
     {{"", [](const Sample& s) { return RealOf(s.sm_active); }}}},
    {"accel_tensor_active_ratio", kGauge, "Fraction of cycles a tensor pipe was active.",
     {{"", [](const Sample& s) { return RealOf(s.tensor_active); }}}},
    {"accel_dram_active_ratio", kGauge, "Fraction of cycles the DRAM interface was busy.",
     {{"", [](const Sample& s) { return RealOf(s.dram_active); }}}},
    {"accel_clock_hertz", kGauge, "Current clock frequency.",
     {{R"(clock="sm")", [](const Sample& s) { return Scaled(s.sm_clock_mhz, 1e6); }},
      {R"(clock="memory")", [](const Sample& s) { return Scaled(s.memory_clock_mhz, 1e6); }}}},
    {"accel_temperature_celsius", kGauge, "Temperature by sensor.",
     {{R"(sensor="core")", [](const Sample& s) { return RealOf(s.temperature_c); }},
      {R"(sensor="memory")", [](const Sample& s) { return RealOf(s.memory_temperature_c); }}}},
    {"accel_power_watts", kGauge, "Board power draw.",
     {{"", [](const Sample& s) { return RealOf(s.power_w); }}}},
    {"accel_power_limit_watts", kGauge, "Enforced power limit.",
     {{"", [](const Sample& s) { return RealOf(s.power_limit_w); }}}},
    {"accel_energy_joules_total", kCounter, "Energy used since the driver was loaded.",
     {{"", [](const Sample& s) {
        return s.energy_mj ? Real(static_cast<double>(*s.energy_mj) / 1000) : None();
      }}}},
    {"accel_memory_total_bytes", kGauge, "Device memory size.",
     {{"", [](const Sample& s) { return IntOf(s.memory_total_bytes); }}}},
    {"accel_memory_used_bytes", kGauge, "Device memory in use.",
     {{"", [](const Sample& s) { return IntOf(s.memory_used_bytes); }}}},
    {"accel_memory_free_bytes", kGauge, "Device memory free.",
     {{"", [](const Sample& s) { return IntOf(s.memory_free_bytes); }}}},
    {"accel_memory_reserved_bytes", kGauge, "Device memory reserved by the driver.",
     {{"", [](const Sample& s) { return IntOf(s.memory_reserved_bytes); }}}},
    {"accel_pcie_replays_total", kCounter, "PCIe replays (link-level retries).",
     {{"", [](const Sample& s) { return IntOf(s.pcie_replays); }}}},
    {"accel_pcie_tx_bytes_per_second", kGauge, "PCIe data sent.",
     {{"", [](const Sample& s) { return RealOf(s.pcie_tx_bytes_per_second); }}}},
    {"accel_pcie_rx_bytes_per_second", kGauge, "PCIe data received.",
     {{"", [](const Sample& s) { return RealOf(s.pcie_rx_bytes_per_second); }}}},
    {"accel_nvlink_bandwidth_bytes_per_second", kGauge, "NVLink traffic, all links, both ways.",
     {{"", [](const Sample& s) { return Scaled(s.nvlink_bandwidth_mb_per_second, 1e6); }}}},
    {"accel_ecc_errors_total", kCounter, "ECC errors since the driver was loaded.",
     {{R"(type="correctable")", [](const Sample& s) { return IntOf(s.ecc_correctable); }},
      {R"(type="uncorrectable")", [](const Sample& s) { return IntOf(s.ecc_uncorrectable); }}}},
    {"accel_remapped_rows_total", kCounter, "Memory rows remapped, by the error that caused it.",
     {{R"(cause="correctable")",
       [](const Sample& s) { return IntOf(s.remapped_rows_correctable); }},
      {R"(cause="uncorrectable")",
       [](const Sample& s) { return IntOf(s.remapped_rows_uncorrectable); }}}},
    {"accel_row_remap_failed", kGauge, "1 when a memory row remap has failed.",
     {{"", [](const Sample& s) { return Flag(s.row_remap_failure); }}}},
    {"accel_row_remap_pending", kGauge, "1 when a memory row remap waits for a GPU reset.",
     {{"", [](const Sample& s) { return Flag(s.row_remap_pending); }}}},
};

const FamilySpec kMigFamilies[] = {
    {"accel_mig_memory_used_bytes", kGauge, "Memory in use in the MIG GPU instance.",
     {{"", [](const Sample& s) { return IntOf(s.memory_used_bytes); }}}},
    {"accel_mig_memory_total_bytes", kGauge, "Memory size of the MIG GPU instance.",
     {{"", [](const Sample& s) { return IntOf(s.memory_total_bytes); }}}},
    {"accel_mig_engine_active_ratio", kGauge,
     "Fraction of time the MIG instance's engines were active.",
     {{"", [](const Sample& s) { return RealOf(s.engine_active); }}}},
    {"accel_mig_tensor_active_ratio", kGauge,
     "Fraction of cycles the MIG instance's tensor pipes were active.",
     {{"", [](const Sample& s) { return RealOf(s.tensor_active); }}}},
};

void BuildDeviceLabels(const Snapshot& snapshot, const DeviceState& d, std::string* out) {
  const devices::DeviceIdentity& id = d.identity;
  AppendLabel(out, "hostname", snapshot.hostname);
  AppendLabel(out, "vendor", devices::VendorName(id.vendor));
  AppendNumberLabel(out, "index", "", id.index);
  AppendLabel(out, "uuid", id.uuid);
  AppendLabel(out, "model", id.model);
  AppendLabel(out, "pci_address", id.pci_address);
  AppendNumberLabel(out, "numa_node", "", id.numa_node);
}

void BuildRows(const Snapshot& snapshot, Scratch* scratch) {
  scratch->sets.Reset();
  scratch->mig_sets.Reset();
  for (const DeviceState& d : snapshot.devices) {
    SeriesSet* row = scratch->sets.Next();
    row->device = &d;
    BuildDeviceLabels(snapshot, d, &row->before);
    if (!d.mig_enabled) continue;
    for (const MigState& m : d.mig) {
      SeriesSet* mig_row = scratch->mig_sets.Next();
      mig_row->device = &d;
      mig_row->mig = &m;
      mig_row->before = row->before;
      AppendNumberLabel(&mig_row->before, "gpu_instance", "", m.instance.gpu_instance_id);
      AppendLabel(&mig_row->before, "mig_profile", m.instance.profile);
    }
  }
}

// A family with one sample per row whose value depends only on the device state.
template <typename ValueOf>
void WritePerRow(const char* name, MetricType type, const char* help, Pool<SeriesSet>& rows,
                 ValueOf value_of, ExpositionWriter* w) {
  w->BeginFamily(name, help, type);
  for (size_t i = 0; i < rows.size(); ++i) {
    Value v = value_of(rows[i]);
    if (v.kind == Value::kNone) continue;
    w->StartSample();
    w->AddLabels(rows[i].before);
    Finish(w, v, NumberStyle::kNative);
  }
}

void WriteDeviceState(const Snapshot& snapshot, Pool<SeriesSet>& rows, ExpositionWriter* w) {
  w->BeginFamily("accel_device_info", "Identity of each device; always 1.", kGauge);
  for (size_t i = 0; i < rows.size(); ++i) {
    const devices::DeviceIdentity& id = rows[i].device->identity;
    w->StartSample();
    w->AddLabels(rows[i].before);
    w->AddLabel("driver_version", DriverVersion(snapshot, *rows[i].device));
    w->AddLabel("firmware_version", id.firmware_version);
    w->AddLabel("serial", id.serial);
    w->FinishInt(1);
  }
  WritePerRow("accel_device_up", kGauge, "1 when the device has a fresh reading, else 0.", rows,
              [](const SeriesSet& r) { return Int(Healthy(*r.device) ? 1 : 0); }, w);
  WritePerRow("accel_device_lost", kGauge, "1 when the vendor library says the device is gone.",
              rows,
              [](const SeriesSet& r) { return Int(r.device->health == DeviceHealth::kLost); }, w);
  WritePerRow("accel_device_sample_age_seconds", kGauge,
              "Seconds between the reading the values come from and the snapshot.", rows,
              [&snapshot](const SeriesSet& r) {
                const DeviceState& d = *r.device;
                if (!Healthy(d) || d.sampled_at == std::chrono::system_clock::time_point{}) {
                  return None();
                }
                std::chrono::duration<double> age = snapshot.taken_at - d.sampled_at;
                return Real(age.count() > 0 ? age.count() : 0);
              },
              w);
}

void WriteDeviceCounts(const Snapshot& snapshot, ExpositionWriter* w) {
  w->BeginFamily("accel_devices", "Number of devices of each vendor on the node.", kGauge);
  for (auto vendor : {devices::Vendor::kNvidia, devices::Vendor::kAmd, devices::Vendor::kHabana}) {
    int64_t count = 0;
    for (const DeviceState& d : snapshot.devices) count += d.identity.vendor == vendor;
    if (count == 0) continue;
    w->StartSample();
    w->AddLabel("hostname", snapshot.hostname);
    w->AddLabel("vendor", devices::VendorName(vendor));
    w->FinishInt(count);
  }
}

void WriteXids(Pool<SeriesSet>& rows, ExpositionWriter* w) {
  WritePerRow("accel_xid_last", kGauge,
              "Last XID (NVIDIA) or vendor health event code; 0 before any.", rows,
              [](const SeriesSet& r) { return Int(static_cast<int64_t>(r.device->last_xid)); },
              w);
  w->BeginFamily("accel_xid_errors_total",
                 "Health events (XIDs) since the exporter started, by code.", kCounter);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const auto& [code, count] : rows[i].device->xid_counts) {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, code);
      w->StartSample();
      w->AddLabels(rows[i].before);
      w->AddLabel("xid", std::string_view(buf, r.ptr - buf));
      w->FinishUint(count);
    }
  }
}

void WriteMigInfo(Pool<SeriesSet>& mig_rows, ExpositionWriter* w) {
  w->BeginFamily("accel_mig_info", "One per MIG GPU instance; always 1.", kGauge);
  for (size_t i = 0; i < mig_rows.size(); ++i) {
    w->StartSample();
    w->AddLabels(mig_rows[i].before);
    w->AddLabel("mig_uuid", mig_rows[i].mig->instance.uuid);
    w->FinishInt(1);
  }
}

// One sample per distinct pod container holding `row`'s device or MIG instance.
void WritePods(const SeriesSet& row, const std::vector<PodRef>& pods, ExpositionWriter* w) {
  for (size_t p = 0; p < pods.size(); ++p) {
    const PodRef& pod = pods[p];
    bool repeated = false;
    for (size_t q = 0; q < p && !repeated; ++q) repeated = SamePodSeries(pods[q], pod, true);
    if (repeated) continue;
    char replica[24];
    size_t length = 0;
    if (pod.replica >= 0) length = std::to_chars(replica, replica + 24, pod.replica).ptr - replica;
    w->StartSample();
    w->AddLabels(row.before);
    w->AddLabel("namespace", pod.namespace_name);
    w->AddLabel("pod", pod.pod);
    w->AddLabel("container", pod.container);
    w->AddLabel("resource", pod.resource);
    w->AddLabel("replica", std::string_view(replica, length));
    w->FinishInt(1);
  }
}

void WritePodInfo(Pool<SeriesSet>& rows, Pool<SeriesSet>& mig_rows, ExpositionWriter* w) {
  w->BeginFamily("accel_pod_device_info",
                 "One per pod container holding a device, replica or MIG instance; always 1.",
                 kGauge);
  for (size_t i = 0; i < rows.size(); ++i) WritePods(rows[i], rows[i].device->pods, w);
  for (size_t i = 0; i < mig_rows.size(); ++i) WritePods(mig_rows[i], mig_rows[i].mig->pods, w);
}

void WriteExporter(const Snapshot& snapshot, ExpositionWriter* w) {
  const CollectorStats& stats = snapshot.stats;
  auto one = [&](const char* name, MetricType type, const char* help, const Value& v) {
    w->BeginFamily(name, help, type);
    w->StartSample();
    w->AddLabel("hostname", snapshot.hostname);
    Finish(w, v, NumberStyle::kNative);
  };
  w->BeginFamily("accel_exporter_build_info", "The exporter's version; always 1.", kGauge);
  w->StartSample();
  w->AddLabel("hostname", snapshot.hostname);
  w->AddLabel("version", kVersion);
  w->FinishInt(1);
  one("accel_exporter_collections_total", kCounter, "Complete collection passes.",
      Int(static_cast<int64_t>(stats.passes)));
  one("accel_exporter_collection_duration_seconds", kGauge, "Wall time of the last pass.",
      Real(stats.last_pass_seconds));
  if (!stats.pod_resources_enabled) return;
  one("accel_exporter_pod_resources_up", kGauge, "1 when the last kubelet List succeeded.",
      Int(stats.pod_resources_ok ? 1 : 0));
  one("accel_exporter_pod_resources_errors_total", kCounter, "Failed kubelet List calls.",
      Int(static_cast<int64_t>(stats.pod_resources_errors)));
}

}  // namespace

void RenderAccel(const Snapshot& snapshot, Scratch* scratch, ExpositionWriter* w) {
  BuildRows(snapshot, scratch);
  WriteDeviceState(snapshot, scratch->sets, w);
  WriteDeviceCounts(snapshot, w);
  for (const FamilySpec& spec : kDeviceFamilies) {
    WriteFamily(spec, scratch->sets, NumberStyle::kNative, w);
  }
  WriteXids(scratch->sets, w);
  WriteMigInfo(scratch->mig_sets, w);
  for (const FamilySpec& spec : kMigFamilies) {
    WriteFamily(spec, scratch->mig_sets, NumberStyle::kNative, w);
  }
  WritePodInfo(scratch->sets, scratch->mig_sets, w);
  WriteExporter(snapshot, w);
}

}  // namespace accel::telemetry::internal
