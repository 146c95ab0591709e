// GPUs by model and size through the placement layer: model names (GpuModelMatches), the GPU
// states a usage leaves (GpuSlotsOf), every way to give a share, a MIG slice or whole GPUs
// (GpuChoices, NUMA grouping, fewest nodes), the engine's floating path with pod CPU, memory and
// GPUs (its own choice and PlaceWithGpuChoice), Validate's GPU check, HostState kept in step with
// GPU placements, and the placement JSON of GPUs.
#include "placement/gpu_fit.h"

#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "placement/engine.h"
#include "placement/host_state.h"
#include "placement/placement_json.h"
#include "placement/test_hosts.h"

namespace accel::placement {
namespace gpu_fit_test {

using nlohmann::ordered_json;
using testing::MakeHost;
using testing::NodeShape;

constexpr const char* kH100 = "GH100 [H100 SXM5 80GB]";
constexpr const char* kA10 = "GA102GL [A10]";
constexpr const char* kA100 = "GA100 [A100 PCIe 80GB]";

// A host whose node i has gpus_per_node[i] H100s (named as hwloc names them), 8 CPUs and 8 GiB a node.
topology::HostTopology GpuHost(const std::vector<int>& gpus_per_node) {
  std::vector<NodeShape> shapes;
  for (int n : gpus_per_node) {
    NodeShape s;
    s.gpus = n;
    shapes.push_back(s);
  }
  topology::HostTopology h = MakeHost(shapes, "gpu-host");
  for (topology::PciDevice& d : h.pci)
    if (d.is_accelerator()) d.name = kH100;
  return h;
}

std::string Addr(const topology::HostTopology& h, int index) { return AcceleratorsOf(h).at(static_cast<size_t>(index))->address; }

GpuRequest ShareAsk(int milli) {
  GpuRequest r;
  r.milli = milli;
  return r;
}

GpuRequest WholeAsk(int count) {
  GpuRequest r;
  r.count = count;
  return r;
}

// MIG profile "3g.40gb"-like on H100s: 4 of 8 memory slices, at slice 0 or 4; "1g" at any slice.
GpuRequest MigAsk(int memory_slices, std::vector<int> starts) {
  GpuRequest r;
  r.mig_profile = std::to_string(memory_slices) + "g.test";
  MigShape s;
  s.model_profile = "H100/" + r.mig_profile;
  s.vendor_id = 0x10de;
  s.device_id = 0x2330;
  s.gpu_slices = 8;
  s.memory_slices = memory_slices;
  s.starts = std::move(starts);
  r.mig_shapes = {s};
  return r;
}

PlacementRequest Pod(int64_t cpu_milli, uint64_t memory_mib, std::optional<GpuRequest> gpu) {
  PlacementRequest r;
  r.flavor = "pod";
  r.cpu_milli = cpu_milli;
  r.memory_mib = memory_mib;
  r.gpu = std::move(gpu);
  return r;
}

Placement Holding(std::vector<GpuPlacement> gpus) {
  Placement p;
  p.host = "gpu-host";
  p.gpus = std::move(gpus);
  return p;
}

GpuPlacement PartOf(const std::string& address, int milli, int mig_start = -1, int mig_slices = 0) {
  GpuPlacement g;
  g.address = address;
  g.model = kH100;
  g.milli = milli;
  if (mig_start >= 0) {
    g.mig_profile = "x";
    g.mig_start = mig_start;
    g.mig_slices = mig_slices;
  }
  return g;
}

std::vector<std::vector<int>> GpusOf(const std::vector<GpuChoice>& choices) {
  std::vector<std::vector<int>> out;
  for (const GpuChoice& c : choices) out.push_back(c.gpus);
  return out;
}

// --- Models ----------------------------------------------------------------------------

TEST(GpuModel, AnEntryMatchesTheWholeNameOneWordOrThePciIdsIgnoringCase) {
  EXPECT_TRUE(GpuModelMatches(kA10, 0x10de, 0x2236, {"A10"}));
  EXPECT_TRUE(GpuModelMatches(kA10, 0x10de, 0x2236, {"a10"}));
  EXPECT_FALSE(GpuModelMatches(kA100, 0x10de, 0x20b5, {"A10"})) << "a word, not a prefix";
  EXPECT_TRUE(GpuModelMatches(kA100, 0x10de, 0x20b5, {"A100"}));
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"h100"}));
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"gh100"}));
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"80gb"}));
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"gh100 [h100 sxm5 80gb]"}));
  EXPECT_FALSE(GpuModelMatches(kH100, 0x10de, 0x2330, {"H100 SXM5"})) << "two words are neither a word nor the name";
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"10de:2330"}));
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"10DE:2330"}));
  EXPECT_FALSE(GpuModelMatches(kH100, 0x10de, 0x2330, {"10de:2331"}));
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {})) << "no list: any GPU";
  EXPECT_TRUE(GpuModelMatches(kH100, 0x10de, 0x2330, {"A10", "L4", "H100"})) << "any entry";
  EXPECT_FALSE(GpuModelMatches(kH100, 0x10de, 0x2330, {"A10", "L4"}));
  EXPECT_FALSE(GpuModelMatches(kH100, 0x10de, 0x2330, {""}));
}

