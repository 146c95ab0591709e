#include "support/fake_sysfs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

namespace accel::testing {

namespace {

namespace fs = std::filesystem;
using topology::HostTopology;
using topology::PciDevice;
using topology::PciRole;

void WriteText(const fs::path& path, const std::string& text) {
  // Most files land in a directory that already exists: try first, create it only when needed.
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    out.clear();
    out.open(path, std::ios::binary | std::ios::trunc);
  }
  out << text;
  out.close();
  if (!out) throw std::runtime_error("fake sysfs: cannot write " + path.string());
}

// A relative symlink at `link` pointing at `target` (relative to the link's directory), as
// sysfs has them; an existing link or file is replaced.
void Symlink(const fs::path& target, const fs::path& link) {
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  fs::remove(link, ec);
  fs::create_symlink(target, link, ec);
  if (ec) throw std::runtime_error("fake sysfs: cannot link " + link.string() + ": " + ec.message());
}

void MakeDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("fake sysfs: cannot create " + dir.string() + ": " + ec.message());
}

std::string Hex(unsigned value, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*x\n", digits, value);
  return buf;
}

// One PCIe link setting: the sysfs speed string and lane count.
struct Link {
  double gts = 0;      // GT/s per lane
  const char* text;    // current_link_speed as Linux prints it
  int width = 0;
};

// hwloc's GB/s for a link (topology-linux.c): GT/s × encoding efficiency × lanes / 8.
double LinkGbps(double gts, int width) {
  double encoding = gts <= 5.0 ? 0.8 : gts < 64 ? 128.0 / 130.0 : 242.0 / 256.0;
  return std::round(gts * encoding * width / 8 * 1000) / 1000;
}

// The Gen/width pair whose bandwidth is `gbps`: an exact match (to hwloc's 3 decimals)
// preferring wide links at low generations (Gen4 x16 over Gen5 x8), else the closest.
Link LinkFor(double gbps) {
  static constexpr struct { double gts; const char* text; } kSpeeds[] = {
      {2.5, "2.5 GT/s PCIe"}, {5, "5.0 GT/s PCIe"},   {8, "8.0 GT/s PCIe"},
      {16, "16.0 GT/s PCIe"}, {32, "32.0 GT/s PCIe"}, {64, "64.0 GT/s PCIe"}};
  static constexpr int kWidths[] = {16, 8, 4, 2, 1, 32};
  Link best{};
  double best_error = INFINITY;
  for (int width : kWidths)
    for (const auto& speed : kSpeeds) {
      double error = std::fabs(LinkGbps(speed.gts, width) - gbps);
      if (error < 0.0015) return {speed.gts, speed.text, width};
      if (error < best_error) {
        best_error = error;
        best = {speed.gts, speed.text, width};
      }
    }
  return best;
}

// Directory of every PCI object relative to ROOT/sys/devices, e.g.
// "pci0000:15/0000:15:01.0/0000:16:00.0".
std::map<std::string, std::string> PciPaths(const HostTopology& host) {
  std::map<std::string, std::string> paths;
  std::map<std::string, const PciDevice*> by_address;
  for (const PciDevice& dev : host.pci) by_address[dev.address] = &dev;
  for (const PciDevice& dev : host.pci) {
    // Walk up to the host bridge; parents exist (host.h invariants) but guard loops anyway.
    std::vector<std::string> chain;
    const PciDevice* d = &dev;
    while (d != nullptr && chain.size() <= host.pci.size()) {
      chain.push_back(d->address);
      auto it = d->parent.empty() ? by_address.end() : by_address.find(d->parent);
      d = it == by_address.end() ? nullptr : it->second;
    }
    std::string path;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) path += (path.empty() ? "" : "/") + *it;
    paths[dev.address] = path;
  }
  return paths;
}

// "nvme0n1" -> "nvme0"; "" when the name is not an NVMe namespace.
std::string NvmeController(const std::string& name) {
  if (name.rfind("nvme", 0) != 0) return "";
  size_t n = name.find('n', 4);
  return n == std::string::npos ? "" : name.substr(0, n);
}

