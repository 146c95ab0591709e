// The kubelet configuration accel derives for a node-group guest, against the kubelet's rules:
// for every example flavor and 1,000 random ones (cells 1-4, threads 1-2, page sizes, 0-8 GPUs,
// numa_policy required/preferred) placed by the engine on the fixture hosts, the derived config
// has no finding, and the rules are re-checked here by plain arithmetic (sum rule exact,
// reserved CPUs whole cores inside the guest, single-numa-node only when every device reports
// a guest cell). The checker itself is tested on configs that break each rule.
#include "kubelet/check.h"
#include "kubelet/derive.h"

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "common/error.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "topology/sources.h"

namespace accel::kubelet {
namespace derive_test {

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

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
  static const placement::PciAliasTable table = placement::ParsePciAliases(nlohmann::json::parse(R"([
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "h100-preferred", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "preferred"},
    {"name": "mi300x", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "mi300x-preferred", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "preferred"},
    {"name": "gaudi2", "vendor_id": "1da3", "product_id": "1020", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "cx7", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-PF"}
  ])"), "test aliases");
  return table;
}

struct Planned {
  placement::PlacementRequest request;
  GuestLayout layout;
};

// Places `request` on the first fixture host it fits; nullopt when none.
std::optional<Planned> PlanOnFixtures(const placement::PlacementRequest& request, DeviceCellSource source) {
  for (const topology::HostTopology& host : Hosts()) {
    placement::PlaceResult r = placement::Place(host, {}, {}, request);
    if (r.fits()) return Planned{request, GuestLayoutOf(request, *r.placement, host, source)};
  }
  return std::nullopt;
}

// The kubelet's rules, computed here without the checker.
void ExpectObeysKubeletRules(const nlohmann::ordered_json& c, const GuestLayout& g,
                             const std::vector<GuestHugepagePool>& pools, const std::string& context) {
  auto mib = [](const nlohmann::json& q) {
    const std::string s = q.get<std::string>();
    if (s.size() > 2 && s.substr(s.size() - 2) == "Gi") return std::stoll(s.substr(0, s.size() - 2)) * 1024;
    EXPECT_EQ(s.substr(s.size() - 2), "Mi") << s;
    return std::stoll(s.substr(0, s.size() - 2));
  };
  const std::vector<GuestCellLayout> cells = g.cells_or_one();
  // Sum rule, memory.
  if (c["memoryManagerPolicy"] == "Static") {
    const long long want = mib(c["kubeReserved"]["memory"]) + mib(c["systemReserved"]["memory"]) +
                           mib(c["evictionHard"]["memory.available"]);
    long long got = 0;
    std::set<int> nodes;
    for (const auto& e : c["reservedMemory"]) {
      const int node = e["numaNode"].get<int>();
      EXPECT_TRUE(nodes.insert(node).second) << context << "node twice";
      EXPECT_GE(node, 0) << context;
      EXPECT_LT(node, static_cast<int>(cells.size())) << context;
      const long long m = mib(e["limits"]["memory"]);
      EXPECT_GT(m, 0) << context;
      uint64_t pool = 0;
      for (const GuestHugepagePool& p : pools)
        if (p.cell == node) pool += p.pages * p.page_kib / 1024;
      EXPECT_LE(static_cast<uint64_t>(m) + pool, cells[static_cast<size_t>(node)].memory_mib) << context;
      got += m;
    }
    EXPECT_EQ(got, want) << context << c.dump(2);
  }
  // Reserved CPUs: whole guest cores, inside the guest, not all of it, on cell 0.
  if (c["cpuManagerPolicy"] == "static") {
    CpuSet reserved;
    std::string error;
    ASSERT_TRUE(CpuSet::Parse(c["reservedSystemCPUs"].get<std::string>(), &reserved, &error)) << context << error;
    EXPECT_GT(reserved.Count(), 0) << context;
    EXPECT_LT(reserved.Count(), g.vcpus) << context;
    for (int v : reserved.ToVector()) {
      EXPECT_LT(v, g.vcpus) << context;
      for (int t = 0; t < g.threads_per_core; ++t) {
        const int sibling = (v / g.threads_per_core) * g.threads_per_core + t;
        if (sibling < g.vcpus) {
          EXPECT_TRUE(reserved.Contains(sibling)) << context << "split core at vCPU " << v;
        }
      }
      EXPECT_TRUE(cells.front().vcpus.Contains(v)) << context << "reserved vCPU " << v << " is outside guest cell 0";
    }
    const bool full = c.contains("cpuManagerPolicyOptions") && c["cpuManagerPolicyOptions"].contains("full-pcpus-only");
    EXPECT_EQ(full, g.threads_per_core > 1) << context;
  }
  // Topology: single-numa-node only when every device reports a cell (or one cell).
  bool all_local = cells.size() <= 1;
  if (!all_local) {
    all_local = true;
    for (const GuestDevice& d : g.devices) all_local = all_local && d.guest_cell >= 0;
  }
  EXPECT_EQ(c["topologyManagerPolicy"] == "single-numa-node", all_local) << context << c.dump(2);
  if (cells.size() > 8) {
    EXPECT_EQ(c["topologyManagerPolicyOptions"]["max-allowable-numa-nodes"], std::to_string(cells.size())) << context;
  }
  // align-by-socket never comes with single-numa-node.
  EXPECT_FALSE(c.contains("cpuManagerPolicyOptions") && c["cpuManagerPolicyOptions"].contains("align-by-socket"));
}

std::string Describe(const std::vector<KubeletFinding>& findings) {
  std::string s;
  for (const KubeletFinding& f : findings) s += f.field + ": " + f.problem + " -> " + f.fix + "\n";
  return s;
}

TEST(KubeletConfig, EveryExampleFlavorGivesAConfigWithoutFindings) {
  const placement::PciAliasTable aliases = placement::LoadPciAliases(Src("examples/flavors/aliases.json"));
  int planned = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Src("examples/flavors"))) {
    if (entry.path().extension() != ".yaml") continue;
    for (const placement::Flavor& f : placement::LoadFlavors(entry.path().string())) {
      const placement::PlacementRequest req = placement::BuildRequest(f, aliases, entry.path().string());
      for (DeviceCellSource source : {DeviceCellSource::kExpanderBus, DeviceCellSource::kNone}) {
        std::optional<Planned> p = PlanOnFixtures(req, source);
        ASSERT_TRUE(p) << f.name << " fits no fixture host";
        for (const KubernetesVersion& v : {KubernetesVersion{1, 30, 0}, KubernetesVersion{1, 33, 0}, KubernetesVersion{1, 35, 0}}) {
          KubeletInputs in;
          in.version = v;
          const KubeletPlan plan = DeriveKubeletConfig(p->layout, in);
          const std::string context = f.name + " 1." + std::to_string(v.minor) + ": ";
          EXPECT_EQ(Describe(CheckKubeletConfig(plan.config, p->layout, {}, v)), "") << context << plan.config.dump(2);
          ExpectObeysKubeletRules(plan.config, p->layout, {}, context);
          EXPECT_FALSE(plan.choices.empty());
          for (const KubeletChoice& ch : plan.choices) EXPECT_FALSE(ch.reason.empty()) << context << ch.field;
        }
        ++planned;
      }
    }
  }
  EXPECT_GE(planned, 12);
}

