// What a mig-parted entry asks of each GPU model, and whether it can be built there
// (CountsProblem, mig_layout.h).
//
// Profile names are resolved per model because they collide ("1g.10gb" is one memory slice on
// H100-80GB but two on A100-40GB). Compute-instance profiles ("1c.3g.40gb") are packed into GIs
// the way mig-parted creates them: largest CI first, reusing the last GI until it is full.
#include <algorithm>
#include <climits>

#include "sharing/mig_parted_config.h"

namespace accel::sharing {

namespace {

// GIs needed for CIs of sizes (C, count) inside GIs of `gi_slices` compute slices, largest C
// first, each CI going into the last GI while it has room. Arithmetic, so huge counts are cheap.
long long GpuInstancesFor(std::vector<std::pair<int, long long>> cis, int gi_slices) {
  std::sort(cis.begin(), cis.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  long long gis = 0, room = 0;
  for (auto [c, n] : cis) {
    long long into_last = std::min(n, room / c);
    n -= into_last;
    room -= into_last * c;
    if (n == 0) continue;
    long long per_gi = gi_slices / c, rest = n % per_gi;
    gis += n / per_gi + (rest ? 1 : 0);
    room = gi_slices - (rest ? rest : per_gi) * c;
  }
  return gis;
}

std::string ProfileList(const MigConfigEntry& entry) {
  std::string out;
  for (const auto& [profile, count] : entry.mig_devices) {
    if (count > 0) out += (out.empty() ? "" : ", ") + profile;
  }
  return out;
}

std::string FilterList(const std::vector<DeviceFilter>& filters) {
  std::string out;
  for (const DeviceFilter& f : filters) out += (out.empty() ? "" : ", ") + f.ToString();
  return out;
}

// The filter IDs that name no catalog model.
std::vector<DeviceFilter> UnknownFilters(const MigConfigEntry& entry) {
  std::vector<DeviceFilter> out;
  for (const DeviceFilter& f : entry.device_filter) {
    if (FindGpuModelByPciId(f.pci_id) == nullptr) out.push_back(f);
  }
  return out;
}

std::string OtherNamesText(const GpuModel& model, const EntryOnModel& on) {
  std::string out;
  for (const auto& [written, printed] : on.other_names) {
    out += (out.empty() ? "" : "; ") + written + " is what some " + model.name +
           " boards or drivers call " + printed;
  }
  return out + " (mig-parted accepts only the name the GPU's driver prints: `nvidia-smi mig "
               "-lgip` shows it)";
}

}  // namespace

std::optional<EntryOnModel> ResolveEntry(const MigConfigEntry& entry, const GpuModel& model,
                                         std::string* why) {
  std::vector<std::vector<std::pair<int, long long>>> cis(model.profiles.size());
  std::vector<std::pair<std::string, std::string>> other_names;
  for (const auto& [text, count] : entry.mig_devices) {
    if (count <= 0) continue;  // mig-parted never looks a zero count up
    std::string reason;
    std::optional<ProfileName> name = ParseProfileName(text, &reason);
    std::optional<int> index = name ? FindProfile(model, name->GpuInstanceName()) : std::nullopt;
    if (name && !index) reason = model.name + " has no profile " + name->GpuInstanceName();
    if (index) {
      const MigProfile& profile = model.profiles[*index];
      int gi_slices = profile.compute_slices;
      if (name->compute_slices >= 1 && name->compute_slices <= gi_slices) {
        cis[*index].emplace_back(name->compute_slices, count);
        if (IsOtherName(profile, name->GpuInstanceName())) other_names.emplace_back(text, profile.name);
        continue;
      }
      reason = text + ": a compute instance of " + std::to_string(name->compute_slices) +
               " slices does not fit in a " + model.profiles[*index].name + " GPU instance";
    }
    if (why != nullptr) *why = reason;
    return std::nullopt;
  }
  EntryOnModel out;
  out.other_names = std::move(other_names);
  out.gpu_instances.assign(model.profiles.size(), 0);
  for (size_t p = 0; p < cis.size(); ++p) {
    if (cis[p].empty()) continue;
    long long gis = GpuInstancesFor(cis[p], model.profiles[p].compute_slices);
    out.gpu_instances[p] = static_cast<int>(std::min<long long>(gis, INT_MAX));
  }
  return out;
}

bool EntryMatchesModel(const MigConfigEntry& entry, const GpuModel& model) {
  if (entry.device_filter.empty()) return true;
  for (const DeviceFilter& f : entry.device_filter) {
    if (std::find(model.pci_ids.begin(), model.pci_ids.end(), f.pci_id) != model.pci_ids.end()) return true;
  }
  return false;
}

std::vector<ConfigFinding> ValidateMigPartedConfig(const MigPartedConfig& config,
                                                   const std::vector<const GpuModel*>& only_models) {
  using Severity = ConfigFinding::Severity;
  std::vector<const GpuModel*> scope = only_models;
  if (scope.empty()) {
    for (const GpuModel& m : MigCatalog()) scope.push_back(&m);
  }
  std::vector<ConfigFinding> findings;
  for (const MigConfig& c : config.configs) {
    for (size_t i = 0; i < c.entries.size(); ++i) {
      const MigConfigEntry& entry = c.entries[i];
      if (!entry.mig_enabled) continue;  // turning MIG off asks nothing of the geometry
      auto report = [&](const std::string& model, const std::string& message, Severity severity) {
        findings.push_back({c.name, static_cast<int>(i), entry.line, model, message, severity});
      };
      const bool filtered = !entry.device_filter.empty();
      // Resolve on every model in scope the filter selects.
      struct OnModel {
        const GpuModel* model;
        std::optional<EntryOnModel> on;
        std::string why;
      };
      std::vector<OnModel> matched;
      for (const GpuModel* model : scope) {
        if (!EntryMatchesModel(entry, *model)) continue;
        OnModel m{model, std::nullopt, ""};
        m.on = ResolveEntry(entry, *model, &m.why);
        matched.push_back(std::move(m));
      }
      if (filtered) {
        std::vector<DeviceFilter> unknown = UnknownFilters(entry);
        if (!unknown.empty() && only_models.empty()) {
          const bool none = unknown.size() == entry.device_filter.size();
          report("", "device-filter " + FilterList(unknown) +
                         (unknown.size() == 1 ? " is" : " are") + " no GPU model accel knows; " +
                         (none ? "the entry is not checked" : "not checked there") +
                         " (`accel mig profiles` lists the models)",
                 Severity::kWarning);
        }
      } else {
        // Without a filter, a model lacking the names is simply not one the entry is for, and
        // a model that knows a name only as another board's spelling counts only when no model
        // prints every name as written.
        const bool exact = std::any_of(matched.begin(), matched.end(), [](const OnModel& m) {
          return m.on && m.on->other_names.empty();
        });
        std::erase_if(matched, [exact](const OnModel& m) {
          return !m.on || (exact && !m.on->other_names.empty());
        });
        if (matched.empty()) {
          report("", "no GPU model" + std::string(only_models.empty() ? "" : " of those checked") +
                         " has all of " + ProfileList(entry),
                 Severity::kError);
        }
      }
      for (const OnModel& m : matched) {
        if (!m.on) {
          report(m.model->name, m.why, Severity::kError);
          continue;
        }
        std::string problem = CountsProblem(*m.model, m.on->gpu_instances);
        if (!problem.empty()) {
          report(m.model->name, problem, Severity::kError);
        } else if (!m.on->other_names.empty()) {
          report(m.model->name, OtherNamesText(*m.model, *m.on), Severity::kWarning);
        }
      }
    }
  }
  return findings;
}

bool HasErrors(const std::vector<ConfigFinding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const ConfigFinding& f) { return f.is_error(); });
}

}  // namespace accel::sharing