// OS devices Linux shows under the PCI function's directory; others (nvml*, cuda*) have no
// sysfs node and are left out.
void WriteOsDevice(const fs::path& sys, const std::string& pci_rel, const std::string& name) {
  fs::path dir = sys / "devices" / pci_rel;
  if (name.rfind("card", 0) == 0 || name.rfind("renderD", 0) == 0) {
    WriteText(dir / "drm" / name / "dev", "226:0\n");
    Symlink(fs::path("../../devices") / pci_rel / "drm" / name, sys / "class/drm" / name);
  } else if (name.rfind("accel", 0) == 0) {
    WriteText(dir / "accel" / name / "dev", "261:0\n");
    Symlink(fs::path("../../devices") / pci_rel / "accel" / name, sys / "class/accel" / name);
  } else if (std::string ctrl = NvmeController(name); !ctrl.empty()) {
    WriteText(dir / "nvme" / ctrl / name / "size", "3750748848\n");
    Symlink(fs::path("../../devices") / pci_rel / "nvme" / ctrl, sys / "class/nvme" / ctrl);
    Symlink(fs::path("../devices") / pci_rel / "nvme" / ctrl / name, sys / "block" / name);
  }
}

void WriteRdmaDevice(const fs::path& sys, const std::string& pci_rel, const std::string& dev,
                     const std::vector<std::string>& netdevs, const FakeSysfsOptions& options) {
  fs::path dir = sys / "devices" / pci_rel / "infiniband" / dev;
  fs::path port = dir / "ports/1";
  bool active = options.rdma_port_state.find("ACTIVE") != std::string::npos;
  bool ethernet = options.rdma_link_layer == "Ethernet";
  WriteText(dir / "node_type", "1: CA\n");
  WriteText(dir / "node_guid", "b83f:d203:00a1:0001\n");
  WriteText(dir / "fw_ver", "28.39.1002\n");
  WriteText(port / "state", options.rdma_port_state + "\n");
  WriteText(port / "phys_state", active ? "5: LinkUp\n" : "3: Disabled\n");
  WriteText(port / "link_layer", options.rdma_link_layer + "\n");
  WriteText(port / "rate", options.rdma_rate + "\n");
  WriteText(port / "lid", ethernet ? "0x0\n" : "0x1\n");
  WriteText(port / "gids/0", "fe80:0000:0000:0000:ba3f:d2ff:fea1:0001\n");
  WriteText(port / "gid_attrs/types/0", "IB/RoCE v1\n");
  if (ethernet) {
    // RoCE: GID 1 is the v2 twin of GID 0; both name the port's netdev.
    WriteText(port / "gids/1", "fe80:0000:0000:0000:ba3f:d2ff:fea1:0001\n");
    WriteText(port / "gid_attrs/types/1", "RoCE v2\n");
    if (!netdevs.empty()) {
      WriteText(port / "gid_attrs/ndevs/0", netdevs.front() + "\n");
      WriteText(port / "gid_attrs/ndevs/1", netdevs.front() + "\n");
    }
  }
  Symlink("../../../" + fs::path(pci_rel).filename().string(), dir / "device");
  Symlink(fs::path("../../devices") / pci_rel / "infiniband" / dev, sys / "class/infiniband" / dev);
}

void WriteNetdev(const fs::path& sys, const std::string& pci_rel, const std::string& name,
                 bool ipoib, int index) {
  fs::path dir = sys / "devices" / pci_rel / "net" / name;
  char mac[64];
  std::snprintf(mac, sizeof mac, "b8:3f:d2:%02x:%02x:%02x\n", (index >> 16) & 0xff,
                (index >> 8) & 0xff, index & 0xff);
  WriteText(dir / "address", ipoib ? "00:00:10:29:fe:80:00:00:00:00:00:00:b8:3f:d2:ff:fe:a1:00:01\n"
                                   : std::string(mac));
  WriteText(dir / "type", ipoib ? "32\n" : "1\n");
  WriteText(dir / "operstate", "up\n");
  WriteText(dir / "mtu", ipoib ? "4092\n" : "9000\n");
  WriteText(dir / "ifindex", std::to_string(index + 2) + "\n");
  Symlink("../../../" + fs::path(pci_rel).filename().string(), dir / "device");
  Symlink(fs::path("../../devices") / pci_rel / "net" / name, sys / "class/net" / name);
}

// BAR0 (16 MiB registers) for every endpoint; accelerators also get a large BAR1 the way GPUs
// expose their memory aperture. Linux prints 13 lines (6 BARs, ROM, 6 IOV BARs).
std::string Resource(const PciDevice& dev, int index) {
  uint64_t base = 0x20000000000ull + static_cast<uint64_t>(index) * 0x4000000000ull;
  std::string text;
  char line[96];
  auto add = [&](uint64_t start, uint64_t size, uint64_t flags) {
    std::snprintf(line, sizeof line, "0x%016llx 0x%016llx 0x%016llx\n",
                  static_cast<unsigned long long>(size ? start : 0),
                  static_cast<unsigned long long>(size ? start + size - 1 : 0),
                  static_cast<unsigned long long>(size ? flags : 0));
    text += line;
  };
  add(base, 16ull << 20, 0x40200);
  add(base + (16ull << 30), dev.is_accelerator() ? 64ull << 30 : 0, 0x14220c);
  for (int i = 2; i < 13; ++i) add(0, 0, 0);
  return text;
}