TEST(KubeletConfig, RandomFlavorsObeyEveryRule) {
  int planned = 0, smt = 0, multi_cell = 0, restricted = 0, with_pools = 0, trials = 0;
  static const char* const kAliases[] = {"h100", "h100-preferred", "mi300x", "mi300x-preferred", "gaudi2"};
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    std::mt19937_64 rng(seed);
    auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
    placement::Flavor f;
    f.name = "random-" + std::to_string(seed);
    const int cells = uniform(1, 4);
    const int threads = uniform(1, 2);
    const int per_cell = threads * uniform(1, 12);
    f.vcpus = per_cell * cells;
    f.ram_mib = static_cast<uint64_t>(uniform(1, 48)) * 1024 * cells;
    f.extra_specs.push_back({"hw:cpu_policy", "dedicated"});
    if (cells > 1 || uniform(0, 1)) f.extra_specs.push_back({"hw:numa_nodes", std::to_string(cells)});
    if (threads > 1) f.extra_specs.push_back({"hw:cpu_threads", std::to_string(threads)});
    static const char* const kPages[] = {"", "small", "2MB", "1GB", "large"};
    const std::string page = kPages[uniform(0, 4)];
    if (!page.empty()) f.extra_specs.push_back({"hw:mem_page_size", page});
    const int gpus = uniform(0, 8);
    if (gpus > 0) f.extra_specs.push_back({"pci_passthrough:alias", std::string(kAliases[uniform(0, 4)]) + ":" + std::to_string(gpus)});
    placement::PlacementRequest req;
    try {
      req = placement::BuildRequest(f, Aliases(), f.name);
    } catch (const InputError&) {
      continue;
    }
    ++trials;
    const DeviceCellSource source = uniform(0, 3) == 0 ? DeviceCellSource::kNone : DeviceCellSource::kExpanderBus;
    std::optional<Planned> p = PlanOnFixtures(req, source);
    if (!p) continue;
    ++planned;
    KubeletInputs in;
    in.version = KubernetesVersion{1, uniform(29, 36), 0};
    // Sometimes guest hugepage pools of a third of each cell.
    if (uniform(0, 2) == 0) {
      for (const GuestCellLayout& c : p->layout.cells_or_one())
        in.hugepages.push_back({c.cell, 1048576, c.memory_mib / 3 / 1024});
      ++with_pools;
    }
    const KubeletPlan plan = DeriveKubeletConfig(p->layout, in);
    const std::string context = "seed " + std::to_string(seed) + " " + f.name + " cells " + std::to_string(cells) +
                                " threads " + std::to_string(threads) + ": ";
    EXPECT_EQ(Describe(CheckKubeletConfig(plan.config, p->layout, in.hugepages, in.version)), "")
        << context << plan.config.dump(2);
    ExpectObeysKubeletRules(plan.config, p->layout, in.hugepages, context);
    smt += p->layout.threads_per_core > 1 ? 1 : 0;
    multi_cell += p->layout.cells.size() > 1 ? 1 : 0;
    restricted += plan.config["topologyManagerPolicy"] == "restricted" ? 1 : 0;
  }
  // Generator health: each kind of layout must come up.
  EXPECT_GT(planned, trials / 3);
  EXPECT_GT(smt, 50);
  EXPECT_GT(multi_cell, 50);
  EXPECT_GT(restricted, 20);
  EXPECT_GT(with_pools, 50);
  std::cout << "[ measure  ] " << trials << " flavors, " << planned << " placed: " << smt << " SMT guests, "
            << multi_cell << " multi-cell, " << restricted << " restricted\n";
}

