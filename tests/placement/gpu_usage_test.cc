// HostUsage with GPUs by model and size (placement/usage.h): a whole GPU is exclusive, shares on
// one GPU sum to at most 1000 thousandths, MIG slices never overlap, shares and MIG never mix on
// one GPU, a refused Apply changes nothing and Release undoes Apply exactly. The property test
// drives thousands of seeded random apply/release sequences and checks those invariants, and that
// the usage always equals the one rebuilt from the live placements, after every step.
#include "placement/usage.h"

#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace accel::placement {
namespace gpu_usage_test {

const std::string kGpu0 = "0000:41:00.0";
const std::string kGpu1 = "0000:42:00.0";

GpuPlacement Whole(const std::string& address) {
  GpuPlacement g;
  g.address = address;
  g.model = "GH100 [H100 SXM5 80GB]";
  return g;
}

GpuPlacement Share(const std::string& address, int milli) {
  GpuPlacement g = Whole(address);
  g.milli = milli;
  return g;
}

GpuPlacement Mig(const std::string& address, int start, int slices, int milli = -1) {
  GpuPlacement g = Whole(address);
  g.mig_profile = std::to_string(slices) + "g.mig";
  g.mig_start = start;
  g.mig_slices = slices;
  g.milli = milli >= 0 ? milli : slices * 1000 / 8;
  return g;
}

Placement WithGpus(std::vector<GpuPlacement> gpus, int64_t cpu_milli = 0) {
  Placement p;
  p.host = "h";
  p.flavor = "pod";
  p.floating_memory_mib = 1024;
  p.floating_cpu_milli = cpu_milli;
  p.gpus = std::move(gpus);
  return p;
}

// "" when equal, else the first difference (HostUsage has no operator==).
std::string Diff(const HostUsage& a, const HostUsage& b) {
  if (a.nodes.size() != b.nodes.size()) return "node count";
  for (const auto& [id, node] : a.nodes) {
    auto it = b.nodes.find(id);
    if (it == b.nodes.end()) return "node " + std::to_string(id);
    if (node.pinned_cpus != it->second.pinned_cpus || node.shared_vcpus != it->second.shared_vcpus ||
        node.pages_used != it->second.pages_used)
      return "node " + std::to_string(id) + " usage";
  }
  if (a.devices != b.devices) return "devices";
  if (a.shared_gpus.size() != b.shared_gpus.size()) return "shared GPU count";
  for (const auto& [address, s] : a.shared_gpus) {
    auto it = b.shared_gpus.find(address);
    if (it == b.shared_gpus.end()) return "shared GPU " + address + " missing";
    if (s.milli != it->second.milli || s.mig_slices != it->second.mig_slices || s.holders != it->second.holders)
      return "shared GPU " + address + ": " + std::to_string(s.milli) + "/" + std::to_string(s.mig_slices) + "/" +
             std::to_string(s.holders) + " vs " + std::to_string(it->second.milli) + "/" +
             std::to_string(it->second.mig_slices) + "/" + std::to_string(it->second.holders);
  }
  if (a.floating_vcpus != b.floating_vcpus || a.floating_memory_mib != b.floating_memory_mib ||
      a.floating_cpu_milli != b.floating_cpu_milli)
    return "floating";
  return "";
}

// Applies `p` expecting a refusal that contains `why`, and that nothing changed.
void ExpectRefused(HostUsage& u, const Placement& p, const std::string& why) {
  const HostUsage before = u;
  const std::string err = u.Apply(p);
  EXPECT_NE(err.find(why), std::string::npos) << "got: '" << err << "'";
  EXPECT_EQ(Diff(u, before), "") << "a refused Apply changed the usage";
}

TEST(GpuUsage, AWholeGpuIsExclusiveAndHeldAsADevice) {
  HostUsage u;
  ASSERT_EQ(u.Apply(WithGpus({Whole(kGpu0)})), "");
  EXPECT_EQ(u.devices, (std::set<std::string>{kGpu0}));
  EXPECT_TRUE(u.shared_gpus.empty());
  ExpectRefused(u, WithGpus({Whole(kGpu0)}), "GPU " + kGpu0 + " is already used whole by another claim");
  ExpectRefused(u, WithGpus({Share(kGpu0, 100)}), "already used whole");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 0, 1)}), "already used whole");
  Placement passthrough;
  passthrough.host = "h";
  passthrough.devices = {{"h100", kGpu0, 0x10de, 0x2330, 0, -1}};
  ExpectRefused(u, passthrough, "device " + kGpu0 + " is already used by another claim");
  // The other GPU is untouched.
  EXPECT_EQ(u.Apply(WithGpus({Whole(kGpu1)})), "");
}