void WritePci(const HostTopology& host, const fs::path& sys, const FakeSysfsOptions& options) {
  std::map<std::string, std::string> paths = PciPaths(host);
  std::map<std::string, int> vf_index;  // PF address -> VFs linked so far
  int net_index = 0;
  for (size_t i = 0; i < host.pci.size(); ++i) {
    const PciDevice& dev = host.pci[i];
    const std::string& rel = paths[dev.address];
    fs::path dir = sys / "devices" / rel;
    MakeDir(dir);
    if (dev.role == PciRole::kHostBridge) continue;
    WriteText(dir / "class", Hex(static_cast<unsigned>(dev.class_id) << 8, 6));
    WriteText(dir / "vendor", Hex(dev.vendor_id, 4));
    WriteText(dir / "device", Hex(dev.device_id, 4));
    WriteText(dir / "subsystem_vendor", Hex(dev.vendor_id, 4));
    WriteText(dir / "subsystem_device", Hex(dev.device_id, 4));
    WriteText(dir / "numa_node", std::to_string(dev.numa_node) + "\n");
    WriteText(dir / "resource", Resource(dev, static_cast<int>(i)));
    if (dev.link_gbps > 0) {
      Link link = LinkFor(dev.link_gbps);
      WriteText(dir / "current_link_speed", std::string(link.text) + "\n");
      WriteText(dir / "current_link_width", std::to_string(link.width) + "\n");
      WriteText(dir / "max_link_speed", std::string(link.text) + "\n");
      WriteText(dir / "max_link_width", std::to_string(link.width) + "\n");
    }
    if (dev.sriov_total_vfs > 0) {
      WriteText(dir / "sriov_totalvfs", std::to_string(dev.sriov_total_vfs) + "\n");
      WriteText(dir / "sriov_numvfs", std::to_string(dev.sriov_num_vfs) + "\n");
      WriteText(dir / "sriov_drivers_autoprobe", "1\n");
    }
    if (dev.is_vf() && paths.count(dev.physfn)) {
      fs::path pf_dir = sys / "devices" / paths[dev.physfn];
      Symlink(pf_dir.lexically_relative(dir), dir / "physfn");
      Symlink(dir.lexically_relative(pf_dir),
              pf_dir / ("virtfn" + std::to_string(vf_index[dev.physfn]++)));
    }
    Symlink(fs::path("../../../devices") / rel, sys / "bus/pci/devices" / dev.address);
    for (const std::string& rdma : dev.rdma_devices)
      WriteRdmaDevice(sys, rel, rdma, dev.netdevs, options);
    bool ipoib = dev.is_rdma() && options.rdma_link_layer == "InfiniBand";
    for (const std::string& net : dev.netdevs) WriteNetdev(sys, rel, net, ipoib, net_index++);
    for (const std::string& os : dev.os_devices) WriteOsDevice(sys, rel, os);
  }
}

std::string NumaMeminfo(const topology::NumaNode& node) {
  uint64_t free_kib = node.pages.empty() ? 0 : node.pages[0].free * node.pages[0].size_kib;
  uint64_t huge_total = 0, huge_free = 0;
  for (size_t p = 1; p < node.pages.size(); ++p)
    if (node.pages[p].size_kib == 2048) {
      huge_total = node.pages[p].total;
      huge_free = node.pages[p].free;
    }
  std::string n = "Node " + std::to_string(node.id) + " ";
  auto kb = [](uint64_t v) { return std::to_string(v) + " kB\n"; };
  return n + "MemTotal:       " + kb(node.memory_kib) + n + "MemFree:        " + kb(free_kib) +
         n + "MemUsed:        " + kb(node.memory_kib - std::min(node.memory_kib, free_kib)) +
         n + "HugePages_Total: " + std::to_string(huge_total) + "\n" + n +
         "HugePages_Free:  " + std::to_string(huge_free) + "\n" + n + "HugePages_Surp:  0\n";
}

std::string CpuListOf(const std::vector<int>& ids) {
  CpuSet set;
  for (int id : ids) set.Add(id);
  return set.ToString() + "\n";
}

