#include "telemetry/pod_attribution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <random>
#include <tuple>

#include "support/telemetry_workloads.h"

namespace accel::telemetry {

// Found by argument-dependent lookup from gtest, so they live in the types' namespace.
bool operator==(const PodRef& a, const PodRef& b) {
  return a.namespace_name == b.namespace_name && a.pod == b.pod && a.container == b.container &&
         a.resource == b.resource && a.replica == b.replica;
}

void PrintTo(const PodRef& p, std::ostream* os) {
  *os << p.namespace_name << "/" << p.pod << "/" << p.container << " " << p.resource << " r"
      << p.replica;
}

namespace pod_attribution_test {

using devices::Vendor;
using kube::ContainerDevices;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr const char* kGpu0 = "GPU-8f6c1d2e-0b1a-4c3d-9e8f-0123456789ab";
constexpr const char* kGpu1 = "GPU-11111111-2222-3333-4444-555555555555";
constexpr const char* kMig1 = "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
constexpr const char* kMig2 = "MIG-ffffffff-0000-1111-2222-333333333333";
constexpr const char* kAmdUuid = "GPU-0123456789abcdef";
constexpr const char* kGaudiUuid = "01P0-HL2080A0-15-TNE179-13-07-03";

DeviceState MakeDevice(Vendor vendor, unsigned index, std::string uuid, std::string pci,
                       std::string serial = "") {
  DeviceState d;
  d.identity.vendor = vendor;
  d.identity.index = index;
  d.identity.uuid = std::move(uuid);
  d.identity.pci_address = std::move(pci);
  d.identity.serial = std::move(serial);
  return d;
}

MigState MakeMig(std::string uuid, unsigned gi, unsigned ci) {
  MigState m;
  m.instance.uuid = std::move(uuid);
  m.instance.gpu_instance_id = gi;
  m.instance.compute_instance_id = ci;
  m.instance.profile = "3g.40gb";
  return m;
}

// nvidia 0 (whole), nvidia 1 (MIG: GI 1 and 2), one AMD, one Gaudi.
std::vector<DeviceState> Node() {
  std::vector<DeviceState> node;
  node.push_back(MakeDevice(Vendor::kNvidia, 0, kGpu0, "0000:3b:00.0", "1320000000001"));
  node.push_back(MakeDevice(Vendor::kNvidia, 1, kGpu1, "0000:86:00.0", "1320000000002"));
  node[1].mig_enabled = true;
  node[1].mig.push_back(MakeMig(kMig1, 1, 0));
  node[1].mig.push_back(MakeMig(kMig2, 2, 0));
  node.push_back(MakeDevice(Vendor::kAmd, 0, kAmdUuid, "0000:c1:00.0"));
  node.push_back(MakeDevice(Vendor::kHabana, 0, kGaudiUuid, "0000:19:00.0", "AM12345678"));
  return node;
}

PodRef Pod(std::string ns, std::string pod, std::string container, std::string resource,
           int replica = -1) {
  return PodRef{std::move(ns), std::move(pod), std::move(container), std::move(resource), replica};
}

// ---------------------------------------------------------------------------- ParseDeviceId

TEST(ParseDeviceId, GpuUuid) {
  DeviceRef r = ParseDeviceId(kGpu0);
  EXPECT_EQ(r.kind, DeviceIdKind::kGpuUuid);
  EXPECT_EQ(r.key, kGpu0);
  EXPECT_EQ(r.replica, -1);
}

TEST(ParseDeviceId, Replica) {
  DeviceRef r = ParseDeviceId(std::string(kGpu0) + "::3");
  EXPECT_EQ(r.kind, DeviceIdKind::kReplica);
  EXPECT_EQ(r.key, kGpu0);
  EXPECT_EQ(r.replica, 3);
  EXPECT_EQ(ParseDeviceId(std::string(kGpu0) + "::0").replica, 0);
}

TEST(ParseDeviceId, MigUuidWithAndWithoutReplica) {
  DeviceRef r = ParseDeviceId(kMig1);
  EXPECT_EQ(r.kind, DeviceIdKind::kMigUuid);
  EXPECT_EQ(r.key, kMig1);
  EXPECT_EQ(r.replica, -1);
  r = ParseDeviceId(std::string(kMig1) + "::2");
  EXPECT_EQ(r.kind, DeviceIdKind::kMigUuid);
  EXPECT_EQ(r.key, kMig1);
  EXPECT_EQ(r.replica, 2);
}

TEST(ParseDeviceId, LegacyMig) {
  DeviceRef r = ParseDeviceId(std::string("MIG-") + kGpu1 + "/2/0");
  EXPECT_EQ(r.kind, DeviceIdKind::kLegacyMig);
  EXPECT_EQ(r.key, kGpu1);
  EXPECT_EQ(r.gpu_instance_id, 2);
  EXPECT_EQ(r.compute_instance_id, 0);
}

TEST(ParseDeviceId, DeviceName) {
  DeviceRef r = ParseDeviceId("nvidia7");
  EXPECT_EQ(r.kind, DeviceIdKind::kDeviceName);
  EXPECT_EQ(r.index, 7);
  EXPECT_EQ(r.gpu_instance_id, -1);
  EXPECT_EQ(r.replica, -1);
}

TEST(ParseDeviceId, GkeForms) {
  DeviceRef r = ParseDeviceId("nvidia0/gi1");
  EXPECT_EQ(r.kind, DeviceIdKind::kGke);
  EXPECT_EQ(r.index, 0);
  EXPECT_EQ(r.gpu_instance_id, 1);
  EXPECT_EQ(r.replica, -1);
  r = ParseDeviceId("nvidia1/gi2/vgpu3");
  EXPECT_EQ(r.kind, DeviceIdKind::kGke);
  EXPECT_EQ(r.index, 1);
  EXPECT_EQ(r.gpu_instance_id, 2);
  EXPECT_EQ(r.replica, 3);
  r = ParseDeviceId("nvidia2/vgpu0");
  EXPECT_EQ(r.kind, DeviceIdKind::kGke);
  EXPECT_EQ(r.index, 2);
  EXPECT_EQ(r.gpu_instance_id, -1);
  EXPECT_EQ(r.replica, 0);
}

TEST(ParseDeviceId, PciAddressesAreCanonical) {
  for (const char* id :
       {"0000:c1:00.0", "0000:C1:00.0", "00000000:C1:00.0", "c1:00.0", "0:c1:00.0"}) {
    DeviceRef r = ParseDeviceId(id);
    EXPECT_EQ(r.kind, DeviceIdKind::kPciAddress) << id;
    EXPECT_EQ(r.key, "0000:c1:00.0") << id;
  }
  EXPECT_EQ(ParseDeviceId("0001:3b:1f.7").key, "0001:3b:1f.7");
}

TEST(ParseDeviceId, OpaqueKeepsTheWholeId) {
  for (const char* id : {"AM12345678", "", "GPU-", "MIG-", "GPU-x::", "GPU-x::-1", "GPU-x::a",
                         "GPU-x::1::2", "GPU-a/b", "nvidia", "nvidiaX", "nvidia0/", "nvidia0/gi",
                         "nvidia0/vgpu1/gi1", "nvidia0/gi1/vgpu1/x", "nvidia-1", "MIG-GPU-x/1",
                         "MIG-GPU-x/1/2/3", "MIG-GPU-/1/2", "0000:3b:20.0", "10000:3b:00.0",
                         "0000:3b:00.8", "0000:3b:00", "0000:3b:000.0", "renderD128",
                         "nvidia1234567890", "GPU-x::1234567890"}) {
    DeviceRef r = ParseDeviceId(id);
    EXPECT_EQ(r.kind, DeviceIdKind::kOpaque) << id;
    EXPECT_EQ(r.key, id);
    EXPECT_EQ(r.replica, -1) << id;
  }
}

TEST(ResourceVendor, ByDomain) {
  EXPECT_EQ(ResourceVendor("nvidia.com/gpu"), Vendor::kNvidia);
  EXPECT_EQ(ResourceVendor("nvidia.com/mig-1g.10gb"), Vendor::kNvidia);
  EXPECT_EQ(ResourceVendor("nvidia.com/gpu.shared"), Vendor::kNvidia);
  EXPECT_EQ(ResourceVendor("amd.com/gpu"), Vendor::kAmd);
  EXPECT_EQ(ResourceVendor("habana.ai/gaudi"), Vendor::kHabana);
  EXPECT_EQ(ResourceVendor("example.com/gpu"), std::nullopt);
  EXPECT_EQ(ResourceVendor("nvidia.com"), std::nullopt);
  EXPECT_EQ(ResourceVendor(""), std::nullopt);
}

// ---------------------------------------------------------------------------- AttributePods

TEST(AttributePods, WholeGpuByUuid) {
  auto node = Node();
  AttributionStats s = AttributePods({{"ml", "train", "main", "nvidia.com/gpu", {kGpu0}}}, &node);
  EXPECT_EQ(s.matched, 1u);
  EXPECT_EQ(s.unmatched, 0u);
  EXPECT_THAT(node[0].pods, ElementsAre(Pod("ml", "train", "main", "nvidia.com/gpu")));
  EXPECT_THAT(node[1].pods, IsEmpty());
}

TEST(AttributePods, UuidMatchIgnoresCase) {
  auto node = Node();
  std::string upper = kGpu0;
  std::transform(upper.begin() + 4, upper.end(), upper.begin() + 4, ::toupper);
  AttributePods({{"ml", "train", "main", "nvidia.com/gpu", {upper}}}, &node);
  EXPECT_EQ(node[0].pods.size(), 1u);
}

TEST(AttributePods, ReplicasOfSeveralPodsAllAttachSorted) {
  auto node = Node();
  std::string g = kGpu0;
  AttributionStats s = AttributePods(
      {
          {"team-b", "infer", "srv", "nvidia.com/gpu", {g + "::3"}},
          {"team-a", "job", "w", "nvidia.com/gpu", {g + "::1", g + "::0"}},
          {"team-a", "infer", "srv", "nvidia.com/gpu", {g + "::2"}},
      },
      &node);
  EXPECT_EQ(s.matched, 4u);
  EXPECT_THAT(node[0].pods, ElementsAre(Pod("team-a", "infer", "srv", "nvidia.com/gpu", 2),
                                        Pod("team-a", "job", "w", "nvidia.com/gpu", 0),
                                        Pod("team-a", "job", "w", "nvidia.com/gpu", 1),
                                        Pod("team-b", "infer", "srv", "nvidia.com/gpu", 3)));
}

TEST(AttributePods, DuplicatesCollapse) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {
          {"ns", "p", "c", "nvidia.com/gpu", {kGpu0, kGpu0}},
          {"ns", "p", "c", "nvidia.com/gpu", {"nvidia0"}},
      },
      &node);
  EXPECT_EQ(s.matched, 3u);
  EXPECT_THAT(node[0].pods, ElementsAre(Pod("ns", "p", "c", "nvidia.com/gpu")));
}

