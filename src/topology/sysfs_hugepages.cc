#include "topology/sysfs_hugepages.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace accel::topology {

namespace {

namespace fs = std::filesystem;

// Parses a whole file holding one unsigned number ("512\n"); nullopt when unreadable.
std::optional<uint64_t> ReadNumber(const fs::path& path) {
  std::ifstream in(path);
  uint64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

// Parses "prefix<digits>suffix" (e.g. "node12", "hugepages-2048kB"); nullopt otherwise.
std::optional<uint64_t> NumberBetween(const std::string& s, const std::string& prefix,
                                      const std::string& suffix) {
  if (s.size() <= prefix.size() + suffix.size() || s.compare(0, prefix.size(), prefix) != 0 ||
      s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  std::string digits = s.substr(prefix.size(), s.size() - prefix.size() - suffix.size());
  if (digits.size() > 12 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return std::nullopt;
  return std::stoull(digits);
}

// Reads "Node N MemTotal:  123 kB" lines; returns false when the file cannot be read or has
// no MemTotal.
bool ReadMeminfo(const fs::path& path, SysfsNodeMemory* out) {
  std::ifstream in(path);
  if (!in) return false;
  bool have_total = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string node_word, node_id, key;
    uint64_t value = 0;
    if (!(words >> node_word >> node_id >> key >> value)) continue;
    if (key == "MemTotal:") {
      out->total_kib = value;
      have_total = true;
    } else if (key == "MemFree:") {
      out->free_kib = value;
    }
  }
  return have_total;
}

std::vector<HugepagePool> ReadPools(const fs::path& dir) {
  std::vector<HugepagePool> pools;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::optional<uint64_t> size = NumberBetween(entry.path().filename(), "hugepages-", "kB");
    if (!size || *size == 0) continue;
    std::optional<uint64_t> total = ReadNumber(entry.path() / "nr_hugepages");
    if (!total) continue;
    std::optional<uint64_t> free = ReadNumber(entry.path() / "free_hugepages");
    pools.push_back({*size, *total, std::min(free.value_or(*total), *total)});
  }
  std::sort(pools.begin(), pools.end(),
            [](const HugepagePool& a, const HugepagePool& b) { return a.size_kib < b.size_kib; });
  return pools;
}

}  // namespace

std::vector<SysfsNodeMemory> ReadSysfsNodeMemory(const std::string& sysfs_root) {
  std::vector<SysfsNodeMemory> nodes;
  std::error_code ec;
  fs::path base = fs::path(sysfs_root) / "devices/system/node";
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    std::optional<uint64_t> id = NumberBetween(entry.path().filename(), "node", "");
    if (!id || *id > 1u << 20) continue;
    SysfsNodeMemory node;
    node.node = static_cast<int>(*id);
    if (!ReadMeminfo(entry.path() / "meminfo", &node)) continue;
    node.hugepages = ReadPools(entry.path() / "hugepages");
    nodes.push_back(std::move(node));
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const SysfsNodeMemory& a, const SysfsNodeMemory& b) { return a.node < b.node; });
  return nodes;
}

std::vector<HugepagePool> BuildPagePools(uint64_t memory_kib, uint64_t base_page_kib,
                                         std::vector<HugepagePool> hugepages,
                                         std::optional<uint64_t> base_free_kib) {
  if (base_page_kib == 0) base_page_kib = 4;
  std::erase_if(hugepages, [&](const HugepagePool& p) { return p.size_kib <= base_page_kib; });
  std::sort(hugepages.begin(), hugepages.end(),
            [](const HugepagePool& a, const HugepagePool& b) { return a.size_kib < b.size_kib; });
  uint64_t huge_kib = 0;
  for (const HugepagePool& p : hugepages) huge_kib += p.size_kib * p.total;
  HugepagePool base{base_page_kib, 0, 0};
  base.total = memory_kib > huge_kib ? (memory_kib - huge_kib) / base_page_kib : 0;
  base.free = base_free_kib ? std::min(*base_free_kib / base_page_kib, base.total) : base.total;
  std::vector<HugepagePool> pools = {base};
  pools.insert(pools.end(), hugepages.begin(), hugepages.end());
  return pools;
}

void MergeSysfsMemory(const std::vector<SysfsNodeMemory>& nodes, uint64_t base_page_kib,
                      HostTopology* host) {
  for (const SysfsNodeMemory& sys : nodes) {
    int index = host->NodeIndex(sys.node);
    if (index < 0) continue;
    NumaNode& node = host->numa_nodes[index];
    node.memory_kib = sys.total_kib;
    node.pages = BuildPagePools(sys.total_kib, base_page_kib, sys.hugepages, sys.free_kib);
  }
}

}  // namespace accel::topology
