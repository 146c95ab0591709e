#include "dra/inventory.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/error.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "dra/device_names.h"
#include "dra/inventory_fixtures.h"
#include "dra/resource_slices.h"
#include "fabric/path.h"

namespace accel::dra {
namespace inventory_test {

using testing::BigHgx;

std::string Str(const DraDevice& d, const std::string& attr) {
  auto it = d.attributes.find(attr);
  return it == d.attributes.end() ? "<none>" : it->second.string_value;
}

int64_t Int(const DraDevice& d, const std::string& attr) {
  auto it = d.attributes.find(attr);
  return it == d.attributes.end() ? -999 : it->second.int_value;
}

std::vector<const DraDevice*> OfKind(const Inventory& inv, DeviceKind kind) {
  std::vector<const DraDevice*> out;
  for (const DraDevice& d : inv.devices)
    if (d.kind == kind) out.push_back(&d);
  return out;
}

const DraDevice* NicByRdma(const Inventory& inv, const std::string& rdma) {
  for (const DraDevice& d : inv.devices)
    if (d.kind == DeviceKind::kNic && Str(d, "rdmaDevice") == rdma) return &d;
  return nullptr;
}

// Every device: a unique DNS label name, ≤ 32 attributes + capacities, strings ≤ 64.
void ExpectWithinLimits(const Inventory& inv) {
  std::set<std::string> names;
  for (const DraDevice& d : inv.devices) {
    EXPECT_TRUE(IsDnsLabel(d.name)) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate " << d.name;
    EXPECT_LE(d.attributes.size() + d.capacity.size(), kMaxAttributesAndCapacities) << d.name;
    EXPECT_LE(d.consumes_counters.size(), 2u) << d.name;
    for (const auto& [name, v] : d.attributes) {
      EXPECT_LE(v.string_value.size(), kMaxAttributeStringLength) << d.name << " " << name;
      if (name.find('/') == std::string::npos) {
        EXPECT_LE(name.size(), 32u) << name;
      }
    }
  }
}

// --- HGX H100: 8 GPUs, 8 rail NICs (plus 2 dual-port Ethernet NICs) ------------------------

TEST(Inventory, HgxPairsEachGpuWithTheNicPairingChose) {
  const Inventory inv = testing::Hgx("nvml/examples/h100x8-mig.json", /*whole_only=*/true);
  ExpectWithinLimits(inv);
  const auto gpus = OfKind(inv, DeviceKind::kGpu);
  const auto nics = OfKind(inv, DeviceKind::kNic);
  ASSERT_EQ(gpus.size(), 8u);
  ASSERT_EQ(nics.size(), 12u);
  EXPECT_TRUE(inv.counter_sets.empty());
  const std::vector<const fabric::FabricNic*> used = inv.fabric.UsedNics();
  ASSERT_EQ(used.size(), 8u);

  std::set<int64_t> rails;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const DraDevice& g = *gpus[i];
    EXPECT_EQ(g.name, "gpu-" + std::to_string(i));
    const fabric::GpuNicPair& pair = inv.fabric.pairs[i];
    ASSERT_EQ(pair.gpu_address, g.pci_address);
    ASSERT_GE(pair.nic, 0);
    const fabric::FabricNic& paired = inv.fabric.nics[pair.nic];
    // rail = the paired NIC's index in UsedNics, on the GPU and on that NIC.
    int want = -1;
    for (size_t r = 0; r < used.size(); ++r)
      if (used[r] == &paired) want = static_cast<int>(r);
    EXPECT_EQ(g.rail, want);
    EXPECT_EQ(Int(g, "rail"), want);
    const DraDevice* nic = NicByRdma(inv, paired.rdma_device);
    ASSERT_NE(nic, nullptr);
    EXPECT_EQ(Int(*nic, "rail"), want) << nic->name;
    EXPECT_EQ(nic->rail, want);
    rails.insert(want);
    // Each HGX GPU sits on the PCIe switch of its NIC.
    EXPECT_EQ(Str(g, "pathType"), "PIX") << g.name;
    EXPECT_NE(Str(g, "pcieSwitch"), "<none>") << g.name;
    EXPECT_EQ(Str(g, "pcieSwitch"), Str(*nic, "pcieSwitch"));
    EXPECT_EQ(Str(*nic, "pathType"), "PIX");
    EXPECT_EQ(Str(g, kAttrPcieRoot), Str(*nic, kAttrPcieRoot));
  }
  EXPECT_EQ(rails.size(), 8u);