// A 2-cell H100 guest to break rules on.
Planned TwoCellGpuGuest(DeviceCellSource source) {
  placement::Flavor f;
  f.name = "two-cell";
  f.vcpus = 32;
  f.ram_mib = 65536;
  f.extra_specs = {{"hw:cpu_policy", "dedicated"}, {"hw:numa_nodes", "2"}, {"hw:cpu_threads", "2"},
                   {"hw:mem_page_size", "1GB"}, {"pci_passthrough:alias", "h100:2"}};
  std::optional<Planned> p = PlanOnFixtures(placement::BuildRequest(f, Aliases(), "test"), source);
  EXPECT_TRUE(p);
  return *p;
}

bool HasFinding(const std::vector<KubeletFinding>& findings, const std::string& field, const std::string& word) {
  for (const KubeletFinding& f : findings)
    if (f.field.rfind(field, 0) == 0 && (f.problem + f.fix).find(word) != std::string::npos) return true;
  return false;
}

TEST(KubeletConfigCheck, FindsEachBrokenRule) {
  const Planned p = TwoCellGpuGuest(DeviceCellSource::kExpanderBus);
  const KubernetesVersion v{1, 33, 0};
  const nlohmann::ordered_json good = DeriveKubeletConfig(p.layout, KubeletInputs{v, {}, nlohmann::json::object()}).config;
  ASSERT_EQ(Describe(CheckKubeletConfig(good, p.layout, {}, v)), "");

  // The usual mistake: reservedMemory = kube + system, forgetting the default eviction threshold.
  nlohmann::json c = good;
  c.erase("evictionHard");
  c["kubeReserved"]["memory"] = "1Gi";
  c["systemReserved"]["memory"] = "1Gi";
  c["reservedMemory"] = nlohmann::json::array({{{"numaNode", 0}, {"limits", {{"memory", "2Gi"}}}}});
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "reservedMemory", "usual mistake"))
      << Describe(CheckKubeletConfig(c, p.layout, {}, v));

  c = good;
  c["reservedMemory"].push_back({{"numaNode", 5}, {"limits", {{"memory", "1Mi"}}}});
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "reservedMemory[", "does not exist"));

  c = good;
  c["reservedMemory"][0]["limits"]["hugepages-1Gi"] = "4Gi";
  c["kubeReserved"]["hugepages-1Gi"] = "4Gi";
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {{0, 1048576, 2}}, v), "reservedMemory[0].limits.hugepages-1Gi",
                         "pool"));

  c = good;
  c["reservedSystemCPUs"] = "0";  // half of an SMT core
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "reservedSystemCPUs", "split"));
  c["reservedSystemCPUs"] = "0-63";
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "reservedSystemCPUs", "does not have"));
  c.erase("reservedSystemCPUs");
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "reservedSystemCPUs", "will not start"));

  c = good;
  c["cpuManagerPolicyOptions"]["align-by-socket"] = "true";
  const std::vector<KubeletFinding> f = CheckKubeletConfig(c, p.layout, {}, v);
  EXPECT_TRUE(HasFinding(f, "cpuManagerPolicyOptions.align-by-socket", "single-numa-node")) << Describe(f);
  EXPECT_TRUE(HasFinding(f, "cpuManagerPolicyOptions.align-by-socket", "CPUManagerPolicyAlphaOptions")) << Describe(f);
  c["cpuManagerPolicyOptions"]["no-such-option"] = "true";
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "cpuManagerPolicyOptions.no-such-option", "not a"));

  c = good;
  c["memoryManagerPolicy"] = "static";
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "memoryManagerPolicy", "capitalized"));
  c = good;
  c["evictionHard"]["memory.available"] = "5%";
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, p.layout, {}, v), "evictionHard.memory.available", "absolute"));

  // A plain Nova guest: the GPUs have no guest NUMA node; single-numa-node would loop.
  const Planned plain = TwoCellGpuGuest(DeviceCellSource::kNone);
  const KubeletPlan derived = DeriveKubeletConfig(plain.layout, KubeletInputs{v, {}, nlohmann::json::object()});
  EXPECT_EQ(derived.config["topologyManagerPolicy"], "restricted");
  EXPECT_EQ(Describe(CheckKubeletConfig(derived.config, plain.layout, {}, v)), "");
  nlohmann::json forced = derived.config;
  forced["topologyManagerPolicy"] = "single-numa-node";
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(forced, plain.layout, {}, v), "topologyManagerPolicy", "84869"));
  // An override that forces it is applied and then found.
  KubeletInputs in{v, {}, nlohmann::json{{"topologyManagerPolicy", "single-numa-node"}}};
  const KubeletPlan overridden = DeriveKubeletConfig(plain.layout, in);
  EXPECT_EQ(overridden.config["topologyManagerPolicy"], "single-numa-node");
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(overridden.config, plain.layout, {}, v), "topologyManagerPolicy", "84869"));
  bool explained = false;
  for (const KubeletChoice& ch : overridden.choices)
    explained = explained || (ch.field == "topologyManagerPolicy" && ch.reason.find("override") != std::string::npos);
  EXPECT_TRUE(explained);
}

