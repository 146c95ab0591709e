// PlanTuning: pages equal what the planned guests take, CPU sets partition each node, the kernel
// arguments agree with the sets, and the planned instances really fit the tuned host.
#include "tuning/tune_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.h"
#include "placement/engine.h"
#include "topology/sources.h"
#include "tuning/flavor_set.h"

namespace accel::tuning {
namespace tune_plan_test {

using ::testing::HasSubstr;
using placement::Flavor;

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

topology::HostTopology Host(const std::string& name) {
  return topology::LoadTopology(Src("fixtures/hosts/" + name + ".json"));
}

placement::PciAliasTable ExampleAliases() {
  return placement::LoadPciAliases(Src("examples/flavors/aliases.json"));
}

std::vector<Flavor> ExampleFlavors(const std::string& file) {
  return placement::LoadFlavors(Src("examples/flavors/" + file));
}

// The value of "name=..." among the kernel arguments; "" when absent.
std::string Arg(const TunePlan& plan, const std::string& name) {
  for (const std::string& a : plan.kernel_args)
    if (a.rfind(name + "=", 0) == 0) return a.substr(name.size() + 1);
  return "";
}

CpuSet Cpus(const std::string& text) {
  CpuSet s;
  std::string err;
  EXPECT_TRUE(CpuSet::Parse(text, &s, &err)) << text << ": " << err;
  return s;
}

// Pages the planned placements take per (node, size).
std::map<std::pair<int, uint64_t>, uint64_t> PagesTaken(const TunePlan& plan) {
  std::map<std::pair<int, uint64_t>, uint64_t> taken;
  for (const placement::Placement& p : plan.placements)
    for (const placement::CellPlacement& c : p.cells) taken[{c.host_node, c.page_size_kib}] += c.pages;
  return taken;
}

// Every invariant a plan must hold, as gtest failures. `spare`: the spare pages asked for.
void ExpectConsistent(const topology::HostTopology& host, const TunePlan& plan, int spare = 0) {
  ASSERT_EQ(plan.nodes.size(), host.numa_nodes.size());
  ASSERT_EQ(plan.planned.size(), plan.placements.size());
  auto taken = PagesTaken(plan);
  CpuSet dedicated, housekeeping;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const NodePlan& np = plan.nodes[i];
    const topology::NumaNode& node = host.numa_nodes[i];
    EXPECT_EQ(np.node, node.id);
    uint64_t extra = node.memory_kib > 0 ? spare : 0;
    uint64_t taken_1g = taken[std::make_pair(np.node, uint64_t{1048576})];
    uint64_t taken_2m = taken[std::make_pair(np.node, uint64_t{2048})];
    EXPECT_EQ(np.pages_1g, taken_1g + extra) << "node " << np.node;
    EXPECT_EQ(np.pages_2m, taken_2m) << "node " << np.node;
    EXPECT_FALSE(np.dedicated.Intersects(np.housekeeping)) << "node " << np.node;
    EXPECT_EQ(np.dedicated.Union(np.housekeeping), node.cpus) << "node " << np.node;
    // Hugepages and the host's share fit in the node.
    EXPECT_LE(np.pages_1g * 1048576 + np.pages_2m * 2048 + np.host_memory_mib * 1024,
              node.memory_kib + extra * 1048576)
        << "node " << np.node;
    dedicated = dedicated.Union(np.dedicated);
    housekeeping = housekeeping.Union(np.housekeeping);
  }
  EXPECT_EQ(plan.dedicated, dedicated);
  EXPECT_EQ(plan.housekeeping, housekeeping);
  EXPECT_FALSE(plan.dedicated.Intersects(plan.housekeeping));
  if (!plan.dedicated.Empty()) {
    std::string isol = Arg(plan, "isolcpus");
    ASSERT_EQ(isol.rfind("managed_irq,domain,", 0), 0u) << isol;
    CpuSet isolated = Cpus(isol.substr(19));
    EXPECT_EQ(isolated, plan.dedicated);
    EXPECT_TRUE(Cpus(Arg(plan, "nohz_full")).IsSubsetOf(isolated));
    EXPECT_TRUE(Cpus(Arg(plan, "nohz_full")).IsSubsetOf(Cpus(Arg(plan, "rcu_nocbs"))));
    EXPECT_FALSE(Cpus(Arg(plan, "irqaffinity")).Intersects(isolated));
    EXPECT_FALSE(Cpus(Arg(plan, "irqaffinity")).Empty());
  } else {
    EXPECT_EQ(Arg(plan, "isolcpus"), "");
    EXPECT_EQ(Arg(plan, "nohz_full"), "");
  }
}

// Replays the plan on the host it leaves: every planned instance fits, in order, where the
// plan put it.
void ExpectReplayFits(const topology::HostTopology& host, const TunePlan& plan,
                      const std::vector<Flavor>& flavors, const placement::PciAliasTable& aliases) {
  topology::HostTopology tuned = TunedHost(host, plan);
  ASSERT_EQ(topology::CheckInvariants(tuned), "");
  placement::HostPolicy policy = TunedPolicy(plan);
  placement::HostUsage usage;
  std::map<std::string, placement::PlacementRequest> requests;
  for (const Flavor& f : flavors) requests[f.name] = placement::BuildRequest(f, aliases, f.name);
  for (size_t i = 0; i < plan.planned.size(); ++i) {
    std::string flavor = plan.planned[i].substr(0, plan.planned[i].rfind(" #"));
    ASSERT_TRUE(requests.count(flavor)) << plan.planned[i];
    placement::PlaceResult r = placement::Place(tuned, usage, policy, requests[flavor]);
    ASSERT_TRUE(r.fits()) << plan.planned[i] << " on " << host.hostname << ": "
                          << (r.no_fit.reasons.empty() ? "" : r.no_fit.reasons[0]);
    EXPECT_EQ(placement::Validate(tuned, usage, policy, requests[flavor], *r.placement), "");
    const placement::Placement& want = plan.placements[i];
    ASSERT_EQ(r.placement->cells.size(), want.cells.size());
    for (size_t c = 0; c < want.cells.size(); ++c) {
      EXPECT_EQ(r.placement->cells[c].host_node, want.cells[c].host_node) << plan.planned[i];
      EXPECT_EQ(r.placement->cells[c].page_size_kib, want.cells[c].page_size_kib) << plan.planned[i];
    }
    ASSERT_EQ(usage.Apply(*r.placement), "");
  }
}

TEST(TunePlan, OneGpuGuestsFillTheHgx) {
  topology::HostTopology host = Host("hgx-h100");
  TuneOptions options;
  options.aliases = ExampleAliases();
  std::vector<Flavor> flavors = ExampleFlavors("gpu-1g.yaml");
  TunePlan plan = PlanTuning(host, flavors, options);
  ExpectConsistent(host, plan);
  ExpectReplayFits(host, plan, flavors, options.aliases);
  EXPECT_EQ(plan.planned.size(), 8u);  // one per H100
  EXPECT_EQ(plan.nodes[0].pages_1g, 4u * 128);
  EXPECT_EQ(plan.nodes[1].pages_1g, 4u * 128);
  EXPECT_EQ(plan.nodes[0].housekeeping.ToString(), "0,112");
  EXPECT_EQ(plan.nodes[1].housekeeping.ToString(), "56,168");
  EXPECT_THAT(plan.kernel_args,
              ::testing::ElementsAre("intel_iommu=on", "iommu=pt", "default_hugepagesz=1G",
                                     "hugepagesz=1G", "hugepages=0:512,1:512",
                                     "isolcpus=managed_irq,domain,1-55,57-111,113-167,169-223",
                                     "nohz_full=1-55,57-111,113-167,169-223",
                                     "rcu_nocbs=1-55,57-111,113-167,169-223",
                                     "irqaffinity=0,56,112,168"));
  EXPECT_THAT(plan.nova_conf, ::testing::Contains("cpu_dedicated_set = 1-55,57-111,113-167,169-223"));
  EXPECT_THAT(plan.nova_conf, ::testing::Contains("cpu_shared_set = 0,56,112,168"));
  EXPECT_THAT(plan.commands, ::testing::Contains(HasSubstr("grubby --update-kernel=ALL --args=\"intel_iommu=on")));
  EXPECT_THAT(plan.commands, ::testing::Contains(HasSubstr("update-grub")));
  EXPECT_THAT(plan.commands, ::testing::Contains("sysctl -w kernel.numa_balancing=0"));
  EXPECT_THAT(plan.commands, ::testing::Contains("tuned-adm profile cpu-partitioning"));
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("gpu-1g: 8 instances, as many as fit")));
}