TEST(GpuUsage, SharesSumToAtMostTheWholeGpu) {
  HostUsage u;
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 600)})), "");
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 210)})), "");
  EXPECT_EQ(u.shared_gpus.at(kGpu0).milli, 810);
  EXPECT_EQ(u.shared_gpus.at(kGpu0).holders, 2);
  EXPECT_EQ(u.shared_gpus.at(kGpu0).mig_slices, 0u);
  EXPECT_TRUE(u.devices.count(kGpu0)) << "a GPU held in part is also a device, so nothing takes it whole";
  ExpectRefused(u, WithGpus({Share(kGpu0, 470)}),
                "GPU " + kGpu0 + ": 810/1000 already shared, 470 more would exceed the GPU");
  ExpectRefused(u, WithGpus({Whole(kGpu0)}), "GPU " + kGpu0 + " is shared (810/1000 held), not free whole");
  Placement passthrough;
  passthrough.host = "h";
  passthrough.devices = {{"h100", kGpu0, 0x10de, 0x2330, 0, -1}};
  ExpectRefused(u, passthrough, "already used");
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 190)})), "");  // exactly 1000
  EXPECT_EQ(u.shared_gpus.at(kGpu0).milli, 1000);
  ExpectRefused(u, WithGpus({Share(kGpu0, 1)}), "1000/1000 already shared, 1 more");
}

TEST(GpuUsage, SharesOfOnePlacementOnOneGpuAddUp) {
  HostUsage u;
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 300)})), "");
  ExpectRefused(u, WithGpus({Share(kGpu0, 400), Share(kGpu0, 400)}), "700/1000 already shared, 400 more");
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 300), Share(kGpu0, 400)})), "");
  EXPECT_EQ(u.shared_gpus.at(kGpu0).milli, 1000);
  EXPECT_EQ(u.shared_gpus.at(kGpu0).holders, 3);
  u.Release(WithGpus({Share(kGpu0, 300), Share(kGpu0, 400)}));
  EXPECT_EQ(u.shared_gpus.at(kGpu0).milli, 300);
  EXPECT_EQ(u.shared_gpus.at(kGpu0).holders, 1);
}

TEST(GpuUsage, APlacementCannotHoldOneGpuTwoWays) {
  HostUsage u;
  ExpectRefused(u, WithGpus({Whole(kGpu0), Whole(kGpu0)}), "appears twice in the same placement");
  ExpectRefused(u, WithGpus({Share(kGpu0, 100), Whole(kGpu0)}), "GPU " + kGpu0 + " appears twice in the same placement");
  ExpectRefused(u, WithGpus({Whole(kGpu0), Share(kGpu0, 100)}), "GPU " + kGpu0 + " appears twice in the same placement");
  ExpectRefused(u, WithGpus({Whole(kGpu0), Mig(kGpu0, 0, 1)}), "appears twice in the same placement");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 0, 1), Share(kGpu0, 100)}), "holds MIG slices, not time-slicing shares");
  ExpectRefused(u, WithGpus({Share(kGpu0, 100), Mig(kGpu0, 0, 1)}), "holds time-slicing shares, not MIG slices");
  Placement both = WithGpus({Share(kGpu0, 100)});
  both.devices = {{"h100", kGpu0, 0x10de, 0x2330, 0, -1}};
  ExpectRefused(u, both, "GPU " + kGpu0 + " appears twice in the same placement");
  EXPECT_EQ(Diff(u, HostUsage{}), "");
}

