#include "topology/hwloc_source.h"

#include "common/cpuset.h"
#include "topology/isolated.h"

#include "common/structured_file.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "common/error.h"
#include "topology/classify.h"
#include "topology/sources.h"
#include "topology/sysfs_hugepages.h"

namespace accel::topology {

namespace {

constexpr uint64_t kDefaultBasePageKib = 4;

struct TopologyDeleter {
  void operator()(hwloc_topology_t topo) const { hwloc_topology_destroy(topo); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::string Info(hwloc_obj_t obj, const char* name) {
  const char* value = hwloc_obj_get_info_by_name(obj, name);
  std::string s = value ? value : "";
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool IsPciObject(hwloc_obj_t obj) {
  return obj != nullptr && (obj->type == HWLOC_OBJ_PCI_DEVICE ||
                            (obj->type == HWLOC_OBJ_BRIDGE &&
                             obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI));
}

bool IsHostBridge(hwloc_obj_t obj) {
  return obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

const hwloc_obj_attr_u::hwloc_pcidev_attr_s& PciAttr(hwloc_obj_t obj) {
  return obj->type == HWLOC_OBJ_BRIDGE ? obj->attr->bridge.upstream.pci : obj->attr->pcidev;
}

std::string FunctionAddress(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", pci.domain, pci.bus, pci.dev, pci.func);
  return buf;
}

std::string RootBusAddress(unsigned domain, unsigned bus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "pci%04x:%02x", domain, bus);
  return buf;
}

// Reads one hwloc topology into the model. Single use; not shared.
class HwlocReader {
 public:
  HwlocReader(hwloc_topology_t topo, std::string where, uint64_t base_page_kib)
      : topo_(topo), where_(std::move(where)), base_page_kib_(base_page_kib) {}

  HostTopology Read() {
    HostTopology host;
    host.hostname = Info(hwloc_get_root_obj(topo_), "HostName");
    ReadPackages(&host);
    ReadNodes(&host);
    ReadDistances(&host);
    ReadPci(&host);
    return host;
  }

 private:
  [[noreturn]] void Fail(const std::string& problem) const {
    throw InputError(where_, "", problem);
  }

  std::vector<hwloc_obj_t> Objects(hwloc_obj_type_t type) const {
    std::vector<hwloc_obj_t> objs;
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo_, type, nullptr); o != nullptr;
         o = hwloc_get_next_obj_by_type(topo_, type, o))
      objs.push_back(o);
    return objs;
  }

  // OS indexes when they are all known and unique, else logical indexes.
  static std::vector<int> Ids(const std::vector<hwloc_obj_t>& objs) {
    std::vector<int> ids;
    for (hwloc_obj_t o : objs)
      ids.push_back(o->os_index == HWLOC_UNKNOWN_INDEX || o->os_index > INT_MAX
                        ? -1
                        : static_cast<int>(o->os_index));
    std::vector<int> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    bool usable =
        sorted.empty() ||
        (sorted.front() >= 0 && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    if (!usable)
      for (size_t i = 0; i < objs.size(); ++i) ids[i] = static_cast<int>(objs[i]->logical_index);
    return ids;
  }

  int CpuOf(hwloc_obj_t pu) const {
    if (pu->os_index > CpuSet::kMaxCpu)
      Fail("PU P#" + std::to_string(pu->os_index) + " exceeds the largest CPU number " +
           std::to_string(CpuSet::kMaxCpu));
    return static_cast<int>(pu->os_index);
  }

  void ReadPackages(HostTopology* host) {
    std::vector<hwloc_obj_t> packages = Objects(HWLOC_OBJ_PACKAGE);
    std::vector<int> ids = Ids(packages);
    for (size_t i = 0; i < packages.size(); ++i) {
      package_ids_[packages[i]] = ids[i];
      host->packages.push_back({ids[i], CpuSet(), Info(packages[i], "CPUModel")});
    }
    for (hwloc_obj_t pu : Objects(HWLOC_OBJ_PU)) {
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, pu);
      if (pkg == nullptr) continue;
      for (Package& p : host->packages)
        if (p.id == package_ids_[pkg]) p.cpus.Add(CpuOf(pu));
    }
    std::sort(host->packages.begin(), host->packages.end(),
              [](const Package& a, const Package& b) { return a.id < b.id; });
  }

  // The node a PU belongs to, as Linux would list it: among the nodes local to the PU, a plain
  // DRAM node before HBM/NVM/GPU memory, then the lowest OS index. nullptr when none.
  static hwloc_obj_t HomeNode(hwloc_obj_t pu, const std::vector<hwloc_obj_t>& nodes) {
    hwloc_obj_t best = nullptr;
    auto rank = [](hwloc_obj_t n) {
      bool dram = n->subtype == nullptr || std::string(n->subtype) == "DRAM";
      return std::make_pair(dram ? 0 : 1, n->os_index);
    };
    for (hwloc_obj_t n : nodes)
      if (pu->nodeset != nullptr && hwloc_bitmap_isset(pu->nodeset, n->os_index) &&
          (best == nullptr || rank(n) < rank(best)))
        best = n;
    return best;
  }

  void ReadNodes(HostTopology* host) {
    std::vector<hwloc_obj_t> nodes = Objects(HWLOC_OBJ_NUMANODE);
    std::vector<int> ids = Ids(nodes);
    std::map<hwloc_obj_t, NumaNode> by_obj;
    for (size_t i = 0; i < nodes.size(); ++i) {
      NumaNode& node = by_obj[nodes[i]];
      node.id = ids[i];
      node.memory_kib = nodes[i]->attr->numanode.local_memory / 1024;
      std::vector<HugepagePool> huge;
      const auto& attr = nodes[i]->attr->numanode;
      for (unsigned t = 0; t < attr.page_types_len; ++t)
        huge.push_back(
            {attr.page_types[t].size / 1024, attr.page_types[t].count, attr.page_types[t].count});
      node.pages = BuildPagePools(node.memory_kib, base_page_kib_, huge);
    }
    // Cores: PUs of one node grouped by their Core ancestor (a PU without one is its own core).
    std::map<std::pair<hwloc_obj_t, hwloc_obj_t>, CpuSet> cores;  // (node, core or PU)
    for (hwloc_obj_t pu : Objects(HWLOC_OBJ_PU)) {
      hwloc_obj_t home = HomeNode(pu, nodes);
      if (home == nullptr) continue;
      int cpu = CpuOf(pu);
      by_obj[home].cpus.Add(cpu);
      hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_CORE, pu);
      cores[{home, core != nullptr ? core : pu}].Add(cpu);
    }
    for (const auto& [key, cpus] : cores) by_obj[key.first].cores.push_back(cpus);
    for (auto& [obj, node] : by_obj) {
      std::sort(node.cores.begin(), node.cores.end(),
                [](const CpuSet& a, const CpuSet& b) { return a.First() < b.First(); });
      for (const Package& p : host->packages)
        if (!node.cpus.Empty() && node.cpus.IsSubsetOf(p.cpus)) node.package = p.id;
      host->numa_nodes.push_back(std::move(node));
    }
    std::sort(host->numa_nodes.begin(), host->numa_nodes.end(),
              [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
    for (size_t i = 0; i < nodes.size(); ++i) node_ids_[nodes[i]] = ids[i];
  }

  // Copies the first NUMA latency matrix that covers every node, reordered to our node order.
  void ReadDistances(HostTopology* host) {
    unsigned count = 0;
    unsigned long kind = HWLOC_DISTANCES_KIND_MEANS_LATENCY;
    if (hwloc_distances_get_by_type(topo_, HWLOC_OBJ_NUMANODE, &count, nullptr, kind, 0) != 0 ||
        count == 0)
      return;
    std::vector<hwloc_distances_s*> matrices(count, nullptr);
    if (hwloc_distances_get_by_type(topo_, HWLOC_OBJ_NUMANODE, &count, matrices.data(), kind, 0) !=
        0)
      return;
    size_t n = host->numa_nodes.size();
    bool done = false;
    for (unsigned m = 0; m < count && m < matrices.size(); ++m) {
      hwloc_distances_s* d = matrices[m];
      std::vector<int> column(n, -1);  // our node index -> matrix index
      for (unsigned k = 0; k < d->nbobjs; ++k) {
        auto it = node_ids_.find(d->objs[k]);
        int index = it == node_ids_.end() ? -1 : host->NodeIndex(it->second);
        if (index >= 0) column[index] = static_cast<int>(k);
      }
      bool covers = std::find(column.begin(), column.end(), -1) == column.end();
      for (size_t i = 0; covers && !done && i < n; ++i) {
        std::vector<int>& row = host->numa_nodes[i].distances;
        for (size_t j = 0; j < n; ++j) {
          hwloc_uint64_t v = d->values[column[i] * d->nbobjs + column[j]];
          row.push_back(static_cast<int>(std::min<hwloc_uint64_t>(v, INT_MAX)));
        }
      }
      done = done || covers;
      hwloc_distances_release(topo_, d);
    }
  }

  // The node local to an I/O object: of the nodes of its non-I/O ancestor, the one with CPUs
  // (a package with DRAM + HBM nodes has one), else the only one; -1 when ambiguous.
  int LocalNode(hwloc_obj_t obj, const HostTopology& host) const {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, obj);
    if (anc == nullptr || anc->nodeset == nullptr) return -1;
    std::vector<int> all, with_cpus;
    for (const NumaNode& node : host.numa_nodes) {
      if (!hwloc_bitmap_isset(anc->nodeset, static_cast<unsigned>(node.id))) continue;
      all.push_back(node.id);
      if (!node.cpus.Empty()) with_cpus.push_back(node.id);
    }
    if (with_cpus.size() == 1) return with_cpus[0];
    return with_cpus.empty() && all.size() == 1 ? all[0] : -1;
  }

  PciDevice MakeFunction(hwloc_obj_t obj, const std::string& parent, const HostTopology& host) {
    const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci = PciAttr(obj);
    PciDevice dev;
    dev.address = FunctionAddress(pci);
    dev.parent = parent;
    dev.vendor_id = pci.vendor_id;
    dev.device_id = pci.device_id;
    dev.class_id = pci.class_id;
    dev.role = obj->type == HWLOC_OBJ_BRIDGE
                   ? PciRole::kBridge
                   : ClassifyPci(pci.vendor_id, pci.device_id, pci.class_id,
                                 obj->subtype ? obj->subtype : "");
    dev.numa_node = LocalNode(obj, host);
    double gbps = pci.linkspeed;
    dev.link_gbps = std::isfinite(gbps) && gbps > 0 ? std::round(gbps * 1000) / 1000 : 0;
    dev.name = Info(obj, "PCIDevice");
    return dev;
  }

  // A name when hwloc has no PCIDevice string: the GPU model an OS device reports (NVML,
  // RSMI), else lspci's "<vendor> Device <id>" form, else "".
  static std::string FallbackName(hwloc_obj_t obj) {
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE && !Info(c, "GPUModel").empty())
        return Info(c, "GPUModel");
    std::string vendor = Info(obj, "PCIVendor");
    if (vendor.empty()) return "";
    char id[16];
    std::snprintf(id, sizeof id, "%04x", static_cast<unsigned>(PciAttr(obj).device_id));
    return vendor + " Device " + id;
  }