TEST(TunePlan, EveryExampleFlavorOnEveryFixture) {
  FlavorSet set = LoadFlavorSet(Src("examples/flavors"), "");
  ASSERT_FALSE(set.aliases.empty());  // aliases.json in the directory
  for (const char* name : {"hgx-h100", "hgx-h200", "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox",
                           "vm-guest-h100x8"}) {
    SCOPED_TRACE(name);
    topology::HostTopology host = Host(name);
    TuneOptions options;
    options.aliases = set.aliases;
    TunePlan plan = PlanTuning(host, set.flavors, options);
    ExpectConsistent(host, plan);
    ExpectReplayFits(host, plan, set.flavors, set.aliases);
    // Every flavor is accounted for: planned, or named in a note.
    for (const Flavor& f : set.flavors) {
      bool planned = false, noted = false;
      for (const std::string& p : plan.planned) planned = planned || p.rfind(f.name + " #", 0) == 0;
      for (const std::string& n : plan.notes) noted = noted || n.rfind(f.name + ":", 0) == 0;
      EXPECT_TRUE(planned || noted) << f.name;
    }
  }
}

TEST(TunePlan, CountsAreHonouredAndShortfallsNoted) {
  topology::HostTopology host = Host("hgx-h100");
  TuneOptions options;
  options.aliases = ExampleAliases();
  options.counts = {{"gpu-1g", 10}};
  TunePlan plan = PlanTuning(host, ExampleFlavors("gpu-1g.yaml"), options);
  EXPECT_EQ(plan.planned.size(), 8u);
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("gpu-1g: 2 of 10 instances do not fit")));
  options.counts = {{"gpu-1g", 3}};
  plan = PlanTuning(host, ExampleFlavors("gpu-1g.yaml"), options);
  EXPECT_EQ(plan.planned.size(), 3u);
  ExpectConsistent(host, plan);
  options.counts = {{"gpu-1g", 0}};
  plan = PlanTuning(host, ExampleFlavors("gpu-1g.yaml"), options);
  EXPECT_TRUE(plan.planned.empty());
  EXPECT_TRUE(plan.dedicated.Empty());  // nothing pinned is planned: nothing isolated
  EXPECT_EQ(Arg(plan, "hugepages"), "");
}

