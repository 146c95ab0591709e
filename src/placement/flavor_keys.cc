#include "placement/flavor_keys.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include "common/strings.h"

namespace accel::placement {

namespace {

// hw: keys BuildRequest reads, besides the hw:numa_cpus.N / hw:numa_mem.N families.
constexpr std::array<std::string_view, 15> kInterpretedHw = {
    "hw:cpu_policy",      "hw:cpu_thread_policy", "hw:cpu_dedicated_mask",
    "hw:cpu_realtime",    "hw:cpu_realtime_mask", "hw:emulator_threads_policy",
    "hw:numa_nodes",      "hw:mem_page_size",     "hw:pci_numa_affinity_policy",
    "hw:cpu_sockets",     "hw:cpu_cores",         "hw:cpu_threads",
    "hw:cpu_max_sockets", "hw:cpu_max_cores",     "hw:cpu_max_threads",
};

// hw: keys Nova knows that change the guest's devices or features but not where it lands.
constexpr std::array<std::string_view, 19> kIgnoredHw = {
    "hw:boot_menu",
    "hw:hide_hypervisor_id",
    "hw:mem_encryption",
    "hw:pmu",
    "hw:serial_port_count",
    "hw:tpm_model",
    "hw:tpm_version",
    "hw:watchdog_action",
    "hw:vif_multiqueue_enabled",
    "hw:virtio_packed_ring",
    "hw:locked_memory",
    "hw:maxphysaddr_mode",
    "hw:maxphysaddr_bits",
    "hw:viommu_model",
    "hw:ephemeral_encryption",
    "hw:ephemeral_encryption_format",
    "hw:sound_model",
    "hw:usb_model",
    "hw:redirected_usb_ports",
};

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// "resources:PCPU", "resources2:PCPU" (Nova's 'resources([1-9][0-9]*)?:PCPU').
bool IsGroupedKey(std::string_view key, std::string_view prefix, std::string_view name) {
  if (!StartsWith(key, prefix)) return false;
  key.remove_prefix(prefix.size());
  size_t colon = key.find(':');
  if (colon == std::string_view::npos || key.substr(colon + 1) != name) return false;
  std::string_view group = key.substr(0, colon);
  if (group.empty()) return true;
  if (group.front() == '0') return false;
  return std::all_of(group.begin(), group.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string SupportedList() {
  std::string s;
  for (std::string_view k : kInterpretedHw) s += std::string(s.empty() ? "" : ", ") + std::string(k);
  s += ", hw:numa_cpus.N, hw:numa_mem.N; accepted but without effect on placement: ";
  bool first = true;
  for (std::string_view k : kIgnoredHw) {
    s += std::string(first ? "" : ", ") + std::string(k);
    first = false;
  }
  return s;
}

std::string ClosestKey(std::string_view key) {
  std::vector<std::string_view> candidates(kInterpretedHw.begin(), kInterpretedHw.end());
  candidates.insert(candidates.end(), kIgnoredHw.begin(), kIgnoredHw.end());
  candidates.push_back("hw:numa_cpus.0");
  candidates.push_back("hw:numa_mem.0");
  candidates.push_back("pci_passthrough:alias");
  // A typo is a few edits in a long key; "hw:gpu" is not a misspelt "hw:pmu".
  size_t reach = std::min<size_t>(3, std::max<size_t>(1, key.size() / 5));
  return std::string(ClosestMatch(key, candidates, reach));
}

// Sets *out_problem and *out_hint; the hint is `hint`, or the supported list when `hint` is
// empty, preceded by the closest known key when `suggest` and one is within a typo's reach.
SpecKeyKind Refuse(std::string_view key, std::string problem, std::string* out_problem, std::string* out_hint,
                   std::string hint = "", bool suggest = true) {
  if (hint.empty()) hint = "supported: " + SupportedList();
  std::string closest = suggest ? ClosestKey(key) : "";
  if (!closest.empty() && closest != key) hint = "did you mean " + closest + "? " + hint;
  *out_problem = std::move(problem);
  *out_hint = std::move(hint);
  return SpecKeyKind::kRefused;
}

}  // namespace

int NumaCellIndex(std::string_view key, std::string_view family) {
  if (!StartsWith(key, family) || key.size() == family.size() || key[family.size()] != '.') return -1;
  std::string_view n = key.substr(family.size() + 1);
  if (n.empty() || n.size() > 3) return -2;
  if (n.size() > 1 && n.front() == '0') return -2;
  int value = 0;
  for (char c : n) {
    if (c < '0' || c > '9') return -2;
    value = value * 10 + (c - '0');
  }
  return value;
}

SpecKeyKind ClassifySpecKey(std::string_view key, std::string* problem, std::string* hint) {
  if (StartsWith(key, "hw:")) {
    if (std::find(kInterpretedHw.begin(), kInterpretedHw.end(), key) != kInterpretedHw.end())
      return SpecKeyKind::kInterpreted;
    if (std::find(kIgnoredHw.begin(), kIgnoredHw.end(), key) != kIgnoredHw.end())
      return SpecKeyKind::kIgnored;
    for (std::string_view family : {"hw:numa_cpus", "hw:numa_mem"}) {
      int n = NumaCellIndex(key, family);
      if (n >= 0) return SpecKeyKind::kInterpreted;
      if (n == -2) {
        return Refuse(key, "is not a guest NUMA node key", problem, hint,
                      "write " + std::string(family) +
                          ".N with N the guest node number 0, 1, ... "
                          "without leading zeros",
                      false);
      }
    }
    if (key == "hw:pmem") {
      return Refuse(key, "virtual persistent memory (vPMEM) is not supported by accel", problem, hint,
                    "remove hw:pmem", false);
    }
    return Refuse(key,
                  "is not an hw: extra spec accel knows; a misspelt hw: key would silently "
                  "change placement",
                  problem, hint);
  }
  if (key.size() >= 3 && EqualsIgnoreCase(key.substr(0, 3), "hw:")) {
    return Refuse(key, "extra spec keys are case-sensitive; Nova would ignore this one", problem, hint);
  }
  if (StartsWith(key, "hw_") && key.find(':') == std::string_view::npos) {
    std::string flavor_key = "hw:" + std::string(key.substr(3));
    *problem = "is an image property name, not a flavor extra spec";
    *hint = "flavors write " + flavor_key + "; hw_* is the image metadata form";
    return SpecKeyKind::kRefused;
  }
  if (StartsWith(key, "pci_passthrough:")) {
    if (key == "pci_passthrough:alias") return SpecKeyKind::kInterpreted;
    return Refuse(key, "is not a pci_passthrough: extra spec (Nova knows only pci_passthrough:alias)",
                  problem, hint, "write pci_passthrough:alias: name:count[,name:count]");
  }
  if (IsGroupedKey(key, "resources", "PCPU") || IsGroupedKey(key, "resources", "VCPU") ||
      IsGroupedKey(key, "trait", "HW_CPU_HYPERTHREADING") || IsGroupedKey(key, "resources", "VGPU") ||
      key == "accel:vgpu_type") {
    return SpecKeyKind::kInterpreted;
  }
  if (StartsWith(key, "accel:"))
    return Refuse(key, "is not an accel: extra spec", problem, hint,
                  "accel reads accel:vgpu_type (the NVIDIA vGPU type of resources:VGPU, e.g. A100-10C)", false);
  return SpecKeyKind::kIgnored;
}

std::string ExtraSpecShapeProblem(std::string_view key, std::string_view value) {
  if (key.empty()) return "an extra spec key is empty";
  if (key.size() > 255) return "key is longer than 255 characters (Nova's limit)";
  for (char c : key) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.' ||
              c == ' ';
    if (!ok) {
      return "key holds '" + std::string(1, c) +
             "'; Nova allows only letters, digits and - _ : . and space in extra spec keys";
    }
  }
  if (value.size() > 255) return "value is longer than 255 characters (Nova's limit)";
  return "";
}

}  // namespace accel::placement
