#include "cluster/pod_admission.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>

#include "cluster/check.h"
#include "cluster/network_stack.h"
#include "cluster/vendor_stack.h"
#include "common/error.h"
#include "common/quantity.h"
#include "fabric/network_configs.h"
#include "common/structured_file.h"
#include "placement/engine.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_geometry.h"
#include "topology/classify.h"

namespace accel::cluster {

using MigKind = sharing::DefaultMigConfigKind;

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// =============================================================================================
// Reading the pod

// "hugepages-2Mi" -> 2048 (KiB); 0 when `name` is not a hugepages resource or its size does not parse.
uint64_t HugepageKib(std::string_view name) {
  if (name.substr(0, 10) != "hugepages-") return 0;
  std::string error;
  const std::optional<Quantity> q = ParseQuantity(name.substr(10), &error);
  if (!q || q->Value() <= 0) return 0;
  return static_cast<uint64_t>(q->Value()) / 1024;
}

// "hugepages-2Mi" for 2048 KiB.
std::string HugepageName(uint64_t page_kib) {
  return "hugepages-" + FormatBinaryQuantity(static_cast<int64_t>(page_kib) * 1024);
}

bool IsExtended(std::string_view name) {
  // A domain-prefixed name outside kubernetes.io (apimachinery IsExtendedResourceName; requests.*
  // is a quota prefix, not a resource).
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view domain = name.substr(0, slash);
  return domain != "kubernetes.io" && domain.substr(0, 9) != "requests." &&
         !(domain.size() > 14 && domain.substr(domain.size() - 14) == ".kubernetes.io");
}

const std::set<std::string, std::less<>>& KnownWorkloadKinds() {
  static const std::set<std::string, std::less<>> kinds = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                                                           "ReplicationController", "Job", "PodTemplate"};
  return kinds;
}

std::string QuantityText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v.get<double>());
    return buf;
  }
  return "";
}

class PodReader {
 public:
  explicit PodReader(std::string where) : where_(std::move(where)) {}

  PodResources Read(const json& doc) {
    if (!doc.is_object())
      Fail("", "is not a Kubernetes object", "give a Pod: apiVersion: v1, kind: Pod, metadata, spec with containers");
    if (!doc.contains("kind") || !doc["kind"].is_string())
      Fail("kind", "missing: the file must be a Pod", "add kind: Pod and apiVersion: v1");
    const std::string kind = doc["kind"].get<std::string>();
    if (kind != "Pod") {
      std::string fix;
      if (KnownWorkloadKinds().count(kind))
        fix = "accel cluster pods reads one Pod: write the " + kind +
              "'s pod template as a Pod (apiVersion: v1, kind: Pod, metadata, spec: the " + kind +
              (kind == "PodTemplate" ? "'s template.spec)" : "'s spec.template.spec)");
      else if (kind == "CronJob")
        fix = "write the CronJob's spec.jobTemplate.spec.template as a Pod (apiVersion: v1, kind: Pod)";
      else if (kind == "List")
        fix = "give one Pod per file";
      else
        fix = "give the pod template of one replica as a Pod (apiVersion: v1, kind: Pod, spec: its pod spec)";
      Fail("kind", "is " + kind + ": accel cluster pods reads a Pod (what one node admits)", fix);
    }
    if (doc.contains("apiVersion") && doc["apiVersion"] != "v1")
      Fail("apiVersion", "is " + doc["apiVersion"].dump() + ": a Pod is apiVersion v1", "write apiVersion: v1");
    PodResources pod;
    pod.source = where_;
    if (doc.contains("metadata")) {
      const json& m = doc["metadata"];
      if (!m.is_object()) Fail("metadata", "must be a mapping", "e.g. metadata: {name: trainer}");
      if (m.contains("name")) {
        if (!m["name"].is_string()) Fail("metadata.name", "must be a string", "");
        pod.name = m["name"].get<std::string>();
      }
    }
    if (!doc.contains("spec") || !doc["spec"].is_object())
      Fail("spec", "missing or not a mapping", "a Pod needs spec.containers");
    const json& spec = doc["spec"];
    if (spec.contains("resources") && !spec["resources"].is_null())
      Fail("spec.resources",
           "pod-level resources (the PodLevelResources feature) are not modelled: the kubelet's managers align "
           "containers' resources",
           "give each container its requests and limits");
    if (spec.contains("initContainers") && !spec["initContainers"].is_null()) {
      if (!spec["initContainers"].is_array()) Fail("spec.initContainers", "must be a list", "");
      for (size_t i = 0; i < spec["initContainers"].size(); ++i)
        pod.containers.push_back(Container(spec["initContainers"][i], "spec.initContainers[" + std::to_string(i) + "]", true));
    }
    if (!spec.contains("containers") || !spec["containers"].is_array() || spec["containers"].empty())
      Fail("spec.containers", "missing or empty: a Pod needs at least one container", "");
    for (size_t i = 0; i < spec["containers"].size(); ++i)
      pod.containers.push_back(Container(spec["containers"][i], "spec.containers[" + std::to_string(i) + "]", false));
    if (spec.contains("overhead") && !spec["overhead"].is_null()) {
      if (!spec["overhead"].is_object()) Fail("spec.overhead", "must be a mapping of resources", "");
      for (auto it = spec["overhead"].begin(); it != spec["overhead"].end(); ++it) {
        const int64_t v = Milli(it.value(), "spec.overhead." + it.key());
        if (v > 0) pod.overhead[it.key()] = v;
      }
    }
    return pod;
  }

 private:
  [[noreturn]] void Fail(const std::string& field, const std::string& problem, const std::string& fix) const {
    throw InputError(where_, field, problem, fix);
  }

  int64_t Milli(const json& v, const std::string& field) const {
    const std::string text = QuantityText(v);
    if (text.empty()) Fail(field, "must be a quantity", "e.g. \"2\", \"500m\", \"8Gi\"");
    std::string error;
    const std::optional<Quantity> q = ParseQuantity(text, &error);
    if (!q) Fail(field, error, "");
    if (q->milli < 0) Fail(field, "is negative", "requests and limits are zero or more");
    return q->milli;
  }

  void CheckName(const std::string& name, const std::string& field) const {
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage") return;
    if (name.rfind("hugepages-", 0) == 0) {
      if (HugepageKib(name) == 0)
        Fail(field, "'" + name + "' is not a hugepages resource", "hugepages-2Mi or hugepages-1Gi");
      return;
    }
    if (name.find('/') != std::string::npos) return;
    Fail(field, "'" + name + "' is not a resource Kubernetes knows",
         "cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with its domain "
         "(nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi)");
  }

  std::map<std::string, int64_t> List(const json& r, const std::string& key, const std::string& path) const {
    std::map<std::string, int64_t> out;
    if (!r.contains(key) || r[key].is_null()) return out;
    if (!r[key].is_object()) Fail(path + "." + key, "must be a mapping of resource: quantity", "e.g. {cpu: 8, memory: 64Gi}");
    for (auto it = r[key].begin(); it != r[key].end(); ++it) {
      const std::string field = path + "." + key + "." + it.key();
      CheckName(it.key(), field);
      out[it.key()] = Milli(it.value(), field);
    }
    return out;
  }

  ContainerResources Container(const json& c, const std::string& path, bool init) const {
    if (!c.is_object()) Fail(path, "must be a mapping (a container)", "");
    ContainerResources out;
    out.init = init;
    out.name = path.substr(5);  // "containers[1]"
    if (c.contains("name")) {
      if (!c["name"].is_string()) Fail(path + ".name", "must be a string", "");
      out.name = c["name"].get<std::string>();
    }
    if (c.contains("restartPolicy") && !c["restartPolicy"].is_null()) {
      if (!init) Fail(path + ".restartPolicy", "is for init containers only (sidecars)", "remove it");
      if (c["restartPolicy"] != "Always")
        Fail(path + ".restartPolicy", "must be Always (a sidecar) when set", "remove it, or write Always");
      out.sidecar = true;
    }
    if (!c.contains("resources") || c["resources"].is_null()) return out;
    const json& r = c["resources"];
    const std::string rpath = path + ".resources";
    if (!r.is_object()) Fail(rpath, "must be a mapping", "e.g. resources: {limits: {cpu: 8, memory: 64Gi}}");
    for (auto it = r.begin(); it != r.end(); ++it)
      if (it.key() != "requests" && it.key() != "limits" && it.key() != "claims")
        Fail(rpath + "." + it.key(), "is not a key of resources", "use requests, limits (claims: DRA, not counted)");
    std::map<std::string, int64_t> requests = List(r, "requests", rpath);
    const std::map<std::string, int64_t> limits = List(r, "limits", rpath);
    // The API server's validation and defaulting (pkg/apis/core/validation, v1 defaults).
    for (const auto& [name, req] : requests) {
      auto lim = limits.find(name);
      const bool exact = IsExtended(name) || name.rfind("hugepages-", 0) == 0;
      if (exact && lim == limits.end())
        Fail(rpath + ".requests." + name, "has no limit: " + name + " cannot be overcommitted",
             "set limits." + name + " to the same value (or only the limit)");
      if (lim != limits.end() && exact && lim->second != req)
        Fail(rpath + ".requests." + name, "must equal its limit (" + name + " cannot be overcommitted)",
             "make requests and limits the same");
      if (lim != limits.end() && req > lim->second)
        Fail(rpath + ".requests." + name, "is larger than its limit", "a request must be at most the limit");
    }
    for (const auto& [name, lim] : limits) {
      if (IsExtended(name) && lim % 1000 != 0)
        Fail(rpath + ".limits." + name, "must be a whole number (devices are counted)", "e.g. " + name + ": 1");
      if (!requests.count(name)) requests[name] = lim;  // requests default to limits
    }
    bool hugepages = false;
    for (const auto& [name, v] : requests) hugepages = hugepages || (name.rfind("hugepages-", 0) == 0 && v > 0);
    if (hugepages && !(requests.count("cpu") && requests["cpu"] > 0) && !(requests.count("memory") && requests["memory"] > 0))
      Fail(rpath, "asks for hugepages without cpu or memory (Kubernetes refuses it)", "request cpu or memory too");
    for (const auto& [name, v] : requests)
      if (v > 0) out.requests[name] = v;
    for (const auto& [name, v] : limits)
      if (v > 0) out.limits[name] = v;
    return out;
  }

