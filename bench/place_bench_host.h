// The benchmark hosts: accel's version of the host that Nova's reference driver
// (shared/reference/nova_fit_demo.py, build_host) times, so both engines see the same machine.
//
// Per cell: `cores` cores x `threads` threads, Linux x86 numbering (thread t of core c in cell n
// is t * (cells * cores) + n * cores + c, so siblings are {i, i + total}); 128 GiB of which 8 GiB
// in 2M pages and 32 GiB in 1G pages (one 1G page of cell 0 reserved); the first `shared_cores`
// cores of each cell form cpu_shared_set, the rest cpu_dedicated_set; H100-like GPUs (10de:2330)
// per cell as `gpus` says, by default 2 on the last cell. Plain functions; thread-safe.
#pragma once

#include <cstdio>
#include <map>
#include <vector>

#include "placement/usage.h"
#include "topology/host.h"

namespace accel::bench {

/// The knobs nova_fit_demo.build_host() has, with its defaults.
struct DemoHostShape {
  int cells = 2;         ///< NUMA nodes
  int cores = 8;         ///< cores per node
  int threads = 2;       ///< SMT threads per core
  int shared_cores = 1;  ///< cores per node in cpu_shared_set
  /// node -> GPUs on it; empty means 2 GPUs on the last node (the demo's default)
  std::map<int, int> gpus;
};

/// A demo host and the operator policy that goes with it (shared/dedicated sets, spread, as
/// Nova's default packing_host_numa_cells_allocation_strategy=False).
struct DemoHost {
  topology::HostTopology host;     ///< the machine
  placement::HostPolicy policy;    ///< cpu_shared_set / cpu_dedicated_set, spread
  std::vector<CpuSet> dedicated;   ///< per node: its CPUs in cpu_dedicated_set
};

inline topology::PciDevice DemoGpu(int index, int node) {
  topology::PciDevice d;
  char addr[24];
  std::snprintf(addr, sizeof addr, "0000:%02x:00.0", (0x10 + index) & 0xff);
  d.address = addr;
  d.parent = "pci0000:00";
  d.role = topology::PciRole::kGpu;
  d.vendor_id = 0x10de;
  d.device_id = 0x2330;
  d.class_id = 0x0302;
  d.numa_node = node;
  return d;
}

/// Builds the host of nova_fit_demo.build_host(shape...). Never fails.
inline DemoHost MakeDemoHost(const DemoHostShape& shape) {
  constexpr uint64_t kGiBInKiB = 1024 * 1024;
  const int total_cores = shape.cells * shape.cores;
  DemoHost d;
  d.host.hostname = "bench-" + std::to_string(shape.cells) + "-cells";
  d.host.source = "bench";
  CpuSet shared_set, dedicated_set;
  for (int n = 0; n < shape.cells; ++n) {
    topology::NumaNode node;
    node.id = n;
    node.package = shape.cells > 2 ? n / 2 : n;
    CpuSet dedicated;
    for (int c = 0; c < shape.cores; ++c) {
      CpuSet core;
      for (int t = 0; t < shape.threads; ++t) core.Add(t * total_cores + n * shape.cores + c);
      node.cpus = node.cpus.Union(core);
      node.cores.push_back(core);
      if (c < shape.shared_cores)
        shared_set = shared_set.Union(core);
      else
        dedicated = dedicated.Union(core);
    }
    dedicated_set = dedicated_set.Union(dedicated);
    d.dedicated.push_back(dedicated);
    node.memory_kib = 128 * kGiBInKiB;
    // Nova reserves one 1G page on cell 0; accel has no per-pool reservation, so the pool is one
    // page smaller there (the page stays in memory_kib, outside every pool).
    const uint64_t pages_1g = n == 0 ? 31 : 32;
    const uint64_t base = (128 - 8 - 32) * kGiBInKiB / 4;
    node.pages = {{4, base, base}, {2048, 8 * 512, 8 * 512}, {1048576, pages_1g, pages_1g}};
    for (int j = 0; j < shape.cells; ++j) node.distances.push_back(j == n ? 10 : 21);
    d.host.numa_nodes.push_back(node);
  }
  for (int p = 0; p <= d.host.numa_nodes.back().package; ++p) {
    topology::Package pkg;
    pkg.id = p;
    for (const auto& node : d.host.numa_nodes)
      if (node.package == p) pkg.cpus = pkg.cpus.Union(node.cpus);
    d.host.packages.push_back(pkg);
  }
  topology::PciDevice root;
  root.address = "pci0000:00";
  root.role = topology::PciRole::kHostBridge;
  d.host.pci.push_back(root);
  const std::map<int, int> gpus = shape.gpus.empty() ? std::map<int, int>{{shape.cells - 1, 2}} : shape.gpus;
  int index = 0;
  for (const auto& [node, count] : gpus)
    for (int g = 0; g < count; ++g) d.host.pci.push_back(DemoGpu(index++, node));
  d.policy.cpu_shared_set = shared_set;
  d.policy.cpu_dedicated_set = dedicated_set;
  d.policy.cpu_allocation_ratio = 4.0;
  d.policy.strategy = placement::Strategy::kSpread;
  return d;
}

/// Usage of nova_fit_demo.partially_used(host, nodes): on each of the first `nodes` nodes every
/// dedicated CPU is pinned except the two highest-numbered ones.
inline placement::HostUsage NearlyFull(const DemoHost& d, int nodes) {
  placement::HostUsage usage;
  for (int n = 0; n < nodes; ++n) {
    std::vector<int> cpus = d.dedicated[n].ToVector();  // ascending, like sorted() in the demo
    for (size_t i = 0; i + 2 < cpus.size(); ++i) usage.nodes[n].pinned_cpus.Add(cpus[i]);
  }
  return usage;
}

}  // namespace accel::bench