TEST(AttributePods, MigByUuidGoesToTheInstance) {
  auto node = Node();
  AttributePods({{"ns", "p", "c", "nvidia.com/mig-3g.40gb", {kMig2}}}, &node);
  EXPECT_THAT(node[1].pods, IsEmpty());
  EXPECT_THAT(node[1].mig[0].pods, IsEmpty());
  EXPECT_THAT(node[1].mig[1].pods, ElementsAre(Pod("ns", "p", "c", "nvidia.com/mig-3g.40gb")));
}

TEST(AttributePods, MigReplica) {
  auto node = Node();
  AttributePods({{"ns", "p", "c", "nvidia.com/mig-3g.40gb", {std::string(kMig1) + "::4"}}}, &node);
  EXPECT_THAT(node[1].mig[0].pods, ElementsAre(Pod("ns", "p", "c", "nvidia.com/mig-3g.40gb", 4)));
}

TEST(AttributePods, LegacyMigByParentAndGpuInstance) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {{"ns", "p", "c", "nvidia.com/mig-3g.40gb",
        {std::string("MIG-") + kGpu1 + "/1/0", std::string("MIG-") + kGpu1 + "/9/0"}}},
      &node);
  EXPECT_EQ(s.matched, 1u);
  EXPECT_EQ(s.unmatched, 1u);  // GI 9 does not exist
  EXPECT_THAT(node[1].mig[0].pods, ElementsAre(Pod("ns", "p", "c", "nvidia.com/mig-3g.40gb")));
}