  std::string where_;
};

// =============================================================================================
// Accumulating a pod's requests (KEP-753's formula, the kubelet's and the scheduler's)

int64_t Accumulate(const PodResources& pod, const std::function<int64_t(const ContainerResources&)>& value) {
  int64_t long_running = 0, sidecars = 0, init_max = 0;
  for (const ContainerResources& c : pod.containers) {
    const int64_t v = value(c);
    if (!c.init) {
      long_running += v;
    } else if (c.sidecar) {
      long_running += v;
      sidecars += v;
      init_max = std::max(init_max, sidecars);
    } else {
      init_max = std::max(init_max, sidecars + v);
    }
  }
  return std::max(long_running, init_max);
}

int64_t Get(const std::map<std::string, int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

uint64_t MilliBytesToMib(int64_t milli) {
  const int64_t bytes = (milli + 999) / 1000;
  return static_cast<uint64_t>((bytes + kMiB - 1) / kMiB);
}

// The static CPU Manager's exclusive CPUs of one container (guaranteedCPUs): integer requests only.
int IntegerCpus(const ContainerResources& c) {
  const int64_t cpu = Get(c.requests, "cpu");
  return cpu > 0 && cpu % 1000 == 0 ? static_cast<int>(cpu / 1000) : 0;
}

// =============================================================================================
// Quantities in the kubelet configuration

std::optional<int64_t> ConfigMilli(const json& v) {
  const std::string text = QuantityText(v);
  if (text.empty()) return std::nullopt;
  std::string error;
  const std::optional<Quantity> q = ParseQuantity(text, &error);
  if (!q) return std::nullopt;
  return q->milli;
}

[[noreturn]] void ConfigFail(const std::string& field, const std::string& problem, const std::string& fix) {
  throw InputError("kubelet configuration", field, problem, fix);
}

// MiB of a memory quantity field (rounded up); `fallback` when absent.
uint64_t ConfigMib(const json& c, const char* map, const std::string& key, uint64_t fallback) {
  if (!c.contains(map) || !c[map].is_object() || !c[map].contains(key)) return fallback;
  const std::optional<int64_t> m = ConfigMilli(c[map][key]);
  if (!m || *m < 0) ConfigFail(std::string(map) + "." + key, "is not a quantity", "e.g. 1Gi");
  return MilliBytesToMib(*m);
}

int64_t ConfigCpuMilli(const json& c, const char* map) {
  if (!c.contains(map) || !c[map].is_object() || !c[map].contains("cpu")) return 0;
  const std::optional<int64_t> m = ConfigMilli(c[map]["cpu"]);
  if (!m || *m < 0) ConfigFail(std::string(map) + ".cpu", "is not a quantity", "e.g. 500m");
  return *m;
}

std::string StringField(const json& c, const char* key, const std::string& fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_string()) ConfigFail(key, "must be a string", "");
  return c[key].get<std::string>();
}

bool OptionOn(const json& c, const char* map, const char* option) {
  return c.contains(map) && c[map].is_object() && c[map].contains(option) && c[map][option].is_string() &&
         c[map][option] == "true";
}

// =============================================================================================
// Advertised resources

// (resource name, count) per GPU `d` of group `g` under its MIG config (NVIDIA's default config
// of that name for the GPU's model, check.h's sharing::DefaultMigConfig) and strategy.
std::vector<std::pair<std::string, int>> GpuUnits(const ClusterTemplate& t, size_t group_index, const NodeGroup& g,
                                                  const GuestDevice& d, MigKind kind, bool mixed) {
  if (kind == MigKind::kNone || kind == MigKind::kDisabled) return {{"nvidia.com/gpu", 1}};
  const std::string field = "spec.nodeGroups[" + std::to_string(group_index) + "].sharing.mig";
  if (kind == MigKind::kUnknown)
    throw InputError(t.source, field,
                     "accel cluster pods knows what NVIDIA's default mig-parted configs advertise; '" + g.sharing.mig +
                         "' is not one",
                     "use all-disabled, all-enabled, all-balanced or all-<profile>");
  const uint32_t pci_id = (static_cast<uint32_t>(d.device_id) << 16) | d.vendor_id;
  const sharing::GpuModel* model = sharing::FindGpuModelByPciId(pci_id);
  if (model == nullptr) {
    char id[16];
    std::snprintf(id, sizeof id, "10de:%04x", d.device_id);
    throw InputError(t.source, field, "the group's GPU " + std::string(id) + " is not a MIG-capable model accel knows",
                     "use all-disabled, or a GPU of `accel mig profiles`");
  }
  std::string why;
  const std::optional<sharing::MigPartedConfig> config = sharing::DefaultMigConfig(g.sharing.mig, *model, &why);
  if (!config || config->configs.empty() || config->configs.front().entries.empty())
    throw InputError(t.source, field, why.empty() ? "no MIG layout for " + model->name : why, "see `accel mig profiles`");
  const sharing::MigConfigEntry& entry = config->configs.front().entries.front();
  if (!entry.mig_enabled) return {{"nvidia.com/gpu", 1}};
  std::vector<std::pair<std::string, int>> units;
  for (const auto& [profile, count] : entry.mig_devices) {
    if (count <= 0) continue;
    const std::optional<int> index = sharing::FindProfile(*model, profile);
    const std::string name = index ? model->profiles[static_cast<size_t>(*index)].name : profile;
    units.emplace_back(mixed ? sharing::MixedStrategyResource(name) : "nvidia.com/gpu", count);
  }
  return units;  // all-enabled: MIG on with no instances, nothing advertised
}

// =============================================================================================
// Small helpers

std::string CellList(const std::vector<int>& cells) {
  std::string s;
  for (int c : cells) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

std::string Plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// The engine's reasons speak of host nodes; on the guest host they are guest cells.
std::string GuestWords(std::string s) {
  for (size_t at = s.find("node "); at != std::string::npos; at = s.find("node ", at + 1))
    if (at + 5 < s.size() && std::isdigit(static_cast<unsigned char>(s[at + 5]))) s.replace(at, 5, "cell ");
  return s;
}

std::string PciAddress(int index) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", (index >> 16) & 0xffff, (index >> 8) & 0xff, (index >> 3) & 0x1f,
                index & 7);
  return buf;
}

}  // namespace

// =============================================================================================
// Pod: public functions

PodResources ParsePodText(std::string_view text, const std::string& where) {
  return PodReader(where).Read(ParseStructuredText(text, where));
}

PodResources LoadPod(const std::string& path) { return PodReader(path).Read(ReadStructuredFile(path)); }

const char* QosClassName(QosClass qos) {
  switch (qos) {
    case QosClass::kGuaranteed: return "Guaranteed";
    case QosClass::kBurstable: return "Burstable";
    case QosClass::kBestEffort: return "BestEffort";
  }
  return "BestEffort";
}

QosClass QosOf(const PodResources& pod) {
  std::map<std::string, int64_t> requests, limits;
  bool guaranteed = true;
  for (const ContainerResources& c : pod.containers) {
    for (const char* r : {"cpu", "memory"}) {
      if (Get(c.requests, r) > 0) requests[r] += Get(c.requests, r);
      if (Get(c.limits, r) > 0) limits[r] += Get(c.limits, r);
    }
    if (Get(c.limits, "cpu") <= 0 || Get(c.limits, "memory") <= 0) guaranteed = false;
  }
  if (requests.empty() && limits.empty()) return QosClass::kBestEffort;
  if (guaranteed)
    for (const auto& [r, v] : requests)
      if (!limits.count(r) || limits[r] != v) guaranteed = false;
  return guaranteed && requests.size() == limits.size() ? QosClass::kGuaranteed : QosClass::kBurstable;
}

int64_t PodRequestMilli(const PodResources& pod, const std::string& resource, bool use_limits) {
  return Accumulate(pod, [&](const ContainerResources& c) { return Get(use_limits ? c.limits : c.requests, resource); });
}

// =============================================================================================
// Node

int NodeResource::total() const { return std::accumulate(per_cell.begin(), per_cell.end(), without_cell); }

bool NodeResource::aligned() const {
  return std::any_of(per_cell.begin(), per_cell.end(), [](int n) { return n > 0; });
}

const NodeResource* KubeletNode::FindResource(std::string_view name) const {
  for (const NodeResource& r : resources)
    if (r.name == name) return &r;
  return nullptr;
}

