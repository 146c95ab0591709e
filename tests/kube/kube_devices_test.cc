// DiscoverNodeDevices against the fake NVML, ROCm SMI and HLML libraries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/node_devices.h"
#include "kube_fixtures.h"

namespace accel::kube {
namespace kube_devices_test {

TEST(KubeDevices, NvidiaWholeGpusAndMigDevices) {
  auto devices = testing::NvmlDevices("nvml/examples/h100x8-mig.json");
  ASSERT_EQ(devices.size(), 8u + 4u * 7u);
  const NodeDevice& gpu0 = devices[0];
  EXPECT_EQ(gpu0.vendor, devices::Vendor::kNvidia);
  EXPECT_EQ(gpu0.id, "GPU-5f2e3c10-8b4d-4e6f-9a00-1c2d3e4f5000");
  EXPECT_EQ(gpu0.physical_id, gpu0.id);
  EXPECT_FALSE(gpu0.is_mig());
  EXPECT_FALSE(gpu0.mig_enabled);
  EXPECT_EQ(gpu0.index, 0u);
  EXPECT_EQ(gpu0.position, 0u);
  EXPECT_EQ(gpu0.minor, 0);
  EXPECT_EQ(gpu0.model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu0.pci_address, "0000:1b:00.0");
  EXPECT_EQ(gpu0.numa_node, 0);  // from the hgx-h100 join
  EXPECT_EQ(gpu0.memory_bytes, 81559ull << 20);
  EXPECT_EQ(gpu0.driver_version, "580.95.05");

  // GPU 4 is MIG-enabled: followed by its seven 1g.10gb devices.
  const NodeDevice& gpu4 = devices[4];
  EXPECT_TRUE(gpu4.mig_enabled);
  EXPECT_EQ(gpu4.numa_node, 1);
  for (unsigned k = 0; k < 7; ++k) {
    const NodeDevice& mig = devices[5 + k];
    EXPECT_TRUE(mig.is_mig());
    EXPECT_THAT(mig.id, ::testing::StartsWith("MIG-"));
    EXPECT_EQ(mig.physical_id, gpu4.id);
    EXPECT_EQ(mig.index, 4u);
    EXPECT_EQ(mig.position, 4u);
    EXPECT_EQ(mig.mig_index, k);
    EXPECT_EQ(mig.gpu_instance_id, 7 + k);
    EXPECT_EQ(mig.mig_profile, "1g.10gb");
    EXPECT_GT(mig.memory_bytes, 9000ull << 20);
    EXPECT_LT(mig.memory_bytes, 11000ull << 20);
    EXPECT_EQ(mig.minor, 4);
    EXPECT_EQ(mig.numa_node, 1);
  }
  EXPECT_EQ(devices[12].id, "GPU-5f2e3c15-8b4d-4e6f-9a00-1c2d3e4f5050");
}

TEST(KubeDevices, AmdIdsArePciAddresses) {
  auto devices = testing::AmdDevices();
  ASSERT_EQ(devices.size(), 8u);
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(devices[i].vendor, devices::Vendor::kAmd);
    EXPECT_EQ(devices[i].id, devices[i].pci_address);
    EXPECT_EQ(devices[i].minor, static_cast<int>(128 + i));
    EXPECT_EQ(devices[i].numa_node, static_cast<int>(i));
    EXPECT_EQ(devices[i].memory_bytes, 206158430208u);
    EXPECT_EQ(devices[i].driver_version, "6.8.5");
  }
  EXPECT_EQ(devices[0].id, "0000:04:00.0");
}

TEST(KubeDevices, GaudiIdsAreSerials) {
  auto devices = testing::GaudiDevices();
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_EQ(devices[0].vendor, devices::Vendor::kHabana);
  EXPECT_EQ(devices[0].id, "AN45160010");
  EXPECT_EQ(devices[1].id, "AN45160011");
  EXPECT_EQ(devices[1].minor, 1);
  EXPECT_EQ(devices[0].memory_bytes, 103079215104u);
  EXPECT_EQ(devices[0].model, "HL-225");
  EXPECT_EQ(devices[7].numa_node, 1);
}

TEST(KubeDevices, NullBackendsAreSkipped) {
  EXPECT_TRUE(DiscoverNodeDevices({nullptr}).empty());
}

}  // namespace
}  // namespace accel::kube
