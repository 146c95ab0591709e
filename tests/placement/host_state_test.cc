// The prepared path: Place(HostState, request) must answer exactly what the one-shot
// Place(host, usage, policy, request) answers, and a state kept in step by Apply/Release must
// equal a state built from scratch on the same usage.
#include "placement/host_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>

#include "placement/engine.h"
#include "placement/placement_json.h"
#include "placement/test_hosts.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::placement {
namespace host_state_test {

using testing::MakeHost;
using testing::NodeShape;

// The whole answer as text: the placement document, or the no-fit reasons.
std::string Answer(const PlaceResult& r) {
  return r.fits() ? WritePlacementJson(*r.placement) : NoFitToJson(r.no_fit).dump();
}

// "" when `state` equals a state built from scratch on its own usage, else what differs.
std::string DiffFromRebuilt(const topology::HostTopology& host, const HostState& state,
                            const HostUsage& expected_usage, const HostPolicy& policy) {
  const HostState rebuilt(host, expected_usage, policy);
  const std::vector<NodeView> one_shot = BuildNodeViews(host, expected_usage, policy);
  for (size_t i = 0; i < rebuilt.nodes().size(); ++i) {
    if (!(state.nodes()[i] == rebuilt.nodes()[i])) return "node view " + std::to_string(i) + " differs";
    // The one-shot views count the same without storing cores, and build the same cores.
    NodeView counts = state.nodes()[i];
    counts.cores.clear();
    counts.has_cores = false;
    if (!(counts == one_shot[i])) return "one-shot view of node " + std::to_string(i) + " differs";
    if (state.nodes()[i].Cores() != one_shot[i].Cores()) return "cores of node " + std::to_string(i) + " differ";
  }
  if (!(state.floating_room() == rebuilt.floating_room())) return "floating room differs";
  if (state.usage().devices != expected_usage.devices) return "devices differ";
  return "";
}

// Random claims and releases on one host, driven through a HostState and, in parallel, through
// a plain HostUsage and the one-shot Place(): every answer and every state must agree.
void RunSequence(const topology::HostTopology& host, const HostPolicy& policy, std::mt19937& rng,
                 int steps, const std::function<PlacementRequest()>& next_request, int* placed, int* refused) {
  HostState state(host, {}, policy);
  HostUsage usage;
  std::vector<Placement> live;
  for (int step = 0; step < steps; ++step) {
    if (!live.empty() && std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
      const size_t victim = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
      state.Release(live[victim]);
      usage.Release(live[victim]);
      live.erase(live.begin() + static_cast<long>(victim));
    } else {
      const PlacementRequest req = next_request();
      const PlaceResult prepared = Place(state, req);
      const PlaceResult one_shot = Place(host, usage, policy, req);
      ASSERT_EQ(Answer(prepared), Answer(one_shot)) << "step " << step;
      ASSERT_EQ(Answer(Place(state, req)), Answer(prepared)) << "Place changed the state";
      if (!prepared.fits()) {
        ++*refused;
        continue;
      }
      ++*placed;
      ASSERT_EQ(state.Apply(*prepared.placement), "");
      ASSERT_EQ(usage.Apply(*prepared.placement), "");
      live.push_back(*prepared.placement);
    }
    ASSERT_EQ(DiffFromRebuilt(host, state, usage, policy), "") << "step " << step;
  }
}

TEST(HostState, MatchesOneShotPlaceOnRandomHostsThroughClaimsAndReleases) {
  std::mt19937 rng(20261130);
  int placed = 0, refused = 0;
  for (int round = 0; round < 300; ++round) {
    testing::RandomCase base = testing::MakeRandomCase(rng, 4, 6, 2);
    RunSequence(base.host, base.policy, rng, 20, [&] {
      testing::RandomCase rc = testing::MakeRandomCase(rng, 4, 6, 2);
      rc.request.cells.resize(std::min(rc.request.cells.size(), base.host.numa_nodes.size() + 1));
      return rc.request;
    }, &placed, &refused);
    if (HasFatalFailure()) return;
  }
  // Both outcomes must be well represented for the comparison to mean something.
  EXPECT_GT(placed, 1000);
  EXPECT_GT(refused, 1000);
}

TEST(HostState, MatchesOneShotPlaceOnFixtureHosts) {
  std::mt19937 rng(11);
  int placed = 0, refused = 0;
  for (const char* name : {"hgx-h100", "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox"}) {
    const topology::HostTopology host =
        topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
    for (Strategy strategy : {Strategy::kPack, Strategy::kSpread}) {
      HostPolicy policy;
      policy.strategy = strategy;
      policy.reserved_host_memory_mib_per_node = strategy == Strategy::kPack ? 0 : 2048;
      RunSequence(host, policy, rng, 120, [&] { return testing::RandomRequest(rng); }, &placed, &refused);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(placed, 100);
  EXPECT_GT(refused, 50);
}

// The policy fleet_bench gives every host: the first core of each node shared, the rest
// dedicated, 1 GiB of base memory reserved per node -- so the dedicated and shared sets differ
// and a core's threads are a strict subset of its node's CPUs.
HostPolicy FirstCoreSharedPolicy(const topology::HostTopology& host, Strategy strategy) {
  HostPolicy policy;
  policy.strategy = strategy;
  policy.reserved_host_memory_mib_per_node = 1024;
  CpuSet shared, dedicated;
  for (const topology::NumaNode& node : host.numa_nodes) {
    for (size_t c = 0; c < node.cores.size(); ++c) {
      CpuSet& into = c == 0 ? shared : dedicated;
      into = into.Union(node.cores[c]);
    }
  }
  policy.cpu_shared_set = shared;
  policy.cpu_dedicated_set = dedicated;
  return policy;
}

// Random requests that also reach accelerators RandomRequest's ids miss (H200, V100, ...): a
// third of PCI requests match any device of the vendor.
PlacementRequest WideRandomRequest(std::mt19937& rng) {
  PlacementRequest r = testing::RandomRequest(rng);
  for (PciRequest& q : r.pci)
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) q.specs[0].product_id.reset();
  return r;
}

// A thousand sequences of claims and releases on every fixture topology the fleet benchmark uses (the
// repository's and ../shared's real hwloc exports), with a policy that splits cores into shared
// and dedicated: the incrementally updated state must equal a fresh one after every step, and
// answer Place() as the one-shot engine does.
TEST(HostState, IncrementalUpdatesEqualAFreshStateOnFleetTopologies) {
  std::mt19937 rng(13);
  int placed = 0, refused = 0, hosts = 0;
  std::vector<std::string> paths;
  for (const char* name : {"hgx-h100", "hgx-h200", "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox"})
    paths.push_back(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
  for (const char* name : {"nvidiaDGX2.xml", "32em64t-2n8c2t-pci-wholeio.xml", "192em64t-24n8c2t.xml",
                           "16amd64-8n2c-cpusets.xml"}) {
    const std::string path = test_support::SharedPath(std::string("fixtures/hwloc/") + name);
    if (std::filesystem::exists(path)) paths.push_back(path);
  }
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const topology::HostTopology host = topology::LoadTopology(path);
    ++hosts;
    for (int sequence = 0; sequence < 120; ++sequence) {
      const Strategy strategy = sequence % 2 ? Strategy::kSpread : Strategy::kPack;
      RunSequence(host, FirstCoreSharedPolicy(host, strategy), rng, 30, [&] { return WideRandomRequest(rng); },
                  &placed, &refused);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GE(hosts, 5);
  // 4,360 claims placed on the 5 repository fixtures alone (a clone without ../shared), 5,115
  // with the hwloc exports as well.
  EXPECT_GT(placed, 3000);
  EXPECT_GT(refused, 5000);
}

// A copy is an independent state: claims on the copy leave the original as it was, and the
// copy keeps equal to a fresh state (fleet capacity fills one copy per flavor).
TEST(HostState, CopiesAreIndependent) {
  const topology::HostTopology host =
      topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json");
  const HostPolicy policy = FirstCoreSharedPolicy(host, Strategy::kPack);
  std::mt19937 rng(5);
  HostState original(host, {}, policy);
  for (int i = 0; i < 3; ++i) {
    const PlaceResult r = Place(original, testing::RandomRequest(rng));
    if (r.fits()) {
      ASSERT_EQ(original.Apply(*r.placement), "");
    }
  }
  const HostUsage before = original.usage();
  HostState copy = original;
  int applied = 0;
  for (int i = 0; i < 40; ++i) {
    const PlaceResult r = Place(copy, WideRandomRequest(rng));
    if (!r.fits()) continue;
    ASSERT_EQ(copy.Apply(*r.placement), "");
    ++applied;
  }
  EXPECT_GT(applied, 0);
  EXPECT_EQ(DiffFromRebuilt(host, original, before, policy), "");
  EXPECT_EQ(DiffFromRebuilt(host, copy, copy.usage(), policy), "");
}

// Two nodes of 4 cores x 2 threads; CPUs 0-7 on node 0, 8-15 on node 1; a GPU on node 1.
topology::HostTopology SmallHost() { return MakeHost({{4, 2, 8192, 512, 2, 0, 0}, {4, 2, 8192, 512, 2, 0, 1}}); }

// A claim recorded by another tool may hold an emulator CPU on a node no cell uses; the node
// holding it must still see it pinned.
TEST(HostState, ApplyRefreshesEveryNodeHoldingACpuOfTheClaim) {
  const topology::HostTopology host = SmallHost();
  Placement p;
  p.host = host.hostname;
  CellPlacement& c = p.cells.emplace_back();
  c.host_node = 0;
  c.pinning = {{0, 0}, {1, 1}};
  c.consumed_cpus = {0, 1};
  c.memory_mib = 2048;
  c.page_size_kib = 1048576;
  c.pages = 2;
  p.emulator_cpus = {9};
  p.emulator_consumed_cpus = {9};
  p.devices.push_back({"gpu", host.pci.back().address, 0x10de, 0x2330, 1, -1});

  HostState state(host, {}, {});
  ASSERT_EQ(state.Apply(p), "");
  HostUsage usage;
  ASSERT_EQ(usage.Apply(p), "");
  EXPECT_EQ(DiffFromRebuilt(host, state, usage, {}), "");
  EXPECT_EQ(state.nodes()[1].free_threads, 7);
  EXPECT_EQ(state.nodes()[1].free_accelerators, 0);
  EXPECT_EQ(state.nodes()[0].Pool(1048576)->free, 0u);

  state.Release(p);
  EXPECT_EQ(DiffFromRebuilt(host, state, {}, {}), "");
  EXPECT_EQ(state.nodes()[1].free_threads, 8);
  EXPECT_EQ(state.nodes()[1].free_accelerators, 1);
}

// Claims recorded elsewhere may hold more pages than a node has left (an operator shrank the
// pool, or reserved more): the state starts at 0 free, and a release must land where a fresh
// state on the smaller usage does, not at "free + released".
TEST(HostState, ReleaseFromAnOverbookedPoolEqualsAFreshState) {
  const topology::HostTopology host = SmallHost();  // node 0: 2 x 1 GiB pages, 8 GiB of memory
  HostPolicy policy;
  policy.reserved_host_memory_mib_per_node = 2048;
  Placement p;
  p.host = host.hostname;
  CellPlacement& c = p.cells.emplace_back();
  c.host_node = 0;
  c.pinning = {{0, 2}};
  c.consumed_cpus = {2};
  c.memory_mib = 2048;
  c.page_size_kib = 1048576;
  c.pages = 2;
  HostUsage usage;
  usage.nodes[0].pages_used[1048576] = 5;  // 3 more than the node's 2
  usage.nodes[0].pages_used[4] = 10'000'000;  // and far more base pages than it has
  ASSERT_EQ(usage.Apply(p), "");
  HostState state(host, usage, policy);
  EXPECT_EQ(state.nodes()[0].Pool(1048576)->free, 0u);
  state.Release(p);
  usage.Release(p);
  EXPECT_EQ(DiffFromRebuilt(host, state, usage, policy), "");
  EXPECT_EQ(state.nodes()[0].Pool(1048576)->free, 0u);  // 5 held of 2
  state.Release(p);  // a caller that breaks the contract gets an under-count, as HostUsage does
  usage.Release(p);
  EXPECT_EQ(DiffFromRebuilt(host, state, usage, policy), "");
}

TEST(HostState, ApplyRefusesADoubleBookingAndChangesNothing) {
  const topology::HostTopology host = SmallHost();
  HostState state(host, {}, {});
  const PlaceResult first = Place(state, testing::Dedicated(2, 1024));
  ASSERT_TRUE(first.fits());
  ASSERT_EQ(state.Apply(*first.placement), "");
  const std::vector<NodeView> before = state.nodes();
  EXPECT_NE(state.Apply(*first.placement), "");
  EXPECT_TRUE(state.nodes() == before);
  EXPECT_EQ(DiffFromRebuilt(host, state, state.usage(), {}), "");
}

TEST(HostState, FloatingGuestsChangeTheFloatingRoomOnly) {
  const topology::HostTopology host = SmallHost();
  HostPolicy policy;
  policy.cpu_allocation_ratio = 1;
  HostState state(host, {}, policy);
  PlacementRequest req;
  req.vcpus = 10;
  req.memory_mib = 1024;
  const PlaceResult r = Place(state, req);
  ASSERT_TRUE(r.fits());
  ASSERT_EQ(state.Apply(*r.placement), "");
  EXPECT_EQ(state.floating_room().vcpus_used, 10);
  req.vcpus = 7;  // 16 shared CPUs x ratio 1, 10 already floating
  const PlaceResult full = Place(state, req);
  ASSERT_FALSE(full.fits());
  EXPECT_EQ(Answer(full), Answer(Place(host, state.usage(), policy, req)));
}

}  // namespace
}  // namespace accel::placement