std::string KubeletNode::PolicySummary() const {
  std::string s = static_cpu ? std::string("static CPU Manager") + (full_pcpus_only ? " (full-pcpus-only)" : "")
                             : "CPU Manager none";
  s += ", topology " + topology_policy + " (scope " + (pod_scope ? "pod" : "container") + ")";
  s += std::string(", memory ") + (static_memory ? "Static" : "None");
  return s;
}

std::vector<NodeResource> AdvertisedResources(const ClusterTemplate& t, const NodeGroup& group, const GuestLayout& layout) {
  const size_t cells = layout.cells_or_one().size();
  size_t index = 0;
  for (size_t i = 0; i < t.groups.size(); ++i)
    if (t.groups[i].name == group.name) index = i;
  uint16_t vendor_id = 0;
  switch (group.vendor) {
    case Vendor::kNvidia: vendor_id = topology::kVendorNvidia; break;
    case Vendor::kAmd: vendor_id = topology::kVendorAmd; break;
    case Vendor::kHabana: vendor_id = topology::kVendorHabana; break;
    case Vendor::kNone: break;
  }
  // NVIDIA's MIG strategy, as the vendor stack sets it (GroupMigStrategy).
  const MigKind kind = sharing::DefaultMigConfigKindOf(group.sharing.mig);
  const bool mixed = GroupMigStrategy(t, group) == "mixed";
  const ReplicaSharing* replicas = group.sharing.mps ? &*group.sharing.mps
                                   : group.sharing.time_slicing ? &*group.sharing.time_slicing
                                                                : nullptr;
  std::vector<NodeResource> out;
  auto add = [&](const std::string& name, int cell, int count, const std::string& origin) -> NodeResource& {
    auto it = std::find_if(out.begin(), out.end(), [&](const NodeResource& r) { return r.name == name; });
    if (it == out.end()) {
      out.push_back(NodeResource{name, std::vector<int>(cells, 0), 0, 0, origin});
      it = out.end() - 1;
    }
    if (cell >= 0 && static_cast<size_t>(cell) < cells) it->per_cell[static_cast<size_t>(cell)] += count;
    else it->without_cell += count;
    return *it;
  };
  std::map<std::string, int> accelerators;  // alias -> devices, for the origin text
  for (const GuestDevice& d : layout.devices) {
    const bool accel = d.role == topology::PciRole::kGpu || d.role == topology::PciRole::kHpu;
    if (!accel || vendor_id == 0 || d.vendor_id != vendor_id) continue;
    ++accelerators[d.alias];
    std::vector<std::pair<std::string, int>> units;
    if (group.vendor == Vendor::kNvidia) units = GpuUnits(t, index, group, d, kind, mixed);
    else units = {{group.vendor == Vendor::kAmd ? "amd.com/gpu" : "habana.ai/gaudi", 1}};
    for (auto [name, count] : units) {
      std::string origin;
      int max = 0;
      // Sharing applies to the vendor's resource, or under mixed to the MIG resources.
      const bool shared = replicas != nullptr;
      if (shared) {
        count *= replicas->replicas;
        if (replicas->rename_by_default) name += ".shared";
        if (replicas->fail_requests_greater_than_one) max = 1;
      }
      NodeResource& r = add(name, d.guest_cell, count, "");
      r.max_per_container = max;
    }
  }
  for (NodeResource& r : out) {
    std::string what;
    for (const auto& [alias, n] : accelerators) what += (what.empty() ? "" : ", ") + std::to_string(n) + " x " + alias;
    r.origin = what;
    if (!group.sharing.mig.empty() && kind != MigKind::kDisabled)
      r.origin += ", MIG " + group.sharing.mig + " (strategy " + (mixed ? "mixed" : "single") + ")";
    if (replicas)
      r.origin += std::string(", ") + (group.sharing.mps ? "MPS" : "time-slicing") + " " +
                  std::to_string(replicas->replicas) + " replicas each" +
                  (replicas->fail_requests_greater_than_one ? ", at most 1 per container" : "");
  }
  // RDMA NICs (network_stack.h): one function per pod (sriov) or a shared pool without NUMA.
  const std::string rdma = RdmaResourceName(group);
  const std::vector<const GuestDevice*> nics = RdmaNicsOf(layout);
  if (!rdma.empty() && group.vendor != Vendor::kHabana && !nics.empty()) {
    if (group.network.rdma == RdmaMode::kSriov) {
      for (const GuestDevice* d : nics) add(rdma, d->guest_cell, 1, "");
      out.back().origin = std::to_string(nics.size()) + " RDMA NIC function(s), SR-IOV network device plugin (NUMA reported)";
    } else {
      const int hca_max = fabric::NetworkConfigOptions().rdma_hca_max;
      add(rdma, -1, hca_max, "").origin = "RDMA shared device plugin over " + std::to_string(nics.size()) +
                                          " NIC(s): rdmaHcaMax " + std::to_string(hca_max) + ", no NUMA node reported";
    }
  }
  return out;
}

KubeletNode KubeletNodeFrom(const GuestLayout& layout, const std::vector<GuestHugepagePool>& hugepages,
                            const json& c, std::vector<NodeResource> resources, const KubernetesVersion& version) {
  if (!c.is_object()) ConfigFail("", "must be a KubeletConfiguration mapping", "");
  KubeletNode n;
  n.layout = layout;
  n.hugepages = hugepages;
  const std::vector<GuestCellLayout> cells = layout.cells_or_one();
  const size_t k = cells.size();
  for (NodeResource& r : resources) r.per_cell.resize(k, 0);
  n.resources = std::move(resources);

  const std::string cpu = StringField(c, "cpuManagerPolicy", "none");
  if (cpu != "none" && cpu != "static") ConfigFail("cpuManagerPolicy", "'" + cpu + "' is not a CPU Manager policy", "none or static");
  n.static_cpu = cpu == "static";
  n.full_pcpus_only = n.static_cpu && OptionOn(c, "cpuManagerPolicyOptions", "full-pcpus-only");
  n.topology_policy = StringField(c, "topologyManagerPolicy", "none");
  static const std::set<std::string> kTopo = {"none", "best-effort", "restricted", "single-numa-node"};
  if (!kTopo.count(n.topology_policy))
    ConfigFail("topologyManagerPolicy", "'" + n.topology_policy + "' is not a Topology Manager policy",
               "none, best-effort, restricted or single-numa-node");
  const std::string scope = StringField(c, "topologyManagerScope", "container");
  if (scope != "container" && scope != "pod") ConfigFail("topologyManagerScope", "'" + scope + "' is not a scope", "container or pod");
  n.pod_scope = scope == "pod";
  const std::string mem = StringField(c, "memoryManagerPolicy", "None");
  if (mem != "None" && mem != "Static") ConfigFail("memoryManagerPolicy", "'" + mem + "' is not a Memory Manager policy", "None or Static");
  n.static_memory = mem == "Static";
  if (c.contains("maxPods")) {
    if (!c["maxPods"].is_number_integer() || c["maxPods"].get<int64_t>() < 0) ConfigFail("maxPods", "must be a whole number", "");
    n.max_pods = static_cast<int>(std::min<int64_t>(c["maxPods"].get<int64_t>(), 1000000));
  }

  // CPUs: reservedSystemCPUs replaces the cpu of kubeReserved and systemReserved (kubelet server.go).
  CpuSet all;
  for (int v = 0; v < layout.vcpus; ++v) all.Add(v);
  int64_t reserved_milli = 0;
  if (c.contains("reservedSystemCPUs") && !c["reservedSystemCPUs"].is_null()) {
    std::string error;
    if (!c["reservedSystemCPUs"].is_string() || !CpuSet::Parse(c["reservedSystemCPUs"].get<std::string>(), &n.reserved_cpus, &error))
      ConfigFail("reservedSystemCPUs", "is not a CPU list" + (error.empty() ? "" : ": " + error), "e.g. \"0-1\"");
    n.reserved_cpus = n.reserved_cpus.Intersect(all);
    reserved_milli = 1000LL * n.reserved_cpus.Count();
  } else {
    reserved_milli = ConfigCpuMilli(c, "kubeReserved") + ConfigCpuMilli(c, "systemReserved");
    if (n.static_cpu) {
      // ceil(reserved) CPUs, whole cores first from the lowest (the kubelet's takeByTopology).
      int want = static_cast<int>((reserved_milli + 999) / 1000);
      const int cores = (layout.vcpus + layout.threads_per_core - 1) / layout.threads_per_core;
      for (int core = 0; core < cores && want >= layout.threads_per_core; ++core) {
        n.reserved_cpus = n.reserved_cpus.Union(layout.CoreVcpus(core));
        want -= layout.CoreVcpus(core).Count();
      }
      for (int v = 0; v < layout.vcpus && want > 0; ++v)
        if (!n.reserved_cpus.Contains(v)) {
          n.reserved_cpus.Add(v);
          --want;
        }
    }
  }
  n.allocatable_cpu_milli = std::max<int64_t>(0, 1000LL * layout.vcpus - reserved_milli);

  // Memory.
  uint64_t pools_mib = 0;
  std::vector<std::map<uint64_t, uint64_t>> cell_pools(k);
  for (const GuestHugepagePool& p : hugepages) {
    const uint64_t mib = p.pages * p.page_kib / 1024;
    pools_mib += mib;
    n.allocatable_hugepages_mib[p.page_kib] += mib;
    if (p.cell >= 0 && static_cast<size_t>(p.cell) < k) cell_pools[static_cast<size_t>(p.cell)][p.page_kib] += mib;
  }
  uint64_t eviction = 100;  // the kubelet's default memory.available, when evictionHard is unset
  if (c.contains("evictionHard")) {
    eviction = 0;
    if (c["evictionHard"].is_object() && c["evictionHard"].contains("memory.available")) {
      const json& v = c["evictionHard"]["memory.available"];
      const std::string text = QuantityText(v);
      if (!text.empty() && text.back() == '%') {
        double pct = 0;
        try {
          pct = std::stod(text.substr(0, text.size() - 1));
        } catch (...) {
          ConfigFail("evictionHard.memory.available", "is not a percentage or a quantity", "e.g. 100Mi");
        }
        eviction = static_cast<uint64_t>(static_cast<double>(layout.memory_mib) * pct / 100.0 + 0.999999);
      } else {
        eviction = ConfigMib(c, "evictionHard", "memory.available", 0);
      }
    }
  }
  const uint64_t reserved_mib = ConfigMib(c, "kubeReserved", "memory", 0) + ConfigMib(c, "systemReserved", "memory", 0) + eviction;
  n.allocatable_memory_mib = layout.memory_mib > reserved_mib + pools_mib ? layout.memory_mib - reserved_mib - pools_mib : 0;
  for (auto& [kib, mib] : n.allocatable_hugepages_mib) {
    const std::string name = HugepageName(kib);
    const uint64_t r = ConfigMib(c, "kubeReserved", name, 0) + ConfigMib(c, "systemReserved", name, 0);
    mib = mib > r ? mib - r : 0;
  }
  n.cell_memory_mib.resize(k);
  n.cell_hugepages_mib = cell_pools;
  for (size_t i = 0; i < k; ++i) {
    uint64_t pool = 0;
    for (const auto& [kib, mib] : cell_pools[i]) pool += mib;
    n.cell_memory_mib[i] = cells[i].memory_mib > pool ? cells[i].memory_mib - pool : 0;
  }
  if (n.static_memory && c.contains("reservedMemory") && c["reservedMemory"].is_array()) {
    const json& entries = c["reservedMemory"];
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string where = "reservedMemory[" + std::to_string(i) + "]";
      const json& e = entries[i];
      if (!e.is_object() || !e.contains("numaNode") || !e["numaNode"].is_number_integer() || !e.contains("limits") ||
          !e["limits"].is_object())
        ConfigFail(where, "needs numaNode (an integer) and limits (a mapping)", "");
      const int64_t node = e["numaNode"].get<int64_t>();
      if (node < 0 || static_cast<size_t>(node) >= k)
        ConfigFail(where + ".numaNode", "NUMA node " + std::to_string(node) + " does not exist in the guest",
                   "use 0-" + std::to_string(k - 1));
      const size_t cell = static_cast<size_t>(node);
      for (auto it = e["limits"].begin(); it != e["limits"].end(); ++it) {
        const std::optional<int64_t> m = ConfigMilli(it.value());
        if (!m || *m < 0) ConfigFail(where + ".limits." + it.key(), "is not a quantity", "e.g. 1Gi");
        const uint64_t mib = MilliBytesToMib(*m);
        uint64_t* from = nullptr;
        if (it.key() == "memory") from = &n.cell_memory_mib[cell];
        else if (const uint64_t kib = HugepageKib(it.key()); kib > 0) from = &n.cell_hugepages_mib[cell][kib];
        else ConfigFail(where + ".limits." + it.key(), "only memory and hugepages-<size> can be reserved", "");
        if (mib > *from)
          ConfigFail(where + ".limits." + it.key(), "reserves more than guest cell " + std::to_string(cell) + " has",
                     "the kubelet will not start: reserve less");
        *from -= mib;
      }
    }
  }
  n.findings = CheckKubeletConfig(c, layout, hugepages, version);
  return n;
}