void WriteNodes(const HostTopology& host, const fs::path& sys) {
  fs::path base = sys / "devices/system/node";
  MakeDir(base);
  std::vector<int> all, with_cpus, with_memory;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> global;  // size -> (total, free)
  for (const topology::NumaNode& node : host.numa_nodes) {
    fs::path dir = base / ("node" + std::to_string(node.id));
    all.push_back(node.id);
    if (!node.cpus.Empty()) with_cpus.push_back(node.id);
    if (node.memory_kib > 0) with_memory.push_back(node.id);
    WriteText(dir / "cpulist", node.cpus.ToString() + "\n");
    WriteText(dir / "meminfo", NumaMeminfo(node));
    if (!node.distances.empty()) {
      std::string row;
      for (int d : node.distances) row += (row.empty() ? "" : " ") + std::to_string(d);
      WriteText(dir / "distance", row + "\n");
    }
    for (size_t p = 1; p < node.pages.size(); ++p) {
      const topology::HugepagePool& pool = node.pages[p];
      fs::path pd = dir / "hugepages" / ("hugepages-" + std::to_string(pool.size_kib) + "kB");
      WriteText(pd / "nr_hugepages", std::to_string(pool.total) + "\n");
      WriteText(pd / "free_hugepages", std::to_string(pool.free) + "\n");
      WriteText(pd / "surplus_hugepages", "0\n");
      global[pool.size_kib].first += pool.total;
      global[pool.size_kib].second += pool.free;
    }
  }
  WriteText(base / "online", CpuListOf(all));
  WriteText(base / "possible", CpuListOf(all));
  WriteText(base / "has_cpu", CpuListOf(with_cpus));
  WriteText(base / "has_memory", CpuListOf(with_memory));
  for (const auto& [size, counts] : global) {
    fs::path pd = sys / "kernel/mm/hugepages" / ("hugepages-" + std::to_string(size) + "kB");
    WriteText(pd / "nr_hugepages", std::to_string(counts.first) + "\n");
    WriteText(pd / "free_hugepages", std::to_string(counts.second) + "\n");
    WriteText(pd / "resv_hugepages", "0\n");
    WriteText(pd / "surplus_hugepages", "0\n");
    WriteText(pd / "nr_overcommit_hugepages", "0\n");
  }
}

// Everything a CPU number needs: its package, core id within the package, sibling set.
struct CpuInfo {
  int package = -1;
  int core_id = 0;
  CpuSet siblings;
};

std::map<int, CpuInfo> CpuInfos(const HostTopology& host) {
  std::map<int, CpuInfo> cpus;
  for (const topology::Package& pkg : host.packages)
    for (int c = pkg.cpus.First(); c >= 0; c = pkg.cpus.Next(c)) cpus[c].package = pkg.id;
  std::map<int, int> next_core;  // package -> next core id
  for (const topology::NumaNode& node : host.numa_nodes) {
    for (int c = node.cpus.First(); c >= 0; c = node.cpus.Next(c)) cpus[c].siblings = CpuSet{c};
    for (const CpuSet& core : node.cores) {
      int id = next_core[cpus[core.First()].package]++;
      for (int c = core.First(); c >= 0; c = core.Next(c)) {
        cpus[c].siblings = core;
        cpus[c].core_id = id;
      }
    }
  }
  for (auto& [cpu, info] : cpus)
    if (info.siblings.Empty()) info.siblings = CpuSet{cpu};
  return cpus;
}

void WriteCpus(const HostTopology& host, const fs::path& root, const fs::path& sys,
               const FakeSysfsOptions& options) {
  std::map<int, CpuInfo> cpus = CpuInfos(host);
  fs::path base = sys / "devices/system/cpu";
  CpuSet all;
  std::string cpuinfo;
  bool power = false;
  for (const topology::NumaNode& node : host.numa_nodes)
    if (!node.pages.empty() && node.pages[0].size_kib == 64) power = true;
  for (const auto& [cpu, info] : cpus) {
    all.Add(cpu);
    fs::path dir = base / ("cpu" + std::to_string(cpu));
    WriteText(dir / "topology/physical_package_id", std::to_string(info.package) + "\n");
    WriteText(dir / "topology/core_id", std::to_string(info.core_id) + "\n");
    WriteText(dir / "topology/thread_siblings_list", info.siblings.ToString() + "\n");
    if (cpu != 0) WriteText(dir / "online", "1\n");
    std::string model;
    for (const topology::Package& pkg : host.packages)
      if (pkg.id == info.package) model = pkg.model;
    bool amd = model.find("AMD") != std::string::npos;
    cpuinfo += "processor\t: " + std::to_string(cpu) + "\n";
    // ppc64 kernels (64 KiB base pages) print "cpu : POWER..." instead of x86's vendor_id.
    cpuinfo += power ? "cpu\t\t: POWER8 (raw), altivec supported\n"
                     : std::string("vendor_id\t: ") + (amd ? "AuthenticAMD" : "GenuineIntel") + "\n";
    cpuinfo += "model name\t: " + model + "\nphysical id\t: " + std::to_string(info.package) +
               "\ncore id\t\t: " + std::to_string(info.core_id) + "\n";
    if (!power)
      cpuinfo += std::string("flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca "
                             "cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx pdpe1gb rdtscp lm "
                             "constant_tsc nopl xtopology pni ssse3 fma cx16 sse4_1 sse4_2 x2apic "
                             "popcnt aes xsave avx f16c rdrand") +
                 (options.vm_guest ? " hypervisor" : "") + " avx2 avx512f\n";
    cpuinfo += "\n";
  }
  std::string list = all.ToString() + "\n";
  WriteText(base / "online", list);
  WriteText(base / "present", list);
  WriteText(base / "possible", list);
  WriteText(root / "proc/cpuinfo", cpuinfo);
}