  const DraDevice& g0 = *gpus[0];
  EXPECT_EQ(Str(g0, kAttrPciBusId), "0000:1b:00.0");
  EXPECT_EQ(Str(g0, kAttrPcieRoot), "pci0000:15");
  EXPECT_EQ(Int(g0, kAttrNumaNode), 0);
  EXPECT_EQ(Int(*gpus[7], kAttrNumaNode), 1);
  EXPECT_EQ(Str(g0, "type"), "gpu");
  EXPECT_EQ(Str(g0, "vendor"), "nvidia");
  EXPECT_EQ(Str(g0, "productName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(Str(g0, "uuid").rfind("GPU-", 0), 0u);
  ASSERT_TRUE(g0.attributes.count("driverVersion"));
  EXPECT_EQ(g0.attributes.at("driverVersion"), AttributeValue::Version("580.95.5"));
  EXPECT_EQ(g0.attributes.at("migEnabled"), AttributeValue::Bool(false));
  EXPECT_EQ(g0.capacity.at("memory"), "81559Mi");
  EXPECT_TRUE(g0.consumes_counters.empty());
  EXPECT_GE(g0.node_device, 0);
  EXPECT_EQ(inv.node_devices[g0.node_device].pci_address, "0000:1b:00.0");

  // mlx5_0 is GPU 0's NIC; the Ethernet ports pairing leaves out are published without a rail.
  const DraDevice* mlx0 = NicByRdma(inv, "mlx5_0");
  ASSERT_NE(mlx0, nullptr);
  EXPECT_EQ(mlx0->name, "nic-0");
  EXPECT_EQ(Str(*mlx0, "netdev"), "ibp24s0");
  EXPECT_EQ(Str(*mlx0, "linkLayer"), "InfiniBand");
  EXPECT_EQ(Str(*mlx0, "vendor"), "mellanox");
  EXPECT_EQ(Str(*mlx0, "type"), "nic");
  EXPECT_EQ(Int(*mlx0, "port"), 1);
  EXPECT_EQ(mlx0->attributes.at("sriovVf"), AttributeValue::Bool(false));
  EXPECT_EQ(Int(*gpus[0], "rail"), Int(*mlx0, "rail"));
  const DraDevice* eth = NicByRdma(inv, "mlx5_1");
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->rail, -1);
  EXPECT_FALSE(eth->attributes.count("rail"));
  EXPECT_FALSE(eth->attributes.count("pathType"));
  EXPECT_EQ(Str(*eth, "linkLayer"), "Ethernet");
  EXPECT_GE(eth->nic, 0);
  EXPECT_EQ(inv.fabric.nics[eth->nic].rdma_device, "mlx5_1");
}

TEST(Inventory, MigGpusShareOneCounterSetWithTheirSlices) {
  const Inventory inv = testing::Hgx("nvml/examples/h100x8-mig.json");
  ExpectWithinLimits(inv);
  // GPUs 4-7 are in MIG mode: one counter set each.
  ASSERT_EQ(inv.counter_sets.size(), 4u);
  std::map<std::string, const CounterSet*> sets;
  for (const CounterSet& s : inv.counter_sets) {
    EXPECT_TRUE(IsDnsLabel(s.name));
    sets[s.name] = &s;
  }
  EXPECT_TRUE(sets.count("gpu-4-counters"));
  EXPECT_EQ(sets.at("gpu-4-counters")->counters.at("memory-slices"), "8");
  EXPECT_EQ(sets.at("gpu-4-counters")->counters.at("compute-slices"), "7");

  int migs = 0;
  for (size_t i = 0; i < inv.devices.size(); ++i) {
    const DraDevice& g = inv.devices[i];
    if (g.kind != DeviceKind::kGpu) continue;
    const bool mig_mode = g.attributes.at("migEnabled").bool_value;
    if (!mig_mode) {
      EXPECT_TRUE(g.consumes_counters.empty()) << g.name;
      continue;
    }
    // The whole GPU takes the whole set: it and any slice exclude each other.
    ASSERT_EQ(g.consumes_counters.size(), 1u);
    const CounterSet& set = *sets.at(g.consumes_counters[0].counter_set);
    EXPECT_EQ(g.consumes_counters[0].counters, set.counters);
    // Its MIG devices follow it, consume the same set, and together fit in it.
    std::map<std::string, int64_t> used;
    for (size_t k = i + 1; k < inv.devices.size() && inv.devices[k].kind == DeviceKind::kMig; ++k) {
      const DraDevice& m = inv.devices[k];
      ++migs;
      EXPECT_EQ(m.name.rfind(g.name + "-mig-", 0), 0u) << m.name;
      EXPECT_EQ(Str(m, "type"), "mig");
      EXPECT_EQ(Str(m, "parentUUID"), Str(g, "uuid"));
      EXPECT_NE(Str(m, "profile"), "<none>");
      EXPECT_EQ(Str(m, "uuid").rfind("MIG-", 0), 0u);
      EXPECT_EQ(m.rail, g.rail);
      EXPECT_EQ(Int(m, "rail"), Int(g, "rail"));
      EXPECT_EQ(Str(m, kAttrPciBusId), Str(g, kAttrPciBusId));
      EXPECT_EQ(inv.node_devices[m.node_device].is_mig(), true);
      ASSERT_EQ(m.consumes_counters.size(), 1u);
      EXPECT_EQ(m.consumes_counters[0].counter_set, set.name);
      for (const auto& [name, q] : m.consumes_counters[0].counters) {
        std::string err;
        used[name] += ParseQuantity(q, &err)->Value();
      }
    }
    for (const auto& [name, total] : used) {
      std::string err;
      EXPECT_LE(total, ParseQuantity(set.counters.at(name), &err)->Value()) << set.name << " " << name;
    }
  }
  EXPECT_GT(migs, 0);
}

// An API server without partitionable devices (Kubernetes < 1.36 without the gate) would drop the
// counters and let the scheduler hand out a MIG GPU and its slices together: with
// partitionable false a MIG-enabled GPU is only its MIG devices, and nothing consumes counters.
TEST(Inventory, WithoutPartitionableDevicesMigGpusAreOnlyTheirSlices) {
  topology::HostTopology host = kube::testing::Host("hgx-h100");
  InventoryOptions o = testing::Options();
  o.partitionable = false;
  const Inventory inv = BuildInventory(kube::testing::NvmlDevices("nvml/examples/h100x8-mig.json"), host,
                                       testing::PortsOf(host), o);
  EXPECT_TRUE(inv.counter_sets.empty());
  std::set<std::string> names;
  int migs = 0;
  for (const DraDevice& d : inv.devices) {
    names.insert(d.name);
    EXPECT_TRUE(d.consumes_counters.empty()) << d.name;
    migs += d.kind == DeviceKind::kMig;
  }
  EXPECT_EQ(migs, 28);
  for (int g = 0; g < 4; ++g) EXPECT_TRUE(names.count("gpu-" + std::to_string(g)));
  for (int g = 4; g < 8; ++g) {
    EXPECT_FALSE(names.count("gpu-" + std::to_string(g))) << "MIG-enabled GPU " << g;
    EXPECT_TRUE(names.count("gpu-" + std::to_string(g) + "-mig-1g-10gb-0"));
  }
  // The slices still ride their GPU's rail, and Prepare finds them by name as before.
  const DraDevice* m = inv.Find("gpu-4-mig-1g-10gb-0");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->rail, 4);
}

TEST(Inventory, MigProfileNamesBecomeDnsLabels) {
  EXPECT_EQ(MigDeviceName(3, "1g.10gb", 0), "gpu-3-mig-1g-10gb-0");
  EXPECT_EQ(MigDeviceName(3, "1g.10gb+me", 2), "gpu-3-mig-1g-10gb-me-2");
  EXPECT_EQ(MigDeviceName(0, "1c.3g.40GB", 1), "gpu-0-mig-1c-3g-40gb-1");
  std::string long_name = MigDeviceName(12, std::string(100, 'x'), 6);
  EXPECT_TRUE(IsDnsLabel(long_name)) << long_name;
  EXPECT_EQ(long_name.substr(long_name.size() - 2), "-6");
  EXPECT_EQ(VfDeviceName(2, 15), "nic-2-vf-15");
}

// --- AMD and Gaudi --------------------------------------------------------------------------

TEST(Inventory, AmdGpusPairWithTheNicOnTheirSwitch) {
  const Inventory inv = testing::Amd();
  ExpectWithinLimits(inv);
  const auto gpus = OfKind(inv, DeviceKind::kGpu);
  const auto nics = OfKind(inv, DeviceKind::kNic);
  ASSERT_EQ(gpus.size(), 8u);
  ASSERT_EQ(nics.size(), 8u);
  std::set<int64_t> rails;
  for (const DraDevice* g : gpus) {
    EXPECT_EQ(Str(*g, "vendor"), "amd");
    EXPECT_EQ(Str(*g, "type"), "gpu");
    EXPECT_EQ(Str(*g, "productName"), "AMD Instinct MI300X");
    ASSERT_GE(g->rail, 0) << g->name;
    rails.insert(g->rail);
    const fabric::GpuNicPair* pair = nullptr;
    for (const auto& p : inv.fabric.pairs)
      if (p.gpu_address == g->pci_address) pair = &p;
    ASSERT_NE(pair, nullptr);
    const DraDevice* nic = NicByRdma(inv, inv.fabric.nics[pair->nic].rdma_device);
    ASSERT_NE(nic, nullptr);
    EXPECT_EQ(nic->rail, g->rail);
    EXPECT_EQ(Str(*nic, "vendor"), "broadcom");
    EXPECT_EQ(Str(*g, "pcieSwitch"), Str(*nic, "pcieSwitch"));
    EXPECT_EQ(Int(*g, kAttrNumaNode), Int(*nic, kAttrNumaNode));
  }
  EXPECT_EQ(rails.size(), 8u);
  EXPECT_EQ(gpus[0]->attributes.at("driverVersion"), AttributeValue::Version("6.8.5"));
  EXPECT_EQ(Int(*gpus[3], kAttrNumaNode), 3);
}

TEST(Inventory, GaudiHpusShareTheirTwoNicsAsTwoRails) {
  const Inventory inv = testing::Gaudi();
  ExpectWithinLimits(inv);
  const auto hpus = OfKind(inv, DeviceKind::kGpu);
  const auto nics = OfKind(inv, DeviceKind::kNic);
  ASSERT_EQ(hpus.size(), 8u);
  ASSERT_EQ(nics.size(), 2u);
  std::map<int, int> per_rail;
  for (const DraDevice* h : hpus) {
    EXPECT_EQ(Str(*h, "vendor"), "habana");
    EXPECT_EQ(Str(*h, "type"), "gpu");
    ++per_rail[h->rail];
    // No HPU shares a PCIe switch with a NIC on this board.
    EXPECT_FALSE(h->attributes.count("pcieSwitch")) << h->name;
    EXPECT_NE(Str(*h, "pathType"), "PIX");
  }
  EXPECT_EQ(per_rail, (std::map<int, int>{{0, 4}, {1, 4}}));
  EXPECT_EQ(nics[0]->rail, 0);
  EXPECT_EQ(nics[1]->rail, 1);
  EXPECT_EQ(hpus[0]->attributes.at("driverVersion"), AttributeValue::Version("1.17.0-495f4a1"));
}

TEST(Inventory, VmGuestPublishesNoNumaNodeWhenUnknown) {
  const Inventory inv = testing::VmGuest();
  ExpectWithinLimits(inv);
  const auto gpus = OfKind(inv, DeviceKind::kGpu);
  ASSERT_EQ(gpus.size(), 8u);
  ASSERT_EQ(OfKind(inv, DeviceKind::kNic).size(), 8u);
  for (const DraDevice& d : inv.devices) {
    EXPECT_FALSE(d.attributes.count(kAttrNumaNode)) << d.name;
    EXPECT_EQ(Str(d, kAttrPcieRoot), "pci0000:00");
  }
  std::set<int> rails;
  for (const DraDevice* g : gpus) rails.insert(g->rail);
  EXPECT_EQ(rails.size(), 8u);
  EXPECT_FALSE(rails.count(-1));
}

// --- VFs, limits, names ---------------------------------------------------------------------

TEST(Inventory, VfsAreNamedAfterTheirPfAndSitOnItsRail) {
  const Inventory inv = BigHgx(4);
  ExpectWithinLimits(inv);
  EXPECT_EQ(OfKind(inv, DeviceKind::kNic).size(), 12u + 8 * 4);
  const DraDevice* vf = inv.Find("nic-0-vf-3");
  const DraDevice* pf = inv.Find("nic-0");
  ASSERT_NE(vf, nullptr);
  ASSERT_NE(pf, nullptr);
  EXPECT_EQ(Str(*pf, "rdmaDevice"), "mlx5_0");
  EXPECT_EQ(Str(*vf, "pfName"), "mlx5_0");
  EXPECT_EQ(vf->attributes.at("sriovVf"), AttributeValue::Bool(true));
  EXPECT_GE(pf->rail, 0);
  EXPECT_EQ(vf->rail, pf->rail);
  EXPECT_EQ(Str(*vf, "pcieSwitch"), Str(*pf, "pcieSwitch"));
  EXPECT_EQ(inv.Find("nic-1")->rail, -1);  // mlx5_1, an Ethernet port
  EXPECT_EQ(inv.Find("no-such-device"), nullptr);

  topology::HostTopology host = kube::testing::Host("hgx-h100");
  InventoryOptions o = testing::Options();
  o.include_vfs = false;
  const Inventory pfs_only = BuildInventory({}, host, testing::PortsOf(host), o);
  EXPECT_EQ(pfs_only.devices.size(), 12u);
}

TEST(Inventory, BigInventoryStaysWithinDeviceLimits) {
  const Inventory inv = BigHgx(16);
  ExpectWithinLimits(inv);
  EXPECT_EQ(inv.devices.size(), 8u + 56 + 12 + 128);
  EXPECT_EQ(inv.counter_sets.size(), 8u);
}

TEST(Inventory, SameInputsGiveTheSameInventory) {
  const Inventory a = BigHgx(2), b = BigHgx(2);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].name, b.devices[i].name);
    EXPECT_EQ(a.devices[i].attributes, b.devices[i].attributes);
    EXPECT_EQ(a.devices[i].capacity, b.devices[i].capacity);
  }
  EXPECT_EQ(BuildResourceSlices(a, 3), BuildResourceSlices(b, 3));
}

