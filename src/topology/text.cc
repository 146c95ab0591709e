#include "topology/text.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "common/strings.h"

namespace accel::topology {

namespace {

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Gib(uint64_t kib) { return Format("%.1f GiB", kib / 1048576.0); }

// "4K", "2M", "1G", "16G".
std::string PageSize(uint64_t kib) {
  if (kib >= 1048576 && kib % 1048576 == 0) return std::to_string(kib / 1048576) + "G";
  if (kib >= 1024 && kib % 1024 == 0) return std::to_string(kib / 1024) + "M";
  return std::to_string(kib) + "K";
}


// Devices an operator places guests on: accelerators, NVSwitches and NICs, not VFs.
bool IsListed(const PciDevice& dev) {
  return !dev.is_vf() &&
         (dev.is_accelerator() || dev.role == PciRole::kNvSwitch || dev.role == PciRole::kNic);
}

// Threads per core when uniform ("6 cores x 2 threads"), else the core count alone.
std::string CoreSummary(const std::vector<CpuSet>& cores) {
  if (cores.empty()) return "no CPUs (memory only)";
  int threads = cores.front().Count();
  bool uniform = std::all_of(cores.begin(), cores.end(),
                             [&](const CpuSet& c) { return c.Count() == threads; });
  std::string s = CountOf(cores.size(), "core", "cores");
  return uniform ? s + " x " + CountOf(threads, "thread", "threads") : s + ", SMT mixed";
}

std::string DeviceLine(const HostTopology& host, const PciDevice& dev) {
  std::string line = "    " + dev.address + "  ";
  std::string role = PciRoleName(dev.role);
  line += role + std::string(role.size() < 9 ? 9 - role.size() : 1, ' ');
  line += "[" + Hex4(dev.vendor_id) + ":" + Hex4(dev.device_id) + "]";
  if (!dev.name.empty()) line += " " + dev.name;
  std::vector<std::string> extras;
  if (!dev.rdma_devices.empty()) extras.push_back("rdma " + JoinStrings(dev.rdma_devices, ","));
  if (!dev.netdevs.empty()) extras.push_back("net " + JoinStrings(dev.netdevs, ","));
  if (!dev.os_devices.empty()) extras.push_back(JoinStrings(dev.os_devices, ","));
  if (dev.sriov_total_vfs > 0) {
    extras.push_back("PF with " + std::to_string(dev.sriov_num_vfs) + " of " +
                     std::to_string(dev.sriov_total_vfs) + " VFs enabled");
  }
  if (dev.link_gbps > 0) extras.push_back(Format("link %.3g GB/s", dev.link_gbps));
  if (!extras.empty()) line += "  (" + JoinStrings(extras, "; ") + ")";
  return line + "\n";
}

// Lists `devices`, folding runs of NVSwitches into one line since they are never assigned.
void ListDevices(const HostTopology& host, const std::vector<const PciDevice*>& devices,
                 std::ostringstream& out) {
  std::vector<const PciDevice*> sorted = devices;
  std::sort(sorted.begin(), sorted.end(),
            [](const PciDevice* a, const PciDevice* b) { return a->address < b->address; });
  std::vector<std::string> switches;
  for (const PciDevice* dev : sorted) {
    if (dev->role == PciRole::kNvSwitch)
      switches.push_back(dev->address);
    else
      out << DeviceLine(host, *dev);
  }
  if (!switches.empty())
    out << "    " << CountOf(switches.size(), "NVSwitch", "NVSwitches") << ": "
        << JoinStrings(switches, ", ") << "\n";
}

// "other PCI functions: 2 storage, 1 other" for what IsListed leaves out (bridges are noise).
std::string OthersSummary(const std::vector<const PciDevice*>& devices) {
  int storage = 0, other = 0;
  for (const PciDevice* dev : devices) {
    if (dev->is_vf()) continue;  // counted on their PF's line
    storage += dev->role == PciRole::kStorage;
    other += dev->role == PciRole::kOther;
  }
  std::vector<std::string> parts;
  if (storage > 0) parts.push_back(std::to_string(storage) + " storage");
  if (other > 0) parts.push_back(std::to_string(other) + " other");
  return parts.empty() ? "" : "    other PCI functions: " + JoinStrings(parts, ", ") + "\n";
}

// "packages 0-23: <model>" lines, one per distinct model.
void WritePackages(const HostTopology& host, std::ostringstream& out) {
  std::vector<std::pair<std::string, CpuSet>> models;  // model -> package ids, first-seen order
  for (const Package& p : host.packages) {
    std::string model = p.model.empty() ? "(CPU model unknown)" : p.model;
    auto it =
        std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.first == model; });
    if (it == models.end()) it = models.insert(models.end(), {model, CpuSet()});
    if (p.id <= 65535) it->second.Add(p.id);
  }
  for (const auto& [model, ids] : models)
    out << "  " << (ids.Count() == 1 ? "package " : "packages ") << ids.ToString() << ": " << model
        << "\n";
}