TEST(TunePlan, SharedOnlyFlavorsIsolateNothing) {
  topology::HostTopology host = Host("hgx-h100");
  TunePlan plan = PlanTuning(host, ExampleFlavors("shared.yaml"), {});
  ExpectConsistent(host, plan);
  EXPECT_EQ(plan.planned, std::vector<std::string>{"shared #1"});
  EXPECT_TRUE(plan.dedicated.Empty());
  EXPECT_EQ(plan.housekeeping, host.AllCpus());
  EXPECT_THAT(plan.kernel_args, ::testing::ElementsAre("intel_iommu=on", "iommu=pt"));
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("no flavor pins vCPUs")));
}

TEST(TunePlan, TwoMegPagesAloneAndAmdHosts) {
  topology::HostTopology host = Host("epyc-nps4-mi300x");
  Flavor f{"small-2m", 4, 4096, {{"hw:cpu_policy", "dedicated"}, {"hw:mem_page_size", "2MB"}}};
  TuneOptions options;
  options.counts = {{"small-2m", 3}};
  options.housekeeping_cores_per_node = 2;
  TunePlan plan = PlanTuning(host, {f}, options);
  ExpectConsistent(host, plan);
  EXPECT_EQ(plan.kernel_args[0], "iommu=pt");  // AMD: no intel_iommu, and amd_iommu=on is no value
  EXPECT_THAT(plan.kernel_args, ::testing::Contains("default_hugepagesz=2M"));
  EXPECT_THAT(plan.kernel_args, ::testing::Contains("hugepagesz=2M"));
  EXPECT_THAT(plan.kernel_args, ::testing::Not(::testing::Contains("hugepagesz=1G")));
  EXPECT_EQ(plan.nodes[0].housekeeping.Count(), 4);  // 2 cores x 2 threads
  uint64_t pages = 0;
  for (const NodePlan& np : plan.nodes) pages += np.pages_2m;
  EXPECT_EQ(pages, 3u * 2048);
}

TEST(TunePlan, SparePagesAreBootedAndKeptFromNova) {
  topology::HostTopology host = Host("hgx-h100");
  TuneOptions options;
  options.aliases = ExampleAliases();
  options.spare_pages_per_node = 4;
  TunePlan plan = PlanTuning(host, ExampleFlavors("gpu-1g.yaml"), options);
  ExpectConsistent(host, plan, 4);
  EXPECT_EQ(Arg(plan, "hugepages"), "0:516,1:516");
  EXPECT_THAT(plan.nova_conf, ::testing::Contains("reserved_huge_pages = node:1,size:1GB,count:4"));
}