TEST(Inventory, LongStringsAreCutTo64Bytes) {
  topology::HostTopology host = kube::testing::Host("vm-guest-h100x8");
  std::vector<kube::NodeDevice> devs = testing::GpusAt(host);
  devs[0].model = std::string(62, 'x') + "\xc3\xa9\xc3\xa9";  // 66 bytes, UTF-8 at the cut
  const Inventory inv = BuildInventory(devs, host, testing::PortsOf(host), testing::Options());
  EXPECT_EQ(Str(inv.devices[0], "model"), std::string(62, 'x') + "\xc3\xa9");
  EXPECT_EQ(TruncateUtf8("abc", 2), "ab");
}

TEST(Inventory, MigDeviceWithoutItsGpuIsLeftOutWithANote) {
  topology::HostTopology host = kube::testing::Host("hgx-h100");
  kube::NodeDevice ghost = kube::testing::Gpu(9, true);
  kube::NodeDevice orphan = kube::testing::Mig(ghost, 0, 9, "1g.10gb");
  const Inventory inv = BuildInventory({orphan}, host, {}, testing::Options());
  EXPECT_TRUE(OfKind(inv, DeviceKind::kMig).empty());
  ASSERT_FALSE(inv.notes.empty());
  EXPECT_NE(inv.notes[0].find("no parent GPU"), std::string::npos);
}