  static void AddOsDevice(hwloc_obj_t os, PciDevice* dev) {
    if (os->name == nullptr || *os->name == '\0') return;
    std::string name = os->name;
    OsDeviceKind kind = os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ? OsDeviceKind::kRdma
                        : os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK
                            ? OsDeviceKind::kNetdev
                            : ClassifyOsDeviceName(name);
    (kind == OsDeviceKind::kRdma     ? dev->rdma_devices
     : kind == OsDeviceKind::kNetdev ? dev->netdevs
                                     : dev->os_devices)
        .push_back(name);
  }

  void AddSubtree(hwloc_obj_t obj, const std::string& parent, int depth, HostTopology* host) {
    if (depth > kMaxPciDepth)
      Fail("the PCI tree is deeper than " + std::to_string(kMaxPciDepth) + " levels");
    PciDevice dev = MakeFunction(obj, parent, *host);
    // Hand-edited exports may list an address twice; keep the first, as lspci would show one.
    if (!seen_.insert(dev.address).second) return;
    size_t index = host->pci.size();
    std::string address = dev.address;
    host->pci.push_back(std::move(dev));
    for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling) {
      if (IsPciObject(child))
        AddSubtree(child, address, depth + 1, host);
      else if (child->type == HWLOC_OBJ_OS_DEVICE)
        AddOsDevice(child, &host->pci[index]);
    }
    if (host->pci[index].name.empty()) host->pci[index].name = FallbackName(obj);
  }