KubeletNode KubeletNodeOf(const ClusterTemplate& t, const NodeGroup& group, const GroupPlan& plan) {
  KubeletNode n = KubeletNodeFrom(plan.layout, plan.hugepages, plan.kubelet.config,
                                  AdvertisedResources(t, group, plan.layout), t.kubernetes_version);
  n.group = group.name;
  return n;
}

topology::HostTopology GuestHostTopology(const KubeletNode& node) {
  topology::HostTopology h;
  h.hostname = node.group.empty() ? "guest" : node.group;
  h.source = "guest of node group " + node.group;
  const std::vector<GuestCellLayout> cells = node.layout.cells_or_one();
  topology::Package pkg;
  pkg.id = 0;
  pkg.model = "guest vCPUs";
  for (size_t i = 0; i < cells.size(); ++i) {
    topology::NumaNode nn;
    nn.id = static_cast<int>(i);
    nn.package = 0;
    nn.cpus = cells[i].vcpus;
    std::map<int, CpuSet> cores;
    for (int v : cells[i].vcpus.ToVector()) cores[node.layout.CoreOf(v)].Add(v);
    for (auto& [core, set] : cores) nn.cores.push_back(set);
    std::sort(nn.cores.begin(), nn.cores.end(), [](const CpuSet& a, const CpuSet& b) { return a.First() < b.First(); });
    uint64_t pool_mib = 0;
    nn.pages.push_back({4, node.cell_memory_mib[i] * 256, node.cell_memory_mib[i] * 256});
    for (const auto& [kib, mib] : node.cell_hugepages_mib[i]) {
      const uint64_t pages = mib * 1024 / kib;
      if (pages > 0) nn.pages.push_back({kib, pages, pages});
      pool_mib += mib;
    }
    nn.memory_kib = (node.cell_memory_mib[i] + pool_mib) * 1024;
    pkg.cpus = pkg.cpus.Union(nn.cpus);
    h.numa_nodes.push_back(std::move(nn));
  }
  h.packages.push_back(pkg);
  topology::PciDevice bridge;
  bridge.address = "pci0000:00";
  bridge.role = topology::PciRole::kHostBridge;
  h.pci.push_back(bridge);
  int index = 0;
  for (size_t r = 0; r < node.resources.size(); ++r)
    for (size_t cell = 0; cell < node.resources[r].per_cell.size(); ++cell)
      for (int j = 0; j < node.resources[r].per_cell[cell]; ++j) {
        topology::PciDevice d;
        d.address = PciAddress(index++);
        d.parent = bridge.address;
        d.role = topology::PciRole::kOther;
        d.vendor_id = kSyntheticVendorId;
        d.device_id = static_cast<uint16_t>(r);
        d.numa_node = static_cast<int>(cell);
        d.name = node.resources[r].name;
        h.pci.push_back(std::move(d));
      }
  return h;
}

// =============================================================================================
// Admission

NodeAdmission::NodeAdmission(KubeletNode node)
    : node_(std::make_shared<const KubeletNode>(std::move(node))),
      host_(std::make_shared<const topology::HostTopology>(GuestHostTopology(*node_))) {
  const size_t k = static_cast<size_t>(node_->cell_count());
  state_.cell_hugepages = node_->cell_hugepages_mib;
  state_.group.resize(k);
  for (size_t i = 0; i < k; ++i) state_.group[i] = {static_cast<int>(i)};
  state_.assignments.assign(k, 0);
}


// The CPUs exclusive allocations may use: not reserved; under full-pcpus-only not on a core
// that holds a reserved CPU either (GetAvailablePhysicalCPUs counts whole cores only).
static CpuSet AssignableCpus(const KubeletNode& n) {
  CpuSet all;
  for (int v = 0; v < n.layout.vcpus; ++v) all.Add(v);
  CpuSet out = all.Minus(n.reserved_cpus);
  if (n.full_pcpus_only)
    for (int v : n.reserved_cpus.ToVector()) out = out.Minus(n.layout.CoreVcpus(n.layout.CoreOf(v)));
  return out;
}

static bool RequireWholeCores(const KubeletNode& n) { return n.full_pcpus_only && n.layout.threads_per_core > 1; }

