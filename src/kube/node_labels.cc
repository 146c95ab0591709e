// NodeLabels: GPU Feature Discovery's NVIDIA labels (internal/lm), the other vendors' and
// accel.io/* labels (node_labels_vendors.cc), and the NFD feature file writer.
// Everything is computed from discovery and the topology model; nothing is probed here.
#include "kube/node_labels.h"

#include "common/atomic_file.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "common/quantity.h"
#include "kube/node_labels_internal.h"

namespace accel::kube {

namespace {

std::vector<std::string> Tokens(const std::string& model) {
  std::vector<std::string> out;
  std::string token;
  for (char c : model + " ") {
    if (c == ' ' || c == '-') {
      if (!token.empty()) out.push_back(token);
      token.clear();
    } else {
      token += c;
    }
  }
  return out;
}

bool HasToken(const std::string& model, const std::set<std::string>& names) {
  for (const std::string& t : Tokens(model)) {
    if (names.count(t)) return true;
  }
  return false;
}

// GFD reads the family from the compute capability; accel knows the marketing name only, so
// the family is given for the data-center and workstation names it recognises.
std::string GpuFamily(const std::string& model) {
  static const std::vector<std::pair<const char*, std::set<std::string>>> kFamilies = {
      {"blackwell", {"B100", "B200", "B300", "GB200", "GB300", "Blackwell"}},
      {"hopper", {"H100", "H200", "H800", "H20", "GH200"}},
      {"ada-lovelace", {"L4", "L20", "L40", "L40S", "Ada"}},
      {"ampere", {"A100", "A800", "A40", "A30", "A16", "A10", "A10G", "A2", "A6000", "A5000",
                  "A4500", "A4000", "A2000"}},
      {"turing", {"T4", "TU102", "TU104"}},
      {"volta", {"V100", "V100S"}},
      {"pascal", {"P100", "P40", "P4", "P6"}}};
  for (const auto& [family, names] : kFamilies) {
    if (HasToken(model, names)) return family;
  }
  return "";
}

bool MigCapable(const std::string& model) {
  return HasToken(model, {"A100", "A800", "A30", "H100", "H200", "H800", "H20", "GH200", "B200",
                          "B300", "GB200", "GB300"});
}

void AddDriverVersion(const std::string& version, LabelMap* labels) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : version + ".") {
    if (c == '.') {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  if (parts.size() < 2 || parts[0].empty() || parts[1].empty()) return;
  const std::string p = "nvidia.com/cuda.driver-version.";
  (*labels)[p + "major"] = SanitizeLabelValue(parts[0]);
  (*labels)[p + "minor"] = SanitizeLabelValue(parts[1]);
  if (parts.size() > 2 && !parts[2].empty()) (*labels)[p + "revision"] = SanitizeLabelValue(parts[2]);
  (*labels)[p + "full"] = SanitizeLabelValue(version);
}

// "<model>[-MIG-<profile>][-SHARED]", as GFD's productLabel.
std::string Product(const std::string& model, const std::string& profile, bool shared_not_renamed) {
  std::string s = model;
  if (!profile.empty()) s += " MIG " + profile;
  if (shared_not_renamed) s += " SHARED";
  return SanitizeLabelValue(s);
}

// The resource that holds NodeDevice `unit`, or nullptr.
const PluginResource* ResourceOf(const std::vector<PluginResource>& resources, size_t unit) {
  for (const PluginResource& r : resources) {
    for (const AdvertisedDevice& a : r.devices) {
      if (a.device == unit) return &r;
    }
  }
  return nullptr;
}

// The labels of one advertised family (nvidia.com/gpu.* or nvidia.com/mig-<profile>.*).
void AddResourceLabels(const std::string& prefix, const NodeDevice& first, size_t count,
                       const std::string& profile, const PluginResource* resource,
                       LabelMap* labels) {
  int replicas = resource ? resource->replicas : 1;
  bool shared = replicas > 1;
  SharingStrategy sharing = shared ? resource->sharing : SharingStrategy::kNone;
  (*labels)[prefix + ".count"] = std::to_string(count);
  (*labels)[prefix + ".replicas"] = std::to_string(replicas);
  (*labels)[prefix + ".sharing-strategy"] = SharingStrategyName(sharing);
  // GFD: "-SHARED" unless the shared resource was renamed (then the name says it).
  (*labels)[prefix + ".product"] = Product(first.model, profile, shared && !resource->renamed());
  if (first.memory_bytes > 0) (*labels)[prefix + ".memory"] = std::to_string(first.memory_bytes / kMiB);
}

void AddNvidia(const std::vector<NodeDevice>& devices, const PluginConfig& config,
               const std::vector<PluginResource>& resources, LabelMap* labels) {
  std::vector<size_t> gpus, migs;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].vendor != devices::Vendor::kNvidia) continue;
    (devices[i].is_mig() ? migs : gpus).push_back(i);
  }
  if (gpus.empty()) return;
  const NodeDevice& first = devices[gpus[0]];
  bool any_mig = std::any_of(gpus.begin(), gpus.end(), [&](size_t i) { return devices[i].mig_enabled; });
  (*labels)["nvidia.com/gpu.present"] = "true";
  (*labels)["nvidia.com/mig.strategy"] = MigStrategyName(config.mig_strategy);
  (*labels)["nvidia.com/mig.capable"] = any_mig || MigCapable(first.model) ? "true" : "false";
  // GFD's sharing labeler: "true" exactly when the config shares through MPS (BuildResources has
  // already refused MPS over MIG devices, which GFD reports as an error).
  (*labels)["nvidia.com/mps.capable"] =
      config.sharing_strategy() == SharingStrategy::kMps ? "true" : "false";
  AddDriverVersion(first.driver_version, labels);
  std::string family = GpuFamily(first.model);
  if (!family.empty()) (*labels)["nvidia.com/gpu.family"] = family;

  // nvidia.com/gpu.*: what nvidia.com/gpu[.shared] advertises (MIG devices under single).
  bool single_mig = config.mig_strategy == MigStrategy::kSingle && any_mig && !migs.empty();
  std::vector<size_t> units;
  for (size_t g : gpus) {
    bool advertised = config.mig_strategy != MigStrategy::kMixed || !devices[g].mig_enabled;
    if (!single_mig && advertised) units.push_back(g);
  }
  if (single_mig) units = migs;
  const NodeDevice& shown = devices[units.empty() ? gpus[0] : units[0]];
  AddResourceLabels("nvidia.com/gpu", shown, units.size(), single_mig ? shown.mig_profile : "",
                    units.empty() ? nullptr : ResourceOf(resources, units[0]), labels);

  if (config.mig_strategy != MigStrategy::kMixed) return;
  std::map<std::string, std::vector<size_t>> by_profile;
  for (size_t m : migs) {
    if (!devices[m].mig_profile.empty()) by_profile[devices[m].mig_profile].push_back(m);
  }
  for (const auto& [profile, members] : by_profile) {
    std::string key = "nvidia.com/mig-" + profile;
    std::replace(key.begin(), key.end(), '+', '.');
    AddResourceLabels(key, devices[members[0]], members.size(), profile,
                      ResourceOf(resources, members[0]), labels);
  }
}

}  // namespace

Labels NodeLabels(const std::vector<NodeDevice>& devices, const PluginConfig& config,
                  const std::vector<PluginResource>& resources,
                  const topology::HostTopology& host) {
  LabelMap labels;
  AddNvidia(devices, config, resources, &labels);
  AddAmdLabels(devices, host, &labels);
  AddGaudiLabels(devices, host, &labels);
  AddHostLabels(devices, host, &labels);
  return Labels(labels.begin(), labels.end());
}

std::string FormatFeatureFile(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) out += key + "=" + value + "\n";
  return out;
}

void WriteFeatureFile(const std::string& path, const Labels& labels) {
  // NFD reads features.d/* as they appear; the atomic writer's hidden temporary name is skipped.
  WriteFileAtomically(path, FormatFeatureFile(labels), {.create_directories = true});
}

}  // namespace accel::kube