TEST(GpuModel, AnUnnamedGpuIsItsPciIds) {
  topology::PciDevice d = testing::Gpu("0000:10:00.0", 0);
  EXPECT_EQ(GpuModelOf(d), "10de:2330");
  d.name = kH100;
  EXPECT_EQ(GpuModelOf(d), kH100);
}

// --- Slots and choices -----------------------------------------------------------------

TEST(GpuSlots, EachGpuIsFreeWholeSharedOrMig) {
  const topology::HostTopology h = GpuHost({4});
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 1), 1000), PartOf(Addr(h, 2), 300), PartOf(Addr(h, 3), 250, 2, 2)})), "");
  const std::vector<GpuSlot> slots = GpuSlotsOf(AcceleratorsOf(h), u);
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots[0].free_milli, 1000);
  EXPECT_FALSE(slots[0].whole_held);
  EXPECT_TRUE(slots[1].whole_held);
  EXPECT_EQ(slots[1].free_milli, 0);
  EXPECT_EQ(slots[2].free_milli, 700);
  EXPECT_EQ(slots[2].mig_slices, 0u);
  EXPECT_EQ(slots[3].free_milli, 750) << "a GPU with MIG slices: 1000 - the slices' thousandths";
  EXPECT_EQ(slots[3].mig_slices, 0b1100u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(slots[i].index, i);
  EXPECT_EQ(slots[0].node, 0);
}

TEST(GpuChoices, AShareGoesOnAnyGpuWithRoomThatHoldsNoMigAndIsNotWhole) {
  const topology::HostTopology h = GpuHost({5});
  const auto acc = AcceleratorsOf(h);
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 0), 1000), PartOf(Addr(h, 1), 800), PartOf(Addr(h, 2), 400),
                             PartOf(Addr(h, 3), 125, 0, 1)})),
            "");
  std::string why;
  EXPECT_EQ(GpusOf(GpuChoices(acc, GpuSlotsOf(acc, u), ShareAsk(300), &why)),
            (std::vector<std::vector<int>>{{2}, {4}}));
  EXPECT_EQ(GpusOf(GpuChoices(acc, GpuSlotsOf(acc, u), ShareAsk(200), &why)),
            (std::vector<std::vector<int>>{{1}, {2}, {4}}));
  // Nothing with room: why names the best there is.
  HostUsage full = u;
  ASSERT_EQ(full.Apply(Holding({PartOf(Addr(h, 4), 900)})), "");
  EXPECT_TRUE(GpuChoices(acc, GpuSlotsOf(acc, full), ShareAsk(700), &why).empty());
  EXPECT_EQ(why, "5 GPUs of an allowed model, the most free 600/1000, needs 700");
  GpuRequest other = ShareAsk(100);
  other.models = {"A10"};
  EXPECT_TRUE(GpuChoices(acc, GpuSlotsOf(acc, u), other, &why).empty());
  EXPECT_EQ(why, "no GPU of an allowed model");
}