TEST(AttributePods, DeviceNameIsTheNvidiaIndex) {
  auto node = Node();
  AttributePods({{"ns", "p", "c", "nvidia.com/gpu", {"nvidia1"}}}, &node);
  EXPECT_THAT(node[1].pods, ElementsAre(Pod("ns", "p", "c", "nvidia.com/gpu")));
}

TEST(AttributePods, GkeForms) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {
          {"ns", "a", "c", "nvidia.com/gpu", {"nvidia1/gi2"}},
          {"ns", "b", "c", "nvidia.com/gpu", {"nvidia1/gi1/vgpu0", "nvidia1/gi1/vgpu1"}},
          {"ns", "d", "c", "nvidia.com/gpu", {"nvidia0/vgpu5"}},
          {"ns", "e", "c", "nvidia.com/gpu", {"nvidia0/gi1", "nvidia9"}},
      },
      &node);
  EXPECT_EQ(s.matched, 4u);
  EXPECT_EQ(s.unmatched, 2u);  // nvidia0 has no MIG, there is no nvidia9
  EXPECT_THAT(node[1].mig[1].pods, ElementsAre(Pod("ns", "a", "c", "nvidia.com/gpu")));
  EXPECT_THAT(node[1].mig[0].pods, ElementsAre(Pod("ns", "b", "c", "nvidia.com/gpu", 0),
                                               Pod("ns", "b", "c", "nvidia.com/gpu", 1)));
  EXPECT_THAT(node[0].pods, ElementsAre(Pod("ns", "d", "c", "nvidia.com/gpu", 5)));
}

