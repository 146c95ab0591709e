// The prepared path: Place(HostState, request) must answer exactly what the one-shot
// Place(host, usage, policy, request) answers, and a state kept in step by Apply/Release must
// equal a state built from scratch on the same usage.
#include "placement/host_state.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "placement/engine.h"
#include "placement/placement_json.h"
#include "placement/test_hosts.h"
#include "topology/sources.h"

namespace accel::placement {
namespace {

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