TEST(GpuChoices, AMigSliceGoesWhereItsSlicesAreFreeOnAGpuOfAModelWithTheProfile) {
  const topology::HostTopology h = GpuHost({3});
  const auto acc = AcceleratorsOf(h);
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 0), 500, 0, 4), PartOf(Addr(h, 1), 100)})), "");
  std::string why;
  const std::vector<GpuChoice> half = GpuChoices(acc, GpuSlotsOf(acc, u), MigAsk(4, {0, 4}), &why);
  ASSERT_EQ(half.size(), 3u);  // GPU 0 at 4; GPU 2 at 0 and 4; GPU 1 holds shares
  EXPECT_EQ(half[0].gpus, std::vector<int>{0});
  EXPECT_EQ(half[0].mig_start, 4);
  EXPECT_EQ(half[0].mig_slices, 4);
  EXPECT_EQ(half[0].mig_gpu_slices, 8);
  EXPECT_EQ(half[1].gpus, std::vector<int>{2});
  EXPECT_EQ(half[1].mig_start, 0);
  EXPECT_EQ(half[2].mig_start, 4);
  const std::vector<GpuPlacement> placed = GpuPlacementsOf(acc, half[0], MigAsk(4, {0, 4}));
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].address, Addr(h, 0));
  EXPECT_EQ(placed[0].model, kH100);
  EXPECT_EQ(placed[0].mig_profile, "4g.test");
  EXPECT_EQ(placed[0].mig_start, 4);
  EXPECT_EQ(placed[0].mig_slices, 4);
  EXPECT_EQ(placed[0].milli, 500);
  // Starts the catalog does not allow, or that leave the GPU, are never offered.
  EXPECT_EQ(GpuChoices(acc, GpuSlotsOf(acc, u), MigAsk(4, {2, 6}), &why).size(), 1u);  // GPU 2 at 2; 6 + 4 > 8
  // A model without a shape cannot take the profile.
  GpuRequest a30 = MigAsk(1, {0});
  a30.mig_shapes[0].device_id = 0x20b7;
  EXPECT_TRUE(GpuChoices(acc, GpuSlotsOf(acc, u), a30, &why).empty());
  EXPECT_EQ(why, "no GPU of a model with MIG profile 1g.test");
  HostUsage full = u;
  ASSERT_EQ(full.Apply(Holding({PartOf(Addr(h, 0), 500, 4, 4), PartOf(Addr(h, 2), 1000)})), "");
  EXPECT_TRUE(GpuChoices(acc, GpuSlotsOf(acc, full), MigAsk(1, {0, 1, 2, 3, 4, 5, 6, 7}), &why).empty());
  EXPECT_EQ(why, "3 GPUs of a model with 1g.test, none with room for it beside their MIG slices");
}

TEST(GpuChoices, WholeGpusComeFromTheFewestNodesTheSmallestThatHoldsThemFirst) {
  const topology::HostTopology h = GpuHost({1, 3, 2});  // GPUs 0 | 1 2 3 | 4 5
  const auto acc = AcceleratorsOf(h);
  const HostUsage none;
  auto whole = [&](const HostUsage& u, int count) {
    std::string why;
    std::vector<GpuChoice> c = GpuChoices(acc, GpuSlotsOf(acc, u), WholeAsk(count), &why);
    EXPECT_LE(c.size(), 1u);
    return c.empty() ? std::vector<int>{} : c[0].gpus;
  };
  EXPECT_EQ(whole(none, 1), std::vector<int>{0});            // node 0 holds it alone, fewest free
  EXPECT_EQ(whole(none, 2), (std::vector<int>{4, 5}));       // node 2, so node 1's three stay together
  EXPECT_EQ(whole(none, 3), (std::vector<int>{1, 2, 3}));    // only node 1 holds three
  EXPECT_EQ(whole(none, 4), (std::vector<int>{1, 2, 3, 4})); // the biggest node, then the next biggest
  EXPECT_EQ(whole(none, 6), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // Shared, MIG and whole-held GPUs are not free whole.
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 1), 10), PartOf(Addr(h, 4), 125, 0, 1), PartOf(Addr(h, 0), 1000)})), "");
  EXPECT_EQ(whole(u, 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(whole(u, 3), (std::vector<int>{2, 3, 5}));
  std::string why;
  EXPECT_TRUE(GpuChoices(acc, GpuSlotsOf(acc, u), WholeAsk(4), &why).empty());
  EXPECT_EQ(why, "3 free whole GPUs of an allowed model, needs 4");
}

TEST(GpuChoices, ARequestOutsideGpuRequestsRulesGetsNoChoice) {
  const topology::HostTopology h = GpuHost({4});
  const auto acc = AcceleratorsOf(h);
  const std::vector<GpuSlot> slots = GpuSlotsOf(acc, HostUsage{});
  std::string why;
  EXPECT_TRUE(GpuChoices(acc, slots, WholeAsk(0), &why).empty());
  EXPECT_EQ(why, "a GPU request for 0 GPUs");
  EXPECT_TRUE(GpuChoices(acc, slots, ShareAsk(0), &why).empty());
  EXPECT_EQ(why, "a GPU share of 0 thousandths is not 1..1000");
  GpuRequest two_shares = ShareAsk(500);
  two_shares.count = 2;
  EXPECT_TRUE(GpuChoices(acc, slots, two_shares, &why).empty());
  EXPECT_EQ(why, "a share of a GPU (milli < 1000) is for one GPU, not 2");
  GpuRequest two_migs = MigAsk(1, {0});
  two_migs.count = 2;
  EXPECT_TRUE(GpuChoices(acc, slots, two_migs, &why).empty());
  EXPECT_EQ(why, "a MIG slice is for one GPU, not 2");
  // A shape with more memory slices than a GPU slot tracks is never offered, and never crashes.
  EXPECT_TRUE(GpuChoices(acc, slots, [] {
                GpuRequest r = MigAsk(8, {30});
                r.mig_shapes[0].gpu_slices = 64;
                return r;
              }(), &why).empty());
}

TEST(GpuChoices, MigMilliIsTheSlicesFractionRoundedDownAtLeastOne) {
  EXPECT_EQ(MigMilli(1, 8), 125);
  EXPECT_EQ(MigMilli(3, 8), 375);
  EXPECT_EQ(MigMilli(1, 7), 142);
  EXPECT_EQ(MigMilli(4, 4), 1000);
  EXPECT_EQ(MigMilli(1, 0), 1);
  EXPECT_EQ(MigMilli(1, 5000), 1);
}

// --- The engine's floating path -------------------------------------------------------

TEST(GpuEngine, APodGetsCpuThousandthsMemoryAndAShareOnTheFullestGpuItFits) {
  const topology::HostTopology h = GpuHost({2, 1});
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 0), 600)})), "");
  PlaceResult r = Place(h, u, HostPolicy{}, Pod(1500, 2048, ShareAsk(300)));
  ASSERT_TRUE(r.fits()) << ::testing::PrintToString(r.no_fit.reasons);
  const Placement& p = *r.placement;
  EXPECT_EQ(p.host, "gpu-host");
  EXPECT_TRUE(p.cells.empty());
  EXPECT_EQ(p.floating_cpu_milli, 1500);
  EXPECT_EQ(p.floating_vcpus, 0);
  EXPECT_EQ(p.floating_memory_mib, 2048u);
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].address, Addr(h, 0)) << "best fit: the shared GPU, so free ones stay free";
  EXPECT_EQ(p.gpus[0].milli, 300);
  EXPECT_EQ(p.gpus[0].numa_node, 0);
  EXPECT_EQ(Validate(h, u, HostPolicy{}, Pod(1500, 2048, ShareAsk(300)), p), "");
  // Too big for the shared GPU: a free one.
  r = Place(h, u, HostPolicy{}, Pod(100, 0, ShareAsk(500)));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->gpus.at(0).address, Addr(h, 1));
}

