#include "placement/engine.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "placement/brute_force.h"
#include "placement/test_hosts.h"

namespace accel::placement {
namespace engine_test {

using testing::Dedicated;
using testing::GpuRequest;
using testing::MakeHost;
using testing::NodeShape;

// Two sockets, 8 cores x 2 threads per node, 1G and 2M pools, one GPU on node 1.
topology::HostTopology TwoNodeGpuHost() {
  NodeShape n0{8, 2, 65536, 4096, 16, 0, 0};
  NodeShape n1{8, 2, 65536, 4096, 16, 1, 1};
  return MakeHost({n0, n1});
}

TEST(Engine, GpuFlavorLandsOnTheGpuNodeWithWholeCores) {
  auto host = TwoNodeGpuHost();
  auto req = Dedicated(4, 8192);
  req.page_size = {PageSizeRequest::kExplicit, 1048576};
  req.pci.push_back(GpuRequest(1, PciNumaPolicy::kRequired));
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits()) << r.no_fit.reasons[0];
  const Placement& p = *r.placement;
  EXPECT_EQ(p.cells[0].host_node, 1);
  EXPECT_EQ(p.cells[0].page_size_kib, 1048576u);
  EXPECT_EQ(p.cells[0].pages, 8u);
  // Node 1 CPUs are 16..31, cores {16,17}, {18,19}: two whole cores, siblings together.
  EXPECT_EQ(p.cells[0].pinning, (std::map<int, int>{{0, 16}, {1, 17}, {2, 18}, {3, 19}}));
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].guest_cell, 0);
  EXPECT_EQ(Validate(host, {}, {}, req, p), "");
}

TEST(Engine, CpuOnlyFlavorAvoidsTheGpuNode) {
  auto host = TwoNodeGpuHost();
  HostPolicy spread;
  spread.strategy = Strategy::kSpread;
  for (const HostPolicy& policy : {HostPolicy{}, spread}) {
    PlaceResult r = Place(host, {}, policy, Dedicated(4, 4096));
    ASSERT_TRUE(r.fits());
    EXPECT_EQ(r.placement->cells[0].host_node, 0);
  }
}

TEST(Engine, CpuOnlyFlavorUsesTheGpuNodeWhenNothingElseFits) {
  auto host = TwoNodeGpuHost();
  HostUsage usage;
  for (int c = 0; c < 16; ++c) usage.nodes[0].pinned_cpus.Add(c);
  PlaceResult r = Place(host, usage, {}, Dedicated(4, 4096));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->cells[0].host_node, 1);
}

TEST(Engine, PrefersHalfUsedCoresToKeepWholeCoresFree) {
  auto host = MakeHost({{4, 2, 8192}});
  HostUsage usage;
  usage.nodes[0].pinned_cpus = CpuSet{2};  // core {2,3} half used
  PlaceResult r = Place(host, usage, {}, Dedicated(1, 1024));
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->cells[0].pinning.at(0), 3);
}

TEST(Engine, IsolateTakesWholeCoresAndExplainsShortage) {
  auto host = MakeHost({{4, 2, 8192}, {8, 2, 8192}});
  HostUsage usage;
  usage.nodes[1].pinned_cpus = CpuSet{8, 10};  // node 1: 6 whole free cores
  auto req = Dedicated(8, 2048, 1, ThreadPolicy::kIsolate);
  PlaceResult r = Place(host, usage, {}, req);
  ASSERT_FALSE(r.fits());
  std::string all;
  for (const auto& s : r.no_fit.reasons) all += s + "\n";
  EXPECT_NE(all.find("node 1: 6 free whole cores, thread policy isolate needs 8"), std::string::npos) << all;
  EXPECT_NE(all.find("node 0: 4 free whole cores, thread policy isolate needs 8"), std::string::npos) << all;

  auto small = Dedicated(3, 2048, 1, ThreadPolicy::kIsolate);
  r = Place(host, usage, {}, small);
  ASSERT_TRUE(r.fits());
  const CellPlacement& c = r.placement->cells[0];
  EXPECT_EQ(c.consumed_cpus.Count(), 6);  // three whole cores
  EXPECT_EQ(Validate(host, usage, {}, small, *r.placement), "");
}