TEST(Inventory, UnknownGpuModelStillGetsCountersThatFit) {
  topology::HostTopology host = kube::testing::Host("vm-guest-h100x8");
  std::vector<kube::NodeDevice> devs = testing::GpusAt(host);
  devs.resize(1);
  devs[0].model = "Mystery GPU";
  devs[0].mig_enabled = true;
  devs.push_back(kube::testing::Mig(devs[0], 0, 1, "3g.40gb"));
  devs.push_back(kube::testing::Mig(devs[0], 1, 2, "4g.40gb"));
  const Inventory inv = BuildInventory(devs, host, {}, testing::Options());
  ASSERT_EQ(inv.counter_sets.size(), 1u);
  EXPECT_EQ(inv.counter_sets[0].counters.at("compute-slices"), "7");
  EXPECT_EQ(inv.counter_sets[0].counters.at("memory-slices"), "8");
  EXPECT_NE(inv.Find("gpu-0-mig-4g-40gb-1"), nullptr);
  EXPECT_FALSE(inv.notes.empty());
}

TEST(Inventory, InvalidDriverOrNodeNameIsAnInputError) {
  topology::HostTopology host = kube::testing::Host("vm-guest-h100x8");
  for (const std::string& driver : std::vector<std::string>{"", "Accel.IO", "accel_io", std::string(64, 'a') + ".io"}) {
    InventoryOptions o = testing::Options();
    o.driver = driver;
    EXPECT_THROW(BuildInventory({}, host, {}, o), InputError) << driver;
  }
  for (const std::string& node : std::vector<std::string>{"", "Node-1", "node_1", std::string(254, 'a')}) {
    EXPECT_THROW(BuildInventory({}, host, {}, testing::Options(node)), InputError) << node;
  }
  EXPECT_NO_THROW(BuildInventory({}, host, {}, testing::Options("worker-1.example.com")));
}