TEST(GpuEngine, AMigSliceGoesOnTheGpuWithTheMostSlicesInUseAndWholeGpusAsChoicesPackThem) {
  const topology::HostTopology h = GpuHost({2, 2});
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 2), 250, 0, 2)})), "");
  PlaceResult r = Place(h, u, HostPolicy{}, Pod(0, 0, MigAsk(1, {0, 1, 2, 3, 4, 5, 6})));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->gpus.at(0).address, Addr(h, 2));
  EXPECT_EQ(r.placement->gpus.at(0).mig_start, 2);
  EXPECT_EQ(r.placement->gpus.at(0).milli, 125);
  r = Place(h, u, HostPolicy{}, Pod(0, 0, WholeAsk(2)));
  ASSERT_TRUE(r.fits());
  ASSERT_EQ(r.placement->gpus.size(), 2u);
  EXPECT_EQ(r.placement->gpus[0].address, Addr(h, 0));
  EXPECT_EQ(r.placement->gpus[1].address, Addr(h, 1));
  EXPECT_EQ(r.placement->gpus[0].milli, 1000);
  r = Place(h, u, HostPolicy{}, Pod(0, 0, WholeAsk(4)));
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit.reasons, std::vector<std::string>{"GPUs: 3 free whole GPUs of an allowed model, needs 4"});
}