// Overrides of the reservations move reservedMemory with them (the sum rule holds for the
// final values); a CPU policy turned off drops the options that only apply to static.
TEST(KubeletConfig, OverriddenReservationsKeepTheSumRule) {
  const Planned p = TwoCellGpuGuest(DeviceCellSource::kExpanderBus);
  const KubernetesVersion v{1, 33, 0};
  KubeletInputs in{v, {{0, 1048576, 16}}, nlohmann::json::parse(R"({
    "kubeReserved": {"cpu": "500m", "memory": "1Gi"}, "systemReserved": {"memory": "924Mi"},
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"}})")};
  const KubeletPlan plan = DeriveKubeletConfig(p.layout, in);
  EXPECT_EQ(plan.config["memoryManagerPolicy"], "Static");
  EXPECT_EQ(nlohmann::json(plan.config["reservedMemory"]), nlohmann::json::parse(R"([{"numaNode": 0, "limits": {"memory": "2Gi"}}])"))
      << plan.config.dump(2);
  EXPECT_EQ(Describe(CheckKubeletConfig(plan.config, p.layout, in.hugepages, v)), "");
  // A percentage threshold cannot be summed: the Memory Manager stays off, with the reason.
  in.overrides["evictionHard"]["memory.available"] = "5%";
  const KubeletPlan pct = DeriveKubeletConfig(p.layout, in);
  EXPECT_EQ(pct.config["memoryManagerPolicy"], "None");
  EXPECT_EQ(Describe(CheckKubeletConfig(pct.config, p.layout, in.hugepages, v)), "");
  // cpuManagerPolicy none: no static-only options left behind.
  KubeletInputs none{v, {}, nlohmann::json{{"cpuManagerPolicy", "none"}}};
  const KubeletPlan off = DeriveKubeletConfig(p.layout, none);
  EXPECT_FALSE(off.config.contains("cpuManagerPolicyOptions")) << off.config.dump(2);
  EXPECT_EQ(Describe(CheckKubeletConfig(off.config, p.layout, {}, v)), "");
}