  // PCI objects whose parent is not a PCI object, grouped under their root bus: the host
  // bridge hwloc found, or one named after the object's own bus when hwloc has none.
  void ReadPci(HostTopology* host) {
    std::map<std::string, std::vector<hwloc_obj_t>> roots;
    for (hwloc_obj_t o = hwloc_get_next_bridge(topo_, nullptr); o;
         o = hwloc_get_next_bridge(topo_, o)) {
      if (IsHostBridge(o)) {
        const auto& down = o->attr->bridge.downstream.pci;
        std::vector<hwloc_obj_t>& children = roots[RootBusAddress(down.domain, down.secondary_bus)];
        for (hwloc_obj_t c = o->io_first_child; c != nullptr; c = c->next_sibling)
          if (IsPciObject(c)) children.push_back(c);
      } else if (!IsPciObject(o->parent) && (o->parent == nullptr || !IsHostBridge(o->parent))) {
        roots[RootBusAddress(PciAttr(o).domain, PciAttr(o).bus)].push_back(o);
      }
    }
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo_, nullptr); o;
         o = hwloc_get_next_pcidev(topo_, o))
      if (!IsPciObject(o->parent) && (o->parent == nullptr || !IsHostBridge(o->parent)))
        roots[RootBusAddress(PciAttr(o).domain, PciAttr(o).bus)].push_back(o);
    for (const auto& [address, children] : roots) {
      PciDevice root;
      root.address = address;
      root.role = PciRole::kHostBridge;
      host->pci.push_back(root);
      std::vector<hwloc_obj_t> sorted = children;
      std::stable_sort(sorted.begin(), sorted.end(), [](hwloc_obj_t a, hwloc_obj_t b) {
        return FunctionAddress(PciAttr(a)) < FunctionAddress(PciAttr(b));
      });
      for (hwloc_obj_t child : sorted) AddSubtree(child, address, 1, host);
    }
  }

  hwloc_topology_t topo_;
  std::string where_;
  uint64_t base_page_kib_;
  std::map<hwloc_obj_t, int> package_ids_;
  std::map<hwloc_obj_t, int> node_ids_;
  std::set<std::string> seen_;  // PCI addresses already added
};