TEST(GpuEngine, PodCpuIsCountedInThousandthsAgainstTheSharedCapacityForPodsAndVmsAlike) {
  const topology::HostTopology h = GpuHost({0});  // 8 CPUs x ratio 4 = 32000 thousandths
  HostUsage u;
  PlaceResult r = Place(h, u, HostPolicy{}, Pod(32000, 0, std::nullopt));
  ASSERT_TRUE(r.fits());
  r = Place(h, u, HostPolicy{}, Pod(32001, 0, std::nullopt));
  ASSERT_FALSE(r.fits());
  EXPECT_EQ(r.no_fit.reasons,
            std::vector<std::string>{"host: 32000 CPU thousandths free of a shared capacity of 32000, needs 32001"});
  Placement pods;
  pods.host = "gpu-host";
  pods.floating_cpu_milli = 30500;
  ASSERT_EQ(u.Apply(pods), "");
  // A VM of two vCPUs needs 2000 thousandths; the pods left 1500.
  PlacementRequest vm;
  vm.flavor = "vm";
  vm.vcpus = 2;
  vm.memory_mib = 512;
  r = Place(h, u, HostPolicy{}, vm);
  ASSERT_FALSE(r.fits()) << "the VM must count what pods hold";
  EXPECT_EQ(r.no_fit.reasons,
            std::vector<std::string>{"host: 1500 CPU thousandths free of a shared capacity of 32000, needs 2000"});
  vm.vcpus = 1;
  r = Place(h, u, HostPolicy{}, vm);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(Validate(h, u, HostPolicy{}, vm, *r.placement), "");
  // Nova's rule and message stay for VMs on a host without pod CPU.
  vm.vcpus = 33;
  r = Place(h, HostUsage{}, HostPolicy{}, vm);
  ASSERT_FALSE(r.fits());
  EXPECT_NE(r.no_fit.reasons.at(0).find("shared vCPUs already on a capacity of 32"), std::string::npos);
}

TEST(GpuEngine, MemoryAndGpusAreCheckedTogetherWithCpu) {
  const topology::HostTopology h = GpuHost({1});
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 0), 900)})), "");
  PlaceResult r = Place(h, u, HostPolicy{}, Pod(40000, 9000, ShareAsk(200)));
  ASSERT_FALSE(r.fits());
  ASSERT_EQ(r.no_fit.reasons.size(), 3u) << ::testing::PrintToString(r.no_fit.reasons);
  EXPECT_NE(r.no_fit.reasons[0].find("CPU thousandths"), std::string::npos);
  EXPECT_NE(r.no_fit.reasons[1].find("MiB of base-page memory free"), std::string::npos);
  EXPECT_EQ(r.no_fit.reasons[2], "GPUs: 1 GPUs of an allowed model, the most free 100/1000, needs 200");
}

TEST(GpuEngine, GpusByModelSitBesideTheGuestsCellsAndCpuThousandthsNeedNoCells) {
  // A vGPU flavor with a NUMA topology: the cells first, the share on a GPU of their node.
  const topology::HostTopology h = GpuHost({1});
  PlacementRequest r = testing::Dedicated(2, 1024);
  r.gpu = ShareAsk(100);
  PlaceResult result = Place(h, HostUsage{}, HostPolicy{}, r);
  ASSERT_TRUE(result.fits()) << ::testing::PrintToString(result.no_fit.reasons);
  ASSERT_EQ(result.placement->gpus.size(), 1u);
  EXPECT_EQ(result.placement->gpus[0].milli, 100);
  EXPECT_EQ(Validate(h, HostUsage{}, HostPolicy{}, r, *result.placement), "");
  r.cpu_milli = 500;
  result = Place(h, HostUsage{}, HostPolicy{}, r);
  ASSERT_FALSE(result.fits());
  EXPECT_NE(result.no_fit.reasons.at(0).find("for guests without NUMA cells"), std::string::npos);
}

TEST(GpuEngine, APassedThroughGpuIsNotAlsoGivenForTheGpuRequest) {
  const topology::HostTopology one = GpuHost({1});
  PlacementRequest r = Pod(0, 0, WholeAsk(1));
  r.vcpus = 1;
  r.pci = {testing::GpuRequest(1, PciNumaPolicy::kLegacy)};
  PlaceResult result = Place(one, HostUsage{}, HostPolicy{}, r);
  ASSERT_FALSE(result.fits()) << "the only GPU would be held twice";
  const topology::HostTopology two = GpuHost({2});
  result = Place(two, HostUsage{}, HostPolicy{}, r);
  ASSERT_TRUE(result.fits()) << ::testing::PrintToString(result.no_fit.reasons);
  ASSERT_EQ(result.placement->devices.size(), 1u);
  ASSERT_EQ(result.placement->gpus.size(), 1u);
  EXPECT_NE(result.placement->devices[0].address, result.placement->gpus[0].address);
  EXPECT_EQ(Validate(two, HostUsage{}, HostPolicy{}, r, *result.placement), "");
  HostUsage u;
  EXPECT_EQ(u.Apply(*result.placement), "");
  // The same GPU twice is not a valid placement.
  Placement twice = *result.placement;
  twice.gpus[0].address = twice.devices[0].address;
  twice.gpus[0].numa_node = twice.devices[0].numa_node;
  EXPECT_NE(Validate(two, HostUsage{}, HostPolicy{}, r, twice), "");
}

