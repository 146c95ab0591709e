// PlanApply: which entry applies to each GPU, which instances stay, where new ones go, and the
// steps in an order that cannot fail on placement.
#include "sharing/mig_apply.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/error.h"
#include "sharing/mig_apply_internal.h"

namespace accel::sharing {

namespace {

using devices::MigControl;
using devices::MigDriverProfile;
using devices::MigGpuInstanceInfo;

// The planning steps below answer "this GPU cannot be planned" with the reason as a string
// (it becomes MigApplyGpu::reason), "" when they could; they never throw for it.

// The entry that applies to `gpu` (mig-parted: the last match in file order wins).
struct Match {
  const MigConfigEntry* entry = nullptr;
  bool skipped = false;  ///< matched only entries that skip a non-MIG-capable GPU
  std::string error;
};

bool FilterMatches(const MigConfigEntry& entry, const MigControl& gpu) {
  if (entry.device_filter.empty()) return true;
  return std::any_of(entry.device_filter.begin(), entry.device_filter.end(), [&](const auto& f) {
    return f.pci_id == gpu.pci_id() &&
           (!f.subsystem_id || *f.subsystem_id == gpu.pci_subsystem_id());
  });
}

Match FindEntry(const MigConfig& config, const MigControl& gpu) {
  Match match;
  for (size_t i = 0; i < config.entries.size(); ++i) {
    const MigConfigEntry& entry = config.entries[i];
    bool named = std::find(entry.devices.begin(), entry.devices.end(),
                           static_cast<int>(gpu.index())) != entry.devices.end();
    if (!FilterMatches(entry, gpu) || (!entry.all_devices && !named)) continue;
    if (gpu.mig_capable()) {
      match.entry = &entry;
    } else if (named && entry.mig_enabled) {
      match.error = "entry " + std::to_string(i) + " of " + config.name +
                    " enables MIG on this GPU by index, but it is not MIG-capable";
    } else {
      match.skipped = true;
    }
  }
  return match;
}

// Packs compute instances into GPU instances the way ResolveEntry counts them: per GI profile,
// largest compute instances first, filling the last GPU instance before opening another. Returns
// why the entry cannot be resolved on `model` (nothing in *out then), "" otherwise.
[[nodiscard]] std::string WantedInstances(const MigConfigEntry& entry, const GpuModel& model,
                                          std::vector<WantedInstance>* out) {
  std::string why;
  if (!ResolveEntry(entry, model, &why)) return why;
  std::map<int, std::vector<std::pair<int, int>>> by_profile;  // profile -> (slices, count)
  for (const auto& [text, count] : entry.mig_devices) {
    if (count <= 0) continue;
    std::optional<ProfileName> name = ParseProfileName(text);
    by_profile[*FindProfile(model, name->GpuInstanceName())].emplace_back(name->compute_slices,
                                                                          count);
  }
  out->clear();
  for (auto& [profile, cis] : by_profile) {
    int gi_slices = model.profiles[profile].compute_slices, room = 0;
    std::stable_sort(cis.begin(), cis.end(), [](auto a, auto b) { return a.first > b.first; });
    for (auto [slices, count] : cis) {
      for (; count > 0; --count) {
        if (room < slices) {
          out->push_back({profile, {}});
          room = gi_slices;
        }
        out->back().cis.push_back(slices);
        room -= slices;
      }
    }
  }
  return "";
}

// Catalog profile index -> the driver's GI profile id on this GPU (nullopt: the driver lacks it).
// The NVML profile index is the portable key (mig-parted#157: ids differ between models).
std::vector<std::optional<unsigned>> DriverIds(const GpuModel& model,
                                               const std::vector<MigDriverProfile>& driver) {
  std::vector<std::optional<unsigned>> ids(model.profiles.size());
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    const MigProfile& profile = model.profiles[p];
    if (driver.empty()) {  // MIG off on a driver that lists profiles only with MIG on
      if (profile.profile_id >= 0) ids[p] = static_cast<unsigned>(profile.profile_id);
      continue;
    }
    auto same_slices = [&](const MigDriverProfile& d) {
      return static_cast<int>(d.compute_slices) == profile.compute_slices;
    };
    for (const MigDriverProfile& d : driver) {
      if (same_slices(d) && profile.nvml_profile >= 0 &&
          d.index == static_cast<unsigned>(profile.nvml_profile))
        ids[p] = d.id;
    }
    for (const MigDriverProfile& d : driver) {
      if (!ids[p] && same_slices(d) &&
          (static_cast<int>(d.id) == profile.profile_id || d.name == profile.name))
        ids[p] = d.id;
    }
  }
  return ids;
}

// The GPU instances on `gpu` into *have. Returns why they do not match accel's catalog, ""
// otherwise.
[[nodiscard]] std::string ReadInstances(MigControl& gpu, const GpuModel* model,
                                        const std::vector<std::optional<unsigned>>& ids,
                                        std::vector<HaveInstance>* have) {
  have->clear();
  for (MigGpuInstanceInfo& info : gpu.GpuInstances()) {
    HaveInstance h;
    for (size_t p = 0; model && p < ids.size(); ++p) {
      if (ids[p] == info.profile_id) h.profile = static_cast<int>(p);
    }
    if (h.profile && model->profiles[*h.profile].memory_slices != info.size) {
      return "GPU instance " + std::to_string(info.id) + " covers " + std::to_string(info.size) +
             " memory slices, but accel's catalog says " + model->profiles[*h.profile].name +
             " covers " + std::to_string(model->profiles[*h.profile].memory_slices);
    }
    for (const auto& ci : info.compute_instances) h.cis.push_back(ci.slices);
    std::sort(h.cis.rbegin(), h.cis.rend());
    h.info = std::move(info);
    have->push_back(std::move(h));
  }
  return "";
}

std::string Label(const GpuModel* model, MigControl& gpu, const HaveInstance& h) {
  std::string name = "profile id " + std::to_string(h.info.profile_id);
  if (model && h.profile) {
    name = model->profiles[*h.profile].name;
  } else {
    for (const MigDriverProfile& d : gpu.Profiles()) {
      if (d.id == h.info.profile_id) name = d.name;
    }
  }
  return "GPU instance " + std::to_string(h.info.id) + " (" + name + "@" +
         std::to_string(h.info.start) + ")";
}

std::string CurrentText(const GpuModel* model, bool mig_on, const std::vector<HaveInstance>& have) {
  if (!mig_on) return "MIG off";
  if (have.empty()) return "MIG on, no instances";
  std::string out;
  for (const HaveInstance& h : have) {
    std::string name = model && h.profile ? model->profiles[*h.profile].name
                                          : "profile-id-" + std::to_string(h.info.profile_id);
    out += (out.empty() ? "" : " + ") + name + "@" + std::to_string(h.info.start) +
           (h.info.busy ? " (busy)" : "");
  }
  return out;
}

// Checks every new placement against what the driver offers (the catalog has unconfirmed
// models). Returns the first placement the driver does not offer, and what it offers; "" when
// it offers them all.
[[nodiscard]] std::string VerifyPlacements(MigControl& gpu, const GpuModel& model, const MigLayout& created,
                      const std::vector<std::optional<unsigned>>& ids) {
  for (const MigPlacement& p : created) {
    const MigProfile& profile = model.profiles[p.profile];
    if (!ids[p.profile]) {
      return "the driver does not offer " + profile.name + " on this GPU";
    }
    std::vector<devices::MigSlotRange> possible = gpu.PossiblePlacements(*ids[p.profile]);
    if (std::find(possible.begin(), possible.end(),
                  devices::MigSlotRange{p.start, profile.memory_slices}) != possible.end()) {
      continue;
    }
    std::string offered;
    for (const auto& r : possible)
      offered +=
          (offered.empty() ? "" : ", ") + std::to_string(r.start) + ":" + std::to_string(r.size);
    return "the driver does not offer " + profile.name + " at memory slices " +
           std::to_string(p.start) + "-" + std::to_string(p.start + profile.memory_slices - 1) +
           " (it offers " + (offered.empty() ? "none" : offered) + "; " + model.name +
           (profile.confirmed ? "" : " placements are unconfirmed in accel's catalog") + ")";
  }
  return "";
}

// Fills *out with what happens to `gpu`. Returns why it cannot be planned ("" when it can); the
// caller then marks it kError with that reason.
[[nodiscard]] std::string PlanGpu(const MigConfig& config, MigControl& gpu, MigApplyGpu* out) {
  Match match = FindEntry(config, gpu);
  if (!match.error.empty()) return match.error;
  if (!match.entry) {
    out->status = match.skipped ? MigApplyGpu::Status::kSkipped : MigApplyGpu::Status::kUntouched;
    out->reason = match.skipped ? "not MIG-capable" : "no entry of " + config.name + " matches it";
    return "";
  }
  const MigConfigEntry& entry = *match.entry;
  const GpuModel* model = FindGpuModelByPciId(gpu.pci_id());
  if (!model) model = FindGpuModel(gpu.product_name());
  if (model) out->model = model->name;
  devices::MigModeState mode = gpu.Mode();
  if (mode.current != mode.pending) {
    return "a MIG mode change is pending on this GPU (reset the GPU or reboot first)";
  }
  if (!model && entry.mig_enabled) {
    return "\"" + gpu.product_name() + "\" (PCI id " + PciIdText(gpu.pci_id()) +
           ") is not in accel's MIG catalog";
  }
  auto ids = model ? DriverIds(*model, gpu.Profiles()) : std::vector<std::optional<unsigned>>{};
  std::vector<HaveInstance> have;
  if (std::string why = ReadInstances(gpu, model, ids, &have); !why.empty()) return why;
  out->current = CurrentText(model, mode.current, have);
  PlanInput input{gpu, model, ids, have, mode.current, {}, {}};
  if (!entry.mig_enabled) {
    out->target = "MIG off";
    for (const HaveInstance& h : have) {
      if (h.info.busy) return Label(model, gpu, h) + " is busy; MIG cannot be disabled";
    }
  } else {
    if (!mode.current && gpu.HasProcesses()) {
      return "processes run on the GPU; enabling MIG needs it idle";
    }
    if (std::string why = WantedInstances(entry, *model, &input.wanted); !why.empty()) return why;
    std::vector<int> counts(model->profiles.size(), 0);
    for (const WantedInstance& w : input.wanted) ++counts[w.profile];
    Choice choice = ChooseKept(*model, counts, input.have, input.wanted);
    if (!choice.error.empty()) return choice.error;
    input.choice = std::move(choice);
    out->target = input.choice.target.empty() ? "MIG on, no instances"
                                              : Describe(*model, input.choice.target);
    if (std::string why = VerifyPlacements(gpu, *model, input.choice.created, ids); !why.empty())
      return why;
  }
  out->steps = BuildSteps(input, entry.mig_enabled, out->position,
                          [&](const HaveInstance& h) { return Label(model, gpu, h); });
  out->status =
      out->steps.empty() ? MigApplyGpu::Status::kAlreadyApplied : MigApplyGpu::Status::kChange;
  return "";
}

}  // namespace