TEST(Inventory, DriverVersionsBecomeSemver) {
  EXPECT_EQ(NormalizeSemver("580.95.05"), "580.95.5");
  EXPECT_EQ(NormalizeSemver("550.54"), "550.54.0");
  EXPECT_EQ(NormalizeSemver("6.8.5"), "6.8.5");
  EXPECT_EQ(NormalizeSemver("1.17.0-495f4a1"), "1.17.0-495f4a1");
  EXPECT_EQ(NormalizeSemver("v1.2.3+build.7"), "1.2.3+build.7");
  EXPECT_EQ(NormalizeSemver("1.2.3-rc.01"), "1.2.3-rc.1");
  EXPECT_EQ(NormalizeSemver("6.8.5.1"), std::nullopt);
  EXPECT_EQ(NormalizeSemver(""), std::nullopt);
  EXPECT_EQ(NormalizeSemver("abc"), std::nullopt);
  EXPECT_EQ(NormalizeSemver("1..2"), std::nullopt);
  EXPECT_EQ(NormalizeSemver("1.2.3-"), std::nullopt);
  EXPECT_EQ(NormalizeSemver("1.2.3-a..b"), std::nullopt);
  EXPECT_EQ(NormalizeSemver("1.2.3-a_b"), std::nullopt);
  EXPECT_EQ(NormalizeSemver("1.2.3-" + std::string(70, 'a')), std::nullopt);
}

}  // namespace
}  // namespace accel::dra