TEST(AttributePods, AmdByPciAddressOrUuid) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {
          {"ns", "a", "c", "amd.com/gpu", {"0000:C1:00.0"}},
          {"ns", "b", "c", "amd.com/gpu", {kAmdUuid}},
      },
      &node);
  EXPECT_EQ(s.matched, 2u);
  EXPECT_THAT(node[2].pods,
              ElementsAre(Pod("ns", "a", "c", "amd.com/gpu"), Pod("ns", "b", "c", "amd.com/gpu")));
}

TEST(AttributePods, GaudiBySerialPciOrUuid) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {
          {"ns", "a", "c", "habana.ai/gaudi", {"AM12345678"}},
          {"ns", "b", "c", "habana.ai/gaudi", {"0000:19:00.0"}},
          {"ns", "d", "c", "habana.ai/gaudi", {kGaudiUuid}},
      },
      &node);
  EXPECT_EQ(s.matched, 3u);
  EXPECT_EQ(node[3].pods.size(), 3u);
}

TEST(AttributePods, OnlyTheResourceVendorsDevices) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {
          {"ns", "a", "c", "amd.com/gpu", {kGpu0, "0000:3b:00.0", "nvidia0"}},
          {"ns", "b", "c", "nvidia.com/gpu", {"0000:c1:00.0", "AM12345678"}},
          {"ns", "d", "c", "habana.ai/gaudi", {kAmdUuid}},
      },
      &node);
  EXPECT_EQ(s.matched, 0u);
  EXPECT_EQ(s.unmatched, 6u);
  for (const DeviceState& d : node) EXPECT_THAT(d.pods, IsEmpty());
}

TEST(AttributePods, NvidiaByPciAndSerialToo) {
  auto node = Node();
  AttributePods({{"ns", "a", "c", "nvidia.com/gpu", {"00000000:86:00.0", "1320000000001"}}}, &node);
  EXPECT_EQ(node[0].pods.size(), 1u);
  EXPECT_EQ(node[1].pods.size(), 1u);
}

TEST(AttributePods, UnknownIdsAndResourcesAreCounted) {
  auto node = Node();
  AttributionStats s = AttributePods(
      {
          {"ns", "a", "c", "nvidia.com/gpu", {"GPU-deadbeef", "garbage"}},
          {"ns", "b", "c", "example.com/fpga", {"fpga0", "fpga1"}},
          {"ns", "d", "c", "nvidia.com/gpu", {kGpu0}},
      },
      &node);
  EXPECT_EQ(s.matched, 1u);
  EXPECT_EQ(s.unmatched, 2u);
  EXPECT_EQ(s.ignored, 2u);
  EXPECT_THAT(s.unmatched_examples, ElementsAre("GPU-deadbeef", "garbage"));
}

TEST(AttributePods, UnmatchedExamplesAreCapped) {
  auto node = Node();
  std::vector<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.push_back("GPU-unknown-" + std::to_string(i));
  AttributionStats s = AttributePods({{"ns", "a", "c", "nvidia.com/gpu", ids}}, &node);
  EXPECT_EQ(s.unmatched, 100u);
  EXPECT_EQ(s.unmatched_examples.size(), kMaxUnmatchedExamples);
}

TEST(AttributePods, ClearsEarlierAttribution) {
  auto node = Node();
  node[0].pods.push_back(Pod("old", "old", "old", "nvidia.com/gpu"));
  node[1].mig[0].pods.push_back(Pod("old", "old", "old", "nvidia.com/gpu"));
  node[2].pods.push_back(Pod("old", "old", "old", "amd.com/gpu"));
  AttributionStats s = AttributePods({}, &node);
  EXPECT_EQ(s.matched + s.unmatched + s.ignored, 0u);
  for (const DeviceState& d : node) {
    EXPECT_THAT(d.pods, IsEmpty());
    for (const MigState& m : d.mig) EXPECT_THAT(m.pods, IsEmpty());
  }
}

