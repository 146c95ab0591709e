// The `dcgm` profile: dcgm-exporter's 25 default metrics for NVIDIA devices, with its names,
// types, label order (reference §1.4) and value formatting (ints %d, doubles Go %f).
#include <charconv>
#include <cmath>

#include "devices/topology_join.h"
#include "telemetry/render_internal.h"

namespace accel::telemetry::internal {
namespace {

using devices::Sample;

// Where a field's value comes from on a MIG GPU-instance row.
enum class MigSource {
  kDevice,            ///< GPU-wide reading repeated on every instance (clocks, power, ...)
  kNone,              ///< not rendered for MIG (the *_UTIL fields, as in DCGM)
  kInstance,          ///< the instance's own reading only (framebuffer, GPM activity)
  kInstanceOrDevice,  ///< PCIe traffic: the instance's when it has it, else the GPU's link
};

struct DcgmField {
  const char* name;
  MetricType type;
  const char* help;
  /// Null marks DCGM_FI_DEV_XID_ERRORS, whose labels depend on the value.
  Value (*value)(const Sample&);
  MigSource mig;
};

// dcgm's INT64 fields; a non-finite reading has no integer form and is left out.
Value Rounded(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? Int(std::llround(*v)) : None();
}
Value WholePercent(const std::optional<double>& ratio) {
  return ratio ? Rounded(*ratio * 100) : None();
}
Value MiB(const std::optional<uint64_t>& bytes) {
  return bytes ? Int(static_cast<int64_t>(*bytes >> 20)) : None();
}
Value Flag(const std::optional<bool>& v) { return v ? Int(*v ? 1 : 0) : None(); }

using enum MetricType;
using enum MigSource;

// In the order of dcgm-exporter's default-counters.csv (its output follows the file). HELP
// texts are ours.
const DcgmField kFields[] = {
    {"DCGM_FI_DEV_SM_CLOCK", kGauge, "SM clock frequency (in MHz).",
     [](const Sample& s) { return Rounded(s.sm_clock_mhz); }, kDevice},
    {"DCGM_FI_DEV_MEM_CLOCK", kGauge, "Memory clock frequency (in MHz).",
     [](const Sample& s) { return Rounded(s.memory_clock_mhz); }, kDevice},
    {"DCGM_FI_DEV_MEMORY_TEMP", kGauge, "HBM temperature (in C).",
     [](const Sample& s) { return Rounded(s.memory_temperature_c); }, kDevice},
    {"DCGM_FI_DEV_GPU_TEMP", kGauge, "GPU core temperature (in C).",
     [](const Sample& s) { return Rounded(s.temperature_c); }, kDevice},
    {"DCGM_FI_DEV_POWER_USAGE", kGauge, "Board power draw (in W).",
     [](const Sample& s) { return RealOf(s.power_w); }, kDevice},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kCounter,
     "Energy used since the driver was loaded (in mJ).",
     [](const Sample& s) { return IntOf(s.energy_mj); }, kDevice},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kCounter, "PCIe replays (retries) so far.",
     [](const Sample& s) { return IntOf(s.pcie_replays); }, kDevice},
    {"DCGM_FI_DEV_GPU_UTIL", kGauge, "GPU busy (in %).",
     [](const Sample& s) { return WholePercent(s.gpu_utilization); }, kNone},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", kGauge, "Memory controller busy (in %).",
     [](const Sample& s) { return WholePercent(s.memory_utilization); }, kNone},
    {"DCGM_FI_DEV_ENC_UTIL", kGauge, "Video encoder busy (in %).",
     [](const Sample& s) { return WholePercent(s.encoder_utilization); }, kNone},
    {"DCGM_FI_DEV_DEC_UTIL", kGauge, "Video decoder busy (in %).",
     [](const Sample& s) { return WholePercent(s.decoder_utilization); }, kNone},
    {"DCGM_FI_DEV_XID_ERRORS", kGauge, "Last XID error seen on the GPU (0 before any).", nullptr,
     kDevice},
    {"DCGM_FI_DEV_FB_FREE", kGauge, "Framebuffer memory free (in MiB).",
     [](const Sample& s) { return MiB(s.memory_free_bytes); }, kInstance},
    {"DCGM_FI_DEV_FB_USED", kGauge, "Framebuffer memory used (in MiB).",
     [](const Sample& s) { return MiB(s.memory_used_bytes); }, kInstance},
    {"DCGM_FI_DEV_FB_RESERVED", kGauge, "Framebuffer memory reserved by the driver (in MiB).",
     [](const Sample& s) { return MiB(s.memory_reserved_bytes); }, kInstance},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", kCounter,
     "NVLink traffic over all links, received plus sent (in MB/s).",
     [](const Sample& s) { return Rounded(s.nvlink_bandwidth_mb_per_second); }, kDevice},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", kGauge, "vGPU license status (1 licensed).",
     [](const Sample& s) { return IntOf(s.vgpu_license_status); }, kDevice},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", kCounter,
     "Memory rows remapped after uncorrectable errors.",
     [](const Sample& s) { return IntOf(s.remapped_rows_uncorrectable); }, kDevice},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", kCounter,
     "Memory rows remapped after correctable errors.",
     [](const Sample& s) { return IntOf(s.remapped_rows_correctable); }, kDevice},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", kGauge, "1 when a memory row remap has failed.",
     [](const Sample& s) { return Flag(s.row_remap_failure); }, kDevice},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", kGauge,
     "Fraction of time a graphics or compute engine was active.",
     [](const Sample& s) { return RealOf(s.engine_active); }, kInstance},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kGauge, "Fraction of cycles a tensor pipe was active.",
     [](const Sample& s) { return RealOf(s.tensor_active); }, kInstance},
    {"DCGM_FI_PROF_DRAM_ACTIVE", kGauge,
     "Fraction of cycles the device memory interface was sending or receiving.",
     [](const Sample& s) { return RealOf(s.dram_active); }, kInstance},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", kGauge,
     "PCIe data sent, headers included (in bytes per second).",
     [](const Sample& s) { return Rounded(s.pcie_tx_bytes_per_second); }, kInstanceOrDevice},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", kGauge,
     "PCIe data received, headers included (in bytes per second).",
     [](const Sample& s) { return Rounded(s.pcie_rx_bytes_per_second); }, kInstanceOrDevice},
};