TEST(TunePlan, HostMemoryBoundsTheHugepages) {
  topology::HostTopology host = Host("devbox");  // 64 GiB, one node
  Flavor big{"big", 4, 63 * 1024, {{"hw:mem_page_size", "1GB"}}};
  TunePlan plan = PlanTuning(host, {big}, {});
  EXPECT_TRUE(plan.planned.empty());
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("big: 1 of 1 instance does not fit")));
  TuneOptions options;
  options.host_memory_mib_per_node = 1024;
  plan = PlanTuning(host, {big}, options);
  EXPECT_EQ(plan.planned.size(), 1u);
  EXPECT_EQ(Arg(plan, "hugepages"), "63");  // one node: the plain form
}

TEST(TunePlan, DefaultAliasesByKind) {
  placement::PciAliasTable hgx = DefaultAliases(Host("hgx-h100"));
  ASSERT_NE(hgx.Find("gpu"), nullptr);
  EXPECT_EQ(hgx.Find("gpu")->specs.size(), 1u);
  EXPECT_EQ(*hgx.Find("gpu")->specs[0].product_id, 0x2330);
  EXPECT_NE(hgx.Find("nic"), nullptr);
  EXPECT_EQ(hgx.Find("hpu"), nullptr);
  EXPECT_NE(DefaultAliases(Host("gaudi2-8hpu")).Find("hpu"), nullptr);
  // A flavor naming an alias by kind plans without an alias file.
  Flavor f{"any-gpu", 8, 16384, {{"hw:cpu_policy", "dedicated"}, {"pci_passthrough:alias", "gpu:2"}}};
  TunePlan plan = PlanTuning(Host("hgx-h100"), {f}, {});
  EXPECT_EQ(plan.planned.size(), 4u);
}

TEST(TunePlan, BadInputThrows) {
  topology::HostTopology host = Host("hgx-h100");
  std::vector<Flavor> flavors = ExampleFlavors("gpu-1g.yaml");
  TuneOptions options;
  options.aliases = ExampleAliases();
  options.counts = {{"nope", 1}};
  EXPECT_THROW(PlanTuning(host, flavors, options), InputError);
  options.counts = {{"gpu-1g", -1}};
  EXPECT_THROW(PlanTuning(host, flavors, options), InputError);
  options.counts = {};
  options.housekeeping_cores_per_node = 0;
  EXPECT_THROW(PlanTuning(host, flavors, options), InputError);
  options.housekeeping_cores_per_node = 1;
  options.spare_pages_per_node = -1;
  EXPECT_THROW(PlanTuning(host, flavors, options), InputError);
  options.spare_pages_per_node = 0;
  EXPECT_THROW(PlanTuning(host, {flavors[0], flavors[0]}, options), InputError);  // same name
  EXPECT_THROW(PlanTuning(host, flavors, {}), InputError);  // alias h100 unknown by kind
  Flavor bad{"bad", 4, 4096, {{"hw:numa_nodes", "0"}}};
  EXPECT_THROW(PlanTuning(host, {bad}, {}), InputError);
}

TEST(TunePlan, Renderings) {
  topology::HostTopology host = Host("hgx-h100");
  TuneOptions options;
  options.aliases = ExampleAliases();
  TunePlan plan = PlanTuning(host, ExampleFlavors("gpu-1g.yaml"), options);
  std::string text = RenderTunePlanText(plan);
  EXPECT_THAT(text, HasSubstr("Tuning plan for hgx-h100: 8 instances on 2 NUMA nodes"));
  EXPECT_THAT(text, HasSubstr("gpu-1g x4"));
  EXPECT_THAT(text, HasSubstr("hugepages=0:512,1:512"));
  nlohmann::json j = nlohmann::json::parse(RenderTunePlanJson(plan));
  EXPECT_EQ(j["schema"], "accel.tune-plan/v1");
  EXPECT_EQ(j["nodes"][1]["pages_1g"], 512);
  EXPECT_EQ(j["nodes"][0]["dedicated"], "1-55,113-167");
  EXPECT_EQ(j["planned"].size(), 8u);
  EXPECT_THAT(j["kernel_cmdline"].get<std::string>(), HasSubstr("iommu=pt"));
}