// Marks functions that look like SR-IOV VFs (classify.h) as VFs of the closest preceding
// non-VF sibling of the same vendor, for sources that do not record SR-IOV.
void InferVirtualFunctions(HostTopology* host) {
  std::vector<bool> vf(host->pci.size());
  for (size_t i = 0; i < host->pci.size(); ++i) {
    const PciDevice& d = host->pci[i];
    vf[i] = d.role != PciRole::kHostBridge && d.role != PciRole::kBridge &&
            LooksLikeVirtualFunction(d.vendor_id, d.device_id, d.name);
  }
  for (size_t i = 0; i < host->pci.size(); ++i) {
    if (!vf[i]) continue;
    PciDevice& dev = host->pci[i];
    auto candidate = [&](size_t j) {
      const PciDevice& c = host->pci[j];
      return !vf[j] && c.parent == dev.parent && c.vendor_id == dev.vendor_id && c.role == dev.role;
    };
    int pf = -1;  // siblings are in address order: the last one before, else the first after
    for (size_t j = 0; j < i; ++j)
      if (candidate(j)) pf = static_cast<int>(j);
    for (size_t j = i + 1; pf < 0 && j < host->pci.size(); ++j)
      if (candidate(j)) pf = static_cast<int>(j);
    if (pf < 0) continue;
    dev.physfn = host->pci[pf].address;
    PciDevice& parent = host->pci[pf];
    ++parent.sriov_num_vfs;
    parent.sriov_total_vfs = std::max(parent.sriov_total_vfs, parent.sriov_num_vfs);
  }
}

void ApplyIoFilter(hwloc_topology_t topo) {
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
}

void CheckOrThrow(const HostTopology& host, const std::string& where) {
  if (std::string problem = CheckInvariants(host); !problem.empty())
    throw InputError(where, "", problem, "the topology hwloc reported is inconsistent");
}