TEST(Engine, RequireNeedsSmt) {
  auto host = MakeHost({{8, 1, 8192}});
  auto req = Dedicated(2, 1024, 1, ThreadPolicy::kRequire);
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_FALSE(r.fits());
  EXPECT_NE(r.no_fit.reasons[0].find("no SMT"), std::string::npos);
}

TEST(Engine, EmulatorIsolateReservesACpuOnCellZerosNode) {
  auto host = TwoNodeGpuHost();
  auto req = Dedicated(8, 8192, 2);
  req.emulator_policy = EmulatorPolicy::kIsolate;
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits());
  const Placement& p = *r.placement;
  ASSERT_EQ(p.emulator_cpus.Count(), 1);
  const auto& node0 = host.numa_nodes[host.NodeIndex(p.cells[0].host_node)];
  EXPECT_TRUE(node0.cpus.Contains(p.emulator_cpus.First()));
  EXPECT_EQ(Validate(host, {}, {}, req, p), "");
}

TEST(Engine, TwoCellGpuGuestGetsOneLocalGpuPerCell) {
  auto host = MakeHost({{8, 2, 65536, 4096, 16, 0, 2}, {8, 2, 65536, 4096, 16, 1, 2}});
  auto req = Dedicated(16, 16384, 2);
  req.pci.push_back(GpuRequest(2, PciNumaPolicy::kRequired));
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits());
  ASSERT_EQ(r.placement->devices.size(), 2u);
  EXPECT_NE(r.placement->devices[0].guest_cell, r.placement->devices[1].guest_cell);
  EXPECT_GE(r.placement->devices[0].guest_cell, 0);
  EXPECT_GE(r.placement->devices[1].guest_cell, 0);
}

TEST(Engine, TwoCellGuestSpansTwoNodes) {
  auto host = TwoNodeGpuHost();
  auto req = Dedicated(16, 16384, 2);
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_NE(r.placement->cells[0].host_node, r.placement->cells[1].host_node);
}

TEST(Engine, NovaCacheBugCaseIsANoFit) {
  // nova-numa.md §3.3: Nova returned G2 on H0 with no pinning; G2 needs 2 GiB and no node has it.
  auto host = MakeHost({{4, 1, 1024}, {6, 1, 1024}, {2, 1, 1024}});
  HostUsage usage;
  usage.nodes[1].pinned_cpus = CpuSet{4, 5};
  PlacementRequest req = Dedicated(9, 3584, 3);
  req.cells[0].dedicated_vcpus = CpuSet{0, 1, 2, 3};
  req.cells[0].memory_mib = 512;
  req.cells[1].dedicated_vcpus = CpuSet{4};
  req.cells[1].memory_mib = 1024;
  req.cells[2].dedicated_vcpus = CpuSet{5, 6, 7, 8};
  req.cells[2].memory_mib = 2048;
  EXPECT_FALSE(Place(host, usage, {}, req).fits());
  EXPECT_FALSE(testing::BruteForceFits(host, usage, {}, req));
}

TEST(Engine, FourCellGuestWantingFiveGpusOnEightNodesIsAQuickNoFit) {
  std::vector<NodeShape> shapes;
  for (int i = 0; i < 8; ++i) shapes.push_back({8, 2, 65536, 0, 32, i / 4, 1});
  auto host = MakeHost(shapes);
  auto req = Dedicated(16, 16384, 4);
  req.pci.push_back(GpuRequest(5, PciNumaPolicy::kRequired));
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_FALSE(r.fits());
  EXPECT_NE(r.no_fit.reasons.back().find("PCI affinity"), std::string::npos) << r.no_fit.reasons.back();
  req.pci[0].count = 4;
  r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->devices.size(), 4u);
  EXPECT_EQ(Validate(host, {}, {}, req, *r.placement), "");
}