TEST(GpuUsage, SharesAndMigNeverMixOnOneGpu) {
  HostUsage u;
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 100)})), "");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 0, 1)}), "GPU " + kGpu0 + " holds time-slicing shares, not MIG slices");
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu1, 4, 4)})), "");
  ExpectRefused(u, WithGpus({Share(kGpu1, 100)}), "GPU " + kGpu1 + " holds MIG slices, not time-slicing shares");
  ExpectRefused(u, WithGpus({Whole(kGpu1)}), "is shared");
}

TEST(GpuUsage, MigSlicesAreExactGeometry) {
  HostUsage u;
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu0, 0, 2)})), "");
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu0, 4, 4)})), "");
  EXPECT_EQ(u.shared_gpus.at(kGpu0).mig_slices, 0b11110011u);
  EXPECT_EQ(u.shared_gpus.at(kGpu0).milli, 250 + 500);
  ExpectRefused(u, WithGpus({Mig(kGpu0, 1, 2)}), "GPU " + kGpu0 + ": MIG memory slices 1..2 overlap another GPU instance");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 3, 2)}), "slices 3..4 overlap");
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu0, 2, 1)})), "");
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu0, 3, 1)})), "");
  EXPECT_EQ(u.shared_gpus.at(kGpu0).mig_slices, 0xffu);
  EXPECT_EQ(u.shared_gpus.at(kGpu0).holders, 4);
  u.Release(WithGpus({Mig(kGpu0, 4, 4)}));
  EXPECT_EQ(u.shared_gpus.at(kGpu0).mig_slices, 0x0fu);
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu0, 4, 2)})), "");
}

TEST(GpuUsage, MalformedPartsAreRefused) {
  HostUsage u;
  ExpectRefused(u, WithGpus({Share(kGpu0, 0)}), "a share of 0 thousandths is not 1..1000");
  ExpectRefused(u, WithGpus({Share(kGpu0, -5)}), "not 1..1000");
  ExpectRefused(u, WithGpus({Mig(kGpu0, -1, 1)}), "are out of range");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 31, 2)}), "are out of range");
  ExpectRefused(u, WithGpus({Mig(kGpu0, INT_MAX, 1)}), "are out of range");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 0, 0, 100)}), "are out of range");
  // Slices that do not overlap but claim more than the GPU in thousandths.
  ASSERT_EQ(u.Apply(WithGpus({Mig(kGpu0, 0, 1, 600)})), "");
  ExpectRefused(u, WithGpus({Mig(kGpu0, 1, 1, 600)}), "MIG slices would hold 1200/1000 thousandths");
}

TEST(GpuUsage, AShareCarriesNoGeometryWhateverItsMigFieldsSay) {
  HostUsage u;
  GpuPlacement odd = Share(kGpu0, 200);
  odd.mig_start = 0;
  odd.mig_slices = 8;  // no profile: not a MIG slice, so no memory slices are held
  ASSERT_EQ(u.Apply(WithGpus({odd})), "");
  EXPECT_EQ(u.shared_gpus.at(kGpu0).mig_slices, 0u);
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 300)})), "");
  u.Release(WithGpus({odd}));
  u.Release(WithGpus({Share(kGpu0, 300)}));
  EXPECT_EQ(Diff(u, HostUsage{}), "");
}