// Base page size of an exported machine: ppc64 kernels use 64 KiB pages, others 4 KiB.
uint64_t ExportBasePageKib(hwloc_topology_t topo) {
  std::string arch = Info(hwloc_get_root_obj(topo), "Architecture");
  return arch.rfind("ppc64", 0) == 0 ? 64 : kDefaultBasePageKib;
}

std::string BaseName(const std::string& path) {
  std::string name =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

std::optional<int> ReadSysfsInt(const std::filesystem::path& path) {
  std::ifstream in(path);
  long long value = 0;
  if (!(in >> value) || value < 0 || value > INT_MAX) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

HostTopology LoadLiveHost() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw InputError("live", "", "hwloc cannot initialize");
  TopologyPtr topo(raw);
  ApplyIoFilter(raw);
  hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (hwloc_topology_load(raw) != 0)
    throw InputError("live", "", "hwloc cannot discover this machine's topology");
  long page = sysconf(_SC_PAGESIZE);
  uint64_t base_kib = page > 0 ? static_cast<uint64_t>(page) / 1024 : kDefaultBasePageKib;
  HostTopology host = HwlocReader(raw, "live", base_kib).Read();
  host.source = "live";
  if (host.hostname.empty()) {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    host.hostname = name[0] ? name : "localhost";
  }
  MergeSysfsMemory(ReadSysfsNodeMemory("/sys"), base_kib, &host);
  MergeSysfsSriov("/sys", &host);
  CheckOrThrow(host, "live");
  return host;
}

HostTopology LoadHwlocXml(const std::string& path) {
  return LoadHwlocXmlText(ReadWholeFile(path), path, BaseName(path));
}

namespace {

HostTopology LoadHwlocXmlTextInProcess(const std::string& xml, const std::string& where,
                                       const std::string& fallback_hostname) {
  const char* hint =
      "give an XML file written by lstopo or hwloc-gather-topology; "
      "HWLOC_XML_VERBOSE=1 shows hwloc's reason";
  std::string text = DowngradeHwlocXml(xml);
  if (text.size() >= INT_MAX) throw InputError(where, "", "is too large for hwloc", hint);
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw InputError(where, "", "hwloc cannot initialize");
  TopologyPtr topo(raw);
  ApplyIoFilter(raw);
  // hwloc's buffer length counts the terminating NUL.
  if (hwloc_topology_set_xmlbuffer(raw, text.c_str(), static_cast<int>(text.size() + 1)) != 0 ||
      hwloc_topology_load(raw) != 0)
    throw InputError(where, "", "is not an hwloc XML topology that hwloc can load", hint);
  HostTopology host = HwlocReader(raw, where, ExportBasePageKib(raw)).Read();
  host.source = "hwloc-xml:" + where;
  if (host.hostname.empty())
    host.hostname = fallback_hostname.empty() ? "unknown" : fallback_hostname;
  InferVirtualFunctions(&host);
  CheckOrThrow(host, where);
  return host;
}

}  // namespace

HostTopology LoadHwlocXmlText(const std::string& xml, const std::string& where,
                              const std::string& fallback_hostname) {
  return RunIsolated([&] { return LoadHwlocXmlTextInProcess(xml, where, fallback_hostname); }, where);
}

void MergeSysfsSriov(const std::string& sysfs_root, HostTopology* host) {
  namespace fs = std::filesystem;
  fs::path devices = fs::path(sysfs_root) / "bus/pci/devices";
  for (PciDevice& dev : host->pci) {
    if (dev.role == PciRole::kHostBridge) continue;
    fs::path dir = devices / dev.address;
    if (std::optional<int> total = ReadSysfsInt(dir / "sriov_totalvfs")) {
      dev.sriov_total_vfs = *total;
      dev.sriov_num_vfs = std::min(ReadSysfsInt(dir / "sriov_numvfs").value_or(0), *total);
    }
    std::error_code ec;
    fs::path physfn = fs::read_symlink(dir / "physfn", ec);
    if (!ec && host->FindPci(physfn.filename().string()) != nullptr)
      dev.physfn = physfn.filename().string();
  }
}

}  // namespace accel::topology