bool NodeAdmission::PlaceOnCells(const AdmissionDemand& d, const std::vector<int>& cells, bool one_cell,
                                 const std::vector<int>& memory_cells, const State& state, placement::Placement* placed,
                                 std::string* why) const {
  const KubeletNode& n = *node_;
  const CpuSet assignable = AssignableCpus(n);
  const bool whole = RequireWholeCores(n);
  // The host the engine sees: the whole guest, or only `cells` (node ids and device addresses kept,
  // so the node's usage applies unchanged).
  const bool all_cells = static_cast<int>(cells.size()) == n.cell_count();
  topology::HostTopology sub;
  if (!all_cells) {
    sub.hostname = host_->hostname;
    sub.packages = host_->packages;
    for (int c : cells) sub.numa_nodes.push_back(host_->numa_nodes[static_cast<size_t>(c)]);
    for (const topology::PciDevice& dev : host_->pci)
      if (dev.role == topology::PciRole::kHostBridge || std::count(cells.begin(), cells.end(), dev.numa_node))
        sub.pci.push_back(dev);
  }
  const topology::HostTopology& host = all_cells ? *host_ : sub;

  placement::PlacementRequest req;
  req.flavor = "pod";
  req.cpu_policy = placement::CpuPolicy::kDedicated;
  req.thread_policy = whole ? placement::ThreadPolicy::kRequire : placement::ThreadPolicy::kPrefer;
  req.page_size.kind = placement::PageSizeRequest::kSmall;
  const uint64_t memory = d.aligned_memory ? d.memory_mib : 0;
  // Engine cells: one, or one per cell of the set with the demand split in cell order (the
  // kubelet's Memory Manager fills a group's cells in order; its CPU Manager packs by topology).
  std::vector<int> cpus_per_cell;
  std::vector<uint64_t> memory_per_cell;
  if (one_cell) {
    cpus_per_cell = {d.exclusive_cpus};
    memory_per_cell = {memory};
  } else {
    int cpus_left = d.exclusive_cpus;
    uint64_t memory_left = memory;
    for (int c : cells) {
      const topology::NumaNode& nn = host_->numa_nodes[static_cast<size_t>(c)];
      const placement::NodeUsage* used = nullptr;
      if (auto it = state.usage.nodes.find(c); it != state.usage.nodes.end()) used = &it->second;
      int free = 0;
      for (const CpuSet& core : nn.cores) {
        const CpuSet usable = core.Intersect(assignable);
        const CpuSet left = used ? usable.Minus(used->pinned_cpus) : usable;
        if (whole) free += left.Count() == core.Count() && core.Count() > 1 ? left.Count() : 0;
        else free += left.Count();
      }
      int take = std::min(cpus_left, free);
      if (whole && take < cpus_left) take -= take % n.layout.threads_per_core;
      cpus_left -= take;
      cpus_per_cell.push_back(take);
      uint64_t base_used = 0;
      if (used)
        if (auto p = used->pages_used.find(4); p != used->pages_used.end()) base_used = p->second / 256;
      const uint64_t free_mib = n.cell_memory_mib[static_cast<size_t>(c)] > base_used
                                    ? n.cell_memory_mib[static_cast<size_t>(c)] - base_used
                                    : 0;
      const bool memory_here = memory_cells.empty() || std::count(memory_cells.begin(), memory_cells.end(), c) > 0;
      const uint64_t m = memory_here ? std::min(memory_left, free_mib) : 0;
      memory_left -= m;
      memory_per_cell.push_back(m);
    }
    if (cpus_left > 0 || memory_left > 0) {
      *why = "cells " + CellList(cells) + " have " +
             (cpus_left > 0 ? std::to_string(d.exclusive_cpus - cpus_left) + " of the " + std::to_string(d.exclusive_cpus) +
                                  " exclusive CPUs free"
                            : MiQuantity(memory - memory_left) + " of the " + MiQuantity(memory) + " of memory free");
      return false;
    }
  }
  int vcpu = 0;
  for (size_t i = 0; i < cpus_per_cell.size(); ++i) {
    placement::GuestCell cell;
    for (int j = 0; j < cpus_per_cell[i]; ++j) cell.dedicated_vcpus.Add(vcpu++);
    cell.memory_mib = memory_per_cell[i];
    req.cells.push_back(cell);
    req.memory_mib += cell.memory_mib;
  }
  req.vcpus = vcpu;
  const bool aligned_devices = n.topology_policy == "restricted" || n.topology_policy == "single-numa-node";
  if (aligned_devices)
    for (const auto& [name, count] : d.devices) {
      if (count <= 0) continue;
      const NodeResource* r = n.FindResource(name);
      if (r == nullptr || !r->aligned()) continue;
      placement::PciRequest pr;
      pr.alias = name;
      pr.count = count;
      placement::PciSpec spec;
      spec.alias = name;
      spec.vendor_id = kSyntheticVendorId;
      spec.product_id = static_cast<uint16_t>(r - n.resources.data());
      pr.specs.push_back(spec);
      pr.numa_policy = placement::PciNumaPolicy::kRequired;
      req.pci.push_back(pr);
    }
  placement::HostPolicy policy;
  policy.cpu_dedicated_set = assignable;
  placement::PlaceResult r = placement::Place(host, state.usage, policy, req);
  if (!r.fits()) {
    std::string s;
    for (const std::string& reason : r.no_fit.reasons) s += (s.empty() ? "" : "; ") + GuestWords(reason);
    *why = s;
    return false;
  }
  *placed = std::move(*r.placement);
  return true;
}

int NodeAdmission::FreePhysicalCpus(const State& state) const {
  const CpuSet assignable = AssignableCpus(*node_);
  int free = 0;
  for (const topology::NumaNode& nn : host_->numa_nodes) {
    CpuSet pinned;
    if (auto it = state.usage.nodes.find(nn.id); it != state.usage.nodes.end()) pinned = it->second.pinned_cpus;
    for (const CpuSet& core : nn.cores)
      if (core.IsSubsetOf(assignable) && !core.Intersects(pinned)) free += core.Count();
  }
  return free;
}

std::string NodeAdmission::RoomSummary(const AdmissionDemand& d, const State& state) const {
  const KubeletNode& n = *node_;
  const CpuSet assignable = AssignableCpus(n);
  const bool whole = RequireWholeCores(n);
  std::map<int, std::map<int, int>> devices_used;  // cell -> resource index -> held
  for (const std::string& address : state.usage.devices)
    if (const topology::PciDevice* dev = host_->FindPci(address)) ++devices_used[dev->numa_node][dev->device_id];
  std::string s;
  for (const topology::NumaNode& nn : host_->numa_nodes) {
    const size_t c = static_cast<size_t>(nn.id);
    const placement::NodeUsage* used = nullptr;
    if (auto it = state.usage.nodes.find(nn.id); it != state.usage.nodes.end()) used = &it->second;
    std::vector<std::string> parts;
    if (d.exclusive_cpus > 0) {
      int free = 0;
      for (const CpuSet& core : nn.cores) {
        const CpuSet left = used ? core.Intersect(assignable).Minus(used->pinned_cpus) : core.Intersect(assignable);
        free += whole ? (left == core && core.Count() > 1 ? left.Count() : 0) : left.Count();
      }
      parts.push_back(std::to_string(free) + (whole ? " CPUs in free whole cores" : " free CPUs"));
    }
    if (d.aligned_memory) {
      uint64_t held = 0;
      if (used)
        if (auto p = used->pages_used.find(4); p != used->pages_used.end()) held = p->second / 256;
      parts.push_back(MiQuantity(n.cell_memory_mib[c] > held ? n.cell_memory_mib[c] - held : 0) + " memory");
      for (const auto& [kib, mib] : d.hugepages_mib) {
        auto it = state.cell_hugepages[c].find(kib);
        parts.push_back(MiQuantity(it == state.cell_hugepages[c].end() ? 0 : it->second) + " " + HugepageName(kib));
      }
    }
    for (const auto& [name, count] : d.devices) {
      const NodeResource* r = n.FindResource(name);
      if (r == nullptr || !r->aligned()) continue;
      const int index = static_cast<int>(r - n.resources.data());
      parts.push_back(std::to_string(r->per_cell[c] - devices_used[nn.id][index]) + " " + name);
    }
    std::string cell;
    for (const std::string& p : parts) cell += (cell.empty() ? "" : ", ") + p;
    s += (s.empty() ? "" : "; ") + ("cell " + std::to_string(c) + ": " + (cell.empty() ? "-" : cell));
  }
  return s;
}

void NodeAdmission::Apply(const placement::Placement* p, const AdmissionDemand& d, const std::vector<int>& mask,
                          bool memory_group, State* state, Admission* out) const {
  std::map<int, CellShare> shares;
  if (p != nullptr) {
    const std::string error = state->usage.Apply(*p);
    if (!error.empty()) throw std::logic_error("pod admission: " + error);
    for (const placement::CellPlacement& cp : p->cells) {
      CellShare& s = shares[cp.host_node];
      s.cell = cp.host_node;
      for (const auto& [vcpu, cpu] : cp.pinning) s.cpus.Add(cpu);
      s.memory_mib += cp.memory_mib;
    }
    for (const placement::DevicePlacement& dp : p->devices) {
      CellShare& s = shares[dp.numa_node];
      s.cell = dp.numa_node;
      ++s.devices[dp.request_alias];
    }
    out->placements.push_back(*p);
  }
  if (d.aligned_memory) {
    for (const auto& [kib, want] : d.hugepages_mib) {
      uint64_t left = want;
      for (int c : mask) {
        uint64_t& free = state->cell_hugepages[static_cast<size_t>(c)][kib];
        const uint64_t take = std::min(left, free);
        if (take == 0) continue;
        free -= take;
        left -= take;
        shares[c].cell = c;
        shares[c].hugepages_mib[kib] += take;
      }
    }
    if (memory_group) {
      for (int c : mask) {
        ++state->assignments[static_cast<size_t>(c)];
        state->group[static_cast<size_t>(c)] = mask;
      }
      out->memory_masks.push_back(mask);
    }
  }
  // Merge into the pod's per-cell view (ascending by cell).
  for (auto& [cell, share] : shares) {
    auto it = std::find_if(out->cells.begin(), out->cells.end(), [&, cell = cell](const CellShare& s) { return s.cell == cell; });
    if (it == out->cells.end()) {
      out->cells.push_back(share);
      continue;
    }
    it->cpus = it->cpus.Union(share.cpus);
    it->memory_mib += share.memory_mib;
    for (const auto& [kib, mib] : share.hugepages_mib) it->hugepages_mib[kib] += mib;
    for (const auto& [name, count] : share.devices) it->devices[name] += count;
  }
  std::sort(out->cells.begin(), out->cells.end(), [](const CellShare& a, const CellShare& b) { return a.cell < b.cell; });
}