void WriteHeader(const HostTopology& host, std::ostringstream& out) {
  size_t cores = 0, accel = 0, nics = 0, rdma = 0;
  uint64_t memory = 0;
  for (const NumaNode& n : host.numa_nodes) {
    cores += n.cores.size();
    memory += n.memory_kib;
  }
  for (const PciDevice& d : host.pci) {
    if (d.is_vf()) continue;
    accel += d.is_accelerator();
    nics += d.role == PciRole::kNic;
    rdma += d.role == PciRole::kNic && d.is_rdma();
  }
  out << "Host " << host.hostname << "   (source: " << host.source << ")\n";
  out << "  " << CountOf(host.packages.size(), "package", "packages") << ", "
      << CountOf(host.numa_nodes.size(), "NUMA node", "NUMA nodes") << ", "
      << CountOf(host.AllCpus().Count(), "CPU", "CPUs") << " in " << CountOf(cores, "core", "cores")
      << ", " << Gib(memory) << " memory\n  " << CountOf(accel, "accelerator", "accelerators")
      << ", " << CountOf(nics, "NIC", "NICs") << " (" << rdma << " with RDMA)\n";
  WritePackages(host, out);
  CpuSet package_cpus;
  for (const Package& p : host.packages) package_cpus = package_cpus.Union(p.cpus);
  CpuSet homeless = package_cpus.Minus(host.AllCpus());
  if (!homeless.Empty())
    out << "  CPUs " << homeless.ToString() << " are in no NUMA node this host may use "
        << "(not placeable)\n";
}

// "memory 31.0 GiB (30.2 GiB free in 4K pages); hugepages 1G: 16 of 16 free" (empty pools omitted)
std::string MemoryLine(const NumaNode& node) {
  std::string line = "memory " + Gib(node.memory_kib);
  if (node.pages.empty()) return line;
  const HugepagePool& base = node.pages.front();
  line += " (" + Gib(base.free * base.size_kib) + " free in " + PageSize(base.size_kib) + " pages)";
  std::vector<std::string> pools;
  for (size_t i = 1; i < node.pages.size(); ++i) {
    const HugepagePool& p = node.pages[i];
    if (p.total == 0) continue;  // a size the kernel supports but nobody reserved
    pools.push_back(PageSize(p.size_kib) + ": " + std::to_string(p.free) + " of " +
                    std::to_string(p.total) + " free");
  }
  if (!pools.empty()) line += "; hugepages " + JoinStrings(pools, ", ");
  else if (node.pages.size() > 1) line += "; no hugepages reserved";
  return line;
}

void WriteNode(const HostTopology& host, const NumaNode& node, std::ostringstream& out) {
  out << "\nNUMA node " << node.id;
  if (node.package >= 0) out << " (package " << node.package << ")";
  if (node.cpus.Empty())
    out << ": no CPUs (memory only)\n";
  else
    out << ": " << CountOf(node.cpus.Count(), "CPU", "CPUs") << " " << node.cpus.ToString() << " ("
        << CoreSummary(node.cores) << ")\n";
  out << "    " << MemoryLine(node) << "\n";
  std::vector<const PciDevice*> local, listed;
  for (const PciDevice& d : host.pci)
    if (d.numa_node == node.id) local.push_back(&d);
  for (const PciDevice* d : local)
    if (IsListed(*d)) listed.push_back(d);
  ListDevices(host, listed, out);
  out << OthersSummary(local);
}

void WriteDistances(const HostTopology& host, std::ostringstream& out) {
  if (host.numa_nodes.size() < 2 || host.numa_nodes.front().distances.empty()) return;
  size_t width = 3;
  for (const NumaNode& n : host.numa_nodes) {
    width = std::max(width, std::to_string(n.id).size() + 1);
    for (int d : n.distances) width = std::max(width, std::to_string(d).size() + 1);
  }
  auto cell = [&](const std::string& s) { return std::string(width - s.size(), ' ') + s; };
  out << "\nNUMA distances (10 = local)\n  node";
  for (const NumaNode& n : host.numa_nodes) out << cell(std::to_string(n.id));
  out << "\n";
  for (const NumaNode& n : host.numa_nodes) {
    std::string id = std::to_string(n.id);
    out << "  " << std::string(4 - std::min<size_t>(4, id.size()), ' ') << id;
    for (int d : n.distances) out << cell(std::to_string(d));
    out << "\n";
  }
}

void WriteUnknownNode(const HostTopology& host, std::ostringstream& out) {
  std::vector<const PciDevice*> unknown, listed;
  for (const PciDevice& d : host.pci)
    if (d.numa_node < 0 && d.role != PciRole::kHostBridge) unknown.push_back(&d);
  for (const PciDevice* d : unknown)
    if (IsListed(*d)) listed.push_back(d);
  if (listed.empty() && OthersSummary(unknown).empty()) return;
  out << "\nPCI devices not local to a single NUMA node\n";
  ListDevices(host, listed, out);
  out << OthersSummary(unknown);
}

}  // namespace

std::string ToText(const HostTopology& host) {
  std::ostringstream out;
  WriteHeader(host, out);
  for (const NumaNode& node : host.numa_nodes) WriteNode(host, node, out);
  WriteDistances(host, out);
  WriteUnknownNode(host, out);
  return out.str();
}

}  // namespace accel::topology
