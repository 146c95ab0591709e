// BestDeviceSet against go-gpuallocator's fixtures and cases, NVSwitch machines, a 16-GPU
// two-island machine, and exhaustive search on random score matrices; PickReplicas against
// NVIDIA's replica allocation cases.
#include "kube/device_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::kube {
namespace device_set_test {

using devices::Interconnect;
using devices::PcieLink;
using V = std::vector<int>;

Interconnect Blank(int n, PcieLink fill) {
  Interconnect ic;
  for (int i = 0; i < n; ++i) ic.devices.push_back("gpu" + std::to_string(i));
  ic.pcie.assign(n * n, fill);
  ic.links.assign(n * n, 0);
  return ic;
}
void SetLinks(Interconnect& ic, int i, int j, int count) {
  ic.links[i * ic.size() + j] = ic.links[j * ic.size() + i] = count;
}
void SetPcie(Interconnect& ic, int i, int j, PcieLink level) {
  ic.pcie[i * ic.size() + j] = ic.pcie[j * ic.size() + i] = level;
}
V All(int n) {
  V v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}
int64_t SetScore(const Interconnect& ic, const V& set) {
  int64_t s = 0;
  for (size_t a = 0; a < set.size(); ++a)
    for (size_t b = a + 1; b < set.size(); ++b) s += ic.PairScore(set[a], set[b]);
  return s;
}

// go-gpuallocator's DGX-1 hybrid cube-mesh: one NVLink per edge (Pascal), two on some (Volta).
Interconnect Dgx1(bool volta) {
  Interconnect ic = Blank(8, PcieLink::kCrossSocket);
  int edges[][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {1, 3}, {1, 5}, {2, 3},
                    {2, 6}, {3, 7}, {4, 5}, {4, 6}, {4, 7}, {5, 6}, {5, 7}, {6, 7}};
  for (auto& e : edges) SetLinks(ic, e[0], e[1], 1);
  if (volta) {
    int doubled[][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}};
    for (auto& e : doubled) SetLinks(ic, e[0], e[1], 2);
  }
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j)
      if ((i < 4) == (j < 4)) SetPcie(ic, i, j, PcieLink::kHostBridge);
  int pix_pascal[][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
  int pix_volta[][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  for (auto& e : volta ? pix_volta : pix_pascal) SetPcie(ic, e[0], e[1], PcieLink::kSingleSwitch);
  return ic;
}

// 4× RTX 8000: NVLink bridges 0↔3 and 1↔2. go-gpuallocator records no PCIe level for the
// bridged pairs (score 200); ours always has one, the lowest here (210), same ranking.
Interconnect Rtx8000() {
  Interconnect ic = Blank(4, PcieLink::kCrossSocket);
  SetLinks(ic, 0, 3, 2);
  SetLinks(ic, 1, 2, 2);
  SetPcie(ic, 0, 1, PcieLink::kSameNuma);
  SetPcie(ic, 2, 3, PcieLink::kSameNuma);
  return ic;
}

// go-gpuallocator's stateful Allocator: each request runs on what earlier ones left.
std::vector<V> Sequential(const Interconnect& ic, int size) {
  std::vector<V> out;
  V left = All(static_cast<int>(ic.size()));
  for (;;) {
    V got = BestDeviceSet(ic, left, {}, size);
    if (got.empty()) return out;
    out.push_back(got);
    for (int d : got) left.erase(std::find(left.begin(), left.end(), d));
  }
}

TEST(DeviceSetGoGpuAllocator, Dgx1VoltaPolicyCases) {
  Interconnect ic = Dgx1(true);
  // go-gpuallocator answers {4,5}: it keeps the best *partition* ({0,2}+{4,5} = 280 beats
  // {0,4}+{2,5} = 220). Our contract is the best *set*: {0,4} (2 NVLinks + SYS = 210) beats
  // {4,5} (1 NVLink + PIX = 150); the remainder's quality only breaks ties.
  EXPECT_EQ(BestDeviceSet(ic, {0, 2, 4, 5}, {}, 2), (V{0, 4}));
  EXPECT_EQ(SetScore(ic, {0, 4}), 210);
  EXPECT_EQ(SetScore(ic, {4, 5}), 150);
  EXPECT_EQ(BestDeviceSet(ic, {0, 4, 5, 6}, {}, 2), (V{5, 6}));
  EXPECT_EQ(BestDeviceSet(ic, {0, 3, 1}, {}, 2), (V{0, 3}));
  EXPECT_EQ(BestDeviceSet(ic, {0, 1, 4}, {}, 2), (V{0, 4}));
  EXPECT_EQ(BestDeviceSet(ic, All(8), {4}, 1), (V{4}));
  EXPECT_EQ(BestDeviceSet(ic, All(8), {4}, 2), (V{4, 7}));
  EXPECT_EQ(BestDeviceSet(ic, All(8), {4}, 4), (V{4, 5, 6, 7}));
  EXPECT_EQ(BestDeviceSet(ic, {1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3}, 4), V{});
  EXPECT_EQ(BestDeviceSet(ic, All(8), {0, 2, 4, 6}, 4), (V{0, 2, 4, 6}));
  EXPECT_EQ(BestDeviceSet(ic, All(8), {0, 1, 2, 3, 4, 5}, 4), V{});
  EXPECT_EQ(BestDeviceSet(ic, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 5}, 1), V{});
}

