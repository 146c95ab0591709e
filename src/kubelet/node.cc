#include "kubelet/node.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>

#include "common/error.h"
#include "kubelet/check.h"
#include "kubelet/pod.h"
#include "kubelet/settings.h"

namespace accel::kubelet {

namespace {

using nlohmann::json;

[[noreturn]] void ConfigFail(const std::string& field, const std::string& problem, const std::string& fix) {
  throw InputError("kubelet configuration", field, problem, fix);
}

// A reservation's milli-units (0 when absent; the reader refused values that are not quantities).
int64_t ReservedMilli(const std::map<std::string, QuantitySetting>& reserved, const std::string& resource) {
  auto it = reserved.find(resource);
  return it == reserved.end() ? 0 : it->second.milli.value_or(0);
}

std::string PciAddress(int index) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", (index >> 16) & 0xffff, (index >> 8) & 0xff, (index >> 3) & 0x1f,
                index & 7);
  return buf;
}

}  // namespace

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

KubeletNode KubeletNodeFrom(const GuestLayout& layout, const std::vector<GuestHugepagePool>& hugepages,
                            const json& config, std::vector<NodeResource> resources, const KubernetesVersion& version) {
  std::vector<KubeletFinding> problems;
  const KubeletSettings s = ReadKubeletSettings(config, &problems);
  if (!problems.empty()) ConfigFail(problems.front().field, problems.front().problem, problems.front().fix);
  KubeletNode n;
  n.layout = layout;
  n.hugepages = hugepages;
  const std::vector<GuestCellLayout> cells = layout.cells_or_one();
  const size_t k = cells.size();
  for (NodeResource& r : resources) r.per_cell.resize(k, 0);
  n.resources = std::move(resources);

  if (s.cpu_manager_policy != "none" && !s.static_cpu())
    ConfigFail("cpuManagerPolicy", "'" + s.cpu_manager_policy + "' is not a CPU Manager policy", "none or static");
  n.static_cpu = s.static_cpu();
  n.full_pcpus_only = n.static_cpu && s.CpuOption("full-pcpus-only");
  n.topology_policy = s.topology_manager_policy;
  static const std::set<std::string> kTopo = {"none", "best-effort", "restricted", "single-numa-node"};
  if (!kTopo.count(n.topology_policy))
    ConfigFail("topologyManagerPolicy", "'" + n.topology_policy + "' is not a Topology Manager policy",
               "none, best-effort, restricted or single-numa-node");
  if (s.topology_manager_scope != "container" && !s.pod_scope())
    ConfigFail("topologyManagerScope", "'" + s.topology_manager_scope + "' is not a scope", "container or pod");
  n.pod_scope = s.pod_scope();
  if (s.memory_manager_policy != "None" && !s.static_memory())
    ConfigFail("memoryManagerPolicy", "'" + s.memory_manager_policy + "' is not a Memory Manager policy", "None or Static");
  n.static_memory = s.static_memory();
  n.max_pods = s.max_pods;

  // CPUs: reservedSystemCPUs replaces the cpu of kubeReserved and systemReserved (kubelet server.go).
  CpuSet all;
  for (int v = 0; v < layout.vcpus; ++v) all.Add(v);
  int64_t reserved_milli = 0;
  if (s.reserved_system_cpus) {
    n.reserved_cpus = s.reserved_system_cpus->Intersect(all);
    reserved_milli = 1000LL * n.reserved_cpus.Count();
  } else {
    reserved_milli = ReservedMilli(s.kube_reserved, "cpu") + ReservedMilli(s.system_reserved, "cpu");
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
  if (s.eviction_hard_set) {
    eviction = 0;
    if (auto it = s.eviction_hard.find("memory.available"); it != s.eviction_hard.end()) {
      if (it->second.percent()) {
        double pct = 0;
        std::sscanf(it->second.text.c_str(), "%lf", &pct);  // the reader checked 0-100%
        eviction = static_cast<uint64_t>(static_cast<double>(layout.memory_mib) * pct / 100.0 + 0.999999);
      } else {
        eviction = MilliBytesToMib(it->second.milli.value_or(0));
      }
    }
  }
  const uint64_t reserved_mib = MilliBytesToMib(ReservedMilli(s.kube_reserved, "memory")) +
                                MilliBytesToMib(ReservedMilli(s.system_reserved, "memory")) + eviction;
  n.allocatable_memory_mib = layout.memory_mib > reserved_mib + pools_mib ? layout.memory_mib - reserved_mib - pools_mib : 0;
  for (auto& [kib, mib] : n.allocatable_hugepages_mib) {
    const std::string name = HugepageResourceName(kib);
    const uint64_t r = MilliBytesToMib(ReservedMilli(s.kube_reserved, name)) +
                       MilliBytesToMib(ReservedMilli(s.system_reserved, name));
    mib = mib > r ? mib - r : 0;
  }
  n.cell_memory_mib.resize(k);
  n.cell_hugepages_mib = cell_pools;
  for (size_t i = 0; i < k; ++i) {
    uint64_t pool = 0;
    for (const auto& [kib, mib] : cell_pools[i]) pool += mib;
    n.cell_memory_mib[i] = cells[i].memory_mib > pool ? cells[i].memory_mib - pool : 0;
  }
  if (n.static_memory)
    for (const ReservedMemoryEntry& e : s.reserved_memory) {
      const std::string where = "reservedMemory[" + std::to_string(e.index) + "]";
      if (e.numa_node < 0 || static_cast<size_t>(e.numa_node) >= k)
        ConfigFail(where + ".numaNode", "NUMA node " + std::to_string(e.numa_node) + " does not exist in the guest",
                   "use 0-" + std::to_string(k - 1));
      const size_t cell = static_cast<size_t>(e.numa_node);
      for (const auto& [type, q] : e.limits) {
        const uint64_t mib = MilliBytesToMib(q.milli.value_or(0));
        uint64_t* from = nullptr;
        if (type == "memory") from = &n.cell_memory_mib[cell];
        else if (const uint64_t kib = HugepageKib(type); kib > 0) from = &n.cell_hugepages_mib[cell][kib];
        else ConfigFail(where + ".limits." + type, "only memory and hugepages-<size> can be reserved", "");
        if (mib > *from)
          ConfigFail(where + ".limits." + type, "reserves more than guest cell " + std::to_string(cell) + " has",
                     "the kubelet will not start: reserve less");
        *from -= mib;
      }
    }
  n.findings = CheckKubeletConfig(config, layout, hugepages, version);
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

}  // namespace accel::kubelet