std::string PciIdText(uint32_t pci_id) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", pci_id);
  return text;
}

MigApplyPlan PlanApply(const MigPartedConfig& config, const std::string& name,
                       const devices::MigGpus& gpus) {
  const MigConfig* selected = config.Find(name);
  if (!selected) {
    std::string names;
    for (const MigConfig& c : config.configs) names += (names.empty() ? "" : ", ") + c.name;
    throw InputError("mig-parted config", "mig-configs." + name, "no config with this name",
                     "the file has: " + names);
  }
  MigApplyPlan plan;
  plan.config = name;
  for (size_t position = 0; position < gpus.size(); ++position) {
    MigControl& gpu = *gpus[position];
    MigApplyGpu out;
    out.position = position;
    out.index = gpu.index();
    out.product = gpu.product_name();
    if (std::string why = PlanGpu(*selected, gpu, &out); !why.empty()) {
      out.status = MigApplyGpu::Status::kError;
      out.reason = std::move(why);
      out.steps.clear();
    }
    plan.gpus.push_back(std::move(out));
  }
  return plan;
}

bool MigApplyPlan::ok() const {
  return std::none_of(gpus.begin(), gpus.end(),
                      [](const MigApplyGpu& g) { return g.status == MigApplyGpu::Status::kError; });
}

size_t MigApplyPlan::StepCount() const {
  size_t n = 0;
  for (const MigApplyGpu& g : gpus) n += g.steps.size();
  return n;
}

std::vector<std::string> MigApplyPlan::Describe() const {
  static const char* const kStatus[] = {"untouched", "skipped", "already applied", "change",
                                        "error"};
  std::vector<std::string> lines;
  for (const MigApplyGpu& g : gpus) {
    std::string head = "GPU " + std::to_string(g.index) + " (" +
                       (g.model.empty() ? g.product : g.model) +
                       "): " + kStatus[static_cast<int>(g.status)];
    if (!g.reason.empty()) head += ": " + g.reason;
    if (g.status == MigApplyGpu::Status::kChange) head += ": " + g.current + " -> " + g.target;
    if (g.status == MigApplyGpu::Status::kAlreadyApplied) head += ": " + g.current;
    lines.push_back(head);
    for (const MigApplyStep& s : g.steps) lines.push_back("  - " + s.description);
  }
  return lines;
}

}  // namespace accel::sharing