TEST(AttributePods, OrderDoesNotDependOnInput) {
  std::vector<ContainerDevices> containers;
  for (int i = 0; i < 20; ++i) {
    containers.push_back({"ns" + std::to_string(i % 3), "pod" + std::to_string(i), "c",
                          "nvidia.com/gpu", {std::string(kGpu0) + "::" + std::to_string(i)}});
  }
  auto reference = Node();
  AttributePods(containers, &reference);
  std::mt19937 rng(7);
  for (int round = 0; round < 10; ++round) {
    std::shuffle(containers.begin(), containers.end(), rng);
    auto node = Node();
    AttributePods(containers, &node);
    EXPECT_EQ(node[0].pods, reference[0].pods);
  }
  EXPECT_TRUE(std::is_sorted(reference[0].pods.begin(), reference[0].pods.end(),
                             [](const PodRef& a, const PodRef& b) {
                               return std::tie(a.namespace_name, a.pod, a.container, a.replica) <
                                      std::tie(b.namespace_name, b.pod, b.container, b.replica);
                             }));
}

// ---------------------------------------------------------------------------- properties

std::string RandomId(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "GPU-", "MIG-", "MIG-GPU-", "nvidia", "::", "/", ":", ".", "gi", "vgpu", "0", "1", "7",
      "99999999999", "-", "c1", "0000", "00000000", "ab", "\xff", std::string(1, '\0'), " "};
  std::string id;
  int n = std::uniform_int_distribution<int>(0, 8)(rng);
  for (int i = 0; i < n; ++i) {
    if (rng() % 4 == 0) {
      id += static_cast<char>(rng() % 256);
    } else {
      id += pieces[rng() % pieces.size()];
    }
  }
  return id;
}

