// Hosts, requests and usage built in code for placement tests: hand-shaped ones for unit tests
// and random ones (seeded, reproducible) for property and brute-force tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "placement/request.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::placement::testing {

/// Shape of one synthetic NUMA node.
struct NodeShape {
  int cores = 4;               ///< physical cores
  int threads = 2;             ///< SMT threads per core
  uint64_t memory_mib = 8192;  ///< node memory (base pages get what hugepages leave)
  uint64_t pages_2m = 0;       ///< 2 MiB pages configured
  uint64_t pages_1g = 0;       ///< 1 GiB pages configured
  int package = 0;             ///< package id
  int gpus = 0;                ///< NVIDIA H100s (10de:2330) local to the node
};

inline topology::PciDevice Gpu(const std::string& address, int node, uint16_t device = 0x2330) {
  topology::PciDevice d;
  d.address = address;
  d.parent = "pci0000:00";
  d.role = topology::PciRole::kGpu;
  d.vendor_id = 0x10de;
  d.device_id = device;
  d.class_id = 0x0302;
  d.numa_node = node;
  return d;
}

/// A host whose node i has shape shapes[i]. CPUs are numbered node by node, core by core, with
/// a core's threads consecutive. GPUs get addresses 0000:NN:00.0 in node order.
inline topology::HostTopology MakeHost(const std::vector<NodeShape>& shapes,
                                       const std::string& name = "test-host") {
  topology::HostTopology h;
  h.hostname = name;
  h.source = "test";
  int cpu = 0, bus = 0x10;
  topology::PciDevice root;
  root.address = "pci0000:00";
  root.role = topology::PciRole::kHostBridge;
  h.pci.push_back(root);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const NodeShape& s = shapes[i];
    topology::NumaNode n;
    n.id = static_cast<int>(i);
    n.package = s.package;
    for (int c = 0; c < s.cores; ++c) {
      CpuSet core;
      for (int t = 0; t < s.threads; ++t) core.Add(cpu++);
      n.cpus = n.cpus.Union(core);
      n.cores.push_back(core);
    }
    n.memory_kib = s.memory_mib * 1024;
    uint64_t huge_kib = s.pages_2m * 2048 + s.pages_1g * 1048576;
    uint64_t base = n.memory_kib > huge_kib ? (n.memory_kib - huge_kib) / 4 : 0;
    n.pages = {{4, base, base}, {2048, s.pages_2m, s.pages_2m}, {1048576, s.pages_1g, s.pages_1g}};
    for (size_t j = 0; j < shapes.size(); ++j) n.distances.push_back(i == j ? 10 : 21);
    h.numa_nodes.push_back(n);
    for (int g = 0; g < s.gpus; ++g) {
      char addr[32];
      snprintf(addr, sizeof addr, "0000:%02x:00.0", bus++);
      h.pci.push_back(Gpu(addr, n.id));
    }
  }
  int max_pkg = 0;
  for (const NodeShape& s : shapes) max_pkg = std::max(max_pkg, s.package);
  for (int p = 0; p <= max_pkg; ++p) {
    topology::Package pkg;
    pkg.id = p;
    for (const auto& n : h.numa_nodes)
      if (n.package == p) pkg.cpus = pkg.cpus.Union(n.cpus);
    h.packages.push_back(pkg);
  }
  return h;
}

inline PciRequest GpuRequest(int count, PciNumaPolicy policy, const std::string& alias = "h100") {
  PciRequest r;
  r.alias = alias;
  r.count = count;
  r.numa_policy = policy;
  PciSpec s;
  s.alias = alias;
  s.vendor_id = 0x10de;
  s.product_id = 0x2330;
  s.device_type = "type-PCI";
  r.specs.push_back(s);
  return r;
}

/// A dedicated request with `cells` equal cells of vcpus/cells vCPUs each.
inline PlacementRequest Dedicated(int vcpus, uint64_t memory_mib, int cells = 1,
                                  ThreadPolicy thread = ThreadPolicy::kPrefer) {
  PlacementRequest r;
  r.flavor = "test";
  r.vcpus = vcpus;
  r.memory_mib = memory_mib;
  r.cpu_policy = CpuPolicy::kDedicated;
  r.thread_policy = thread;
  for (int c = 0; c < cells; ++c) {
    GuestCell cell;
    for (int v = c * vcpus / cells; v < (c + 1) * vcpus / cells; ++v) cell.dedicated_vcpus.Add(v);
    cell.memory_mib = memory_mib / cells;
    r.cells.push_back(cell);
  }
  return r;
}

/// Random tiny hosts and requests for brute-force comparison (≤ 3 nodes, ≤ 6 CPUs per node).
struct RandomCase {
  topology::HostTopology host;
  HostUsage usage;
  HostPolicy policy;
  PlacementRequest request;
};