TEST(DeviceSetGoGpuAllocator, BadRequestsAreEmpty) {
  Interconnect ic = Dgx1(true);
  EXPECT_EQ(BestDeviceSet(ic, All(8), {}, 0), V{});
  EXPECT_EQ(BestDeviceSet(ic, All(8), {}, -1), V{});
  EXPECT_EQ(BestDeviceSet(ic, All(8), {}, 9), V{});
  EXPECT_EQ(BestDeviceSet(ic, {0, 0, 1}, {}, 3), V{});  // duplicates count once
  EXPECT_EQ(BestDeviceSet(ic, {0, 1, 42, -3}, {}, 2), (V{0, 1}));
  EXPECT_EQ(BestDeviceSet(ic, {}, {}, 1), V{});
  EXPECT_EQ(BestDeviceSet(ic, All(8), {9}, 2), V{});
  EXPECT_EQ(BestDeviceSet(ic, All(8), {3, 3}, 1), (V{3}));
}

TEST(DeviceSetGoGpuAllocator, SequentialRtx8000) {
  Interconnect ic = Rtx8000();
  // go takes 0,1,2,3. We take 3 after 0: 3's bridge partner is gone, and leaving 1 and 2
  // keeps their bridge for a later pair (smallest degree to what is left: 30 vs 220/230).
  EXPECT_EQ(Sequential(ic, 1), (std::vector<V>{{0}, {3}, {1}, {2}}));
  EXPECT_EQ(Sequential(ic, 2), (std::vector<V>{{0, 3}, {1, 2}}));
  EXPECT_EQ(Sequential(ic, 4), (std::vector<V>{{0, 1, 2, 3}}));
}