TEST(GpuEngine, PlaceWithGpuChoiceGivesExactlyAnOfferedChoice) {
  const topology::HostTopology h = GpuHost({3});
  const auto acc = AcceleratorsOf(h);
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 0), 1000), PartOf(Addr(h, 1), 700)})), "");
  const PlacementRequest share = Pod(100, 0, ShareAsk(200));
  GpuChoice on2;
  on2.gpus = {2};
  PlaceResult r = PlaceWithGpuChoice(h, u, HostPolicy{}, share, on2);
  ASSERT_TRUE(r.fits()) << ::testing::PrintToString(r.no_fit.reasons);
  EXPECT_EQ(r.placement->gpus.at(0).address, Addr(h, 2));
  EXPECT_EQ(r.placement->gpus.at(0).milli, 200);
  EXPECT_EQ(Validate(h, u, HostPolicy{}, share, *r.placement), "");
  GpuChoice on1;
  on1.gpus = {1};
  EXPECT_EQ(PlaceWithGpuChoice(h, u, HostPolicy{}, share, on1).placement->gpus.at(0).address, Addr(h, 1));
  // Held whole, not of the host, a share too big for it: not offered.
  for (const std::vector<int>& gpus : {std::vector<int>{0}, std::vector<int>{7}, std::vector<int>{}}) {
    GpuChoice c;
    c.gpus = gpus;
    r = PlaceWithGpuChoice(h, u, HostPolicy{}, share, c);
    ASSERT_FALSE(r.fits());
    EXPECT_EQ(r.no_fit.reasons, std::vector<std::string>{"GPUs: the chosen GPUs cannot take the request"});
  }
  EXPECT_FALSE(PlaceWithGpuChoice(h, u, HostPolicy{}, Pod(0, 0, ShareAsk(400)), on1).fits());
  // A MIG choice: the geometry is the engine's, whatever the caller's copy says.
  GpuChoice mig;
  mig.gpus = {2};
  mig.mig_start = 4;
  mig.mig_slices = 1;      // wrong: the profile covers 4 slices
  mig.mig_gpu_slices = 2;  // wrong: the GPU has 8
  const PlacementRequest slice = Pod(0, 0, MigAsk(4, {0, 4}));
  r = PlaceWithGpuChoice(h, u, HostPolicy{}, slice, mig);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->gpus.at(0).mig_start, 4);
  EXPECT_EQ(r.placement->gpus.at(0).mig_slices, 4);
  EXPECT_EQ(r.placement->gpus.at(0).milli, 500);
  EXPECT_EQ(Validate(h, u, HostPolicy{}, slice, *r.placement), "");
  mig.mig_start = 2;  // not an allowed start
  EXPECT_FALSE(PlaceWithGpuChoice(h, u, HostPolicy{}, slice, mig).fits());
  // Without a GPU request the choice is ignored.
  EXPECT_TRUE(PlaceWithGpuChoice(h, u, HostPolicy{}, Pod(100, 0, std::nullopt), on2).fits());
  // Every offered choice is accepted and validates.
  for (const GpuChoice& c : GpuChoices(acc, GpuSlotsOf(acc, u), ShareAsk(200), nullptr)) {
    r = PlaceWithGpuChoice(h, u, HostPolicy{}, share, c);
    ASSERT_TRUE(r.fits());
    EXPECT_EQ(Validate(h, u, HostPolicy{}, share, *r.placement), "");
  }
}

// --- Validate --------------------------------------------------------------------------