inline RandomCase MakeRandomCase(std::mt19937& rng, int max_nodes, int max_cores, int max_threads) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomCase rc;
  const int n_nodes = pick(1, max_nodes);
  const int threads = pick(1, max_threads);
  std::vector<NodeShape> shapes;
  for (int i = 0; i < n_nodes; ++i) {
    NodeShape s;
    s.cores = pick(1, max_cores);
    s.threads = threads;
    s.memory_mib = 1024 * pick(1, 4);
    s.pages_2m = 256 * pick(0, 3);
    s.pages_1g = pick(0, 1);
    if (s.pages_2m * 2 + s.pages_1g * 1024 > s.memory_mib) s.pages_2m = s.pages_1g = 0;
    s.package = n_nodes > 1 && i >= (n_nodes + 1) / 2 ? 1 : 0;
    s.gpus = pick(0, 2) == 0 ? 1 : 0;
    shapes.push_back(s);
  }
  rc.host = MakeHost(shapes);
  if (pick(0, 3) == 0) rc.host.pci.push_back(Gpu("0000:7f:00.0", -1));  // unknown NUMA node
  for (const auto& n : rc.host.numa_nodes) {
    NodeUsage& u = rc.usage.nodes[n.id];
    for (int c : n.cpus.ToVector())
      if (pick(0, 3) == 0) u.pinned_cpus.Add(c);
    if (pick(0, 2) == 0) u.pages_used[4] = n.pages[0].total / pick(2, 4);
    if (n.pages[1].total && pick(0, 1)) u.pages_used[2048] = n.pages[1].total / 2;
    if (pick(0, 4) == 0) u.shared_vcpus = pick(0, 4);
  }
  for (const auto& d : rc.host.pci)
    if (d.role == topology::PciRole::kGpu && pick(0, 3) == 0) rc.usage.devices.insert(d.address);
  rc.policy.strategy = pick(0, 1) ? Strategy::kPack : Strategy::kSpread;
  rc.policy.cpu_allocation_ratio = pick(1, 2);
  // Sometimes the operator splits CPUs into dedicated and shared sets, overlapping or not.
  if (pick(0, 2) == 0) {
    CpuSet dedicated, shared;
    for (int c : rc.host.AllCpus().ToVector()) {
      int k = pick(0, 3);
      if (k != 1) dedicated.Add(c);
      if (k != 0) shared.Add(c);
    }
    rc.policy.cpu_dedicated_set = dedicated;
    rc.policy.cpu_shared_set = shared;
  }

  PlacementRequest& r = rc.request;
  r.flavor = "random";
  const int kind = pick(0, 5);  // 0 shared floating, 1 shared NUMA, 2-3 dedicated, 4-5 mixed
  r.cpu_policy = kind <= 1 ? CpuPolicy::kShared : kind <= 3 ? CpuPolicy::kDedicated : CpuPolicy::kMixed;
  if (r.cpu_policy != CpuPolicy::kShared) {
    r.thread_policy = static_cast<ThreadPolicy>(pick(0, 2));
    r.emulator_policy = pick(0, 2) == 0 ? EmulatorPolicy::kIsolate : EmulatorPolicy::kShare;
  }
  const int page = pick(0, 5);
  r.page_size.kind = page <= 1 ? PageSizeRequest::kNone
                     : page == 2 ? PageSizeRequest::kSmall
                     : page == 3 ? PageSizeRequest::kLarge
                     : page == 4 ? PageSizeRequest::kAny
                                 : PageSizeRequest::kExplicit;
  if (r.page_size.kind == PageSizeRequest::kExplicit) r.page_size.size_kib = pick(0, 1) ? 2048 : 1048576;
  const int cells = kind == 0 ? 0 : pick(1, std::min(3, n_nodes + 1));
  int vcpu = 0;
  for (int c = 0; c < cells; ++c) {
    GuestCell cell;
    int n = pick(1, 3);
    for (int i = 0; i < n; ++i, ++vcpu) {
      bool shared = r.cpu_policy == CpuPolicy::kShared ||
                    (r.cpu_policy == CpuPolicy::kMixed && vcpu == 0);
      (shared ? cell.shared_vcpus : cell.dedicated_vcpus).Add(vcpu);
    }
    cell.memory_mib = 512 * pick(1, 2);
    r.memory_mib += cell.memory_mib;
    r.cells.push_back(cell);
  }
  if (cells == 0) {
    r.page_size.kind = PageSizeRequest::kNone;
    vcpu = pick(1, 4);
    r.memory_mib = 512 * pick(1, 4);
  }
  r.vcpus = vcpu;
  const int n_pci = pick(0, 3) == 0 ? pick(1, 2) : 0;
  for (int i = 0; i < n_pci; ++i) {
    PciRequest q = GpuRequest(pick(1, 2), static_cast<PciNumaPolicy>(pick(0, 3)), "gpu" + std::to_string(i));
    r.pci.push_back(q);
  }
  return rc;
}

}  // namespace accel::placement::testing

