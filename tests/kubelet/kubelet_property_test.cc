// The issue's Measure, as tests.
//
// 1. For every example flavor and 1,000 random flavors (cells 1-4, threads 1-2, page sizes, 0-8
//    GPUs, numa_policy required/preferred) placed by the engine on the fixture hosts, the
//    KubeletConfiguration accel derives (with template-like reservation overrides, the guest's
//    hugepage pools as `accel cluster plan` sizes them, Kubernetes 1.29-1.36) obeys every kubelet
//    rule. The rules are checked by a checker written here from the kubelet's documentation
//    (shared/reference/platform.md §2) — not CheckKubeletConfig, and not common/quantity.h.
// 2. `accel cluster pods` never predicts admission for a pod the kubelet's rules reject: on the
//    small guests of those flavors, with random kubelet policies (topology single-numa-node,
//    restricted, best-effort, none; scope pod or container; Memory Manager Static or None; CPU
//    Manager static or none) and random advertised devices (replicas, devices without a NUMA
//    node, failRequestsGreaterThanOne), sequences of random pods are judged by NodeAdmission and
//    by an oracle that does what the kubelet does: the node-allocatable check, every hint
//    provider's hints by enumerating every cell subset (cpumanager generateCPUTopologyHints,
//    memorymanager calculateHints with its group rules, devicemanager
//    generateDeviceTopologyHints), the topology manager's merge over every permutation of hints
//    (mergePermutation: AND of the masks, preferred only when every hint is preferred and all
//    masks are equal; single-numa-node's filter; the narrowest best hint), then Allocate
//    (full-pcpus-only, the Memory Manager's default and extended hints, the plugin's
//    failRequestsGreaterThanOne). The oracle judges each pod on the node as the predictor left it
//    (the CPUs, memory, devices and Memory Manager groups the admitted pods hold).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>

#include "kubelet/guest_layout.h"
#include "kubelet/check.h"
#include "kubelet/derive.h"
#include "cluster/plan.h"
#include "cluster/group_node.h"
#include "kubelet/admission.h"
#include "common/error.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "topology/sources.h"