TEST(KubeletConfigCheck, MoreThanEightGuestNodesNeedMaxAllowableNumaNodes) {
  GuestLayout g;
  g.flavor = "wide";
  g.vcpus = 20;
  g.memory_mib = 20 * 4096;
  for (int i = 0; i < 10; ++i) {
    GuestCellLayout c;
    c.cell = i;
    c.vcpus.Add(2 * i);
    c.vcpus.Add(2 * i + 1);
    c.dedicated_vcpus = c.vcpus;
    c.memory_mib = 8192;
    g.cells.push_back(c);
  }
  const KubeletPlan plan = DeriveKubeletConfig(g, KubeletInputs{KubernetesVersion{1, 35, 0}, {}, nlohmann::json::object()});
  EXPECT_EQ(plan.config["topologyManagerPolicyOptions"]["max-allowable-numa-nodes"], "10");
  EXPECT_EQ(Describe(CheckKubeletConfig(plan.config, g, {}, KubernetesVersion{1, 35, 0})), "");
  nlohmann::json c = plan.config;
  c["topologyManagerPolicyOptions"].erase("max-allowable-numa-nodes");
  EXPECT_TRUE(HasFinding(CheckKubeletConfig(c, g, {}, KubernetesVersion{1, 35, 0}), "topologyManagerPolicyOptions.max-allowable",
                         "past 8"));
}

}  // namespace
}  // namespace accel::kubelet
