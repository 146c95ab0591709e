#include "topology/sysfs_source.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "common/cpuset.h"
#include "common/error.h"
#include "topology/classify.h"
#include "topology/sysfs_hugepages.h"

namespace accel::topology {

namespace {

namespace fs = std::filesystem;

// The first line of a file, without surrounding whitespace; nullopt when unreadable.
std::optional<std::string> ReadLine(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) return std::string();
  size_t begin = line.find_first_not_of(" \t\r\n");
  size_t end = line.find_last_not_of(" \t\r\n");
  return begin == std::string::npos ? "" : line.substr(begin, end - begin + 1);
}

// A decimal or 0x-hex integer filling the whole first line; nullopt otherwise.
std::optional<long long> ReadInteger(const fs::path& path, int base = 0) {
  std::optional<std::string> text = ReadLine(path);
  if (!text || text->empty() || text->size() > 20) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, base);
  if (errno != 0 || end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

CpuSet ReadCpuList(const fs::path& path) {
  CpuSet set;
  std::string error;
  std::optional<std::string> text = ReadLine(path);
  if (!text || !CpuSet::Parse(*text, &set, &error)) return CpuSet();
  return set;
}

// "prefix<digits>" -> the number; nullopt otherwise (or beyond `max`).
std::optional<int> NumberAfter(const std::string& name, const std::string& prefix, int max) {
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 9 ||
      name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  for (size_t i = prefix.size(); i < name.size(); ++i)
    if (!isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  long value = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
  if (value > max) return std::nullopt;
  return static_cast<int>(value);
}

// Names of the real (non-symlink) subdirectories of `dir`, sorted.
std::vector<std::string> SubDirs(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_symlink(e2) || !it->is_directory(e2)) continue;
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Every entry name (directories or links) of `dir`, sorted.
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// NCCL/hwloc bandwidth of a link from sysfs: GT/s × encoding × lanes / 8, in GB/s rounded as
// the hwloc source rounds it. 0 when speed or width is unknown ("Unknown", 0 lanes).
double LinkGbps(const fs::path& dir) {
  std::optional<std::string> speed = ReadLine(dir / "current_link_speed");
  std::optional<long long> width = ReadInteger(dir / "current_link_width", 10);
  if (!speed || !width || *width <= 0 || *width > 64) return 0;
  char* end = nullptr;
  double gts = std::strtod(speed->c_str(), &end);
  if (end == speed->c_str() || !std::isfinite(gts) || gts <= 0 || gts > 1024) return 0;
  double encoding = gts <= 5.0 ? 0.8 : gts < 64 ? 128.0 / 130.0 : 242.0 / 256.0;
  return std::round(gts * encoding * static_cast<double>(*width) / 8 * 1000) / 1000;
}

uint16_t ReadId(const fs::path& path, int shift = 0) {
  std::optional<long long> value = ReadInteger(path, 16);
  if (!value || *value < 0) return 0;
  return static_cast<uint16_t>((*value >> shift) & 0xffff);
}

// Directories that hold a PCI function's class devices: its own, and those of its virtio
// child device (virtio-net and virtio-blk put net/ and block/ under virtioN/).
std::vector<fs::path> ClassDirs(const fs::path& dir) {
  std::vector<fs::path> dirs = {dir};
  for (const std::string& name : SubDirs(dir))
    if (name.rfind("virtio", 0) == 0) dirs.push_back(dir / name);
  return dirs;
}

std::vector<std::string> EntriesIn(const std::vector<fs::path>& dirs, const std::string& sub) {
  std::vector<std::string> names;
  for (const fs::path& d : dirs)
    for (std::string& n : Entries(d / sub)) names.push_back(std::move(n));
  return names;
}

// OS devices below a PCI function that are neither RDMA devices nor netdevs: DRM cards and
// render nodes, compute accelerators (accel/), NVMe namespaces, virtio block devices.
std::vector<std::string> OsDevices(const fs::path& dir, const std::vector<fs::path>& class_dirs) {
  std::vector<std::string> names = EntriesIn(class_dirs, "block");
  for (const std::string& n : Entries(dir / "drm"))
    if (n.rfind("card", 0) == 0 || n.rfind("renderD", 0) == 0) names.push_back(n);
  for (const std::string& n : Entries(dir / "accel"))
    if (n.rfind("accel", 0) == 0) names.push_back(n);
  for (const std::string& ctrl : Entries(dir / "nvme"))
    for (const std::string& n : Entries(dir / "nvme" / ctrl))
      if (n.rfind(ctrl + "n", 0) == 0) names.push_back(n);
  return names;
}

class SysfsReader {
 public:
  explicit SysfsReader(const std::string& root) : root_(root), sys_(fs::path(root) / "sys") {}

  HostTopology Read() {
    HostTopology host;
    host.hostname = Hostname();
    host.source = "sysfs:" + root_;
    ReadCpus();
    ReadPackages(&host);
    ReadNodes(&host);
    ReadMemory(&host);
    ReadPci(&host);
    return host;
  }

 private:
  std::string Hostname() const {
    for (const char* rel : {"proc/sys/kernel/hostname", "etc/hostname"})
      if (std::optional<std::string> name = ReadLine(fs::path(root_) / rel); name && !name->empty())
        return *name;
    return "localhost";
  }

  // CPU number -> (package id, sibling list) for every cpuN with a topology directory.
  void ReadCpus() {
    fs::path base = sys_ / "devices/system/cpu";
    for (const std::string& name : Entries(base)) {
      std::optional<int> cpu = NumberAfter(name, "cpu", CpuSet::kMaxCpu);
      if (!cpu) continue;
      fs::path topo = base / name / "topology";
      std::optional<long long> package = ReadInteger(topo / "physical_package_id", 10);
      std::error_code ec;
      if (!package && !fs::is_directory(topo, ec)) continue;
      CpuTopology& info = cpus_[*cpu];
      info.package = package && *package >= 0 && *package <= INT_MAX ? static_cast<int>(*package) : -1;
      info.siblings = ReadCpuList(topo / "thread_siblings_list");
    }
    online_ = ReadCpuList(base / "online");
    if (online_.Empty())
      for (const auto& [cpu, info] : cpus_) online_.Add(cpu);
  }

  // Model names by package from /proc/cpuinfo ("physical id" / "model name" pairs).
  std::map<int, std::string> CpuModels() const {
    std::map<int, std::string> models;
    std::ifstream in(fs::path(root_) / "proc/cpuinfo");
    std::string line, model;
    int package = -1;
    auto flush = [&] {
      if (package >= 0 && !model.empty() && !models.count(package)) models[package] = model;
      package = -1;
      model.clear();
    };
    while (std::getline(in, line)) {
      size_t colon = line.find(':');
      if (line.find_first_not_of(" \t\r") == std::string::npos) {
        flush();
        continue;
      }
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
      size_t vstart = line.find_first_not_of(" \t", colon + 1);
      std::string value = vstart == std::string::npos ? "" : line.substr(vstart);
      while (!value.empty() && isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
      if (key == "model name") model = value;
      if (key == "physical id") package = std::atoi(value.c_str());
    }
    flush();
    return models;
  }

  void ReadPackages(HostTopology* host) {
    std::map<int, CpuSet> packages;
    for (const auto& [cpu, info] : cpus_)
      if (info.package >= 0) packages[info.package].Add(cpu);
    std::map<int, std::string> models = CpuModels();
    for (auto& [id, cpus] : packages) host->packages.push_back({id, cpus, models[id]});
  }

  // Sibling sets that partition `cpus`, ordered by first CPU, whatever the sibling lists say.
  std::vector<CpuSet> Cores(const CpuSet& cpus) const {
    std::vector<CpuSet> cores;
    CpuSet covered;
    for (int c = cpus.First(); c >= 0; c = cpus.Next(c)) {
      if (covered.Contains(c)) continue;
      auto it = cpus_.find(c);
      CpuSet core = it == cpus_.end() ? CpuSet() : it->second.siblings.Intersect(cpus).Minus(covered);
      core.Add(c);
      covered = covered.Union(core);
      cores.push_back(core);
    }
    return cores;
  }

  void ReadNodes(HostTopology* host) {
    fs::path base = sys_ / "devices/system/node";
    std::vector<int> ids;
    for (const std::string& name : SubDirs(base))
      if (std::optional<int> id = NumberAfter(name, "node", 1 << 20)) ids.push_back(*id);
    std::sort(ids.begin(), ids.end());
    CpuSet owned;
    for (int id : ids) {
      NumaNode node;
      node.id = id;
      fs::path dir = base / ("node" + std::to_string(id));
      node.cpus = ReadCpuList(dir / "cpulist").Minus(owned);  // a CPU lives in one node
      owned = owned.Union(node.cpus);
      host->numa_nodes.push_back(std::move(node));
    }
    if (host->numa_nodes.empty()) {
      // No NUMA in sysfs (a VM or container without it): one node with every online CPU.
      NumaNode node;
      node.cpus = online_;
      host->numa_nodes.push_back(std::move(node));
      no_numa_dirs_ = true;
    }
    for (NumaNode& node : host->numa_nodes) {
      node.cores = Cores(node.cpus);
      for (const Package& p : host->packages)
        if (!node.cpus.Empty() && node.cpus.IsSubsetOf(p.cpus)) node.package = p.id;
      if (no_numa_dirs_) continue;
      std::ifstream in(base / ("node" + std::to_string(node.id)) / "distance");
      std::vector<int> row;
      long long d = 0;
      while (row.size() <= ids.size() && in >> d) row.push_back(d < 0 || d > INT_MAX ? -1 : static_cast<int>(d));
      bool sane = row.size() == ids.size() &&
                  std::find(row.begin(), row.end(), -1) == row.end();
      if (sane) node.distances = std::move(row);
    }
  }

  // The base page size: this process's on the live root; for a copied tree 4 KiB, or 64 KiB
  // when cpuinfo says POWER (ppc64 distributions build with 64 KiB pages; hwloc's XML source
  // infers the same from the architecture).
  uint64_t BasePageKib() const {
    std::error_code ec;
    if (fs::equivalent(fs::path(root_), "/", ec)) {
      long page = sysconf(_SC_PAGESIZE);
      if (page > 0) return static_cast<uint64_t>(page) / 1024;
    }
    std::ifstream in(fs::path(root_) / "proc/cpuinfo");
    std::string line;
    for (int n = 0; n < 64 && std::getline(in, line); ++n)
      if (line.rfind("cpu", 0) == 0 && line.find(": POWER") != std::string::npos) return 64;
    return 4;
  }

  // Whole-machine memory for the single node of a machine without NUMA directories:
  // /proc/meminfo and the global hugepage pools.
  SysfsNodeMemory GlobalMemory() const {
    SysfsNodeMemory mem;
    std::ifstream in(fs::path(root_) / "proc/meminfo");
    std::string key;
    uint64_t value = 0;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      if (!(words >> key >> value)) continue;
      if (key == "MemTotal:") mem.total_kib = value;
      if (key == "MemFree:") mem.free_kib = value;
    }
    fs::path pools = sys_ / "kernel/mm/hugepages";
    for (const std::string& name : SubDirs(pools)) {
      if (name.rfind("hugepages-", 0) != 0 || name.size() < 13 || name.substr(name.size() - 2) != "kB")
        continue;
      std::optional<int> size = NumberAfter(name.substr(0, name.size() - 2), "hugepages-", INT_MAX);
      std::optional<long long> total = ReadInteger(pools / name / "nr_hugepages", 10);
      std::optional<long long> free = ReadInteger(pools / name / "free_hugepages", 10);
      if (!size || *size <= 0 || !total || *total < 0) continue;
      uint64_t t = static_cast<uint64_t>(*total);
      uint64_t f = free && *free >= 0 ? std::min<uint64_t>(static_cast<uint64_t>(*free), t) : t;
      mem.hugepages.push_back({static_cast<uint64_t>(*size), t, f});
    }
    return mem;
  }

  void ReadMemory(HostTopology* host) const {
    uint64_t base_kib = BasePageKib();
    std::vector<SysfsNodeMemory> memory;
    if (no_numa_dirs_)
      memory.push_back(GlobalMemory());
    else
      memory = ReadSysfsNodeMemory(sys_.string());
    MergeSysfsMemory(memory, base_kib, host);
    for (NumaNode& node : host->numa_nodes) {
      // Two directories naming one size ("hugepages-2048kB", "hugepages-02048kB"): keep one.
      auto same = [](const HugepagePool& a, const HugepagePool& b) { return a.size_kib == b.size_kib; };
      node.pages.erase(std::unique(node.pages.begin(), node.pages.end(), same), node.pages.end());
    }
  }

  // Adds the function in `dir` (named `address`) under `parent`, then its children.
  void AddFunction(const fs::path& dir, const std::string& address, const std::string& parent,
                   int depth, HostTopology* host) {
    if (depth > kMaxPciDepth || !seen_.insert(address).second) return;
    PciDevice dev;
    dev.address = address;
    dev.parent = parent;
    dev.vendor_id = ReadId(dir / "vendor");
    dev.device_id = ReadId(dir / "device");
    dev.class_id = ReadId(dir / "class", 8);
    std::optional<long long> node = ReadInteger(dir / "numa_node", 10);
    if (node && *node >= 0 && *node <= INT_MAX && host->NodeIndex(static_cast<int>(*node)) >= 0)
      dev.numa_node = static_cast<int>(*node);
    else if (host->numa_nodes.size() == 1)
      dev.numa_node = host->numa_nodes[0].id;  // one node: every device is local to it (as hwloc)
    dev.link_gbps = LinkGbps(dir);
    std::vector<fs::path> class_dirs = ClassDirs(dir);
    dev.rdma_devices = Entries(dir / "infiniband");
    dev.netdevs = EntriesIn(class_dirs, "net");
    dev.os_devices = OsDevices(dir, class_dirs);
    if (std::optional<long long> total = ReadInteger(dir / "sriov_totalvfs", 10);
        total && *total > 0 && *total <= INT_MAX) {
      dev.sriov_total_vfs = static_cast<int>(*total);
      std::optional<long long> num = ReadInteger(dir / "sriov_numvfs", 10);
      dev.sriov_num_vfs = num && *num > 0 ? static_cast<int>(std::min<long long>(*num, *total)) : 0;
    }
    std::error_code ec;
    fs::path physfn = fs::read_symlink(dir / "physfn", ec);
    if (!ec) physfns_[address] = physfn.filename().string();

    std::vector<std::string> children, roots;
    for (const std::string& name : SubDirs(dir)) {
      if (IsPciFunctionAddress(name)) children.push_back(name);
      if (IsPciRootBusName(name)) roots.push_back(name);  // a VMD domain below this function
    }
    // A function with functions below it is a bridge whatever its class says (0609
    // subtractive-decode bridges, hidden ports).
    dev.role = !children.empty() ? PciRole::kBridge
                                 : ClassifyPci(dev.vendor_id, dev.device_id, dev.class_id);
    host->pci.push_back(std::move(dev));
    for (const std::string& child : children) AddFunction(dir / child, child, address, depth + 1, host);
    for (const std::string& root : roots) pending_roots_.push_back(dir / root);
  }

  void ReadPci(HostTopology* host) {
    for (const std::string& name : SubDirs(sys_ / "devices"))
      if (IsPciRootBusName(name)) pending_roots_.push_back(sys_ / "devices" / name);
    while (!pending_roots_.empty()) {
      fs::path dir = pending_roots_.front();
      pending_roots_.pop_front();
      std::string address = dir.filename().string();
      if (!seen_.insert(address).second) continue;
      PciDevice bridge;
      bridge.address = address;
      bridge.role = PciRole::kHostBridge;
      host->pci.push_back(bridge);
      for (const std::string& name : SubDirs(dir))
        if (IsPciFunctionAddress(name)) AddFunction(dir / name, name, address, 1, host);
    }
    // SR-IOV links last: a VF may precede its PF in tree order.
    for (PciDevice& dev : host->pci) {
      auto it = physfns_.find(dev.address);
      if (it == physfns_.end()) continue;
      const PciDevice* pf = host->FindPci(it->second);
      if (pf != nullptr && pf->role != PciRole::kHostBridge && !physfns_.count(pf->address))
        dev.physfn = it->second;
    }
  }

  struct CpuTopology {
    int package = -1;
    CpuSet siblings;
  };

  std::string root_;
  fs::path sys_;
  std::map<int, CpuTopology> cpus_;
  CpuSet online_;
  bool no_numa_dirs_ = false;
  std::set<std::string> seen_;
  std::map<std::string, std::string> physfns_;  // VF address -> PF address
  std::deque<fs::path> pending_roots_;
};

}  // namespace

HostTopology LoadSysfsHost(const std::string& root) {
  const char* hint = "give a directory holding a copy of a host's /sys (and /proc), or 'live'";
  std::error_code ec;
  if (!fs::exists(root, ec)) throw InputError(root, "", "does not exist", hint);
  if (!fs::is_directory(root, ec)) throw InputError(root, "", "is not a directory", hint);
  if (!fs::is_directory(fs::path(root) / "sys", ec))
    throw InputError(root, "", "is a directory without a sys/ subdirectory", hint);
  HostTopology host = SysfsReader(root).Read();
  if (std::string problem = CheckInvariants(host); !problem.empty())
    throw InputError(root, "", problem, "the sysfs tree describes an inconsistent machine");
  return host;
}

}  // namespace accel::topology