// NvmlPciBusId(canonical), remembered so that steady-state renders do not allocate.
const std::string& PciBusId(Scratch* scratch, const std::string& canonical) {
  for (const auto& [from, to] : scratch->pci_bus_ids) {
    if (from == canonical) return to;
  }
  if (scratch->pci_bus_ids.size() >= 1024) scratch->pci_bus_ids.clear();  // devices came and went
  return scratch->pci_bus_ids.emplace_back(canonical, devices::NvmlPciBusId(canonical)).second;
}

// gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID], [Hostname],
// DCGM_FI_DRIVER_VERSION: every label that comes before the pod attributes.
void BuildHead(const Snapshot& snapshot, const RenderOptions& options, const DeviceState& d,
               const MigState* mig, Scratch* scratch, std::string* out) {
  const devices::DeviceIdentity& id = d.identity;
  AppendNumberLabel(out, "gpu", "", id.index);
  AppendLabel(out, "UUID", id.uuid);
  AppendLabel(out, "pci_bus_id", PciBusId(scratch, id.pci_address));
  AppendNumberLabel(out, "device", "nvidia", id.index);
  AppendLabel(out, "modelName", id.model);
  if (mig) {
    AppendLabel(out, "GPU_I_PROFILE", mig->instance.profile);
    AppendNumberLabel(out, "GPU_I_ID", "", mig->instance.gpu_instance_id);
  }
  if (!options.dcgm_hostname_label.empty()) {
    AppendLabel(out, options.dcgm_hostname_label, snapshot.hostname);
  }
  AppendLabel(out, "DCGM_FI_DRIVER_VERSION", DriverVersion(snapshot, d));
}