namespace accel::placement::testing {

/// A random, realistic-sized request for hosts like the fixtures: 1–4 cells of up to 16 vCPUs,
/// every policy combination, page sizes, and sometimes GPUs of any vendor in the fixtures.
inline PlacementRequest RandomRequest(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PlacementRequest r;
  r.flavor = "random";
  const int kind = pick(0, 5);
  r.cpu_policy = kind == 0 ? CpuPolicy::kShared : kind <= 3 ? CpuPolicy::kDedicated : CpuPolicy::kMixed;
  if (r.cpu_policy != CpuPolicy::kShared) {
    r.thread_policy = static_cast<ThreadPolicy>(pick(0, 2));
    r.emulator_policy = pick(0, 2) == 0 ? EmulatorPolicy::kIsolate : EmulatorPolicy::kShare;
  }
  const int page = pick(0, 4);
  r.page_size.kind = page == 0 ? PageSizeRequest::kNone
                     : page == 1 ? PageSizeRequest::kLarge
                     : page == 2 ? PageSizeRequest::kAny
                                 : PageSizeRequest::kExplicit;
  if (r.page_size.kind == PageSizeRequest::kExplicit) r.page_size.size_kib = pick(0, 1) ? 2048 : 1048576;
  const int cells = kind == 0 && pick(0, 1) ? 0 : pick(1, 4);
  int vcpu = 0;
  for (int c = 0; c < cells; ++c) {
    GuestCell cell;
    int n = pick(1, 16);
    for (int i = 0; i < n; ++i, ++vcpu) {
      bool shared = r.cpu_policy == CpuPolicy::kShared || (r.cpu_policy == CpuPolicy::kMixed && i < 2 && n > 2);
      (shared ? cell.shared_vcpus : cell.dedicated_vcpus).Add(vcpu);
    }
    cell.memory_mib = 1024 * pick(1, 64);
    r.memory_mib += cell.memory_mib;
    r.cells.push_back(cell);
  }
  if (cells == 0) {
    r.page_size.kind = PageSizeRequest::kNone;
    vcpu = pick(1, 16);
    r.memory_mib = 1024 * pick(1, 64);
  }
  r.vcpus = vcpu;
  if (pick(0, 2) == 0) {
    const uint16_t vendors[][2] = {{0x10de, 0x2330}, {0x1002, 0x74a1}, {0x1da3, 0x1020}, {0x10de, 0x2684}};
    const auto& v = vendors[pick(0, 3)];
    PciRequest q = GpuRequest(pick(1, 4), static_cast<PciNumaPolicy>(pick(0, 3)), "accel");
    q.specs[0].vendor_id = v[0];
    q.specs[0].product_id = v[1];
    r.pci.push_back(q);
  }
  return r;
}

}  // namespace accel::placement::testing

namespace accel::placement::testing {

/// A few lines that let a person rebuild a failing random case by hand.
inline std::string Describe(const RandomCase& rc) {
  std::string s;
  for (const auto& n : rc.host.numa_nodes) {
    s += "node " + std::to_string(n.id) + " pkg " + std::to_string(n.package) + " cores";
    for (const auto& c : n.cores) s += " [" + c.ToString() + "]";
    s += " pages";
    for (const auto& p : n.pages) s += " " + std::to_string(p.size_kib) + ":" + std::to_string(p.total);
    auto it = rc.usage.nodes.find(n.id);
    if (it != rc.usage.nodes.end()) {
      s += " | pinned " + it->second.pinned_cpus.ToString() + " shared_used " + std::to_string(it->second.shared_vcpus);
      for (const auto& [size, used] : it->second.pages_used) s += " used " + std::to_string(size) + ":" + std::to_string(used);
    }
    s += "\n";
  }
  for (const auto& d : rc.host.pci)
    if (d.role == topology::PciRole::kGpu)
      s += "gpu " + d.address + " node " + std::to_string(d.numa_node) + (rc.usage.devices.count(d.address) ? " used" : "") + "\n";
  if (rc.policy.cpu_dedicated_set) s += "dedicated set " + rc.policy.cpu_dedicated_set->ToString() + "\n";
  if (rc.policy.cpu_shared_set) s += "shared set " + rc.policy.cpu_shared_set->ToString() + "\n";
  const PlacementRequest& r = rc.request;
  s += std::string("request ") + CpuPolicyName(r.cpu_policy) + " " + ThreadPolicyName(r.thread_policy) + " emu " +
       EmulatorPolicyName(r.emulator_policy) + " page kind " + std::to_string(r.page_size.kind) + " " +
       std::to_string(r.page_size.size_kib) + " vcpus " + std::to_string(r.vcpus) + " mem " + std::to_string(r.memory_mib) + "\n";
  for (const auto& c : r.cells)
    s += "  cell ded " + c.dedicated_vcpus.ToString() + " shared " + c.shared_vcpus.ToString() + " mem " +
         std::to_string(c.memory_mib) + "\n";
  for (const auto& q : r.pci)
    s += "  pci " + q.alias + " x" + std::to_string(q.count) + " " + PciNumaPolicyName(q.numa_policy) + "\n";
  return s;
}

}  // namespace accel::placement::testing
