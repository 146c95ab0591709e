// Hugepage pools and node memory as Linux reports them under sysfs, for the live host.
//
// hwloc knows each node's memory and, at best, hugepage counts; only sysfs says how many pages
// are free. This module reads SYSFS_ROOT/devices/system/node/nodeN/{meminfo,hugepages/...}
// (the root is a parameter so tests can point at a fake tree) and merges the result into a
// HostTopology. Plain functions over plain data; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topology/host.h"

namespace accel::topology {

/// One NUMA node's memory as sysfs reports it.
struct SysfsNodeMemory {
  int node = 0;                         ///< N of nodeN
  uint64_t total_kib = 0;               ///< "Node N MemTotal"
  uint64_t free_kib = 0;                ///< "Node N MemFree"
  std::vector<HugepagePool> hugepages;  ///< hugepages-*kB pools ascending by size (no base pages)
};

/// Returns every SYSFS_ROOT/devices/system/node/nodeN that has a readable meminfo, ascending
/// by N. Pools whose nr_hugepages cannot be read are skipped; a missing free_hugepages means
/// free = total. Returns an empty list when the directory does not exist (not Linux, or a
/// container without sysfs); never throws.
std::vector<SysfsNodeMemory> ReadSysfsNodeMemory(const std::string& sysfs_root);

/// Returns a node's pools: first the base pages (size `base_page_kib`, total = memory not held
/// in `hugepages`, free = `base_free_kib` / page size capped at total, or total when unknown),
/// then `hugepages` ascending by size. Pools of the base size or smaller in `hugepages` are
/// dropped; a zero `base_page_kib` counts as 4.
std::vector<HugepagePool> BuildPagePools(uint64_t memory_kib, uint64_t base_page_kib,
                                         std::vector<HugepagePool> hugepages,
                                         std::optional<uint64_t> base_free_kib = std::nullopt);

/// Replaces memory_kib and pages of every node of `host` that `nodes` describes (matched by
/// id); other nodes keep what they had.
void MergeSysfsMemory(const std::vector<SysfsNodeMemory>& nodes, uint64_t base_page_kib,
                      HostTopology* host);

}  // namespace accel::topology