// The Memory Manager's hint rules for `d` on `mask` now (memorymanager policy_static.go
// calculateHints): a cell holding a multi-cell allocation gives no one-cell hint; a cell holding
// any allocation joins a multi-cell hint only as that same group; the free memory and hugepages
// of the mask must hold the request.
static bool MemoryMaskOk(const AdmissionDemand& d, const std::vector<int>& mask, const std::vector<std::vector<int>>& group,
                         const std::vector<int>& assignments, const std::vector<std::map<uint64_t, uint64_t>>& hugepages,
                         const std::vector<uint64_t>& memory_free) {
  if (mask.size() == 1 && group[static_cast<size_t>(mask[0])].size() > 1) return false;
  if (mask.size() > 1)
    for (int c : mask)
      if (assignments[static_cast<size_t>(c)] > 0 && group[static_cast<size_t>(c)] != mask) return false;
  uint64_t memory = 0;
  for (int c : mask) memory += memory_free[static_cast<size_t>(c)];
  if (memory < d.memory_mib) return false;
  for (const auto& [kib, want] : d.hugepages_mib) {
    uint64_t free = 0;
    for (int c : mask) {
      auto it = hugepages[static_cast<size_t>(c)].find(kib);
      free += it == hugepages[static_cast<size_t>(c)].end() ? 0 : it->second;
    }
    if (free < want) return false;
  }
  return true;
}

// Cell sets of `size` cells out of `cells`, ascending (as the kubelet's bitmask iteration).
static std::vector<std::vector<int>> MasksOfSize(int cells, int size) {
  std::vector<std::vector<int>> out;
  for (uint32_t bits = 1; bits < (1u << cells); ++bits) {
    if (__builtin_popcount(bits) != size) continue;
    std::vector<int> m;
    for (int c = 0; c < cells; ++c)
      if (bits & (1u << c)) m.push_back(c);
    out.push_back(std::move(m));
  }
  return out;
}

bool NodeAdmission::AdmitDemand(const AdmissionDemand& d, State* state, bool keep, Admission* out) const {
  const KubeletNode& n = *node_;
  const int cells = n.cell_count();
  const std::vector<GuestCellLayout> layout_cells = n.layout.cells_or_one();
  const std::string who = d.container.empty() ? "" : "container " + d.container + ": ";
  auto refuse = [&](const std::string& reason, const std::string& message) {
    out->reason = reason;
    out->message = who + message;
    return false;
  };
  uint64_t hugepages = 0;
  for (const auto& [kib, mib] : d.hugepages_mib) hugepages += mib;
  const bool cpu_aligned = d.exclusive_cpus > 0;
  const bool memory_aligned = d.aligned_memory && (d.memory_mib > 0 || hugepages > 0);
  std::map<std::string, int> devices_aligned;
  for (const auto& [name, count] : d.devices)
    if (const NodeResource* r = n.FindResource(name); r != nullptr && r->aligned() && count > 0) devices_aligned[name] = count;
  // Memory-Manager memory free per cell now.
  std::vector<uint64_t> memory_free(static_cast<size_t>(cells));
  for (int c = 0; c < cells; ++c) {
    uint64_t held = 0;
    if (auto it = state->usage.nodes.find(c); it != state->usage.nodes.end())
      if (auto p = it->second.pages_used.find(4); p != it->second.pages_used.end()) held = p->second / 256;
    const uint64_t total = n.cell_memory_mib[static_cast<size_t>(c)];
    memory_free[static_cast<size_t>(c)] = total > held ? total - held : 0;
  }
  auto memory_ok = [&](const std::vector<int>& m) {
    return MemoryMaskOk(d, m, state->group, state->assignments, state->cell_hugepages, memory_free);
  };

  // Allocate's full-pcpus-only check (the CPU Manager, after the topology manager admitted).
  auto smt_ok = [&]() {
    if (!n.full_pcpus_only || d.exclusive_cpus == 0) return true;
    const int t = n.layout.threads_per_core;
    if (d.exclusive_cpus % t != 0)
      return refuse("SMTAlignmentError",
                    std::to_string(d.exclusive_cpus) + " exclusive CPUs is not a multiple of the guest's " +
                        std::to_string(t) + " threads per core: full-pcpus-only gives whole cores only (ask " +
                        std::to_string((d.exclusive_cpus / t + 1) * t) + ")");
    const int free = FreePhysicalCpus(*state);
    if (d.exclusive_cpus > free)
      return refuse("SMTAlignmentError", std::to_string(d.exclusive_cpus) + " exclusive CPUs asked, the node has " +
                                             std::to_string(free) + " in free whole cores");
    return true;
  };

  placement::Placement placed;
  bool has_placement = false;
  std::vector<int> mask;
  bool memory_group = memory_aligned;

  // single-numa-node and restricted (and best-effort's first try): the cells every aligned
  // resource prefers. Returns false with the refusal in *out.
  auto aligned_path = [&](bool single, const AdmissionDemand& dd, bool mem_al) -> bool {
    if (!cpu_aligned && !mem_al && devices_aligned.empty()) return true;
    // The narrowest cell sets that could hold each aligned resource on an empty node.
    auto narrowest = [&](const std::function<bool(const std::vector<int>&)>& fits) {
      for (int size = 1; size <= cells; ++size)
        for (const std::vector<int>& m : MasksOfSize(cells, size))
          if (fits(m)) return size;
      return 0;
    };
    struct Width {
      std::string what;
      int cells;
    };
    std::vector<Width> widths;
    if (cpu_aligned) {
      const int k = narrowest([&](const std::vector<int>& m) {
        int total = 0;
        for (int c : m) total += layout_cells[static_cast<size_t>(c)].vcpus.Count();
        return total >= dd.exclusive_cpus;
      });
      if (k == 0) return refuse("TopologyAffinityError", "the guest has fewer than " + std::to_string(dd.exclusive_cpus) + " CPUs");
      widths.push_back({std::to_string(dd.exclusive_cpus) + " exclusive CPUs", k});
    }
    if (mem_al) {
      const int k = narrowest([&](const std::vector<int>& m) {
        uint64_t memory = 0;
        for (int c : m) memory += n.cell_memory_mib[static_cast<size_t>(c)];
        if (memory < dd.memory_mib) return false;
        for (const auto& [kib, want] : dd.hugepages_mib) {
          uint64_t have = 0;
          for (int c : m) {
            auto it = n.cell_hugepages_mib[static_cast<size_t>(c)].find(kib);
            have += it == n.cell_hugepages_mib[static_cast<size_t>(c)].end() ? 0 : it->second;
          }
          if (have < want) return false;
        }
        return true;
      });
      if (k == 0)
        return refuse("TopologyAffinityError", "the guest cells' Memory Manager memory cannot hold " + MiQuantity(dd.memory_mib) +
                                                   " of memory and the hugepages asked, even all together");
      std::string what = MiQuantity(dd.memory_mib) + " of memory";
      for (const auto& [kib, mib] : dd.hugepages_mib) what += " + " + MiQuantity(mib) + " " + HugepageName(kib);
      widths.push_back({what, k});
    }
    for (const auto& [name, count] : devices_aligned) {
      const NodeResource& r = *n.FindResource(name);
      const int k = narrowest([&, count = count](const std::vector<int>& m) {
        int have = 0;
        for (int c : m) have += r.per_cell[static_cast<size_t>(c)];
        return have >= count;
      });
      if (k == 0)
        return refuse("TopologyAffinityError",
                      std::to_string(count) + " " + name + " asked; only " +
                          std::to_string(r.total() - r.without_cell) + " of the node's " + std::to_string(r.total()) +
                          " report a guest cell, and the device manager aligns only those");
      widths.push_back({std::to_string(count) + " " + name, k});
    }
    if (single) {
      std::string list;
      int wide = 0;
      for (const Width& x : widths)
        if (x.cells > 1) {
          list += (list.empty() ? "" : ", ") + x.what;
          ++wide;
        }
      if (wide > 0)
        return refuse("TopologyAffinityError", list + (wide == 1 ? " does" : " do") +
                                                   " not fit one guest cell of this node: single-numa-node admits only "
                                                   "pods whose aligned resources fit one cell");
    }
    const int k = widths.front().cells;
    for (const Width& w : widths)
      if (w.cells != k) {
        std::string list;
        for (const Width& x : widths) list += (list.empty() ? "" : ", ") + x.what + " " + Plural(x.cells, "cell");
        return refuse("TopologyAffinityError",
                      "the narrowest guest cells that can hold each aligned resource differ (" + list +
                          "): the kubelet prefers a hint only on each resource's narrowest cells, and " +
                          (single ? "single-numa-node" : "restricted") + " admits only a hint every resource prefers");
      }
    std::string why;
    if (k == 1) {
      std::vector<int> eligible;
      for (int c = 0; c < cells; ++c)
        if (!mem_al || MemoryMaskOk(dd, {c}, state->group, state->assignments, state->cell_hugepages, memory_free)) eligible.push_back(c);
      if (!eligible.empty() && PlaceOnCells(dd, eligible, true, {}, *state, &placed, &why)) {
        has_placement = true;
        mask = {placed.cells.front().host_node};  // the one engine cell
      }
    } else {
      for (const std::vector<int>& m : MasksOfSize(cells, k)) {
        if (mem_al && !MemoryMaskOk(dd, m, state->group, state->assignments, state->cell_hugepages, memory_free)) continue;
        std::string reason;
        if (PlaceOnCells(dd, m, false, {}, *state, &placed, &reason)) {
          has_placement = true;
          mask = m;
          break;
        }
        if (why.empty()) why = reason;
      }
    }
    if (!has_placement) {
      std::string what;
      for (const Width& x : widths) what += (what.empty() ? "" : " and ") + x.what;
      return refuse("TopologyAffinityError",
                    "no " + (k == 1 ? std::string("one guest cell holds ") : std::to_string(k) + " guest cells hold ") + what +
                        " free now (" + RoomSummary(dd, *state) + ")" + (why.empty() ? "" : "; the engine: " + why));
    }
    return true;
  };

  // The Memory Manager gives no hint at all when no cell set has the memory free (its group rules
  // included): the topology manager then aligns the other resources, and the Memory Manager's
  // Allocate fails (UnexpectedAdmissionError) — unless, with only the group rules in the way, the
  // cells the others got have the memory free (accel does not admit that corner).
  auto aligned = [&](bool single) {
    if (memory_aligned) {
      bool hint = false;
      for (int size = 1; size <= cells && !hint; ++size)
        for (const std::vector<int>& m : MasksOfSize(cells, size)) {
          uint64_t capacity = 0;
          for (int c : m) capacity += n.cell_memory_mib[static_cast<size_t>(c)];
          if (capacity >= d.memory_mib && memory_ok(m)) {
            hint = true;
            break;
          }
        }
      if (!hint) {
        AdmissionDemand rest = d;
        rest.aligned_memory = false;
        rest.memory_mib = 0;
        rest.hugepages_mib.clear();
        if (!aligned_path(single, rest, false)) return false;
        has_placement = false;
        return refuse("UnexpectedAdmissionError",
                      "the Memory Manager has no guest cells with " + MiQuantity(d.memory_mib) +
                          " (and the hugepages asked) free: it gives no hint, the topology manager admits on the other "
                          "resources, and its Allocate fails (" + RoomSummary(d, *state) + ")");
      }
    }
    return aligned_path(single, d, memory_aligned);
  };

  const std::string& policy = n.topology_policy;
  if (policy == "single-numa-node" || policy == "restricted") {
    if (!aligned(policy == "single-numa-node")) return false;
    if (!smt_ok()) return false;
  } else {
    // best-effort: what restricted admits, the best-effort merge admits the same way (it picks the
    // same best hint). Beyond that, without Memory-Manager memory the managers allocate anywhere
    // (none below); with it, where the memory goes depends on the merged hint of every resource,
    // which accel does not model: it answers no (the kubelet may still admit such a pod).
    bool done = false;
    if (policy == "best-effort") {
      done = aligned(false) && smt_ok();
      if (!done && memory_aligned) {
        if (out->reason == "SMTAlignmentError" || out->message.find("has no guest cells with") != std::string::npos)
          return false;
        return refuse("UnexpectedAdmissionError",
                      "under best-effort the Memory Manager places the memory at the topology manager's merged hint; "
                      "accel admits such a pod only where restricted would (" + out->message +
                          "). The kubelet may still admit it");
      }
      if (!done) {
        out->reason.clear();
        out->message.clear();
        has_placement = false;
        mask.clear();
      }
    }
    if (!done) {
      // none: each manager allocates anywhere; the Memory Manager takes its default hint, the
      // narrowest cell set with the memory free (its group rules hold).
      if (!smt_ok()) return false;
      std::vector<int> memory_mask;
      if (memory_aligned) {
        for (int size = 1; size <= cells && memory_mask.empty(); ++size)
          for (const std::vector<int>& m : MasksOfSize(cells, size))
            if (memory_ok(m)) {
              memory_mask = m;
              break;
            }
        if (memory_mask.empty())
          return refuse("UnexpectedAdmissionError", "the Memory Manager finds no guest cells with the memory free (" +
                                                        RoomSummary(d, *state) + ")");
      }
      if (cpu_aligned || memory_aligned) {
        std::vector<int> all(static_cast<size_t>(cells));
        std::iota(all.begin(), all.end(), 0);
        std::string why;
        if (!PlaceOnCells(d, all, false, memory_mask, *state, &placed, &why))
          return refuse("UnexpectedAdmissionError", "the kubelet's managers cannot allocate it: " + why);
        has_placement = true;
      }
      mask = memory_mask;
    }
  }
  if (keep) Apply(has_placement ? &placed : nullptr, d, mask, memory_group, state, out);
  return true;
}