TEST(GpuUsage, ARefusedApplyLeavesEverythingAsItWas) {
  HostUsage u;
  Placement pinned;
  pinned.host = "h";
  CellPlacement c;
  c.host_node = 0;
  c.pinning = {{0, 2}};
  c.consumed_cpus = {2};
  c.page_size_kib = 2048;
  c.pages = 8;
  pinned.cells = {c};
  ASSERT_EQ(u.Apply(pinned), "");
  ASSERT_EQ(u.Apply(WithGpus({Share(kGpu0, 900)}, 1500)), "");
  // Free CPUs, pages and a free GPU first, then a share that does not fit: nothing of it stays.
  Placement late = WithGpus({Whole(kGpu1), Share(kGpu0, 200)}, 700);
  CellPlacement other = c;
  other.host_node = 1;
  other.pinning = {{0, 9}};
  other.consumed_cpus = {9};
  late.cells = {other};
  late.devices = {{"nic", "0000:99:00.0", 0x15b3, 0x101e, 1, -1}};
  ExpectRefused(u, late, "900/1000 already shared, 200 more");
  EXPECT_EQ(u.floating_cpu_milli, 1500);
}

TEST(GpuUsage, ReleaseRestoresExactlyWhatApplyAdded) {
  HostUsage base;
  ASSERT_EQ(base.Apply(WithGpus({Share(kGpu0, 250)}, 500)), "");
  ASSERT_EQ(base.Apply(WithGpus({Mig(kGpu1, 0, 1)})), "");
  const std::vector<Placement> more = {WithGpus({Share(kGpu0, 250)}, 250), WithGpus({Mig(kGpu1, 1, 1)}),
                                       WithGpus({Whole("0000:43:00.0")}, 1000), WithGpus({Share(kGpu0, 500)})};
  HostUsage u = base;
  for (const Placement& p : more) ASSERT_EQ(u.Apply(p), "");
  EXPECT_EQ(u.shared_gpus.at(kGpu0).milli, 1000);
  EXPECT_EQ(u.floating_cpu_milli, 1750);
  for (auto it = more.rbegin(); it != more.rend(); ++it) u.Release(*it);
  EXPECT_EQ(Diff(u, base), "");
  u.Release(WithGpus({Mig(kGpu1, 0, 1)}));
  u.Release(WithGpus({Share(kGpu0, 250)}, 500));
  EXPECT_EQ(Diff(u, HostUsage{}), "") << "the last holder takes the GPU's entry and device with it";
}

// --- Property test ---------------------------------------------------------------------

// What the live placements hold of each GPU, recomputed from them alone (not through HostUsage).
struct Held {
  int whole = 0, shares = 0, migs = 0, devices = 0;
  int share_milli = 0;
  std::vector<uint32_t> mig_bits;
};

uint32_t Bits(int start, int count) { return ((uint32_t{1} << count) - 1) << start; }

std::map<std::string, Held> HeldBy(const std::vector<Placement>& live) {
  std::map<std::string, Held> held;
  for (const Placement& p : live) {
    for (const DevicePlacement& d : p.devices) ++held[d.address].devices;
    for (const GpuPlacement& g : p.gpus) {
      Held& h = held[g.address];
      if (g.is_mig()) {
        ++h.migs;
        h.mig_bits.push_back(Bits(g.mig_start, g.mig_slices));
      } else if (g.is_share()) {
        ++h.shares;
        h.share_milli += g.milli;
      } else {
        ++h.whole;
      }
    }
  }
  return held;
}

