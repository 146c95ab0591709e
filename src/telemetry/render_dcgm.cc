// The `dcgm` profile: dcgm-exporter's series for NVIDIA devices — the 25 default metrics, or
// exactly the fields a counters CSV lists (field_selection.h) — with its names, types, label
// order (reference §1.4) and value formatting (ints %d, doubles Go %f).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>

#include "devices/topology_join.h"
#include "telemetry/dcgm_fields.h"
#include "telemetry/render_internal.h"

namespace accel::telemetry::internal {
namespace {

using devices::Sample;

/// What this render prints: the built-in set, or a counters CSV's lines. Lives in the Scratch,
/// so steady-state renders reuse its capacity.
struct Plan {
  std::vector<DcgmPlanFamily>& families;
  std::vector<DcgmPlanLabel>& labels;  ///< sorted by name (dcgm-exporter's Go map order)
};

Plan MakePlan(const RenderOptions& options, Scratch* scratch) {
  Plan plan{scratch->dcgm_families, scratch->dcgm_labels};
  plan.families.clear();
  plan.labels.clear();
  if (options.fields && options.fields->dcgm) {
    for (const DcgmCounter& c : options.fields->dcgm->counters) {
      if (c.is_label) {
        plan.labels.push_back({c.metric, c.field->label});
      } else {
        plan.families.push_back({c.metric, c.help, c.type, c.field});
      }
    }
    std::sort(plan.labels.begin(), plan.labels.end(),
              [](const DcgmPlanLabel& a, const DcgmPlanLabel& b) { return a.name < b.name; });
  } else {
    for (const DcgmField* f : DefaultDcgmFields()) {
      plan.families.push_back({f->name, f->help, f->type, f});
    }
    static const DcgmField* driver = FindDcgmField("DCGM_FI_DRIVER_VERSION");
    plan.labels.push_back({driver->name, driver->label});
  }
  return plan;
}

// NvmlPciBusId(canonical), remembered so that steady-state renders do not allocate.
const std::string& PciBusId(Scratch* scratch, const std::string& canonical) {
  for (const auto& [from, to] : scratch->pci_bus_ids) {
    if (from == canonical) return to;
  }
  if (scratch->pci_bus_ids.size() >= 1024) scratch->pci_bus_ids.clear();  // devices came and went
  return scratch->pci_bus_ids.emplace_back(canonical, devices::NvmlPciBusId(canonical)).second;
}

// gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID], [Hostname], then the
// label fields (DCGM_FI_DRIVER_VERSION, ...): every label that comes before the pod attributes.
void BuildHead(const Snapshot& snapshot, const RenderOptions& options, const Plan& plan,
               const DeviceState& d, const MigState* mig, Scratch* scratch, std::string* out) {
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
  for (const DcgmPlanLabel& label : plan.labels) AppendLabel(out, label.name, label.value(snapshot, d));
}

// True when a row from `first` on already carries `pod`'s labels.
bool RowExists(Scratch& scratch, size_t first, const PodRef& pod) {
  for (size_t i = first; i < scratch.sets.size(); ++i) {
    const PodRef* other = scratch.sets[i].pod;
    if (other && SamePodSeries(*other, pod, /*with_resource=*/false)) return true;
  }
  return false;
}

// One row per pod holding the device or instance (container in `middle`, the rest after), or
// one unlabelled row when no pod holds it. Pods that would repeat a row are skipped.
void AddEntity(const Snapshot& snapshot, const RenderOptions& options, const Plan& plan,
               const DeviceState& d, const MigState* mig, Scratch* scratch) {
  const std::vector<PodRef>& pods = mig ? mig->pods : d.pods;
  size_t first = scratch->sets.size();
  SeriesSet* head = scratch->sets.Next();
  head->device = &d;
  head->mig = mig;
  BuildHead(snapshot, options, plan, d, mig, scratch, &head->before);
  for (const PodRef& pod : pods) {
    if (RowExists(*scratch, first, pod)) continue;
    // The first pod takes over the unlabelled row; later ones copy its head labels.
    SeriesSet* set = head;
    if (head->pod) {
      set = scratch->sets.Next();
      set->device = &d;
      set->mig = mig;
      set->before = head->before;
    }
    set->pod = &pod;
    AppendLabel(&set->middle, "container", pod.container);
    AppendLabel(&set->after, "namespace", pod.namespace_name);
    AppendLabel(&set->after, "pod", pod.pod);
    if (pod.replica >= 0) AppendNumberLabel(&set->after, "vgpu", "", pod.replica);
  }
}

const Sample* SourceOf(const DcgmField& field, const SeriesSet& set) {
  if (!set.mig) return &set.device->sample;
  switch (field.mig) {
    case DcgmMigSource::kDevice: return &set.device->sample;
    case DcgmMigSource::kNone: return nullptr;
    case DcgmMigSource::kInstance: return &set.mig->instance.sample;
    case DcgmMigSource::kInstanceOrDevice:
      return field.value(set.mig->instance.sample).kind != Value::kNone
                 ? &set.mig->instance.sample
                 : &set.device->sample;
  }
  return nullptr;
}

std::string_view Digits(uint64_t n, char (&buffer)[24]) {
  auto r = std::to_chars(buffer, buffer + sizeof buffer, n);
  return std::string_view(buffer, r.ptr - buffer);
}

// Starts a sample of `set` whose own labels `own` (already escaped) sort among the "Labels" map
// (before the container attribute).
void StartWithOwnLabels(ExpositionWriter* w, const SeriesSet& set, std::string_view own) {
  w->StartSample();
  w->AddLabels(set.before);
  w->AddLabels(own);
  w->AddLabels(set.middle);
  w->AddLabels(set.after);
}

void WriteXid(const SeriesSet& set, ExpositionWriter* w) {
  uint64_t xid = set.device->last_xid;
  char code[24];
  w->StartSample();
  w->AddLabels(set.before);
  w->AddLabels(set.middle);
  w->AddLabel("err_code", Digits(xid, code));
  w->AddLabel("err_msg", XidMessage(xid));
  w->AddLabels(set.after);
  w->FinishUint(xid);
}

// The clock-event names dcgm-exporter prints, by NVML/DCGM reason bit.
std::string_view ClockEventName(uint64_t bit) {
  switch (bit) {
    case 0x1: return "gpu_idle";
    case 0x2: return "clocks_setting";
    case 0x4: return "power_cap";
    case 0x8: return "hw_slowdown";
    case 0x10: return "sync_boost";
    case 0x20: return "sw_thermal";
    case 0x40: return "hw_thermal";
    case 0x80: return "hw_power_brake";
    case 0x100: return "display_clocks";
    default: return "";
  }
}

// dcgm-exporter's P2P link_status names for nvmlGpuP2PStatus_t.
std::string_view P2pStatusName(int status) {
  switch (status) {
    case 0: return "OK";
    case 1: return "ChipsetNotSupported";
    case 2: return "GPUNotSupported";
    case 3: return "TopologyNotSupported";
    case 4: return "DisabledByRegKey";
    case 5: return "NotSupported";
    default: return "Unknown";
  }
}

// DCGM_EXP_XID_ERRORS_COUNT / DCGM_EXP_CLOCK_EVENTS_COUNT: one series per code seen in the
// window, or a single 0 without the code label when none was (as dcgm-exporter does).
void WriteWindow(const SeriesSet& set, const std::map<uint64_t, uint64_t>& counts, bool clock,
                 std::string_view window_ms, std::string* own, ExpositionWriter* w) {
  auto write = [&](std::string_view code_label, uint64_t count) {
    own->clear();
    if (clock && !code_label.empty()) AppendLabel(own, "clock_event", code_label);
    AppendLabel(own, "window_size_in_ms", window_ms);
    if (!clock && !code_label.empty()) AppendLabel(own, "xid", code_label);
    StartWithOwnLabels(w, set, *own);
    w->FinishUint(count);
  };
  char digits[24];
  bool any = false;
  for (const auto& [code, count] : counts) {
    // dcgm-exporter counts only the clock-event bits it names; a newer driver's bit is skipped.
    std::string_view label = clock ? ClockEventName(code) : Digits(code, digits);
    if (label.empty()) continue;
    write(label, count);
    any = true;
  }
  if (!any) write("", 0);
}

void WriteP2p(const SeriesSet& set, std::string* own, ExpositionWriter* w) {
  char digits[24];
  for (const devices::PeerStatus& p : set.device->p2p) {
    own->clear();
    AppendLabel(own, "link_status", P2pStatusName(p.status));
    AppendLabel(own, "peer_gpu", Digits(p.peer_index, digits));
    StartWithOwnLabels(w, set, *own);
    w->FinishInt(p.status);
  }
}

Value LinkValue(const DcgmField& field, const Sample& s) {
  const auto& links = s.nvlink_link_mb_per_second;
  if (field.link >= links.size() || !links[field.link]) return None();
  double v = *links[field.link];
  return std::isfinite(v) ? Int(std::llround(v)) : None();
}

}  // namespace

void RenderDcgm(const Snapshot& snapshot, const RenderOptions& options, Scratch* scratch,
                ExpositionWriter* w) {
  const Plan plan = MakePlan(options, scratch);
  scratch->sets.Reset();
  for (const DeviceState& d : snapshot.devices) {
    // Lost and stale GPUs vanish from dcgm's output; accel_device_up tells them apart.
    if (d.identity.vendor != devices::Vendor::kNvidia || !Healthy(d)) continue;
    if (d.mig_enabled && !d.mig.empty()) {
      for (const MigState& m : d.mig) AddEntity(snapshot, options, plan, d, &m, scratch);
    } else {
      AddEntity(snapshot, options, plan, d, nullptr, scratch);
    }
  }
  char window_digits[24];
  std::string_view window_ms =
      Digits(static_cast<uint64_t>(std::max<int64_t>(0, snapshot.event_window.count())),
             window_digits);
  std::string& own = scratch->own_labels;  // a family's own labels for one sample
  for (const DcgmPlanFamily& family : plan.families) {
    const DcgmField& field = *family.field;
    w->BeginFamily(family.name, family.help, family.type);
    for (size_t i = 0; i < scratch->sets.size(); ++i) {
      const SeriesSet& set = scratch->sets[i];
      switch (field.shape) {
        case DcgmShape::kXid: WriteXid(set, w); continue;
        case DcgmShape::kXidWindow:
          WriteWindow(set, set.device->xid_window, false, window_ms, &own, w);
          continue;
        case DcgmShape::kClockWindow:
          WriteWindow(set, set.device->clock_event_window, true, window_ms, &own, w);
          continue;
        case DcgmShape::kP2p: WriteP2p(set, &own, w); continue;
        case DcgmShape::kLabel: continue;  // never a family
        case DcgmShape::kValue:
        case DcgmShape::kNvlinkLink: break;
      }
      Value v = None();
      if (field.shape == DcgmShape::kNvlinkLink) {
        v = LinkValue(field, set.device->sample);
      } else if (const Sample* source = SourceOf(field, set)) {
        v = field.value(*source);
      }
      if (v.kind == Value::kNone) continue;
      w->StartSample();
      w->AddLabels(set.before);
      w->AddLabels(set.middle);
      w->AddLabels(set.after);
      Finish(w, v, NumberStyle::kDcgm);
    }
  }
}

}  // namespace accel::telemetry::internal