TEST(GpuValidate, TheGpusMustBeAnOfferedChoiceOfTheRequest) {
  const topology::HostTopology h = GpuHost({2});
  HostUsage u;
  ASSERT_EQ(u.Apply(Holding({PartOf(Addr(h, 0), 700)})), "");
  const PlacementRequest req = Pod(100, 0, ShareAsk(200));
  const Placement good = *Place(h, u, HostPolicy{}, req).placement;
  ASSERT_EQ(Validate(h, u, HostPolicy{}, req, good), "");
  auto invalid = [&](const std::function<void(Placement&)>& change, const PlacementRequest& r) {
    Placement p = good;
    change(p);
    return Validate(h, u, HostPolicy{}, r, p);
  };
  const std::string not_valid = "the GPUs are not a valid choice for the request on this host";
  EXPECT_EQ(invalid([](Placement& p) { p.gpus[0].milli = 300; }, req), not_valid);
  EXPECT_EQ(invalid([](Placement& p) { p.gpus[0].model = "A10"; }, req), not_valid);
  EXPECT_EQ(invalid([](Placement& p) { p.gpus.clear(); }, req), not_valid);
  EXPECT_EQ(invalid([&](Placement& p) { p.gpus.push_back(p.gpus[0]); }, req), not_valid);
  EXPECT_EQ(invalid([&](Placement& p) { p.gpus[0].address = "0000:ff:00.0"; }, req), not_valid);
  EXPECT_EQ(invalid([](Placement&) {}, Pod(100, 0, ShareAsk(400))), not_valid) << "GPU 0 has 300 left";
  EXPECT_EQ(invalid([](Placement&) {}, Pod(100, 0, std::nullopt)), "GPUs placed for a request without a GPU part");
  EXPECT_EQ(invalid([](Placement& p) { p.floating_cpu_milli = 50; }, req),
            "floating vCPUs/CPU thousandths/memory differ from the request");
  // On a GPU that another claim holds whole, the same placement is a double booking.
  HostUsage whole;
  ASSERT_EQ(whole.Apply(Holding({PartOf(Addr(h, 0), 1000)})), "");
  EXPECT_EQ(Validate(h, whole, HostPolicy{}, req, good), not_valid);
  // A guest with NUMA cells gets no GPUs by model and no CPU thousandths.
  PlacementRequest cells = testing::Dedicated(2, 1024);
  const Placement pinned = *Place(h, HostUsage{}, HostPolicy{}, cells).placement;
  ASSERT_EQ(Validate(h, HostUsage{}, HostPolicy{}, cells, pinned), "");
  Placement with_gpu = pinned;
  with_gpu.gpus = good.gpus;
  EXPECT_EQ(Validate(h, HostUsage{}, HostPolicy{}, cells, with_gpu), "GPUs placed for a request without a GPU part");
  Placement with_milli = pinned;
  with_milli.floating_cpu_milli = 10;
  EXPECT_EQ(Validate(h, HostUsage{}, HostPolicy{}, cells, with_milli), "CPU thousandths are for guests without NUMA cells");
}

// Random pods on a random GPU host: whatever the engine places validates and applies, and a
// HostState kept in step by Apply/Release equals one built afresh and answers as the one-shot
// Place() does.
TEST(GpuValidate, EnginePlacementsOfRandomPodsValidateApplyAndKeepHostStateExact) {
  int placed = 0, refused = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const topology::HostTopology h = GpuHost({pick(0, 3), pick(1, 3)});
    HostState state(h, {}, HostPolicy{});
    HostUsage usage;
    std::vector<Placement> live;
    for (int step = 0; step < 60; ++step) {
      if (!live.empty() && pick(0, 3) == 0) {
        const size_t k = static_cast<size_t>(pick(0, static_cast<int>(live.size()) - 1));
        state.Release(live[k]);
        usage.Release(live[k]);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        std::optional<GpuRequest> gpu;
        switch (pick(0, 3)) {
          case 0: gpu = ShareAsk(50 * pick(1, 19)); break;
          case 1: gpu = MigAsk(pick(0, 1) ? 1 : 4, {0, 1, 2, 3, 4, 5, 6, 7}); break;
          case 2: gpu = WholeAsk(pick(1, 3)); break;
          default: break;
        }
        if (gpu && gpu->mig_shapes.size() && gpu->mig_shapes[0].memory_slices == 4) gpu->mig_shapes[0].starts = {0, 4};
        const PlacementRequest req = Pod(100 * pick(0, 40), 256u * pick(0, 8), gpu);
        const PlaceResult one_shot = Place(h, usage, HostPolicy{}, req);
        const PlaceResult prepared = Place(state, req);
        ASSERT_EQ(one_shot.fits(), prepared.fits()) << "seed " << seed << " step " << step;
        if (!one_shot.fits()) {
          ++refused;
          continue;
        }
        ASSERT_EQ(WritePlacementJson(*one_shot.placement), WritePlacementJson(*prepared.placement));
        ASSERT_EQ(Validate(h, usage, HostPolicy{}, req, *one_shot.placement), "") << "seed " << seed;
        ASSERT_EQ(usage.Apply(*one_shot.placement), "");
        ASSERT_EQ(state.Apply(*one_shot.placement), "");
        live.push_back(*one_shot.placement);
        ++placed;
      }
      const HostState fresh(h, usage, HostPolicy{});
      for (size_t i = 0; i < fresh.nodes().size(); ++i)
        ASSERT_TRUE(state.nodes()[i] == fresh.nodes()[i]) << "seed " << seed << " step " << step << " node " << i;
      ASSERT_TRUE(state.floating_room() == fresh.floating_room());
    }
  }
  EXPECT_GT(placed, 1000);
  EXPECT_GT(refused, 100);
}