// The invariants of one state: "" or the first broken one.
std::string Invariants(const HostUsage& u, const std::vector<Placement>& live) {
  for (const auto& [address, s] : u.shared_gpus) {
    if (s.milli < 1 || s.milli > 1000) return address + ": " + std::to_string(s.milli) + " thousandths held";
    if (s.holders < 1) return address + ": an entry without holders";
    if (!u.devices.count(address)) return address + " is held in part but not a device";
  }
  for (const auto& [address, h] : HeldBy(live)) {
    const int exclusive = h.whole + h.devices;
    if (exclusive > 1) return address + " is held whole " + std::to_string(exclusive) + " times";
    if (exclusive == 1 && h.shares + h.migs > 0) return address + " is held whole and in part";
    if (h.shares > 0 && h.migs > 0) return address + " holds shares and MIG slices";
    if (h.share_milli > 1000) return address + ": shares sum to " + std::to_string(h.share_milli);
    uint32_t seen = 0;
    for (uint32_t bits : h.mig_bits) {
      if (seen & bits) return address + ": MIG slices overlap";
      seen |= bits;
    }
    if (h.shares + h.migs > 0) {
      auto s = u.shared_gpus.find(address);
      if (s == u.shared_gpus.end()) return address + " is held in part without an entry";
      if (s->second.holders != h.shares + h.migs) return address + ": holders differ";
      if (h.shares > 0 && s->second.milli != h.share_milli) return address + ": share sum differs";
      if (s->second.mig_slices != seen) return address + ": MIG slices differ";
    }
  }
  HostUsage rebuilt;
  for (const Placement& p : live)
    if (std::string err = rebuilt.Apply(p); !err.empty()) return "a live placement does not apply again: " + err;
  if (std::string d = Diff(u, rebuilt); !d.empty()) return "usage differs from the one rebuilt from live placements: " + d;
  return "";
}

Placement RandomPlacement(std::mt19937_64& rng, const std::vector<std::string>& gpus) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Placement p = WithGpus({}, pick(0, 3) == 0 ? 0 : pick(1, 4000));
  const int parts = pick(0, 4) == 0 ? 2 : 1;
  for (int i = 0; i < parts; ++i) {
    const std::string& address = gpus[static_cast<size_t>(pick(0, static_cast<int>(gpus.size()) - 1))];
    switch (pick(0, 9)) {
      case 0:
        p.gpus.push_back(Whole(address));
        break;
      case 1: {  // a passthrough device of the GPU, as a PCI alias takes it
        p.devices.push_back({"h100", address, 0x10de, 0x2330, 0, -1});
        break;
      }
      case 2: case 3: case 4: {
        static const int kSizes[] = {1, 2, 4, 8};
        const int slices = kSizes[pick(0, 3)];
        p.gpus.push_back(Mig(address, pick(0, 8 - slices), slices));
        break;
      }
      default:
        p.gpus.push_back(Share(address, pick(0, 3) == 0 ? pick(1, 999) : 50 * pick(1, 10)));
    }
  }
  return p;
}

TEST(GpuUsage, InvariantsHoldOverThousandsOfRandomApplyReleaseSequences) {
  const std::vector<std::string> gpus = {kGpu0, kGpu1, "0000:43:00.0"};
  int applied = 0, refused = 0, released = 0;
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    std::mt19937_64 rng(seed);
    HostUsage u;
    std::vector<Placement> live;
    for (int step = 0; step < 40; ++step) {
      if (!live.empty() && std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
        const size_t k = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
        u.Release(live[k]);
        live.erase(live.begin() + static_cast<long>(k));
        ++released;
      } else {
        const Placement p = RandomPlacement(rng, gpus);
        const HostUsage before = u;
        if (u.Apply(p).empty()) {
          live.push_back(p);
          ++applied;
        } else {
          ++refused;
          ASSERT_EQ(Diff(u, before), "") << "seed " << seed << " step " << step << ": a refused Apply changed usage";
        }
      }
      ASSERT_EQ(Invariants(u, live), "") << "seed " << seed << " step " << step;
    }
    std::shuffle(live.begin(), live.end(), rng);
    for (const Placement& p : live) u.Release(p);
    ASSERT_EQ(Diff(u, HostUsage{}), "") << "seed " << seed << ": releasing everything leaves something";
  }
  // The sequences exercise both answers in earnest.
  EXPECT_GT(applied, 30000);
  EXPECT_GT(refused, 10000);
  EXPECT_GT(released, 20000);
}

}  // namespace gpu_usage_test
}  // namespace accel::placement