Admission NodeAdmission::Try(const PodResources& pod) const {
  const KubeletNode& n = *node_;
  Admission a;
  const bool guaranteed = QosOf(pod) == QosClass::kGuaranteed;
  // 1. Node allocatable.
  a.cpu_milli = PodRequestMilli(pod, "cpu") + Get(pod.overhead, "cpu");
  a.memory_mib = MilliBytesToMib(PodRequestMilli(pod, "memory") + Get(pod.overhead, "memory"));
  std::set<std::string> names;
  for (const ContainerResources& c : pod.containers) {
    for (const auto& [name, v] : c.requests) names.insert(name);
    for (const auto& [name, v] : c.limits) names.insert(name);
  }
  for (const std::string& name : names) {
    if (const uint64_t kib = HugepageKib(name); kib > 0) {
      const uint64_t mib = MilliBytesToMib(PodRequestMilli(pod, name));
      if (mib > 0) a.hugepages_mib[kib] += mib;
    } else if (IsExtended(name)) {
      const int count = static_cast<int>(PodRequestMilli(pod, name, true) / 1000);
      if (count > 0) a.devices[name] = count;
    }
  }
  auto insufficient = [&](const std::string& resource, const std::string& message) {
    a.reason = "Insufficient " + resource;
    a.message = message;
    return a;
  };
  if (state_.pods >= n.max_pods)
    return insufficient("pods", "the node already runs maxPods (" + std::to_string(n.max_pods) + ") pods");
  if (state_.cpu_milli + a.cpu_milli > n.allocatable_cpu_milli)
    return insufficient("cpu", "the pod requests " + std::to_string(a.cpu_milli) + "m CPU; the node's allocatable is " +
                                   std::to_string(n.allocatable_cpu_milli) + "m, " + std::to_string(state_.cpu_milli) +
                                   "m of it requested already");
  if (state_.memory_mib + a.memory_mib > n.allocatable_memory_mib)
    return insufficient("memory", "the pod requests " + MiQuantity(a.memory_mib) + " of memory; the node's allocatable is " +
                                      MiQuantity(n.allocatable_memory_mib) + ", " + MiQuantity(state_.memory_mib) +
                                      " of it requested already");
  for (const auto& [kib, mib] : a.hugepages_mib) {
    auto have = n.allocatable_hugepages_mib.find(kib);
    const uint64_t total = have == n.allocatable_hugepages_mib.end() ? 0 : have->second;
    auto used = state_.hugepages_mib.find(kib);
    const uint64_t taken = used == state_.hugepages_mib.end() ? 0 : used->second;
    if (taken + mib > total)
      return insufficient(HugepageName(kib), "the pod requests " + MiQuantity(mib) + " of " + HugepageName(kib) +
                                                 "; the node has " + MiQuantity(total) + " (guest hugepage pools), " +
                                                 MiQuantity(taken) + " of it requested already");
  }
  for (const auto& [name, count] : a.devices) {
    const NodeResource* r = n.FindResource(name);
    auto used = state_.devices.find(name);
    const int taken = used == state_.devices.end() ? 0 : used->second;
    if (r == nullptr) {
      std::string offered;
      for (const NodeResource& x : n.resources) offered += (offered.empty() ? "" : ", ") + x.name;
      return insufficient(name, "the group's nodes advertise no " + name + " (they advertise: " +
                                    (offered.empty() ? "no extended resources" : offered) + ")");
    }
    if (taken + count > r->total())
      return insufficient(name, "the pod asks " + std::to_string(count) + " " + name + "; the node has " +
                                    std::to_string(r->total()) + ", " + std::to_string(taken) + " of them taken");
  }
  // 2-4 per demand.
  auto demand_of = [&](const ContainerResources* only) {
    AdmissionDemand d;
    PodResources one;
    if (only) {
      d.container = only->name;
      one.containers = {*only};
      one.containers[0].init = false;
      one.containers[0].sidecar = false;
    }
    const PodResources& p = only ? one : pod;
    if (n.static_cpu && guaranteed) d.exclusive_cpus = static_cast<int>(Accumulate(p, IntegerCpus));
    d.aligned_memory = n.static_memory && guaranteed;
    if (d.aligned_memory) {
      d.memory_mib = MilliBytesToMib(PodRequestMilli(p, "memory"));
      for (const std::string& name : names)
        if (const uint64_t kib = HugepageKib(name); kib > 0) {
          const uint64_t mib = MilliBytesToMib(PodRequestMilli(p, name));
          if (mib > 0) d.hugepages_mib[kib] = mib;
        }
    }
    for (const std::string& name : names)
      if (IsExtended(name)) {
        const int count = static_cast<int>(PodRequestMilli(p, name, true) / 1000);
        if (count > 0) d.devices[name] = count;
      }
    return d;
  };
  State scratch = state_;
  if (n.pod_scope || n.topology_policy == "none") {
    // With topology none the managers allocate per container without alignment; one demand gives
    // the same answer (nothing ties a container to a cell).
    a.demands.push_back(demand_of(nullptr));
    if (!AdmitDemand(a.demands.back(), &scratch, true, &a)) return a;
  } else {
    for (const ContainerResources& c : pod.containers) {
      a.demands.push_back(demand_of(&c));
      // Init containers run to completion before the next starts: tried, then let go.
      const bool keep = !c.init || c.sidecar;
      if (!AdmitDemand(a.demands.back(), &scratch, keep, &a)) return a;
    }
  }
  for (const ContainerResources& c : pod.containers)
    for (const auto& [name, limit] : c.limits) {
      const NodeResource* r = n.FindResource(name);
      if (r != nullptr && r->max_per_container > 0 && limit / 1000 > r->max_per_container) {
        a.reason = "UnexpectedAdmissionError";
        a.message = "container " + c.name + " asks " + std::to_string(limit / 1000) + " " + name +
                    ": its device plugin refuses more than " + std::to_string(r->max_per_container) +
                    " per container (failRequestsGreaterThanOne)";
        a.cells.clear();
        a.placements.clear();
        a.memory_masks.clear();
        return a;
      }
    }
  a.admitted = true;
  return a;
}