// --- Placement JSON --------------------------------------------------------------------

Placement PodPlacement() {
  Placement p = Holding({PartOf("0000:41:00.0", 470), PartOf("0000:42:00.0", 375, 4, 3), PartOf("0000:43:00.0", 1000)});
  p.gpus[0].numa_node = 1;
  p.flavor = "pod";
  p.floating_memory_mib = 4096;
  p.floating_cpu_milli = 2500;
  return p;
}

TEST(GpuPlacementJson, GpusAndCpuThousandthsRoundTripByteForByte) {
  const std::string text = WritePlacementJson(PodPlacement());
  const Placement back = ReadPlacementJson(text, "test");
  EXPECT_EQ(WritePlacementJson(back), text);
  EXPECT_EQ(back.gpus, PodPlacement().gpus);
  EXPECT_EQ(back.floating_cpu_milli, 2500);
  const ordered_json j = PlacementToJson(PodPlacement());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "host", "flavor", "cells", "emulator_cpus", "emulator_consumed_cpus",
                                            "devices", "gpus", "floating_vcpus", "floating_memory_mib",
                                            "floating_cpu_milli", "notes"}));
  EXPECT_EQ(j["gpus"][0].dump(), R"({"address":"0000:41:00.0","model":"GH100 [H100 SXM5 80GB]","milli":470,"numa_node":1})");
  EXPECT_EQ(j["gpus"][1].dump(),
            R"({"address":"0000:42:00.0","model":"GH100 [H100 SXM5 80GB]","milli":375,"mig_profile":"x","mig_start":4,)"
            R"("mig_slices":3,"numa_node":-1})");
}

TEST(GpuPlacementJson, APlacementWithoutThemHasNeitherKey) {
  Placement p = PodPlacement();
  p.gpus.clear();
  p.floating_cpu_milli = 0;
  const ordered_json j = PlacementToJson(p);
  EXPECT_FALSE(j.contains("gpus"));
  EXPECT_FALSE(j.contains("floating_cpu_milli"));
  // Written explicitly empty or zero, they read as absent and are written as before.
  ordered_json explicit_empty = j;
  explicit_empty["gpus"] = ordered_json::array();
  explicit_empty["floating_cpu_milli"] = 0;
  EXPECT_EQ(WritePlacementJson(ReadPlacementJson(explicit_empty.dump(), "t")), WritePlacementJson(p));
}

// The field a malformed GPU document is refused at ("" when it is read).
std::string GpuErrorField(const std::function<void(ordered_json&)>& mutate) {
  ordered_json j = PlacementToJson(PodPlacement());
  mutate(j);
  try {
    ReadPlacementJson(j.dump(), "claims.db");
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

TEST(GpuPlacementJson, MalformedGpusAreInputErrorsNamingTheField) {
  EXPECT_EQ(GpuErrorField([](ordered_json&) {}), "");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"] = "0000:41:00.0"; }), "gpus");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0].erase("address"); }), "gpus[0].address");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["address"] = ""; }), "gpus[0].address");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0].erase("milli"); }), "gpus[0].milli");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["milli"] = 0; }), "gpus[0].milli");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["milli"] = 1001; }), "gpus[0].milli");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["milli"] = 0.5; }), "gpus[0].milli");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["slices"] = 1; }), "gpus[0].slices");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["mig_start"] = 0; }), "gpus[0].mig_start");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["mig_slices"] = 2; }), "gpus[0].mig_slices");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][1].erase("mig_start"); }), "gpus[1].mig_start");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][1]["mig_start"] = -1; }), "gpus[1].mig_start");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][1]["mig_slices"] = 0; }), "gpus[1].mig_start");  // the range
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][1]["mig_start"] = 30; }), "gpus[1].mig_start");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][1]["mig_start"] = 2147483647; }), "gpus[1].mig_start");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["gpus"][0]["numa_node"] = -2; }), "gpus[0].numa_node");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["floating_cpu_milli"] = -1; }), "floating_cpu_milli");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["floating_cpu_milli"] = 9223372036854775808ULL; }),
            "floating_cpu_milli");
  EXPECT_EQ(GpuErrorField([](ordered_json& j) { j["floating_cpu_milli"] = "2500m"; }), "floating_cpu_milli");
}

}  // namespace gpu_fit_test
}  // namespace accel::placement