TEST(Engine, RequiredGpuOnAFullNodeIsNoFitButPreferredGoesRemote) {
  auto host = TwoNodeGpuHost();
  HostUsage usage;
  for (int c = 16; c < 32; ++c) usage.nodes[1].pinned_cpus.Add(c);
  auto req = Dedicated(4, 4096);
  req.pci.push_back(GpuRequest(1, PciNumaPolicy::kRequired));
  EXPECT_FALSE(Place(host, usage, {}, req).fits());
  req.pci[0].numa_policy = PciNumaPolicy::kPreferred;
  PlaceResult r = Place(host, usage, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->cells[0].host_node, 0);
  EXPECT_EQ(r.placement->devices[0].guest_cell, -1);
  EXPECT_FALSE(r.placement->notes.empty());
  req.pci[0].numa_policy = PciNumaPolicy::kSocket;  // node 0 and 1 are on different packages
  EXPECT_FALSE(Place(host, usage, {}, req).fits());
}

// Nova's socket policy (nova/pci/stats.py _filter_pools_for_socket_affinity): devices on any
// node of the guest's sockets, never devices of unknown NUMA node, and no fallback at all on a
// host where some NUMA cell has no socket (a node spanning packages, or one without CPUs:
// package -1 here). legacy takes the NUMA-less device instead.
TEST(Engine, SocketPolicyNeedsEveryNodesPackageAndNeverTakesNumaLessDevices) {
  // Nodes 0 and 1 on package 0, node 2 on package 1; one GPU on node 1, one of unknown node.
  auto host = MakeHost({{8, 2, 65536, 0, 16, 0, 0}, {8, 2, 65536, 0, 16, 0, 1}, {8, 2, 65536, 0, 16, 1, 0}});
  host.pci.push_back(testing::Gpu("0000:80:00.0", -1));
  HostUsage usage;
  for (int c = 16; c < 32; ++c) usage.nodes[1].pinned_cpus.Add(c);  // node 1 is full
  auto req = Dedicated(4, 4096);
  req.page_size = {PageSizeRequest::kExplicit, 1048576};
  req.pci.push_back(GpuRequest(1, PciNumaPolicy::kSocket));
  PlaceResult r = Place(host, usage, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->cells[0].host_node, 0);
  ASSERT_EQ(r.placement->devices.size(), 1u);
  EXPECT_EQ(r.placement->devices[0].numa_node, 1);
  EXPECT_EQ(Validate(host, usage, {}, req, *r.placement), "");
  // Two devices would need the NUMA-less one, which socket never takes.
  req.pci[0].count = 2;
  EXPECT_FALSE(Place(host, usage, {}, req).fits());
  req.pci[0].numa_policy = PciNumaPolicy::kLegacy;
  EXPECT_FALSE(Place(host, usage, {}, req).fits()) << "legacy: local or unknown, not the socket";
  req.pci[0].count = 1;
  r = Place(host, usage, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->devices[0].address, "0000:80:00.0");
  // Node 2 in no single package: Nova has no socket for that cell, so no socket fallback.
  const Placement socket_placement = *Place(host, usage, {}, [&] {
    auto q = req;
    q.pci[0].numa_policy = PciNumaPolicy::kSocket;
    return q;
  }()).placement;
  host.numa_nodes[2].package = -1;
  req.pci[0].numa_policy = PciNumaPolicy::kSocket;
  EXPECT_FALSE(Place(host, usage, {}, req).fits());
  EXPECT_EQ(Validate(host, usage, {}, req, socket_placement), "device 0000:10:00.0 breaks NUMA policy socket");
  req.pci[0].numa_policy = PciNumaPolicy::kPreferred;
  EXPECT_TRUE(Place(host, usage, {}, req).fits());
}

TEST(Engine, PackAndSpreadChooseDifferentNodes) {
  auto host = MakeHost({{8, 2, 8192}, {8, 2, 8192}});
  HostUsage usage;
  usage.nodes[1].pinned_cpus = CpuSet{16, 17};
  HostPolicy pack, spread;
  spread.strategy = Strategy::kSpread;
  auto req = Dedicated(2, 1024);
  EXPECT_EQ(Place(host, usage, pack, req).placement->cells[0].host_node, 1);
  EXPECT_EQ(Place(host, usage, spread, req).placement->cells[0].host_node, 0);
}

TEST(Engine, LargePagesFallBackFrom1GTo2M) {
  auto host = MakeHost({{4, 2, 16384, 2048, 1}});
  auto req = Dedicated(2, 2048);
  req.page_size.kind = PageSizeRequest::kLarge;
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_EQ(r.placement->cells[0].page_size_kib, 2048u);
  EXPECT_EQ(r.placement->cells[0].pages, 1024u);
}

