// UsageFromNova (src/fleet/nova_usage.h): Nova's PCI pools as the Nova filter sends them, on a
// host mixing NUMA-local GPUs and GPUs without a NUMA node. A pool with numa_node null (Nova's
// None), -1 or none at all holds ONLY the devices whose NUMA node is unknown, in both the `pci`
// (used) and the `pci_free` (free) form — it was read as "any node", which put a null pool's free
// count on the lowest-addressed GPUs of the product, NUMA-local ones included.
#include "fleet/nova_usage.h"

#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "fleet/fleet_test_util.h"
#include "placement/engine.h"
#include "placement/flavor.h"

namespace accel::fleet {
namespace nova_usage_test {

using nlohmann::json;
using ::testing::HasSubstr;

// The HGX H100 fixture's GPUs in address order: 1b 43 52 61 on node 0, 9d c3 d1 df on node 1.
const char* const kNode0Gpus[] = {"0000:1b:00.0", "0000:43:00.0"};
const char* const kNode1Gpus[] = {"0000:9d:00.0", "0000:c3:00.0"};
const char* const kNumaLessGpus[] = {"0000:52:00.0", "0000:61:00.0", "0000:d1:00.0", "0000:df:00.0"};

// The HGX H100 with four GPUs whose NUMA node the firmware does not report (numa_node -1), two
// of them between the node-0 GPUs and the node-1 GPUs in address order: 1b 43 node 0, 52 61
// unknown, 9d c3 node 1, d1 df unknown.
const topology::HostTopology& MixedHost() {
  static const topology::HostTopology host = [] {
    topology::HostTopology h = topology::LoadTopology(testing::SourcePath("fixtures/hosts/hgx-h100.json"));
    for (topology::PciDevice& d : h.pci)
      for (const char* a : kNumaLessGpus)
        if (d.address == a) d.numa_node = -1;
    return h;
  }();
  return host;
}

const topology::HostTopology& PlainHost() {
  static const topology::HostTopology host = topology::LoadTopology(testing::SourcePath("fixtures/hosts/hgx-h100.json"));
  return host;
}

// One H100 pool entry; numa_node: a node id, nullptr (JSON null), or "absent" (no key).
json Pool(const json& numa_node, const char* count_key, int count) {
  json p = {{"vendor_id", "10de"}, {"product_id", "2330"}};
  if (!(numa_node.is_string() && numa_node == "absent")) p["numa_node"] = numa_node;
  p[count_key] = count;
  return p;
}

// The H100s `usage` holds.
std::set<std::string> HeldGpus(const placement::HostUsage& usage) {
  std::set<std::string> out;
  for (const topology::PciDevice& d : MixedHost().pci)
    if (d.vendor_id == 0x10de && d.device_id == 0x2330 && usage.devices.count(d.address)) out.insert(d.address);
  return out;
}

std::set<std::string> AllGpus() {
  std::set<std::string> out;
  for (const topology::PciDevice& d : MixedHost().pci)
    if (d.vendor_id == 0x10de && d.device_id == 0x2330) out.insert(d.address);
  return out;
}

std::set<std::string> Minus(std::set<std::string> all, const std::vector<std::string>& take) {
  for (const std::string& a : take) all.erase(a);
  return all;
}

// The three spellings of "devices whose NUMA node is unknown".
const std::vector<json>& UnknownSpellings() {
  static const std::vector<json> spellings = {json(nullptr), json("absent"), json(-1)};
  return spellings;
}

// The InputError UsageFromNova throws for `nova` on `host`, or "" when it throws none.
std::string ErrorOf(const json& nova, const topology::HostTopology& host) {
  try {
    UsageFromNova(nova, host, "usage.h");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(UsageFromNova, MixedHostFixtureHasLocalAndNumaLessGpus) {
  int unknown = 0, local = 0;
  for (const topology::PciDevice& d : MixedHost().pci)
    if (d.vendor_id == 0x10de && d.device_id == 0x2330) (d.numa_node < 0 ? unknown : local) += 1;
  EXPECT_EQ(unknown, 4);
  EXPECT_EQ(local, 4);
}

TEST(UsageFromNova, FreeNullPoolLeavesOnlyNumaLessDevicesFree) {
  for (const json& spelling : UnknownSpellings()) {
    SCOPED_TRACE(spelling.dump());
    // Nova: the node-0 pool has 1 free, the NUMA-less pool 2, the node-1 pool is used up.
    const json nova = {{"cells", json::array()}, {"pci_free", {Pool(0, "free", 1), Pool(spelling, "free", 2)}}};
    const placement::HostUsage usage = UsageFromNova(nova, MixedHost(), "usage.h");
    // Free: the first node-0 GPU and the first two NUMA-less GPUs — not 43 (node 0), which a
    // null pool read as "any node" took.
    EXPECT_EQ(HeldGpus(usage), Minus(AllGpus(), {"0000:1b:00.0", "0000:52:00.0", "0000:61:00.0"}));
  }
}

TEST(UsageFromNova, FreeNullPoolAloneHoldsEveryNumaLocalDevice) {
  for (const json& spelling : UnknownSpellings()) {
    SCOPED_TRACE(spelling.dump());
    const json nova = {{"pci_free", {Pool(spelling, "free", 4)}}};
    const placement::HostUsage usage = UsageFromNova(nova, MixedHost(), "usage.h");
    EXPECT_EQ(HeldGpus(usage), std::set<std::string>({kNode0Gpus[0], kNode0Gpus[1], kNode1Gpus[0], kNode1Gpus[1]}));
  }
}

TEST(UsageFromNova, FreeNodePoolsDoNotReachNumaLessDevices) {
  const json nova = {{"pci_free", {Pool(1, "free", 2), Pool(0, "free", 2)}}};
  const placement::HostUsage usage = UsageFromNova(nova, MixedHost(), "usage.h");
  EXPECT_EQ(HeldGpus(usage), std::set<std::string>(std::begin(kNumaLessGpus), std::end(kNumaLessGpus)));
  // Every pool full: no GPU held; devices in no pool (NICs, NVSwitches) are.
  const json all = {{"pci_free", {Pool(0, "free", 2), Pool(nullptr, "free", 4), Pool(1, "free", 2)}}};
  const placement::HostUsage none = UsageFromNova(all, MixedHost(), "usage.h");
  EXPECT_EQ(HeldGpus(none), std::set<std::string>{});
  EXPECT_EQ(none.devices.size(), MixedHost().pci.size() - AllGpus().size());
}

TEST(UsageFromNova, FreeEntriesOfOnePoolAddUp) {
  const json nova = {{"pci_free", {Pool(nullptr, "free", 1), Pool(-1, "free", 2)}}};
  EXPECT_EQ(HeldGpus(UsageFromNova(nova, MixedHost(), "usage.h")),
            Minus(AllGpus(), {"0000:52:00.0", "0000:61:00.0", "0000:d1:00.0"}));
}

TEST(UsageFromNova, UsedNullPoolHoldsOnlyNumaLessDevices) {
  for (const json& spelling : UnknownSpellings()) {
    SCOPED_TRACE(spelling.dump());
    const json nova = {{"pci", {Pool(spelling, "used", 3)}}};
    const placement::HostUsage usage = UsageFromNova(nova, MixedHost(), "usage.h");
    // The first three NUMA-less GPUs in address order, not 1b 43 52 (node 0 first).
    EXPECT_EQ(HeldGpus(usage), std::set<std::string>({"0000:52:00.0", "0000:61:00.0", "0000:d1:00.0"}));
  }
}

TEST(UsageFromNova, UsedNodeAndNullPoolsTogether) {
  const json nova = {{"pci", {Pool(nullptr, "used", 1), Pool(1, "used", 1), Pool(0, "used", 2)}}};
  const placement::HostUsage usage = UsageFromNova(nova, MixedHost(), "usage.h");
  EXPECT_EQ(HeldGpus(usage),
            std::set<std::string>({"0000:52:00.0", "0000:9d:00.0", "0000:1b:00.0", "0000:43:00.0"}));
}

TEST(UsageFromNova, MoreThanTheHostHasInAPoolIsAnError) {
  struct Case {
    const char* name;
    json nova;
    const topology::HostTopology& host;
    const char* message;
  };
  const Case cases[] = {
      {"free null, 4 NUMA-less", {{"pci_free", {Pool(nullptr, "free", 5)}}}, MixedHost(),
       "usage.h: pci_free[0].free: 5 free, but the host has 4 10de:2330 devices whose NUMA node is unknown"},
      {"free absent", {{"pci_free", {Pool("absent", "free", 5)}}}, MixedHost(),
       "pci_free[0].free: 5 free, but the host has 4 10de:2330 devices whose NUMA node is unknown"},
      {"free -1", {{"pci_free", {Pool(-1, "free", 5)}}}, MixedHost(),
       "pci_free[0].free: 5 free, but the host has 4 10de:2330 devices whose NUMA node is unknown"},
      {"used null", {{"pci", {Pool(nullptr, "used", 5)}}}, MixedHost(),
       "pci[0].used: 5 used, but the host has 4 10de:2330 devices whose NUMA node is unknown"},
      // Every H100 of the plain fixture has a node: a null pool there is not this host's.
      {"free null, none NUMA-less", {{"pci_free", {Pool(nullptr, "free", 1)}}}, PlainHost(),
       "pci_free[0].free: 1 free, but the host has 0 10de:2330 devices whose NUMA node is unknown"},
      {"used absent, none NUMA-less", {{"pci", {Pool("absent", "used", 8)}}}, PlainHost(),
       "pci[0].used: 8 used, but the host has 0 10de:2330 devices whose NUMA node is unknown"},
      // A node pool does not borrow NUMA-less devices.
      {"free node 0", {{"pci_free", {Pool(0, "free", 3)}}}, MixedHost(),
       "pci_free[0].free: 3 free, but the host has 2 10de:2330 devices on NUMA node 0"},
      {"used node 1", {{"pci", {Pool(1, "used", 3)}}}, MixedHost(),
       "pci[0].used: 3 used, but the host has 2 10de:2330 devices on NUMA node 1"},
      {"a node the host lacks", {{"pci_free", {Pool(2, "free", 1)}}}, MixedHost(),
       "pci_free[0].free: 1 free, but the host has 0 10de:2330 devices on NUMA node 2"},
      // Entries of one pool add up.
      {"two null entries", {{"pci_free", {Pool(nullptr, "free", 3), Pool(-1, "free", 2)}}}, MixedHost(),
       "pci_free[1].free: 2 free, but the host has 4 10de:2330 devices whose NUMA node is unknown and earlier "
       "entries counted 3 of them"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(c.nova, c.host);
    EXPECT_THAT(error, HasSubstr(c.message)) << c.name;
  }
  // The fix says what a null pool is.
  EXPECT_THAT(ErrorOf({{"pci_free", {Pool(nullptr, "free", 5)}}}, MixedHost()),
              HasSubstr("is the pool of devices whose NUMA node is unknown, not any node"));
}

TEST(UsageFromNova, NumaNodeMustBeANodeIdNullOrMinusOne) {
  const json bad[] = {json(-2), json("0"), json(1.5), json(true), json::array({0}), json(4294967295ULL),
                      json(9223372036854775808ULL)};
  for (const char* form : {"pci", "pci_free"}) {
    for (const json& node : bad) {
      json pool = Pool(0, std::string(form) == "pci" ? "used" : "free", 1);
      pool["numa_node"] = node;
      const std::string error = ErrorOf({{form, {pool}}}, MixedHost());
      EXPECT_THAT(error, HasSubstr(std::string(form) + "[0].numa_node: " + node.dump() + " is not a NUMA node id"))
          << form << " " << node.dump();
    }
  }
}

// The user's case through the engine: two node-0 GPUs and two without a NUMA node, a flavor
// asking for two under each policy. With the node-0 pair taken by an instance (Nova's pools:
// node 0 used up, the NUMA-less pool 2 free), socket and required refuse (no allowed node has 2
// free) and legacy and preferred take the NUMA-less pair.
TEST(UsageFromNova, NullPoolThroughTheEngineUnderEveryPolicy) {
  topology::HostTopology host = MixedHost();
  // Keep 1b 43 (node 0) and 52 61 (unknown) as Nova's pools: the others are in no pool.
  const json after_first = {{"pci_free", {Pool(nullptr, "free", 2)}}};
  const json idle = {{"pci_free", {Pool(0, "free", 2), Pool(nullptr, "free", 2)}}};
  const struct {
    const char* policy;
    bool fits_after_first;
  } cases[] = {{"required", false}, {"socket", false}, {"legacy", true}, {"preferred", true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.policy);
    placement::Flavor f;
    f.name = std::string("gpu2-") + c.policy;
    f.vcpus = 8;
    f.ram_mib = 16384;
    f.extra_specs = {{"hw:cpu_policy", "dedicated"},
                     {"pci_passthrough:alias", "h100:2"},
                     {"hw:pci_numa_affinity_policy", c.policy}};
    const placement::PlacementRequest req = placement::BuildRequest(f, testing::Aliases(), "flavor " + f.name);
    const placement::HostPolicy policy;
    const placement::PlaceResult first = placement::Place(host, UsageFromNova(idle, host, "usage.h"), policy, req);
    ASSERT_TRUE(first.fits());
    const placement::PlaceResult second =
        placement::Place(host, UsageFromNova(after_first, host, "usage.h"), policy, req);
    EXPECT_EQ(second.fits(), c.fits_after_first);
    if (second.fits()) {
      std::set<std::string> got;
      for (const placement::DevicePlacement& d : second.placement->devices) got.insert(d.address);
      EXPECT_EQ(got, std::set<std::string>({"0000:52:00.0", "0000:61:00.0"}));
    }
  }
}

}  // namespace nova_usage_test
}  // namespace accel::fleet