TEST(AttributionProperty, RandomIdsNeverCrash) {
  std::mt19937 rng(12345);
  auto node = Node();
  const char* resources[] = {"nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "x.io/y"};
  for (int i = 0; i < 20000; ++i) {
    std::string id = RandomId(rng);
    DeviceRef r = ParseDeviceId(id);
    if (r.kind == DeviceIdKind::kOpaque) {
      EXPECT_EQ(r.key, id);
    }
    AttributionStats s = AttributePods({{"ns", "p", "c", resources[i % 4], {id}}}, &node);
    EXPECT_EQ(s.matched + s.unmatched + s.ignored, 1u);
  }
}

// Every form a device plugin could name a known device by, with where it must land.
struct Generated {
  std::string resource;
  std::string id;
  size_t device;
  int mig;      // -1 whole device
  int replica;  // -1 none
};

std::string UpperPci(const std::string& pci) {  // NVML's "00000000:3B:00.0"
  std::string s = "0000" + pci;
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

std::vector<Generated> FormsOf(const std::vector<DeviceState>& node, size_t d, std::mt19937& rng) {
  const devices::DeviceIdentity& id = node[d].identity;
  int n = static_cast<int>(rng() % 16);
  std::string idx = std::to_string(id.index);
  std::vector<Generated> out;
  switch (id.vendor) {
    case Vendor::kNvidia:
      out.push_back({"nvidia.com/gpu", id.uuid, d, -1, -1});
      out.push_back({"nvidia.com/gpu", id.uuid + "::" + std::to_string(n), d, -1, n});
      out.push_back({"nvidia.com/gpu", "nvidia" + idx, d, -1, -1});
      out.push_back({"nvidia.com/gpu", "nvidia" + idx + "/vgpu" + std::to_string(n), d, -1, n});
      out.push_back({"nvidia.com/gpu", UpperPci(id.pci_address), d, -1, -1});
      for (size_t m = 0; m < node[d].mig.size(); ++m) {
        const devices::MigInstance& mig = node[d].mig[m].instance;
        std::string gi = std::to_string(mig.gpu_instance_id);
        std::string res = "nvidia.com/mig-" + mig.profile;
        int mi = static_cast<int>(m);
        out.push_back({res, mig.uuid, d, mi, -1});
        out.push_back({res, mig.uuid + "::" + std::to_string(n), d, mi, n});
        out.push_back({res, "MIG-" + id.uuid + "/" + gi + "/0", d, mi, -1});
        out.push_back({"nvidia.com/gpu", "nvidia" + idx + "/gi" + gi, d, mi, -1});
        out.push_back({"nvidia.com/gpu", "nvidia" + idx + "/gi" + gi + "/vgpu" + std::to_string(n),
                       d, mi, n});
      }
      break;
    case Vendor::kAmd:
      out.push_back({"amd.com/gpu", id.pci_address, d, -1, -1});
      out.push_back({"amd.com/gpu", id.uuid, d, -1, -1});
      break;
    case Vendor::kHabana:
      out.push_back({"habana.ai/gaudi", id.serial, d, -1, -1});
      out.push_back({"habana.ai/gaudi", id.pci_address, d, -1, -1});
      out.push_back({"habana.ai/gaudi", id.uuid, d, -1, -1});
      break;
  }
  return out;
}

// A random node: a few devices of each vendor with random UUIDs, some NVIDIA ones in MIG mode.
std::vector<DeviceState> RandomNode(std::mt19937& rng) {
  auto hex = [&](int digits) {
    std::string s;
    for (int i = 0; i < digits; ++i) s += "0123456789abcdef"[rng() % 16];
    return s;
  };
  auto uuid = [&](const char* prefix) {
    return prefix + hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12);
  };
  std::vector<DeviceState> node;
  unsigned bus = 1;
  auto pci = [&] {
    char text[16];
    std::snprintf(text, sizeof(text), "0000:%02x:00.0", bus++);
    return std::string(text);
  };
  unsigned nvidia = 1 + rng() % 8, amd = rng() % 4, habana = rng() % 4;
  for (unsigned i = 0; i < nvidia; ++i) {
    DeviceState d = MakeDevice(Vendor::kNvidia, i, uuid("GPU-"), pci(), hex(13));
    if (rng() % 2) {
      d.mig_enabled = true;
      unsigned instances = 1 + rng() % 7;
      for (unsigned gi = 1; gi <= instances; ++gi) d.mig.push_back(MakeMig(uuid("MIG-"), gi, 0));
    }
    node.push_back(std::move(d));
  }
  for (unsigned i = 0; i < amd; ++i) {
    node.push_back(MakeDevice(Vendor::kAmd, i, "GPU-" + hex(16), pci()));
  }
  for (unsigned i = 0; i < habana; ++i) {
    node.push_back(MakeDevice(Vendor::kHabana, i, hex(20), pci(), "AM" + hex(8)));
  }
  return node;
}

TEST(AttributionProperty, EveryGeneratedIdAttachesToItsDevice) {
  std::mt19937 rng(2024);
  size_t checked = 0;
  for (int round = 0; round < 200; ++round) {
    auto node = RandomNode(rng);
    for (size_t d = 0; d < node.size(); ++d) {
      for (const Generated& g : FormsOf(node, d, rng)) {
        AttributionStats s = AttributePods({{"ns", "p", "c", g.resource, {g.id}}}, &node);
        ASSERT_EQ(s.matched, 1u) << g.id;
        for (size_t e = 0; e < node.size(); ++e) {
          size_t want_whole = (e == d && g.mig < 0) ? 1 : 0;
          ASSERT_EQ(node[e].pods.size(), want_whole) << g.id;
          for (size_t m = 0; m < node[e].mig.size(); ++m) {
            size_t want = (e == d && static_cast<int>(m) == g.mig) ? 1 : 0;
            ASSERT_EQ(node[e].mig[m].pods.size(), want) << g.id;
          }
        }
        const PodRef& pod = g.mig < 0 ? node[d].pods[0] : node[d].mig[g.mig].pods[0];
        EXPECT_EQ(pod.replica, g.replica) << g.id;
        EXPECT_EQ(pod.resource, g.resource);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 5000u);
}

// ---------------------------------------------------------------------------- performance

TEST(Attribution, SixtyFourPodsOnEightMigGpus) {
  std::vector<DeviceState> node = test_support::FullMigNode();
  const std::vector<ContainerDevices> pods = test_support::SixtyFourPods(node);
  AttributionStats s = AttributePods(pods, &node);
  ASSERT_EQ(s.matched, 64u);
  ASSERT_EQ(s.unmatched, 0u);

  // Attributing again gives the same answer (the per-call cost: bench/telemetry_bench,
  // BM_AttributePods).
  AttributionStats again = AttributePods(pods, &node);
  EXPECT_EQ(again.matched, 64u);
  EXPECT_EQ(again.unmatched, 0u);
}

}  // namespace
}  // namespace accel::telemetry