TEST(DeviceSetGoGpuAllocator, SequentialDgx1Pascal) {
  Interconnect ic = Dgx1(false);
  // Same as go: the four PIX+NVLink pairs (150 each); {1,3} before {4,6} because 1 and 3 have
  // less left to lose on the other socket.
  EXPECT_EQ(Sequential(ic, 2), (std::vector<V>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(Sequential(ic, 4), (std::vector<V>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Sequential(ic, 8), (std::vector<V>{All(8)}));
}

TEST(DeviceSetGoGpuAllocator, SequentialDgx1Volta) {
  Interconnect ic = Dgx1(true);
  // go answers {0,3},{1,2},{4,7},{5,6} (partition score 920, the first of two partitions
  // scoring 920). Taking the best set each time gives the other one: {2,3} and {6,7} are the
  // best pairs (2 NVLinks + PIX = 250), then {0,4} and {1,5} (210) — also 920 in all.
  EXPECT_EQ(Sequential(ic, 2), (std::vector<V>{{2, 3}, {6, 7}, {0, 4}, {1, 5}}));
  EXPECT_EQ(SetScore(ic, {0, 3}) + SetScore(ic, {1, 2}) + SetScore(ic, {4, 7}) +
                SetScore(ic, {5, 6}),
            920);
  EXPECT_EQ(Sequential(ic, 4), (std::vector<V>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Sequential(ic, 8), (std::vector<V>{All(8)}));
}

// HGX H100 from accel's fixture: every GPU on its own host bridge, four per socket, all on
// NVSwitch with 18 links.
Interconnect HgxH100(bool pair_gpus_0_1_on_one_switch) {
  topology::HostTopology host =
      topology::LoadTopology(ACCEL_SOURCE_DIR "/fixtures/hosts/hgx-h100.json");
  if (pair_gpus_0_1_on_one_switch)
    for (auto& d : host.pci)
      if (d.address == "0000:43:00.0") d.parent = "0000:17:01.0";  // beside GPU 0's port
  std::vector<std::string> gpus;
  for (const auto& d : host.pci)
    if (d.is_accelerator()) gpus.push_back(d.address);
  Interconnect ic = devices::PcieInterconnect(host, gpus);
  std::vector<devices::PeerLink> links(18, {"0000:03:00.0", true});
  devices::AddPeerLinks(ic, std::vector<std::vector<devices::PeerLink>>(gpus.size(), links));
  return ic;
}

TEST(DeviceSetNvSwitch, HgxH100SameNumaDecides) {
  Interconnect ic = HgxH100(false);
  ASSERT_EQ(ic.size(), 8u);
  EXPECT_EQ(ic.PairScore(0, 1), 1820);
  EXPECT_EQ(BestDeviceSet(ic, All(8), {}, 2), (V{0, 1}));
  EXPECT_EQ(BestDeviceSet(ic, All(8), {}, 4), (V{0, 1, 2, 3}));
  EXPECT_EQ(BestDeviceSet(ic, All(8), {5}, 4), (V{4, 5, 6, 7}));
  // Across sockets every third GPU adds 1820 + 1810: the lowest index completes the set.
  EXPECT_EQ(BestDeviceSet(ic, All(8), {3, 4}, 3), (V{0, 3, 4}));
  EXPECT_EQ(Sequential(ic, 4), (std::vector<V>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // 0 and 4 taken: three left per socket, every same-socket pair and every degree ties.
  EXPECT_EQ(BestDeviceSet(ic, {1, 2, 3, 5, 6, 7}, {}, 2), (V{1, 2}));
  // Only socket 1 still has a same-socket pair.
  EXPECT_EQ(BestDeviceSet(ic, {1, 5, 6, 7}, {}, 2), (V{5, 6}));
}

TEST(DeviceSetNvSwitch, HgxH100SwitchPairThenSameNuma) {
  Interconnect ic = HgxH100(true);
  EXPECT_EQ(ic.PairScore(0, 1), 1850);
  EXPECT_EQ(BestDeviceSet(ic, All(8), {}, 2), (V{0, 1}));
  // Then same-NUMA pairs; {2,3} rather than {4,5}: 2 and 3 are less tied to what is left
  // (one same-socket partner each, against three), so socket 1 stays whole.
  EXPECT_EQ(Sequential(ic, 2), (std::vector<V>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  // With 0 gone, its switch partner 1 is just another socket-0 GPU: {1,2}, not {4,5}, for
  // the same reason.
  EXPECT_EQ(BestDeviceSet(ic, {1, 2, 3, 4, 5, 6, 7}, {}, 2), (V{1, 2}));
}

// 16 GPUs: NVSwitch island A = {0-3, 8-11}, island B = {4-7, 12-15} (12 links inside an
// island, none across); PCIe: pairs {2k, 2k+1} on one switch, quads {4k..4k+3} under one
// switch tree, 0-7 on socket 0, 8-15 on socket 1.
Interconnect SixteenTwoIslands() {
  Interconnect ic = Blank(16, PcieLink::kCrossSocket);
  auto island = [](int i) { return (i / 4) % 2; };
  for (int i = 0; i < 16; ++i) {
    for (int j = i + 1; j < 16; ++j) {
      if (island(i) == island(j)) SetLinks(ic, i, j, 12);
      PcieLink level = i / 2 == j / 2   ? PcieLink::kSingleSwitch
                       : i / 4 == j / 4 ? PcieLink::kMultiSwitch
                       : i / 8 == j / 8 ? PcieLink::kSameNuma
                                        : PcieLink::kCrossSocket;
      SetPcie(ic, i, j, level);
    }
  }
  return ic;
}

TEST(DeviceSetSixteen, IslandsBeforePcieLocality) {
  Interconnect ic = SixteenTwoIslands();
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 2), (V{0, 1}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 4), (V{0, 1, 2, 3}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 8), (V{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {4}, 8), (V{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 16), All(16));
  // A pair across islands only when nothing else is left.
  EXPECT_EQ(BestDeviceSet(ic, {0, 4}, {}, 2), (V{0, 4}));
  EXPECT_EQ(BestDeviceSet(ic, {0, 4, 9}, {}, 2), (V{0, 9}));
  for (int size = 1; size <= 16; ++size)
    EXPECT_EQ(BestDeviceSet(ic, All(16), {}, size),
              BestDeviceSetExhaustive(ic, All(16), {}, size))
        << size;
  EXPECT_EQ(Sequential(ic, 4),
            (std::vector<V>{{0, 1, 2, 3}, {8, 9, 10, 11}, {4, 5, 6, 7}, {12, 13, 14, 15}}));
}

TEST(DeviceSetHwloc, Dgx2AllOnNvSwitchPlxPairsDecide) {
  std::string path = test_support::SharedPath("fixtures/hwloc/nvidiaDGX2.xml");
  ACCEL_REQUIRE_SHARED(path);
  topology::HostTopology host = topology::LoadTopology(path);
  std::vector<std::string> gpus;
  for (const auto& d : host.pci)
    if (d.is_accelerator()) gpus.push_back(d.address);
  Interconnect ic = devices::PcieInterconnect(host, gpus);
  std::vector<devices::PeerLink> six(6, {"0000:61:00.0", true});
  devices::AddPeerLinks(ic, std::vector<std::vector<devices::PeerLink>>(gpus.size(), six));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 2), (V{0, 1}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 4), (V{0, 1, 2, 3}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {}, 8), (V{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(BestDeviceSet(ic, All(16), {9}, 2), (V{8, 9}));
}

// Random symmetric interconnects: narrow value ranges make many ties (so tie-breaks are
// exercised), wide ones make distinct optima.
Interconnect RandomInterconnect(int n, std::mt19937& rng, bool narrow) {
  static const PcieLink kLevels[] = {PcieLink::kCrossSocket, PcieLink::kSameNuma,
                                     PcieLink::kHostBridge,  PcieLink::kMultiSwitch,
                                     PcieLink::kSingleSwitch, PcieLink::kSameBoard};
  Interconnect ic = Blank(n, PcieLink::kCrossSocket);
  std::uniform_int_distribution<int> level(0, narrow ? 1 : 5);
  std::uniform_int_distribution<int> links(0, narrow ? 2 : 18);
  std::bernoulli_distribution linked(0.5);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      SetPcie(ic, i, j, kLevels[level(rng)]);
      SetLinks(ic, i, j, linked(rng) ? links(rng) : 0);
    }
  }
  return ic;
}

void CheckAgainstExhaustive(int n, int cases, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int c = 0; c < cases; ++c) {
    Interconnect ic = RandomInterconnect(n, rng, c % 2 == 0);
    V available;
    std::bernoulli_distribution keep(c % 3 == 0 ? 1.0 : 0.75);
    for (int i = 0; i < n; ++i)
      if (keep(rng)) available.push_back(i);
    int m = static_cast<int>(available.size());
    std::shuffle(available.begin(), available.end(), rng);
    int size = std::uniform_int_distribution<int>(1, m + 1)(rng);
    V required;
    int want_required = std::uniform_int_distribution<int>(0, std::min(size, 3))(rng);
    for (int r = 0; r < want_required && r < m; ++r) required.push_back(available[r]);
    if (c % 50 == 7) required.push_back(n + 1);  // an unknown must-include: empty

    V exact = BestDeviceSetExhaustive(ic, available, required, size);
    V fast = BestDeviceSet(ic, available, required, size);
    ASSERT_EQ(fast, exact) << "n=" << n << " case " << c << " size " << size;
    // The order of `available` never matters.
    std::shuffle(available.begin(), available.end(), rng);
    ASSERT_EQ(BestDeviceSet(ic, available, required, size), exact);
    if (c % 50 == 7) {
      ASSERT_TRUE(exact.empty());
    } else if (size <= m) {
      ASSERT_EQ(static_cast<int>(exact.size()), size);
      for (int r : required) ASSERT_TRUE(std::count(exact.begin(), exact.end(), r));
    }
  }
}

TEST(DeviceSetProperty, EqualsExhaustiveUpToTwelve) {
  for (int n = 2; n <= 12; ++n) CheckAgainstExhaustive(n, 600, 1000 + n);
}

TEST(DeviceSetProperty, EqualsExhaustiveAtSixteen) { CheckAgainstExhaustive(16, 300, 16); }

TEST(DeviceSetProperty, AboveSixteenAGoodValidSet) {
  std::mt19937 rng(24);
  for (int c = 0; c < 20; ++c) {
    Interconnect ic = RandomInterconnect(24, rng, c % 2 == 0);
    V got = BestDeviceSet(ic, All(24), {5, 17}, 4);
    V exact = BestDeviceSetExhaustive(ic, All(24), {5, 17}, 4);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_TRUE(std::count(got.begin(), got.end(), 5) && std::count(got.begin(), got.end(), 17));
    EXPECT_EQ(SetScore(ic, got), SetScore(ic, exact)) << c;  // small requests finish exactly
  }
  // 32 GPUs as four copies of the two-island machine's halves: still islands first.
  Interconnect big = Blank(32, PcieLink::kCrossSocket);
  for (int i = 0; i < 32; ++i)
    for (int j = i + 1; j < 32; ++j)
      if (i / 8 == j / 8) SetLinks(big, i, j, 12);
  EXPECT_EQ(BestDeviceSet(big, All(32), {9}, 8), (V{8, 9, 10, 11, 12, 13, 14, 15}));
}

// PickReplicas: NVIDIA's internal/rm/allocate_test.go cases.
std::vector<ReplicaCandidate> Replicas(int gpus, int replicas) {
  std::vector<ReplicaCandidate> out;
  for (int g = 0; g < gpus; ++g)
    for (int r = 0; r < replicas; ++r)
      out.push_back({"GPU-" + std::to_string(g) + "::" + std::to_string(r),
                     "GPU-" + std::to_string(g)});
  return out;
}
using S = std::vector<std::string>;

TEST(DeviceSetReplicas, DistributedSpreadsOverPhysicalGpus) {
  auto d = ReplicaPolicy::kDistributed;
  EXPECT_EQ(PickReplicas(Replicas(2, 4), {}, 2, 4, d), (S{"GPU-0::0", "GPU-1::0"}));
  EXPECT_EQ(PickReplicas(Replicas(3, 2), {}, 3, 2, d), (S{"GPU-0::0", "GPU-1::0", "GPU-2::0"}));
  EXPECT_EQ(PickReplicas(Replicas(2, 4), {}, 4, 4, d),
            (S{"GPU-0::0", "GPU-1::0", "GPU-0::1", "GPU-1::1"}));
  EXPECT_EQ(PickReplicas(Replicas(2, 4), {}, 9, 4, d), S{});
  EXPECT_EQ(PickReplicas(Replicas(2, 4), {}, 0, 4, d), S{});
}

TEST(DeviceSetReplicas, PartiallyAllocatedGpusAndRequired) {
  auto d = ReplicaPolicy::kDistributed;
  auto available = Replicas(3, 4);
  // GPU-0 has three replicas in use elsewhere, GPU-1 one, GPU-2 none.
  available.erase(available.begin() + 4, available.begin() + 5);  // GPU-1::0
  available.erase(available.begin(), available.begin() + 3);      // GPU-0::0..2
  EXPECT_EQ(PickReplicas(available, {}, 3, 4, d), (S{"GPU-2::0", "GPU-1::1", "GPU-2::1"}));
  EXPECT_EQ(PickReplicas(available, {}, 3, 4, ReplicaPolicy::kPacked),
            (S{"GPU-0::3", "GPU-1::1", "GPU-1::2"}));
  // A must-include replica counts as taken from its GPU.
  EXPECT_EQ(PickReplicas(available, {"GPU-2::3"}, 3, 4, d),
            (S{"GPU-2::3", "GPU-1::1", "GPU-2::0"}));
  EXPECT_EQ(PickReplicas(available, {"GPU-0::0"}, 2, 4, d), S{});  // not available
  EXPECT_EQ(PickReplicas(available, {"GPU-2::0", "GPU-2::1"}, 1, 4, d), S{});
}

TEST(DeviceSetReplicas, PackedKeepsWholeGpusFree) {
  auto p = ReplicaPolicy::kPacked;
  EXPECT_EQ(PickReplicas(Replicas(2, 4), {}, 2, 4, p), (S{"GPU-0::0", "GPU-0::1"}));
  EXPECT_EQ(PickReplicas(Replicas(2, 4), {}, 5, 4, p),
            (S{"GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-0::3", "GPU-1::0"}));
}

TEST(DeviceSetReplicas, DeterministicUnderShuffleAndNumericReplicaOrder) {
  auto available = Replicas(2, 12);
  auto shuffled = available;
  std::mt19937 rng(7);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  auto d = ReplicaPolicy::kDistributed;
  S want = PickReplicas(available, {}, 6, 12, d);
  EXPECT_EQ(PickReplicas(shuffled, {}, 6, 12, d), want);
  EXPECT_EQ(want, (S{"GPU-0::0", "GPU-1::0", "GPU-0::1", "GPU-1::1", "GPU-0::2", "GPU-1::2"}));
  EXPECT_EQ(PickReplicas(Replicas(1, 12), {}, 12, 12, d).back(), "GPU-0::11");
}

}  // namespace
}  // namespace accel::kube