TEST(Engine, FloatingSharedGuestTakesNoPins) {
  auto host = TwoNodeGpuHost();
  PlacementRequest req;
  req.vcpus = 4;
  req.memory_mib = 4096;
  PlaceResult r = Place(host, {}, {}, req);
  ASSERT_TRUE(r.fits());
  EXPECT_TRUE(r.placement->cells.empty());
  EXPECT_EQ(r.placement->floating_vcpus, 4);
}

TEST(Engine, IsDeterministic) {
  auto host = TwoNodeGpuHost();
  auto req = Dedicated(6, 6144, 2, ThreadPolicy::kIsolate);
  auto a = Place(host, {}, {}, req), b = Place(host, {}, {}, req);
  ASSERT_TRUE(a.fits());
  EXPECT_EQ(a.placement->cells[0].pinning, b.placement->cells[0].pinning);
  EXPECT_EQ(a.placement->cells[1].pinning, b.placement->cells[1].pinning);
}

// Complete: on thousands of tiny random hosts the engine finds a placement exactly when brute
// force finds one, and every placement it returns is valid.
// ACCEL_PROPERTY_CASES and ACCEL_PROPERTY_SEED widen the search for a deeper run.
int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

TEST(EngineProperty, AgreesWithBruteForceOnTinyHosts) {
  std::mt19937 rng(EnvInt("ACCEL_PROPERTY_SEED", 20261129));
  int fits = 0, cases = EnvInt("ACCEL_PROPERTY_CASES", 3000);
  for (int i = 0; i < cases; ++i) {
    testing::RandomCase rc = testing::MakeRandomCase(rng, 3, 3, 2);
    PlaceResult r = Place(rc.host, rc.usage, rc.policy, rc.request);
    bool brute = testing::BruteForceFits(rc.host, rc.usage, rc.policy, rc.request);
    ASSERT_EQ(r.fits(), brute) << "case " << i << (r.fits() ? "" : ": " + r.no_fit.reasons[0]) << "\n" << testing::Describe(rc);
    if (r.fits()) {
      ++fits;
      ASSERT_EQ(Validate(rc.host, rc.usage, rc.policy, rc.request, *r.placement), "") << "case " << i;
    } else {
      ASSERT_FALSE(r.no_fit.reasons.empty());
    }
  }
  // Both outcomes must be well represented for the comparison to mean something.
  EXPECT_GT(fits, cases / 5);
  EXPECT_LT(fits, cases * 4 / 5);
}

// Valid under sequences of claims and releases: usage equals the sum of live placements and no
// CPU, page or device is booked twice.
TEST(EngineProperty, ClaimReleaseSequencesStayConsistent) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    testing::RandomCase base = testing::MakeRandomCase(rng, 4, 6, 2);
    HostUsage usage;
    std::vector<Placement> live;
    for (int step = 0; step < 25; ++step) {
      testing::RandomCase rc = testing::MakeRandomCase(rng, 4, 6, 2);
      rc.request.cells.resize(std::min(rc.request.cells.size(), base.host.numa_nodes.size()));
      if (!live.empty() && std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
        usage.Release(live.back());
        live.pop_back();
        continue;
      }
      PlaceResult r = Place(base.host, usage, base.policy, rc.request);
      if (!r.fits()) continue;
      ASSERT_EQ(Validate(base.host, usage, base.policy, rc.request, *r.placement), "");
      ASSERT_EQ(usage.Apply(*r.placement), "");
      live.push_back(*r.placement);
    }
    HostUsage rebuilt;
    for (const Placement& p : live) ASSERT_EQ(rebuilt.Apply(p), "");
    for (const auto& [id, n] : usage.nodes) {
      auto it = rebuilt.nodes.find(id);
      CpuSet pinned = it == rebuilt.nodes.end() ? CpuSet() : it->second.pinned_cpus;
      EXPECT_EQ(n.pinned_cpus, pinned);
    }
    EXPECT_EQ(usage.devices, rebuilt.devices);
  }
}

}  // namespace
}  // namespace accel::placement
