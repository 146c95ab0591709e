#include "topology/host.h"

#include "topology/classify.h"

#include <cmath>
#include <map>
#include <string_view>

namespace accel::topology {

namespace {

struct RoleName {
  PciRole role;
  const char* name;
};

constexpr RoleName kRoleNames[] = {
    {PciRole::kHostBridge, "host_bridge"},
    {PciRole::kBridge, "bridge"},
    {PciRole::kGpu, "gpu"},
    {PciRole::kHpu, "hpu"},
    {PciRole::kNvSwitch, "nvswitch"},
    {PciRole::kNic, "nic"},
    {PciRole::kStorage, "storage"},
    {PciRole::kOther, "other"},
};

bool IsLowerHex(std::string_view s, size_t min_digits, size_t max_digits) {
  if (s.size() < min_digits || s.size() > max_digits) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// "dddd:bb" (domain: 4-8 digits; Linux VMD domains have 5).
bool IsDomainBus(std::string_view s) {
  size_t colon = s.find(':');
  return colon != std::string_view::npos && IsLowerHex(s.substr(0, colon), 4, 8) &&
         IsLowerHex(s.substr(colon + 1), 2, 2);
}

std::string NodeLabel(const HostTopology& host, size_t index) {
  return "numa_nodes[" + std::to_string(index) + "] (node " +
         std::to_string(host.numa_nodes[index].id) + ")";
}

std::string PciLabel(size_t index, const PciDevice& dev) {
  return "pci[" + std::to_string(index) + "] (" + dev.address + ")";
}

std::string CheckPackages(const HostTopology& host) {
  CpuSet seen;
  for (size_t i = 0; i < host.packages.size(); ++i) {
    const Package& pkg = host.packages[i];
    std::string label = "packages[" + std::to_string(i) + "]";
    if (pkg.id < 0) return label + ".id: " + std::to_string(pkg.id) + " is negative";
    if (i > 0 && pkg.id <= host.packages[i - 1].id)
      return label + ".id: package ids must be unique and ascending, but " +
             std::to_string(pkg.id) + " follows " + std::to_string(host.packages[i - 1].id);
    CpuSet dup = seen.Intersect(pkg.cpus);
    if (!dup.Empty())
      return label + ".cpus: CPU " + std::to_string(dup.First()) +
             " is already in an earlier package";
    seen = seen.Union(pkg.cpus);
  }
  return "";
}

std::string CheckCores(const NumaNode& node, const std::string& label) {
  CpuSet covered;
  int last_first = -1;
  for (size_t c = 0; c < node.cores.size(); ++c) {
    const CpuSet& core = node.cores[c];
    std::string core_label = label + ".cores[" + std::to_string(c) + "]";
    if (core.Empty()) return core_label + ": an SMT sibling set is empty";
    if (core.Intersects(covered))
      return core_label + ": CPU " + std::to_string(core.Intersect(covered).First()) +
             " is in two sibling sets";
    if (core.First() <= last_first)
      return core_label + ": sibling sets must be ordered by their first CPU";
    last_first = core.First();
    covered = covered.Union(core);
  }
  if (covered != node.cpus)
    return label + ".cores: the sibling sets cover \"" + covered.ToString() +
           "\" but the node's cpus are \"" + node.cpus.ToString() + "\"";
  return "";
}

std::string CheckPages(const NumaNode& node, const std::string& label) {
  for (size_t p = 0; p < node.pages.size(); ++p) {
    const HugepagePool& pool = node.pages[p];
    std::string pool_label = label + ".hugepages[" + std::to_string(p) + "]";
    if (pool.size_kib == 0) return pool_label + ".size_kib: a page size must be positive";
    if (p > 0 && pool.size_kib <= node.pages[p - 1].size_kib)
      return pool_label + ".size_kib: pools must be ascending by size and unique, but " +
             std::to_string(pool.size_kib) + " follows " +
             std::to_string(node.pages[p - 1].size_kib);
    if (pool.free > pool.total)
      return pool_label + ".free: " + std::to_string(pool.free) + " free pages exceed the " +
             std::to_string(pool.total) + " in the pool";
  }
  return "";
}

std::string CheckNode(const HostTopology& host, size_t index, std::map<int, size_t>* cpu_owner) {
  const NumaNode& node = host.numa_nodes[index];
  std::string label = NodeLabel(host, index);
  if (node.id < 0) return label + ".id: node ids must not be negative";
  if (index > 0 && node.id <= host.numa_nodes[index - 1].id)
    return label + ".id: node ids must be unique and ascending, but " + std::to_string(node.id) +
           " follows " + std::to_string(host.numa_nodes[index - 1].id);
  for (int cpu : node.cpus.ToVector()) {
    auto [it, inserted] = cpu_owner->emplace(cpu, index);
    if (!inserted)
      return label + ".cpus: CPU " + std::to_string(cpu) + " is in both " +
             NodeLabel(host, it->second) + " and " + NodeLabel(host, index) +
             "; a CPU belongs to one NUMA node";
  }
  if (node.package != -1) {
    const Package* pkg = nullptr;
    for (const Package& p : host.packages)
      if (p.id == node.package) pkg = &p;
    if (pkg == nullptr)
      return label + ".package: no package has id " + std::to_string(node.package);
    if (!node.cpus.IsSubsetOf(pkg->cpus))
      return label + ".package: CPUs \"" + node.cpus.Minus(pkg->cpus).ToString() +
             "\" are not in package " + std::to_string(node.package);
  }
  if (std::string err = CheckCores(node, label); !err.empty()) return err;
  if (std::string err = CheckPages(node, label); !err.empty()) return err;
  if (!node.distances.empty() && node.distances.size() != host.numa_nodes.size())
    return label + ".distances: has " + std::to_string(node.distances.size()) +
           " entries but the host has " + std::to_string(host.numa_nodes.size()) + " nodes";
  for (int d : node.distances)
    if (d < 0) return label + ".distances: distance " + std::to_string(d) + " is negative";
  return "";
}

std::string CheckSriov(const HostTopology& host, size_t index, const PciDevice& dev) {
  std::string label = PciLabel(index, dev);
  if (dev.sriov_total_vfs < 0 || dev.sriov_num_vfs < 0)
    return label + ": SR-IOV VF counts must not be negative";
  if (dev.sriov_num_vfs > dev.sriov_total_vfs)
    return label + ".sriov_num_vfs: " + std::to_string(dev.sriov_num_vfs) +
           " enabled VFs exceed sriov_total_vfs " + std::to_string(dev.sriov_total_vfs);
  if (!dev.is_vf()) return "";
  const PciDevice* pf = host.FindPci(dev.physfn);
  if (pf == nullptr || pf->role == PciRole::kHostBridge)
    return label + ".physfn: no PCI function has address \"" + dev.physfn + "\"";
  if (pf->is_vf()) return label + ".physfn: " + dev.physfn + " is itself a virtual function";
  return "";
}

std::string CheckPci(const HostTopology& host) {
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < host.pci.size(); ++i) {
    const PciDevice& dev = host.pci[i];
    std::string label = PciLabel(i, dev);
    bool host_bridge = dev.role == PciRole::kHostBridge;
    if (host_bridge ? !IsPciRootBusName(dev.address) : !IsPciFunctionAddress(dev.address))
      return "pci[" + std::to_string(i) + "].address: \"" + dev.address + "\" is not " +
             (host_bridge ? "a root bus name like pci0000:00"
                          : "a PCI address like 0000:18:00.0 (lower-case hex)");
    if (!position.emplace(dev.address, i).second) return label + ".address: appears twice";
    if (host_bridge != dev.parent.empty())
      return label + ".parent: " +
             (host_bridge ? "a host bridge has no parent" : "only host bridges have no parent");
    if (!host_bridge) {
      auto parent = position.find(dev.parent);
      if (parent == position.end())
        return label + ".parent: \"" + dev.parent + "\" is not listed before it";
      PciRole parent_role = host.pci[parent->second].role;
      if (parent_role != PciRole::kHostBridge && parent_role != PciRole::kBridge)
        return label + ".parent: " + dev.parent + " is not a bridge or host bridge";
    }
    if (dev.numa_node != -1 && host.NodeIndex(dev.numa_node) < 0)
      return label + ".numa_node: no NUMA node has id " + std::to_string(dev.numa_node);
    if (!std::isfinite(dev.link_gbps) || dev.link_gbps < 0)
      return label + ".link_gbps: must be a non-negative number";
  }
  for (size_t i = 0; i < host.pci.size(); ++i)
    if (std::string err = CheckSriov(host, i, host.pci[i]); !err.empty()) return err;
  return "";
}

}  // namespace

bool IsPciRootBusName(std::string_view s) { return s.substr(0, 3) == "pci" && IsDomainBus(s.substr(3)); }

bool IsPciFunctionAddress(std::string_view s) {
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos || dot < 3 || s.size() != dot + 2) return false;
  char fn = s[dot + 1];
  std::string_view dev = s.substr(dot - 2, 2);
  return s[dot - 3] == ':' && IsDomainBus(s.substr(0, dot - 3)) && IsLowerHex(dev, 2, 2) &&
         dev <= "1f" && fn >= '0' && fn <= '7';
}