// True when a row from `first` on already carries `pod`'s labels.
bool RowExists(Scratch& scratch, size_t first, const PodRef& pod) {
  for (size_t i = first; i < scratch.sets.size(); ++i) {
    const PodRef* other = scratch.sets[i].pod;
    if (other && SamePodSeries(*other, pod, /*with_resource=*/false)) return true;
  }
  return false;
}

// One row per pod holding the device or instance (container before err_code, the rest after),
// or one unlabelled row when no pod holds it. Pods that would repeat a row are skipped.
void AddEntity(const Snapshot& snapshot, const RenderOptions& options, const DeviceState& d,
               const MigState* mig, Scratch* scratch) {
  const std::vector<PodRef>& pods = mig ? mig->pods : d.pods;
  size_t first = scratch->sets.size();
  SeriesSet* head = scratch->sets.Next();
  head->device = &d;
  head->mig = mig;
  BuildHead(snapshot, options, d, mig, scratch, &head->before);
  if (pods.empty()) return;
  size_t head_length = head->before.size();
  for (const PodRef& pod : pods) {
    if (RowExists(*scratch, first, pod)) continue;
    // The first pod takes over the unlabelled row; later ones copy its head labels.
    SeriesSet* set = head;
    if (head->pod) {
      set = scratch->sets.Next();
      set->device = &d;
      set->mig = mig;
      set->before.assign(head->before, 0, head_length);
    }
    set->pod = &pod;
    AppendLabel(&set->before, "container", pod.container);
    AppendLabel(&set->after, "namespace", pod.namespace_name);
    AppendLabel(&set->after, "pod", pod.pod);
    if (pod.replica >= 0) AppendNumberLabel(&set->after, "vgpu", "", pod.replica);
  }
}

const Sample* SourceOf(const DcgmField& field, const SeriesSet& set) {
  if (!set.mig) return &set.device->sample;
  switch (field.mig) {
    case kDevice: return &set.device->sample;
    case kNone: return nullptr;
    case kInstance: return &set.mig->instance.sample;
    case kInstanceOrDevice:
      return field.value(set.mig->instance.sample).kind != Value::kNone
                 ? &set.mig->instance.sample
                 : &set.device->sample;
  }
  return nullptr;
}

void WriteXid(const SeriesSet& set, ExpositionWriter* w) {
  uint64_t xid = set.device->last_xid;
  char code[24];
  auto r = std::to_chars(code, code + sizeof code, xid);
  w->StartSample();
  w->AddLabels(set.before);
  w->AddLabel("err_code", std::string_view(code, r.ptr - code));
  w->AddLabel("err_msg", XidMessage(xid));
  w->AddLabels(set.after);
  w->FinishUint(xid);
}

}  // namespace

void RenderDcgm(const Snapshot& snapshot, const RenderOptions& options, Scratch* scratch,
                ExpositionWriter* w) {
  scratch->sets.Reset();
  for (const DeviceState& d : snapshot.devices) {
    // Lost and stale GPUs vanish from dcgm's output; accel_device_up tells them apart.
    if (d.identity.vendor != devices::Vendor::kNvidia || !Healthy(d)) continue;
    if (d.mig_enabled && !d.mig.empty()) {
      for (const MigState& m : d.mig) AddEntity(snapshot, options, d, &m, scratch);
    } else {
      AddEntity(snapshot, options, d, nullptr, scratch);
    }
  }
  for (const DcgmField& field : kFields) {
    w->BeginFamily(field.name, field.help, field.type);
    for (size_t i = 0; i < scratch->sets.size(); ++i) {
      const SeriesSet& set = scratch->sets[i];
      if (!field.value) {
        WriteXid(set, w);
        continue;
      }
      const Sample* source = SourceOf(field, set);
      Value v = source ? field.value(*source) : None();
      if (v.kind == Value::kNone) continue;
      w->StartSample();
      w->AddLabels(set.before);
      w->AddLabels(set.after);
      Finish(w, v, NumberStyle::kDcgm);
    }
  }
}

}  // namespace accel::telemetry::internal