TEST(FlavorSet, DirectoryFilesAndErrors) {
  FlavorSet set = LoadFlavorSet(Src("examples/flavors"), "");
  EXPECT_EQ(set.flavors.size(), 7u);  // every examples/flavors/*.yaml and .json holding a flavor
  EXPECT_NE(set.aliases.Find("h100"), nullptr);
  FlavorSet one = LoadFlavorSet(Src("examples/flavors/gpu-1g.yaml"), Src("examples/flavors/aliases.json"));
  EXPECT_EQ(one.flavors.size(), 1u);
  EXPECT_NE(one.aliases.Find("cx7-vf"), nullptr);
  EXPECT_THROW(LoadFlavorSet(Src("examples/flavors/missing.yaml"), ""), InputError);
  EXPECT_THROW(LoadFlavorSet(Src("fixtures/hosts"), ""), InputError);  // host JSON is no flavor
}

// ---- property test: random flavors on every fixture --------------------------------------

Flavor RandomFlavor(std::mt19937& rng, int index) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Flavor f;
  f.name = "f" + std::to_string(index);
  int cells = pick(3);  // 0: not set
  f.vcpus = (1 + pick(8)) * (cells == 2 ? 2 : 1);
  f.ram_mib = static_cast<uint64_t>(1 + pick(16)) * 1024 * (cells == 2 ? 2 : 1);
  int policy = pick(3);
  if (policy == 1) f.extra_specs.push_back({"hw:cpu_policy", "dedicated"});
  if (policy == 2 && f.vcpus >= 2 * std::max(cells, 1)) {
    f.extra_specs.push_back({"hw:cpu_policy", "mixed"});
    f.extra_specs.push_back({"hw:cpu_dedicated_mask", cells == 2 ? "^0," + std::to_string(f.vcpus / 2) : "^0"});
  }
  if (policy == 1 && pick(3) == 0) f.extra_specs.push_back({"hw:cpu_thread_policy", pick(2) ? "isolate" : "prefer"});
  if (policy != 0 && pick(4) == 0) f.extra_specs.push_back({"hw:emulator_threads_policy", "isolate"});
  static const char* kPages[] = {"", "small", "large", "any", "2MB", "1GB"};
  std::string page = kPages[pick(6)];
  if (!page.empty()) f.extra_specs.push_back({"hw:mem_page_size", page});
  if (cells > 0) f.extra_specs.push_back({"hw:numa_nodes", std::to_string(cells)});
  int pci = pick(5);
  if (pci == 1) f.extra_specs.push_back({"pci_passthrough:alias", "gpu:1"});
  if (pci == 2) f.extra_specs.push_back({"pci_passthrough:alias", "gpu:2"});
  if (pci == 3) f.extra_specs.push_back({"pci_passthrough:alias", "hpu:1"});
  return f;
}

TEST(TunePlanProperty, RandomFlavorsFitTheTunedHost) {
  std::vector<topology::HostTopology> hosts;
  for (const char* name : {"hgx-h100", "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox", "vm-guest-h100x8"})
    hosts.push_back(Host(name));
  std::mt19937 rng(20240607);
  int plans = 0, instances = 0;
  for (int round = 0; round < 2000; ++round) {
    const topology::HostTopology& host = hosts[round % hosts.size()];
    placement::PciAliasTable aliases = DefaultAliases(host);
    std::vector<Flavor> flavors;
    TuneOptions options;
    options.housekeeping_cores_per_node = 1 + static_cast<int>(rng() % 3);
    if (rng() % 3 == 0) options.host_memory_mib_per_node = 1024 * (1 + rng() % 64);
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
      Flavor f = RandomFlavor(rng, k);
      try {
        placement::BuildRequest(f, aliases, f.name);
      } catch (const InputError&) {
        continue;  // a combination Nova refuses (or an alias this host lacks)
      }
      if (rng() % 2) options.counts[f.name] = static_cast<int>(rng() % 5);
      flavors.push_back(f);
    }
    if (flavors.empty()) continue;
    SCOPED_TRACE("round " + std::to_string(round) + " on " + host.hostname);
    TunePlan plan = PlanTuning(host, flavors, options);
    ExpectConsistent(host, plan);
    ExpectReplayFits(host, plan, flavors, aliases);
    // Counted instances are planned or their shortfall is noted.
    for (const auto& [name, count] : options.counts) {
      int planned = 0;
      for (const std::string& p : plan.planned) planned += p.rfind(name + " #", 0) == 0;
      bool noted = false;
      for (const std::string& n : plan.notes) noted = noted || n.rfind(name + ":", 0) == 0;
      EXPECT_TRUE(planned == count || (planned < count && noted)) << name;
    }
    ++plans;
    instances += static_cast<int>(plan.planned.size());
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(plans, 1000);
  EXPECT_GT(instances, 2000);
}

}  // namespace
}  // namespace accel::tuning