const char* PciRoleName(PciRole role) {
  for (const RoleName& r : kRoleNames)
    if (r.role == role) return r.name;
  return "other";
}

std::optional<PciRole> ParsePciRole(const std::string& name) {
  for (const RoleName& r : kRoleNames)
    if (name == r.name) return r.role;
  return std::nullopt;
}

int HostTopology::NodeIndex(int id) const {
  for (size_t i = 0; i < numa_nodes.size(); ++i)
    if (numa_nodes[i].id == id) return static_cast<int>(i);
  return -1;
}

const PciDevice* HostTopology::FindPci(const std::string& address) const {
  for (const PciDevice& dev : pci)
    if (dev.address == address) return &dev;
  return nullptr;
}

CpuSet HostTopology::AllCpus() const {
  CpuSet all;
  for (const NumaNode& node : numa_nodes) all = all.Union(node.cpus);
  return all;
}

std::string AcceleratorVendor(const PciDevice& dev) {
  if (!dev.is_accelerator()) return "";
  switch (dev.vendor_id) {
    case kVendorNvidia:
      return "nvidia";
    case kVendorAmd:
      return "amd";
    case kVendorHabana:
      return "habana";
    default:
      return "";
  }
}

std::string CheckInvariants(const HostTopology& host) {
  if (host.hostname.empty()) return "hostname: is empty; claims are stored under it";
  if (std::string err = CheckPackages(host); !err.empty()) return err;
  std::map<int, size_t> cpu_owner;
  for (size_t i = 0; i < host.numa_nodes.size(); ++i)
    if (std::string err = CheckNode(host, i, &cpu_owner); !err.empty()) return err;
  return CheckPci(host);
}

}  // namespace accel::topology