namespace accel::kubelet {
namespace kubelet_property_test {

using nlohmann::json;

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

// ---------------------------------------------------------------------------------------------
// Quantities, read here: whole numbers with a binary (Ki Mi Gi Ti) or decimal (k M G T) suffix;
// CPU as whole CPUs or millicores ("500m").

constexpr int64_t kMiB = 1048576;

int64_t Bytes(const std::string& q) {
  size_t i = 0;
  while (i < q.size() && std::isdigit(static_cast<unsigned char>(q[i]))) ++i;
  if (i == 0 || i > 15) return -1;
  static const std::map<std::string, int64_t> kMultiplier = {
      {"", 1}, {"Ki", 1024}, {"Mi", kMiB}, {"Gi", 1024 * kMiB}, {"Ti", 1024LL * 1024 * kMiB},
      {"k", 1000}, {"M", 1000000}, {"G", 1000000000}, {"T", 1000000000000LL}};
  auto it = kMultiplier.find(q.substr(i));
  return it == kMultiplier.end() ? -1 : std::stoll(q.substr(0, i)) * it->second;
}

// MiB, rounded up; -1 when not a quantity.
int64_t Mib(const json& v) {
  if (!v.is_string()) return -1;
  const int64_t b = Bytes(v.get<std::string>());
  return b < 0 ? -1 : (b + kMiB - 1) / kMiB;
}

int64_t MilliCpu(const json& v) {
  if (!v.is_string()) return -1;
  const std::string s = v.get<std::string>();
  if (!s.empty() && s.back() == 'm') return std::stoll(s.substr(0, s.size() - 1));
  return std::stoll(s) * 1000;
}

// The guest core of a vCPU and its siblings (libvirt numbers threads of a core consecutively).
CpuSet CoreOfVcpu(const GuestLayout& g, int v) {
  CpuSet s;
  const int core = v / g.threads_per_core;
  for (int t = 0; t < g.threads_per_core; ++t)
    if (core * g.threads_per_core + t < g.vcpus) s.Add(core * g.threads_per_core + t);
  return s;
}

// ---------------------------------------------------------------------------------------------
// 1. The kubelet's rules for a configuration on a guest, and accel's own rules from the issue.

std::vector<std::string> Violations(const json& c, const GuestLayout& g, const std::vector<GuestHugepagePool>& pools,
                                    const KubernetesVersion& v) {
  std::vector<std::string> out;
  auto bad = [&](const std::string& s) { out.push_back(s); };
  const std::vector<GuestCellLayout> cells = g.cells_or_one();
  auto get = [&](const char* key, const std::string& dflt) {
    return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : dflt;
  };
  if (get("apiVersion", "") != "kubelet.config.k8s.io/v1beta1" || get("kind", "") != "KubeletConfiguration")
    bad("apiVersion/kind");
  const bool alpha_gate = c.contains("featureGates") && c["featureGates"].value("CPUManagerPolicyAlphaOptions", false);

  // CPU Manager.
  const std::string cpu = get("cpuManagerPolicy", "none");
  if (cpu != "none" && cpu != "static") bad("cpuManagerPolicy " + cpu);
  const json options = c.value("cpuManagerPolicyOptions", json::object());
  static const std::set<std::string> kKnown = {"full-pcpus-only", "distribute-cpus-across-numa", "strict-cpu-reservation",
                                               "prefer-align-cpus-by-uncorecache", "align-by-socket",
                                               "distribute-cpus-across-cores"};
  static const std::set<std::string> kAlpha = {"align-by-socket", "distribute-cpus-across-cores"};
  for (auto it = options.begin(); it != options.end(); ++it) {
    if (!kKnown.count(it.key())) bad("unknown CPU option " + it.key());
    if (!it.value().is_string() || (it.value() != "true" && it.value() != "false")) bad("option value " + it.key());
    if (kAlpha.count(it.key()) && !alpha_gate) bad("alpha option without its gate: " + it.key());
    if (cpu != "static") bad("CPU option without the static policy: " + it.key());
    if (it.key() == "strict-cpu-reservation" && !(v.major == 1 && v.minor >= 32)) bad("strict-cpu-reservation before 1.32");
  }
  const bool full = options.contains("full-pcpus-only") && options["full-pcpus-only"] == "true";
  if (cpu == "static") {
    CpuSet reserved;
    std::string error;
    if (c.contains("reservedSystemCPUs") && !CpuSet::Parse(c["reservedSystemCPUs"].get<std::string>(), &reserved, &error))
      bad("reservedSystemCPUs does not parse");
    int64_t cpu_reservation = 0;
    for (const char* key : {"kubeReserved", "systemReserved"})
      if (c.contains(key) && c[key].contains("cpu")) cpu_reservation += MilliCpu(c[key]["cpu"]);
    if (reserved.Empty() && cpu_reservation <= 0) bad("static CPU Manager without a CPU reservation");
    for (int cpu_id : reserved.ToVector()) {
      if (cpu_id >= g.vcpus) bad("reserved CPU " + std::to_string(cpu_id) + " outside the guest");
      if ((g.threads_per_core > 1 || full) && !CoreOfVcpu(g, cpu_id).IsSubsetOf(reserved))
        bad("reserved CPU " + std::to_string(cpu_id) + " splits a core");
      if (!cells.front().vcpus.Contains(cpu_id)) bad("reserved CPU " + std::to_string(cpu_id) + " not on guest cell 0 (accel)");
    }
    if (reserved.Count() >= g.vcpus) bad("every CPU reserved");
    if (full != (g.threads_per_core > 1)) bad("full-pcpus-only iff the guest has SMT (accel)");
  }

  // Topology Manager.
  const std::string topo = get("topologyManagerPolicy", "none");
  static const std::set<std::string> kTopo = {"none", "best-effort", "restricted", "single-numa-node"};
  if (!kTopo.count(topo)) bad("topologyManagerPolicy " + topo);
  const std::string scope = get("topologyManagerScope", "container");
  if (scope != "container" && scope != "pod") bad("scope " + scope);
  const json topo_options = c.value("topologyManagerPolicyOptions", json::object());
  for (auto it = topo_options.begin(); it != topo_options.end(); ++it)
    if (it.key() != "prefer-closest-numa-nodes" && it.key() != "max-allowable-numa-nodes") bad("topology option " + it.key());
  if (topo == "single-numa-node" && options.contains("align-by-socket") && options["align-by-socket"] == "true")
    bad("align-by-socket with single-numa-node");
  bool every_device_has_cell = true;
  for (const GuestDevice& d : g.devices) every_device_has_cell = every_device_has_cell && d.guest_cell >= 0;
  if (topo == "single-numa-node" && cells.size() > 1 && !every_device_has_cell)
    bad("single-numa-node with a device local to no guest cell (kubernetes#84869)");
  if (cells.size() > 1 && every_device_has_cell && topo != "single-numa-node") bad("aligned guest without single-numa-node (accel)");
  if (topo == "restricted" && v.minor >= 32 && topo_options.value("prefer-closest-numa-nodes", "") != "true")
    bad("restricted without prefer-closest-numa-nodes (accel)");
  if (cells.size() > 8 && topo != "none" &&
      std::stoi(topo_options.value("max-allowable-numa-nodes", "8")) < static_cast<int>(cells.size()))
    bad("more than 8 NUMA nodes without max-allowable-numa-nodes");

  // Memory Manager: the sum rule per memory type, and the entries.
  const std::string mem = get("memoryManagerPolicy", "None");
  if (mem != "None" && mem != "Static") bad("memoryManagerPolicy " + mem);
  if (mem == "Static") {
    std::map<std::string, int64_t> want;
    for (const char* key : {"kubeReserved", "systemReserved"})
      if (c.contains(key))
        for (auto it = c[key].begin(); it != c[key].end(); ++it)
          if (it.key() == "memory" || it.key().rfind("hugepages-", 0) == 0) want[it.key()] += Mib(it.value());
    if (!c.contains("evictionHard")) {
      want["memory"] += 100;  // the kubelet's default hard threshold
    } else if (c["evictionHard"].contains("memory.available")) {
      const int64_t e = Mib(c["evictionHard"]["memory.available"]);
      if (e < 0) bad("evictionHard memory.available is not absolute");
      want["memory"] += e;
    }
    std::map<std::string, int64_t> got;
    std::set<std::pair<int, std::string>> seen;
    for (const json& e : c.value("reservedMemory", json::array())) {
      const int node = e.value("numaNode", -1);
      if (node < 0 || node >= static_cast<int>(cells.size())) {
        bad("reservedMemory of a NUMA node the guest lacks");
        continue;
      }
      uint64_t pool_all = 0;
      for (const GuestHugepagePool& p : pools)
        if (p.cell == node) pool_all += p.pages * p.page_kib / 1024;
      for (auto it = e["limits"].begin(); it != e["limits"].end(); ++it) {
        const int64_t m = Mib(it.value());
        if (m <= 0) bad("reservedMemory limit not positive");
        if (!seen.insert({node, it.key()}).second) bad("reservedMemory (node, type) twice");
        got[it.key()] += m;
        if (it.key() == "memory") {
          if (static_cast<uint64_t>(m) + pool_all > cells[static_cast<size_t>(node)].memory_mib)
            bad("reservedMemory memory beyond the cell's non-hugepage memory");
        } else if (it.key().rfind("hugepages-", 0) == 0) {
          const uint64_t kib = static_cast<uint64_t>(Bytes(it.key().substr(10)) / 1024);
          uint64_t pool = 0;
          for (const GuestHugepagePool& p : pools)
            if (p.cell == node && p.page_kib == kib) pool += p.pages * p.page_kib / 1024;
          if (static_cast<uint64_t>(m) > pool) bad("hugepages reservation beyond the pool");
        } else {
          bad("reservedMemory type " + it.key());
        }
      }
    }
    std::set<std::string> types;
    for (const auto& [t, x] : want) types.insert(t);
    for (const auto& [t, x] : got) types.insert(t);
    for (const std::string& t : types)
      if (want[t] != got[t]) bad("sum rule for " + t + ": " + std::to_string(got[t]) + " != " + std::to_string(want[t]));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Flavors on the fixture hosts.

const std::vector<topology::HostTopology>& Hosts() {
  static const std::vector<topology::HostTopology> hosts = [] {
    std::vector<topology::HostTopology> out;
    for (const char* f : {"hgx-h100", "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox"})
      out.push_back(topology::LoadTopology(Src(std::string("fixtures/hosts/") + f + ".json")));
    return out;
  }();
  return hosts;
}

const placement::PciAliasTable& Aliases() {
  static const placement::PciAliasTable table = placement::ParsePciAliases(json::parse(R"([
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "h100-preferred", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "preferred"},
    {"name": "mi300x", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "mi300x-preferred", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "preferred"},
    {"name": "gaudi2", "vendor_id": "1da3", "product_id": "1020", "device_type": "type-PCI", "numa_policy": "required"}
  ])"), "test aliases");
  return table;
}

std::optional<GuestLayout> PlanOnFixtures(const placement::PlacementRequest& request, DeviceCellSource source) {
  for (const topology::HostTopology& host : Hosts()) {
    placement::PlaceResult r = placement::Place(host, {}, {}, request);
    if (r.fits()) return GuestLayoutOf(request, *r.placement, host, source);
  }
  return std::nullopt;
}

// A random flavor as the issue describes; nullopt when Nova would refuse it.
std::optional<placement::PlacementRequest> RandomFlavor(std::mt19937_64& rng, int* cells_out, int* threads_out) {
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  placement::Flavor f;
  f.name = "random";
  const int cells = uniform(1, 4);
  const int threads = uniform(1, 2);
  f.vcpus = threads * uniform(1, 12) * cells;
  f.ram_mib = static_cast<uint64_t>(uniform(1, 48)) * 1024 * cells;
  f.extra_specs.push_back({"hw:cpu_policy", "dedicated"});
  if (cells > 1 || uniform(0, 1)) f.extra_specs.push_back({"hw:numa_nodes", std::to_string(cells)});
  if (threads > 1) f.extra_specs.push_back({"hw:cpu_threads", std::to_string(threads)});
  static const char* const kPages[] = {"", "small", "2MB", "1GB", "large"};
  const std::string page = kPages[uniform(0, 4)];
  if (!page.empty()) f.extra_specs.push_back({"hw:mem_page_size", page});
  static const char* const kAlias[] = {"h100", "h100-preferred", "mi300x", "mi300x-preferred", "gaudi2"};
  const int gpus = uniform(0, 8);
  if (gpus > 0) f.extra_specs.push_back({"pci_passthrough:alias", std::string(kAlias[uniform(0, 4)]) + ":" + std::to_string(gpus)});
  *cells_out = cells;
  *threads_out = threads;
  try {
    return placement::BuildRequest(f, Aliases(), f.name);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// Template-like reservation overrides (the example template's, another threshold, or none).
json RandomReservations(std::mt19937_64& rng) {
  switch (rng() % 3) {
    case 0:
      return json::parse(R"({"kubeReserved": {"cpu": "500m", "memory": "1Gi"}, "systemReserved": {"memory": "924Mi"},
                             "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"}})");
    case 1: return json::parse(R"({"evictionHard": {"memory.available": "300Mi"}, "systemReserved": {"memory": "512Mi"}})");
    default: return json::object();
  }
}

std::string Describe(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

TEST(KubeletProperty, EveryExampleFlavorObeysTheKubeletRules) {
  const placement::PciAliasTable aliases = placement::LoadPciAliases(Src("examples/flavors/aliases.json"));
  int checked = 0;
  for (const char* dir : {"examples/flavors", "examples/cluster/flavors"})
    for (const auto& entry : std::filesystem::directory_iterator(Src(dir))) {
      if (entry.path().extension() != ".yaml") continue;
      for (const placement::Flavor& f : placement::LoadFlavors(entry.path().string())) {
        const placement::PlacementRequest req = placement::BuildRequest(f, aliases, entry.path().string());
        for (DeviceCellSource source : {DeviceCellSource::kExpanderBus, DeviceCellSource::kNone}) {
          const std::optional<GuestLayout> g = PlanOnFixtures(req, source);
          ASSERT_TRUE(g) << f.name;
          for (int minor : {29, 30, 33, 35, 36}) {
            KubeletInputs in;
            in.version = KubernetesVersion{1, minor, 0};
            in.hugepages = cluster::GuestHugepagesFor(*g);
            const KubeletPlan plan = DeriveKubeletConfig(*g, in);
            EXPECT_EQ(Describe(Violations(plan.config, *g, in.hugepages, in.version)), "")
                << f.name << " 1." << minor << "\n" << plan.config.dump(2);
            ++checked;
          }
        }
      }
    }
  EXPECT_GE(checked, 60);
  std::cout << "[ measure  ] example flavors: " << checked << " configurations obey every kubelet rule\n";
}

TEST(KubeletProperty, ThousandRandomFlavorsObeyTheKubeletRules) {
  int trials = 0, planned = 0, smt = 0, multi = 0, restricted = 0, pools = 0, violations = 0;
  // Until 1,000 flavors have a guest (a flavor no fixture host holds has no kubelet to configure).
  for (uint64_t seed = 1; planned < 1000 && seed <= 5000; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    int cells = 0, threads = 0;
    const std::optional<placement::PlacementRequest> req = RandomFlavor(rng, &cells, &threads);
    if (!req) continue;
    ++trials;
    const DeviceCellSource source = rng() % 4 == 0 ? DeviceCellSource::kNone : DeviceCellSource::kExpanderBus;
    const std::optional<GuestLayout> g = PlanOnFixtures(*req, source);
    if (!g) continue;
    ++planned;
    KubeletInputs in;
    in.version = KubernetesVersion{1, 29 + static_cast<int>(rng() % 8), 0};
    in.hugepages = cluster::GuestHugepagesFor(*g);
    in.overrides = RandomReservations(rng);
    const KubeletPlan plan = DeriveKubeletConfig(*g, in);
    const std::vector<std::string> v = Violations(plan.config, *g, in.hugepages, in.version);
    violations += v.empty() ? 0 : 1;
    EXPECT_EQ(Describe(v), "") << "seed " << seed << "\n" << plan.config.dump(2);
    smt += g->threads_per_core > 1 ? 1 : 0;
    multi += g->cells.size() > 1 ? 1 : 0;
    restricted += plan.config.value("topologyManagerPolicy", "") == "restricted" ? 1 : 0;
    pools += in.hugepages.empty() ? 0 : 1;
  }
  EXPECT_EQ(planned, 1000);
  EXPECT_GT(planned * 3, trials) << "the generator should make flavors the fixture hosts hold";
  EXPECT_GT(smt, 200);
  EXPECT_GT(multi, 400);
  EXPECT_GT(restricted, 20);
  EXPECT_GT(pools, 100);
  std::cout << "[ measure  ] random flavors: " << trials << " made, " << planned << " placed (" << smt << " SMT, " << multi
            << " multi-cell, " << restricted << " restricted, " << pools << " with hugepage pools): " << violations
            << " break a kubelet rule\n";
}

// ---------------------------------------------------------------------------------------------
// 2. The oracle: the kubelet's admission, by enumeration.

struct Hint {
  uint32_t mask = 0;  ///< 0 = nil (any cell)
  bool preferred = false;
};
using HintList = std::vector<Hint>;

// The node as the kubelet reads its configuration (parsed again here).
struct OracleNode {
  std::string topo;
  bool static_cpu = false, full = false, static_mem = false, pod_scope = false;
  int cells = 1, threads = 1, vcpus = 0, max_pods = 110;
  std::vector<CpuSet> cell_cpus;
  CpuSet reserved;
  std::vector<int64_t> mem_alloc;                     // MiB per cell (Memory Manager)
  std::vector<std::map<uint64_t, int64_t>> hp_alloc;  // per cell: page KiB -> MiB
  int64_t alloc_cpu = 0, alloc_mem = 0;               // node allocatable: millicores, MiB
  std::map<uint64_t, int64_t> alloc_hp;
  std::vector<NodeResource> res;
};

OracleNode OracleNodeOf(const GuestLayout& g, const std::vector<GuestHugepagePool>& pools, const json& c,
                        const std::vector<NodeResource>& resources) {
  OracleNode n;
  const std::vector<GuestCellLayout> cells = g.cells_or_one();
  n.cells = static_cast<int>(cells.size());
  n.threads = g.threads_per_core;
  n.vcpus = g.vcpus;
  n.topo = c.value("topologyManagerPolicy", "none");
  n.static_cpu = c.value("cpuManagerPolicy", "none") == "static";
  n.full = n.static_cpu && c.contains("cpuManagerPolicyOptions") &&
           c["cpuManagerPolicyOptions"].value("full-pcpus-only", "") == "true";
  n.static_mem = c.value("memoryManagerPolicy", "None") == "Static";
  n.pod_scope = c.value("topologyManagerScope", "container") == "pod";
  n.max_pods = c.value("maxPods", 110);
  for (const GuestCellLayout& cell : cells) n.cell_cpus.push_back(cell.vcpus);
  int64_t reserved_cpu = 0;
  if (c.contains("reservedSystemCPUs")) {
    std::string error;
    EXPECT_TRUE(CpuSet::Parse(c["reservedSystemCPUs"].get<std::string>(), &n.reserved, &error));
    reserved_cpu = 1000LL * n.reserved.Count();
  } else {
    for (const char* key : {"kubeReserved", "systemReserved"})
      if (c.contains(key) && c[key].contains("cpu")) reserved_cpu += MilliCpu(c[key]["cpu"]);
  }
  n.alloc_cpu = std::max<int64_t>(0, 1000LL * g.vcpus - reserved_cpu);  // the kubelet clamps at zero
  int64_t pools_mib = 0;
  n.hp_alloc.resize(cells.size());
  for (const GuestHugepagePool& p : pools) {
    const int64_t mib = static_cast<int64_t>(p.pages * p.page_kib / 1024);
    pools_mib += mib;
    n.alloc_hp[p.page_kib] += mib;
    n.hp_alloc[static_cast<size_t>(p.cell)][p.page_kib] += mib;
  }
  int64_t eviction = c.contains("evictionHard") ? 0 : 100;
  if (c.contains("evictionHard") && c["evictionHard"].contains("memory.available")) eviction = Mib(c["evictionHard"]["memory.available"]);
  int64_t reserved_mem = eviction;
  for (const char* key : {"kubeReserved", "systemReserved"})
    if (c.contains(key) && c[key].contains("memory")) reserved_mem += Mib(c[key]["memory"]);
  n.alloc_mem = std::max<int64_t>(0, static_cast<int64_t>(g.memory_mib) - reserved_mem - pools_mib);
  for (size_t i = 0; i < cells.size(); ++i) {
    int64_t pool = 0;
    for (const auto& [kib, mib] : n.hp_alloc[i]) pool += mib;
    n.mem_alloc.push_back(static_cast<int64_t>(cells[i].memory_mib) - pool);
  }
  if (n.static_mem)
    for (const json& e : c.value("reservedMemory", json::array()))
      for (auto it = e["limits"].begin(); it != e["limits"].end(); ++it) {
        const size_t node = static_cast<size_t>(e["numaNode"].get<int>());
        if (it.key() == "memory") n.mem_alloc[node] -= Mib(it.value());
        else n.hp_alloc[node][static_cast<uint64_t>(Bytes(it.key().substr(10)) / 1024)] -= Mib(it.value());
      }
  n.res = resources;
  return n;
}

// What the admitted pods hold (the predictor's node), in the oracle's terms.
struct OracleState {
  std::vector<CpuSet> held;
  std::vector<int64_t> mem_held;
  std::vector<std::map<uint64_t, int64_t>> hp_held;
  std::vector<std::map<std::string, int>> dev_held;
  std::vector<std::vector<int>> group;
  std::vector<int> assignments;
  int64_t cpu_used = 0, mem_used = 0;
  std::map<uint64_t, int64_t> hp_used;
  std::map<std::string, int> dev_used;
  int pods = 0;
};

void ReadNode(const NodeAdmission& node, OracleState* s) {
  const std::vector<CellShare> held = node.HeldPerCell();
  s->held.clear();
  s->mem_held.clear();
  s->hp_held.clear();
  s->dev_held.clear();
  s->group.clear();
  s->assignments.clear();
  for (const CellShare& h : held) {
    s->held.push_back(h.cpus);
    s->mem_held.push_back(static_cast<int64_t>(h.memory_mib));
    std::map<uint64_t, int64_t> hp;
    for (const auto& [kib, mib] : h.hugepages_mib) hp[kib] = static_cast<int64_t>(mib);
    s->hp_held.push_back(hp);
    s->dev_held.push_back(h.devices);
    s->group.push_back(node.MemoryGroup(h.cell));
    s->assignments.push_back(node.MemoryAssignments(h.cell));
  }
}

// KEP-753's accumulation, written again.
int64_t Sum(const PodResources& pod, const std::function<int64_t(const ContainerResources&)>& f) {
  int64_t app = 0, sidecars = 0, init = 0;
  for (const ContainerResources& c : pod.containers) {
    const int64_t v = f(c);
    if (!c.init) {
      app += v;
    } else if (c.sidecar) {
      app += v;
      sidecars += v;
      init = std::max(init, sidecars);
    } else {
      init = std::max(init, sidecars + v);
    }
  }
  return std::max(app, init);
}

int64_t Req(const ContainerResources& c, const std::string& r) {
  auto it = c.requests.find(r);
  return it == c.requests.end() ? 0 : it->second;
}
int64_t Lim(const ContainerResources& c, const std::string& r) {
  auto it = c.limits.find(r);
  return it == c.limits.end() ? 0 : it->second;
}
int64_t ToMib(int64_t milli_bytes) { return ((milli_bytes + 999) / 1000 + kMiB - 1) / kMiB; }

bool Guaranteed(const PodResources& p) {
  int64_t req_cpu = 0, req_mem = 0, lim_cpu = 0, lim_mem = 0;
  for (const ContainerResources& c : p.containers) {
    if (Lim(c, "cpu") <= 0 || Lim(c, "memory") <= 0) return false;
    req_cpu += Req(c, "cpu");
    req_mem += Req(c, "memory");
    lim_cpu += Lim(c, "cpu");
    lim_mem += Lim(c, "memory");
  }
  return req_cpu == lim_cpu && req_mem == lim_mem;
}

std::vector<int> Bits(uint32_t mask) {
  std::vector<int> out;
  for (int c = 0; c < 32; ++c)
    if (mask & (1u << c)) out.push_back(c);
  return out;
}

// Kubelet's bitmask order: fewer cells first, then the lower mask.
bool Narrower(uint32_t a, uint32_t b) {
  const int ca = __builtin_popcount(a), cb = __builtin_popcount(b);
  return ca != cb ? ca < cb : a < b;
}

struct OracleVerdict {
  bool admitted = false;
  std::string reason;
};

OracleVerdict Decide(const OracleNode& n, const OracleState& s, const PodResources& pod) {
  OracleVerdict v;
  const uint32_t all = (1u << n.cells) - 1;
  const bool guaranteed = Guaranteed(pod);
  // Node allocatable.
  const int64_t cpu = Sum(pod, [](const ContainerResources& c) { return Req(c, "cpu"); }) +
                      (pod.overhead.count("cpu") ? pod.overhead.at("cpu") : 0);
  const int64_t mem = ToMib(Sum(pod, [](const ContainerResources& c) { return Req(c, "memory"); }) +
                            (pod.overhead.count("memory") ? pod.overhead.at("memory") : 0));
  std::set<std::string> names;
  for (const ContainerResources& c : pod.containers)
    for (const auto& [r, x] : c.limits) names.insert(r);
  std::map<uint64_t, int64_t> hp;
  std::map<std::string, int> dev;
  for (const std::string& r : names) {
    if (r.rfind("hugepages-", 0) == 0) {
      hp[static_cast<uint64_t>(Bytes(r.substr(10)) / 1024)] = ToMib(Sum(pod, [&](const ContainerResources& c) { return Req(c, r); }));
    } else if (r.find('/') != std::string::npos) {
      dev[r] = static_cast<int>(Sum(pod, [&](const ContainerResources& c) { return Lim(c, r); }) / 1000);
    }
  }
  auto resource = [&](const std::string& name) -> const NodeResource* {
    for (const NodeResource& r : n.res)
      if (r.name == name) return &r;
    return nullptr;
  };
  if (s.pods >= n.max_pods) return {false, "Insufficient pods"};
  if (s.cpu_used + cpu > n.alloc_cpu) return {false, "Insufficient cpu"};
  if (s.mem_used + mem > n.alloc_mem) return {false, "Insufficient memory"};
  for (const auto& [kib, mib] : hp) {
    const int64_t have = n.alloc_hp.count(kib) ? n.alloc_hp.at(kib) : 0;
    const int64_t used = s.hp_used.count(kib) ? s.hp_used.at(kib) : 0;
    if (used + mib > have) return {false, "Insufficient hugepages"};
  }
  for (const auto& [name, count] : dev) {
    const NodeResource* r = resource(name);
    const int used = s.dev_used.count(name) ? s.dev_used.at(name) : 0;
    if (r == nullptr || used + count > r->total()) return {false, "Insufficient " + name};
  }

  // The managers' demands (pod scope; the generator gives container-scope nodes one container).
  const int cpus = n.static_cpu && guaranteed
                       ? static_cast<int>(Sum(pod, [](const ContainerResources& c) {
                           const int64_t x = Req(c, "cpu");
                           return x > 0 && x % 1000 == 0 ? x / 1000 : 0;
                         }))
                       : 0;
  const bool memory_managed = n.static_mem && guaranteed;
  // Free per cell now.
  std::vector<int> avail(static_cast<size_t>(n.cells));
  for (int c = 0; c < n.cells; ++c)
    avail[static_cast<size_t>(c)] = n.cell_cpus[static_cast<size_t>(c)].Minus(n.reserved).Minus(s.held[static_cast<size_t>(c)]).Count();
  auto mem_free = [&](int c, uint64_t kib) {  // kib 0: memory
    if (kib == 0) return n.mem_alloc[static_cast<size_t>(c)] - s.mem_held[static_cast<size_t>(c)];
    const auto& a = n.hp_alloc[static_cast<size_t>(c)];
    const auto& h = s.hp_held[static_cast<size_t>(c)];
    return (a.count(kib) ? a.at(kib) : 0) - (h.count(kib) ? h.at(kib) : 0);
  };
  std::map<uint64_t, int64_t> mem_req;  // 0 = memory
  if (memory_managed) {
    mem_req[0] = mem - (pod.overhead.count("memory") ? ToMib(pod.overhead.at("memory")) : 0);
    for (const auto& [kib, mib] : hp) mem_req[kib] = mib;
  }

  std::vector<HintList> providers;
  // CPU Manager.
  if (cpus > 0) {
    int min = n.cells;
    HintList hints;
    for (uint32_t m = 1; m <= all; ++m) {
      int total = 0, free = 0;
      for (int c : Bits(m)) {
        total += n.cell_cpus[static_cast<size_t>(c)].Count();
        free += avail[static_cast<size_t>(c)];
      }
      if (total >= cpus) min = std::min(min, __builtin_popcount(m));
      if (free >= cpus) hints.push_back({m, false});
    }
    for (Hint& h : hints) h.preferred = __builtin_popcount(h.mask) == min;
    providers.push_back(hints.empty() ? HintList{{0, false}} : hints);
  }
  // Memory Manager (its hints; empty -> no preference at all).
  HintList memory_hints;
  int memory_min = n.cells;
  if (memory_managed) {
    for (uint32_t m = 1; m <= all; ++m) {
      const std::vector<int> bits = Bits(m);
      bool alloc_ok = true, free_ok = true;
      for (const auto& [kib, want] : mem_req) {
        int64_t alloc = 0, free = 0;
        for (int c : bits) {
          alloc += kib == 0 ? n.mem_alloc[static_cast<size_t>(c)]
                            : (n.hp_alloc[static_cast<size_t>(c)].count(kib) ? n.hp_alloc[static_cast<size_t>(c)].at(kib) : 0);
          free += mem_free(c, kib);
        }
        alloc_ok = alloc_ok && alloc >= want;
        free_ok = free_ok && free >= want;
      }
      if (!alloc_ok) continue;
      memory_min = std::min(memory_min, static_cast<int>(bits.size()));
      if (bits.size() == 1 && s.group[static_cast<size_t>(bits[0])].size() > 1) continue;
      bool group_ok = true;
      if (bits.size() > 1)
        for (int c : bits)
          if (s.assignments[static_cast<size_t>(c)] > 0 &&
              (s.group[static_cast<size_t>(c)].size() == 1 || s.group[static_cast<size_t>(c)] != bits))
            group_ok = false;
      if (!group_ok || !free_ok) continue;
      memory_hints.push_back({m, false});
    }
    for (Hint& h : memory_hints) h.preferred = __builtin_popcount(h.mask) == memory_min;
    if (memory_hints.empty()) providers.push_back({{0, true}});
    else
      for (size_t t = 0; t < mem_req.size(); ++t) providers.push_back(memory_hints);
  }
  // Device manager, every QoS class.
  for (const auto& [name, count] : dev) {
    const NodeResource& r = *resource(name);
    if (!r.aligned()) {
      providers.push_back({{0, true}});
      continue;
    }
    const int used = s.dev_used.count(name) ? s.dev_used.at(name) : 0;
    if (r.total() - used < count) {
      providers.push_back({{0, false}});
      continue;
    }
    int min = n.cells;
    HintList hints;
    for (uint32_t m = 1; m <= all; ++m) {
      int have = 0, free = 0;
      for (int c : Bits(m)) {
        have += r.per_cell[static_cast<size_t>(c)];
        const auto& h = s.dev_held[static_cast<size_t>(c)];
        free += r.per_cell[static_cast<size_t>(c)] - (h.count(name) ? h.at(name) : 0);
      }
      if (have >= count) min = std::min(min, __builtin_popcount(m));
      if (free >= count) hints.push_back({m, false});
    }
    for (Hint& h : hints) h.preferred = __builtin_popcount(h.mask) == min;
    providers.push_back(hints.empty() ? HintList{{0, false}} : hints);
  }

  // The topology manager.
  Hint best{all, false};
  if (n.topo != "none") {
    if (n.topo == "single-numa-node")
      for (HintList& l : providers) {
        HintList kept;
        for (const Hint& h : l)
          if (h.preferred && (h.mask == 0 || __builtin_popcount(h.mask) == 1)) kept.push_back(h);
        l = kept;
      }
    std::vector<size_t> at(providers.size(), 0);
    bool any = std::all_of(providers.begin(), providers.end(), [](const HintList& l) { return !l.empty(); });
    while (any) {
      uint32_t merged = all;
      bool preferred = true;
      uint32_t first = 0;
      for (size_t i = 0; i < providers.size(); ++i) {
        const Hint& h = providers[i][at[i]];
        if (h.mask != 0) {
          if (first == 0) first = h.mask;
          if (h.mask != first) preferred = false;
          merged &= h.mask;
        }
        preferred = preferred && h.preferred;
      }
      if (merged != 0) {
        if (preferred && !best.preferred) best = {merged, true};
        else if (preferred == best.preferred && Narrower(merged, best.mask)) best = {merged, preferred};
      }
      size_t i = 0;
      for (; i < providers.size(); ++i) {
        if (++at[i] < providers[i].size()) break;
        at[i] = 0;
      }
      if (i == providers.size()) break;
    }
    if ((n.topo == "restricted" || n.topo == "single-numa-node") && !best.preferred) return {false, "TopologyAffinityError"};
    if (n.topo == "single-numa-node" && best.mask == all) best.mask = 0;  // the policy's nil hint
  } else {
    best = {0, false};
  }

  // Allocate: the CPU Manager.
  if (cpus > 0) {
    if (n.full) {
      if (cpus % n.threads != 0) return {false, "SMTAlignmentError"};
      int physical = 0;
      for (int core = 0; core * n.threads < n.vcpus; ++core) {
        bool free = true;
        for (int t = 0; t < n.threads && core * n.threads + t < n.vcpus; ++t) {
          const int cpu_id = core * n.threads + t;
          bool held = false;
          for (const CpuSet& h : s.held) held = held || h.Contains(cpu_id);
          free = free && !held && !n.reserved.Contains(cpu_id);
        }
        physical += free ? n.threads : 0;
      }
      if (cpus > physical) return {false, "SMTAlignmentError"};
    }
    int total = 0;
    for (int a : avail) total += a;
    if (total < cpus) return {false, "UnexpectedAdmissionError"};
  }
  // Allocate: the Memory Manager.
  if (memory_managed) {
    auto find_best = [&](const HintList& hints) {
      Hint b{0, false};
      for (const Hint& h : hints) {
        if (b.mask == 0 || (h.preferred && !b.preferred) || (h.preferred == b.preferred && Narrower(h.mask, b.mask))) b = h;
      }
      return b;
    };
    if (best.mask == 0) {
      if (memory_hints.empty()) return {false, "UnexpectedAdmissionError"};
      const Hint d = find_best(memory_hints);
      if (!d.preferred && best.preferred) return {false, "UnexpectedAdmissionError"};
    } else {
      bool satisfied = true;
      for (const auto& [kib, want] : mem_req) {
        int64_t free = 0;
        for (int c : Bits(best.mask)) free += mem_free(c, kib);
        satisfied = satisfied && free >= want;
      }
      if (!satisfied) {
        HintList wider;
        for (const Hint& h : memory_hints)
          if ((h.mask & best.mask) == best.mask) wider.push_back(h);
        if (wider.empty()) return {false, "UnexpectedAdmissionError"};
        if (!find_best(wider).preferred && best.preferred) return {false, "UnexpectedAdmissionError"};
      }
    }
  }
  // Allocate: the device plugins.
  for (const ContainerResources& c : pod.containers)
    for (const auto& [name, limit] : c.limits)
      if (const NodeResource* r = resource(name); r != nullptr && r->max_per_container > 0 && limit / 1000 > r->max_per_container)
        return {false, "UnexpectedAdmissionError"};
  return {true, ""};
}

// A random pod for a guest whose cells have `cell_cpus` CPUs and `cell_mib` MiB.
std::string RandomPod(std::mt19937_64& rng, const OracleNode& n, int cell_cpus, int64_t cell_mib, bool one_container) {
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  auto resources = [&](int qos) {
    std::string cpu = std::to_string(uniform(1, std::max(1, cell_cpus + cell_cpus / 2)));
    if (uniform(0, 4) == 0) cpu = std::to_string(uniform(1, 3) * 500) + "m";
    const int units = uniform(1, std::max<int>(2, static_cast<int>(cell_mib * 5 / 4 / 256)));
    const std::string memory = std::to_string(256 * units) + "Mi";
    std::string extra;
    if (!n.alloc_hp.empty() && uniform(0, 2) == 0) {
      const auto& [kib, mib] = *std::next(n.alloc_hp.begin(), uniform(0, static_cast<int>(n.alloc_hp.size()) - 1));
      const int64_t pages = std::max<int64_t>(1, mib * 1024 / static_cast<int64_t>(kib) / n.cells / 2 + 1);
      extra += ", hugepages-" + std::string(kib >= 1048576 ? "1Gi" : "2Mi") + ": " +
               std::to_string(uniform(1, static_cast<int>(std::min<int64_t>(pages, 64))) * (kib >= 1048576 ? 1024 : 2)) + "Mi";
    }
    if (!n.res.empty() && uniform(0, 1) == 0) {
      const NodeResource& r = n.res[static_cast<size_t>(uniform(0, static_cast<int>(n.res.size()) - 1))];
      extra += ", " + r.name + ": " + std::to_string(uniform(1, 3));
    }
    if (qos == 0) return "{limits: {cpu: " + cpu + ", memory: " + memory + extra + "}}";
    if (qos == 1) return "{requests: {cpu: " + cpu + ", memory: " + memory + "}" + (extra.empty() ? "" : ", limits: {" + extra.substr(2) + "}") + "}";
    return extra.find("hugepages") == std::string::npos && !extra.empty() ? "{limits: {" + extra.substr(2) + "}}" : "{}";
  };
  const int qos = uniform(0, 9) < 6 ? 0 : uniform(0, 1) + 1;  // Guaranteed mostly
  std::string y = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n";
  if (!one_container && uniform(0, 3) == 0)
    y += "  initContainers:\n  - {name: init, " + std::string(uniform(0, 2) == 0 ? "restartPolicy: Always, " : "") +
         "resources: " + resources(qos) + "}\n";
  y += "  containers:\n";
  const int app = one_container ? 1 : uniform(1, 2);
  for (int i = 0; i < app; ++i) y += "  - {name: c" + std::to_string(i) + ", resources: " + resources(qos) + "}\n";
  return y;
}

TEST(KubeletProperty, PodsNeverAdmittedWhereTheKubeletRulesReject) {
  std::map<std::string, int> agree_reject, conservative_by;  // by oracle / predictor reason
  int decisions = 0, agree_admit = 0, conservative = 0, unsound = 0, scenarios = 0, reason_mismatch = 0;
  std::map<std::string, int> policies;
  std::string first_unsound, first_conservative, reason_examples;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed * 104729);
    int cells = 0, threads = 0;
    const std::optional<placement::PlacementRequest> req = RandomFlavor(rng, &cells, &threads);
    if (!req) continue;
    const DeviceCellSource source = rng() % 4 == 0 ? DeviceCellSource::kNone : DeviceCellSource::kExpanderBus;
    std::optional<GuestLayout> g = PlanOnFixtures(*req, source);
    if (!g || g->vcpus > 48) continue;  // small guests: the oracle enumerates every permutation
    const std::vector<GuestHugepagePool> pools = cluster::GuestHugepagesFor(*g);
    // Random policies over the derived configuration.
    json overrides = RandomReservations(rng);
    static const char* const kTopo[] = {"", "", "single-numa-node", "restricted", "best-effort", "none"};
    const std::string topo = kTopo[rng() % 6];
    if (!topo.empty()) overrides["topologyManagerPolicy"] = topo;
    const bool container_scope = rng() % 4 == 0;
    if (container_scope) overrides["topologyManagerScope"] = "container";
    if (rng() % 5 == 0) overrides["memoryManagerPolicy"] = "None";
    if (rng() % 6 == 0) overrides["cpuManagerPolicy"] = "none";
    KubeletInputs in;
    in.version = KubernetesVersion{1, 33, 0};
    in.hugepages = pools;
    in.overrides = overrides;
    const KubeletPlan plan = DeriveKubeletConfig(*g, in);
    // Devices: the guest's GPUs as one resource, replicated, sometimes at most one per container;
    // sometimes an RDMA shared pool without a NUMA node.
    std::vector<NodeResource> resources;
    if (!g->devices.empty()) {
      NodeResource r{"vendor.com/gpu", std::vector<int>(g->cells_or_one().size(), 0), 0, 0, "test"};
      const int replicas = static_cast<int>(rng() % 3) == 0 ? 1 + static_cast<int>(rng() % 3) : 1;
      for (const GuestDevice& d : g->devices)
        (d.guest_cell >= 0 ? r.per_cell[static_cast<size_t>(d.guest_cell)] : r.without_cell) += replicas;
      if (replicas > 1 && rng() % 2) r.max_per_container = 1;
      resources.push_back(r);
    }
    if (rng() % 5 == 0) resources.push_back({"rdma/test_shared", std::vector<int>(g->cells_or_one().size(), 0), 63, 0, "test"});
    KubeletNode kn;
    try {
      kn = KubeletNodeFrom(*g, pools, plan.config, resources, in.version);
    } catch (const InputError& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what();
      continue;
    }
    const OracleNode oracle = OracleNodeOf(*g, pools, plan.config, resources);
    ++scenarios;
    ++policies[kn.topology_policy + (kn.pod_scope ? "/pod" : "/container")];
    NodeAdmission node(kn);
    OracleState state;
    const std::vector<GuestCellLayout> gc = g->cells_or_one();
    const int cell_cpus = gc.front().vcpus.Count();
    const int64_t cell_mib = static_cast<int64_t>(gc.front().memory_mib);
    for (int step = 0; step < 10; ++step) {
      const std::string text = RandomPod(rng, oracle, cell_cpus, cell_mib, !kn.pod_scope);
      PodResources pod;
      try {
        pod = ParsePodText(text, "random pod");
      } catch (const InputError& e) {
        ADD_FAILURE() << "generator: " << e.what() << "\n" << text;
        continue;
      }
      ReadNode(node, &state);
      const Admission predicted = node.Try(pod);
      const OracleVerdict truth = Decide(oracle, state, pod);
      ++decisions;
      if (predicted.admitted && truth.admitted) {
        ++agree_admit;
      } else if (!predicted.admitted && !truth.admitted) {
        ++agree_reject[truth.reason];
        const std::string p = predicted.reason.rfind("Insufficient", 0) == 0 ? "Insufficient" : predicted.reason;
        const std::string t = truth.reason.rfind("Insufficient", 0) == 0 ? "Insufficient" : truth.reason;
        if (p != t && reason_mismatch++ < 3)
          reason_examples += "seed " + std::to_string(seed) + " (" + kn.PolicySummary() + "): accel " + predicted.reason +
                             " (" + predicted.message + "), kubelet rules " + truth.reason + "\n" + text;
      } else if (predicted.admitted) {
        ++unsound;
        if (first_unsound.empty())
          first_unsound = "seed " + std::to_string(seed) + " step " + std::to_string(step) + " (" + kn.PolicySummary() +
                          "): the kubelet rules say " + truth.reason + "\n" + text + "\n" + plan.config.dump();
      } else {
        ++conservative;
        if (conservative_by[predicted.reason]++ == 0)
          first_conservative += "seed " + std::to_string(seed) + " (" + kn.PolicySummary() + "): predicted " +
                                predicted.reason + ": " + predicted.message + "\n" + text;
      }
      if (predicted.admitted) {
        node.Commit(predicted);
        // Node-level usage, summed by the oracle's own formula.
        state.cpu_used += Sum(pod, [](const ContainerResources& c) { return Req(c, "cpu"); });
        state.mem_used += ToMib(Sum(pod, [](const ContainerResources& c) { return Req(c, "memory"); }));
        std::set<std::string> names;
        for (const ContainerResources& c : pod.containers)
          for (const auto& [r, x] : c.limits) names.insert(r);
        for (const std::string& r : names) {
          if (r.rfind("hugepages-", 0) == 0)
            state.hp_used[static_cast<uint64_t>(Bytes(r.substr(10)) / 1024)] += ToMib(Sum(pod, [&](const ContainerResources& c) { return Req(c, r); }));
          else if (r.find('/') != std::string::npos)
            state.dev_used[r] += static_cast<int>(Sum(pod, [&](const ContainerResources& c) { return Lim(c, r); }) / 1000);
        }
        ++state.pods;
      }
    }
  }
  EXPECT_EQ(unsound, 0) << first_unsound;
  int rejected = 0;
  for (const auto& [r, x] : agree_reject) rejected += x;
  std::cout << "[ measure  ] pods: " << scenarios << " small guests, " << decisions << " decisions: " << agree_admit
            << " admitted by both, " << rejected << " rejected by both (";
  for (const auto& [r, x] : agree_reject) std::cout << r << " " << x << "; ";
  std::cout << "reason differs " << reason_mismatch << "), " << unsound << " admitted where the kubelet rejects, "
            << conservative << " rejected where the kubelet admits (";
  for (const auto& [r, x] : conservative_by) std::cout << r << " " << x << "; ";
  std::cout << ")\n[ measure  ] policies:";
  for (const auto& [p, x] : policies) std::cout << " " << p << " " << x;
  std::cout << "\n";
  if (!first_conservative.empty()) std::cout << "[ accel no, kubelet yes ] " << first_conservative << "\n";
  if (!reason_examples.empty()) std::cout << "[ reasons differ ] " << reason_examples << "\n";
  // Generator health: every outcome comes up.
  EXPECT_GT(scenarios, 300);
  EXPECT_GT(agree_admit, 1000);
  EXPECT_GT(agree_reject["TopologyAffinityError"], 100);
  EXPECT_GT(agree_reject["SMTAlignmentError"], 20);
  EXPECT_GT(agree_reject["UnexpectedAdmissionError"], 5);
  // Where accel says no and the kubelet yes, it is only the cases the header names (best-effort
  // with Memory-Manager memory, the Memory Manager's no-hint corner): a small share.
  EXPECT_LT(conservative * 20, decisions) << first_conservative;
}

}  // namespace
}  // namespace accel::kubelet