void NodeAdmission::Commit(const Admission& a) {
  if (!a.admitted) throw std::logic_error("pod admission: Commit of a refused pod");
  State next = state_;
  for (const placement::Placement& p : a.placements) {
    const std::string error = next.usage.Apply(p);
    if (!error.empty()) throw std::logic_error("pod admission: stale admission: " + error);
  }
  for (const CellShare& s : a.cells)
    for (const auto& [kib, mib] : s.hugepages_mib) {
      uint64_t& free = next.cell_hugepages[static_cast<size_t>(s.cell)][kib];
      if (free < mib) throw std::logic_error("pod admission: stale admission (hugepages)");
      free -= mib;
    }
  for (const std::vector<int>& mask : a.memory_masks)
    for (int c : mask) {
      ++next.assignments[static_cast<size_t>(c)];
      next.group[static_cast<size_t>(c)] = mask;
    }
  next.cpu_milli += a.cpu_milli;
  next.memory_mib += a.memory_mib;
  for (const auto& [kib, mib] : a.hugepages_mib) next.hugepages_mib[kib] += mib;
  for (const auto& [name, count] : a.devices) next.devices[name] += count;
  ++next.pods;
  state_ = std::move(next);
}

std::vector<CellShare> NodeAdmission::HeldPerCell() const {
  const KubeletNode& n = *node_;
  std::vector<CellShare> out(static_cast<size_t>(n.cell_count()));
  for (size_t c = 0; c < out.size(); ++c) {
    out[c].cell = static_cast<int>(c);
    if (auto it = state_.usage.nodes.find(static_cast<int>(c)); it != state_.usage.nodes.end()) {
      out[c].cpus = it->second.pinned_cpus;
      if (auto p = it->second.pages_used.find(4); p != it->second.pages_used.end()) out[c].memory_mib = p->second / 256;
    }
    for (const auto& [kib, mib] : n.cell_hugepages_mib[c]) {
      auto left = state_.cell_hugepages[c].find(kib);
      const uint64_t free = left == state_.cell_hugepages[c].end() ? 0 : left->second;
      if (mib > free) out[c].hugepages_mib[kib] = mib - free;
    }
  }
  for (const std::string& address : state_.usage.devices)
    if (const topology::PciDevice* dev = host_->FindPci(address); dev != nullptr && dev->numa_node >= 0)
      ++out[static_cast<size_t>(dev->numa_node)].devices[n.resources[dev->device_id].name];
  return out;
}

// =============================================================================================
// FitPod

PodFit FitPod(const KubeletNode& node, const PodResources& pod) {
  PodFit f;
  f.group = node.group;
  f.pod = pod.name;
  f.qos = QosOf(pod);
  NodeAdmission na(node);
  f.first = na.Try(pod);
  if (f.first.admitted) {
    na.Commit(f.first);
    f.per_node = 1;
    while (f.per_node < kMaxPodsCounted) {
      const Admission next = na.Try(pod);
      if (!next.admitted) {
        f.stopped_reason = next.reason;
        f.stopped_message = next.message;
        break;
      }
      na.Commit(next);
      ++f.per_node;
    }
  }
  // Where the kubelet's own choice can differ, as it applies to this pod.
  const bool align = node.topology_policy == "restricted" || node.topology_policy == "single-numa-node";
  int exclusive = 0;
  bool aligned_memory = false, loose_devices = false;
  for (const AdmissionDemand& d : f.first.demands) {
    exclusive += d.exclusive_cpus;
    aligned_memory = aligned_memory || d.aligned_memory;
    for (const auto& [name, count] : d.devices)
      if (const NodeResource* r = node.FindResource(name); r != nullptr && !r->aligned()) loose_devices = true;
  }
  if (exclusive > 0)
    f.notes.push_back("the kubelet's CPU Manager picks the exclusive CPUs itself (takeByTopology: whole cores, lowest ids "
                      "first); the CPUs shown are the engine's, the count per cell is what admission depends on");
  if (align && f.per_node > 1 && !f.first.cells.empty())
    f.notes.push_back("the kubelet fills the lowest-numbered cell that fits first, the engine the fullest; for pods that "
                      "fit one cell the count per node is the same");
  if (f.first.cells.size() > 1 && align)
    f.notes.push_back("the pod spans " + std::to_string(f.first.cells.size()) +
                      " guest cells: the kubelet splits its CPUs and memory over them by its own order (accel fills the "
                      "cells in order), and the Memory Manager then uses those cells only as this group");
  if (!node.pod_scope && node.topology_policy != "none" && f.first.demands.size() > 1)
    f.notes.push_back("topologyManagerScope container: each container is aligned on its own, and CPUs an init "
                      "container released are reused first by the next ones, which can pin their hint "
                      "(kubernetes#123816)");
  if (loose_devices)
    f.notes.push_back("some requested devices report no NUMA node: the kubelet never aligns them with the pod's CPUs");
  if (aligned_memory)
    f.notes.push_back("memory per cell is the guest's RAM less the reservations; the kubelet reads MemTotal, slightly "
                      "less, so a pod sized to the last MiB of a cell can be refused there");
  if (!node.findings.empty())
    f.notes.push_back("the group's kubelet configuration has " + std::to_string(node.findings.size()) +
                      " problem(s) (accel cluster plan lists them); the node is modelled as configured");
  return f;
}

ordered_json PodFitJson(const PodFit& f, const KubeletNode& node) {
  ordered_json j;
  j["schema"] = "accel.cluster-pods/v1";
  j["group"] = f.group;
  j["pod"] = f.pod;
  j["qos"] = QosClassName(f.qos);
  j["kubelet"] = {{"cpuManagerPolicy", node.static_cpu ? "static" : "none"},
                  {"fullPcpusOnly", node.full_pcpus_only},
                  {"reservedSystemCPUs", node.reserved_cpus.ToString()},
                  {"topologyManagerPolicy", node.topology_policy},
                  {"topologyManagerScope", node.pod_scope ? "pod" : "container"},
                  {"memoryManagerPolicy", node.static_memory ? "Static" : "None"},
                  {"maxPods", node.max_pods}};
  j["admitted"] = f.first.admitted;
  j["reason"] = f.first.reason;
  j["message"] = f.first.message;
  j["demands"] = ordered_json::array();
  for (const AdmissionDemand& d : f.first.demands) {
    ordered_json dj;
    dj["container"] = d.container;
    dj["exclusive_cpus"] = d.exclusive_cpus;
    dj["aligned_memory"] = d.aligned_memory;
    dj["memory_mib"] = d.memory_mib;
    dj["hugepages_mib"] = ordered_json::object();
    for (const auto& [kib, mib] : d.hugepages_mib) dj["hugepages_mib"][HugepageName(kib)] = mib;
    dj["devices"] = ordered_json::object();
    for (const auto& [name, count] : d.devices) dj["devices"][name] = count;
    j["demands"].push_back(dj);
  }
  j["cells"] = ordered_json::array();
  for (const CellShare& s : f.first.cells) {
    ordered_json cj;
    cj["cell"] = s.cell;
    cj["cpus"] = s.cpus.ToString();
    cj["memory_mib"] = s.memory_mib;
    cj["hugepages_mib"] = ordered_json::object();
    for (const auto& [kib, mib] : s.hugepages_mib) cj["hugepages_mib"][HugepageName(kib)] = mib;
    cj["devices"] = ordered_json::object();
    for (const auto& [name, count] : s.devices) cj["devices"][name] = count;
    j["cells"].push_back(cj);
  }
  j["per_node"] = f.per_node;
  j["stopped_by"] = {{"reason", f.stopped_reason}, {"message", f.stopped_message}};
  j["notes"] = f.notes;
  return j;
}

}  // namespace accel::cluster