// The CPU list of a "name=..." kernel argument ("isolcpus=managed_irq,domain,2-5" -> "2-5"),
// as the kernel echoes it in /sys/devices/system/cpu/{isolated,nohz_full}; "" when absent.
std::string CmdlineCpuList(const std::string& cmdline, const std::string& name) {
  std::string key = name + "=";
  size_t at = 0;
  std::string value;
  while ((at = cmdline.find(key, at)) != std::string::npos) {
    if (at == 0 || cmdline[at - 1] == ' ') {
      size_t end = cmdline.find(' ', at);
      value = cmdline.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
    }
    at += key.size();
  }
  // isolcpus flags come first: keep from the first token that starts with a digit.
  std::string list;
  size_t start = 0;
  while (start < value.size()) {
    size_t comma = value.find(',', start);
    std::string token = value.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!token.empty() && isdigit(static_cast<unsigned char>(token[0])))
      list += (list.empty() ? "" : ",") + token;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  CpuSet set;
  std::string error;
  return CpuSet::Parse(list, &set, &error) ? set.ToString() : "";
}

void WriteProc(const HostTopology& host, const fs::path& root, const FakeSysfsOptions& options) {
  WriteText(root / "proc/cmdline", options.cmdline + "\n");
  WriteText(root / "sys/class/dmi/id/sys_vendor", options.vm_guest ? "QEMU\n" : "Supermicro\n");
  WriteText(root / "sys/class/dmi/id/product_name",
            options.vm_guest ? "Standard PC (Q35 + ICH9, 2009)\n" : "SYS-821GE-TNHR\n");
  WriteText(root / "proc/sys/kernel/hostname", host.hostname + "\n");
  WriteText(root / "proc/sys/kernel/numa_balancing", "0\n");
  WriteText(root / "sys/devices/system/cpu/isolated",
            CmdlineCpuList(options.cmdline, "isolcpus") + "\n");
  WriteText(root / "sys/devices/system/cpu/nohz_full",
            CmdlineCpuList(options.cmdline, "nohz_full") + "\n");
  WriteText(root / "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
  WriteText(root / "sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n");
  uint64_t total = 0, free = 0;
  for (const topology::NumaNode& node : host.numa_nodes) {
    total += node.memory_kib;
    if (!node.pages.empty()) free += node.pages[0].free * node.pages[0].size_kib;
  }
  WriteText(root / "proc/meminfo", "MemTotal:       " + std::to_string(total) +
                                       " kB\nMemFree:        " + std::to_string(free) +
                                       " kB\nHugepagesize:       2048 kB\n");
}

}  // namespace

void WriteFakeSysfs(const topology::HostTopology& host, const std::string& root,
                    const FakeSysfsOptions& options) {
  fs::path base(root);
  fs::path sys = base / "sys";
  MakeDir(sys / "devices");
  MakeDir(sys / "bus/pci/devices");
  MakeDir(sys / "class/net");
  WritePci(host, sys, options);
  WriteNodes(host, sys);
  WriteCpus(host, base, sys, options);
  WriteProc(host, base, options);
}

void WriteFakeFile(const std::string& root, const std::string& relative_path,
                   const std::string& text) {
  WriteText(fs::path(root) / relative_path, text);
}

std::string FakePciDir(const topology::HostTopology& host, const std::string& root,
                       const std::string& address) {
  if (host.FindPci(address) == nullptr)
    throw std::runtime_error("fake sysfs: no PCI object " + address + " in host " + host.hostname);
  return (fs::path(root) / "sys/devices" / PciPaths(host)[address]).string();
}

}  // namespace accel::testing
