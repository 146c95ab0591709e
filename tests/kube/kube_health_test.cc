// DeviceHealth with an injected clock: XID policy, MIG-scoped events, lost devices, recovery,
// and the service (MPS control daemon) a shared unit needs.
#include <gtest/gtest.h>

#include "kube/device_health.h"
#include "kube_fixtures.h"

namespace accel::kube {
namespace kube_health_test {

using std::chrono::seconds;
using testing::Gpu;
using testing::Mig;
using Clock = DeviceHealth::Clock;

devices::HealthEvent Xid(unsigned index, uint64_t code, std::optional<unsigned> gi = std::nullopt) {
  devices::HealthEvent e;
  e.vendor = devices::Vendor::kNvidia;
  e.device_index = index;
  e.code = code;
  e.gpu_instance_id = gi;
  return e;
}

// GPU 0 whole; GPU 1 MIG-enabled with GIs 3 and 5; an AMD GPU with index 0.
std::vector<NodeDevice> Node() {
  NodeDevice g1 = Gpu(1, true);
  NodeDevice amd;
  amd.vendor = devices::Vendor::kAmd;
  amd.id = amd.physical_id = "0000:04:00.0";
  return {Gpu(0), g1, Mig(g1, 0, 3, "3g.40gb"), Mig(g1, 1, 5, "3g.40gb"), amd};
}

std::vector<bool> States(const DeviceHealth& h, size_t n) {
  std::vector<bool> out;
  for (size_t i = 0; i < n; ++i) out.push_back(h.healthy(i));
  return out;
}

class KubeHealthTest : public ::testing::Test {
 protected:
  std::vector<NodeDevice> node_ = Node();
  Clock::time_point t0_ = Clock::time_point() + seconds(1000);
};

TEST_F(KubeHealthTest, BenignXidIsIgnoredCriticalMarksTheGpu) {
  DeviceHealth h(node_, HealthPolicy{});
  EXPECT_EQ(States(h, 5), (std::vector<bool>{true, true, true, true, true}));
  EXPECT_FALSE(h.OnEvent(Xid(0, 43), t0_));
  EXPECT_TRUE(h.healthy(0));
  EXPECT_EQ(h.generation(), 0u);
  EXPECT_TRUE(h.OnEvent(Xid(0, 79), t0_));
  EXPECT_EQ(States(h, 5), (std::vector<bool>{false, true, true, true, true}));
  EXPECT_EQ(h.generation(), 1u);
  // Again: already unhealthy, nothing changes.
  EXPECT_FALSE(h.OnEvent(Xid(0, 79), t0_ + seconds(1)));
  EXPECT_EQ(h.generation(), 1u);
}

TEST_F(KubeHealthTest, DeviceWideEventOnMigGpuMarksAllItsUnits) {
  DeviceHealth h(node_, HealthPolicy{});
  EXPECT_TRUE(h.OnEvent(Xid(1, 48), t0_));
  EXPECT_EQ(States(h, 5), (std::vector<bool>{true, false, false, false, true}));
}

TEST_F(KubeHealthTest, MigScopedEventMarksOnlyItsInstance) {
  DeviceHealth h(node_, HealthPolicy{});
  EXPECT_TRUE(h.OnEvent(Xid(1, 94, 5), t0_));
  // The MIG device on GI 5 and the whole GPU holding it; GI 3 keeps working.
  EXPECT_EQ(States(h, 5), (std::vector<bool>{true, false, true, false, true}));
  // A GI the plugin does not know: the whole GPU.
  DeviceHealth h2(node_, HealthPolicy{});
  EXPECT_TRUE(h2.OnEvent(Xid(1, 94, 9), t0_));
  EXPECT_EQ(States(h2, 5), (std::vector<bool>{true, false, false, false, true}));
}

TEST_F(KubeHealthTest, OtherVendorsAndUnknownDevices) {
  DeviceHealth h(node_, HealthPolicy{});
  devices::HealthEvent amd = Xid(0, 43);  // code 43 is only an ignored XID for NVIDIA
  amd.vendor = devices::Vendor::kAmd;
  EXPECT_TRUE(h.OnEvent(amd, t0_));
  EXPECT_EQ(States(h, 5), (std::vector<bool>{true, true, true, true, false}));
  EXPECT_FALSE(h.OnEvent(Xid(7, 79), t0_));
}

TEST_F(KubeHealthTest, RecoveryAfterQuietPeriod) {
  HealthPolicy policy;
  policy.recover_after_seconds = 60;
  DeviceHealth h(node_, policy);
  devices::DeviceReading fine;
  h.OnEvent(Xid(0, 79), t0_);
  EXPECT_FALSE(h.Tick(t0_ + seconds(59)));
  EXPECT_FALSE(h.OnReading(devices::Vendor::kNvidia, 0, fine, t0_ + seconds(59)));
  // A new critical event restarts the quiet period.
  h.OnEvent(Xid(0, 79), t0_ + seconds(30));
  EXPECT_FALSE(h.Tick(t0_ + seconds(61)));
  EXPECT_FALSE(h.healthy(0));
  EXPECT_TRUE(h.OnReading(devices::Vendor::kNvidia, 0, fine, t0_ + seconds(90)));
  EXPECT_TRUE(h.healthy(0));
  EXPECT_EQ(h.generation(), 2u);
  h.OnEvent(Xid(0, 79), t0_ + seconds(100));
  EXPECT_TRUE(h.Tick(t0_ + seconds(160)));
  EXPECT_TRUE(h.healthy(0));
}

TEST_F(KubeHealthTest, ZeroRecoverySecondsMeansNever) {
  HealthPolicy policy;
  policy.recover_after_seconds = 0;
  DeviceHealth h(node_, policy);
  h.OnEvent(Xid(0, 79), t0_);
  EXPECT_FALSE(h.Tick(t0_ + seconds(100000)));
  EXPECT_FALSE(h.healthy(0));
}

TEST_F(KubeHealthTest, LostViaReadingAndBack) {
  DeviceHealth h(node_, HealthPolicy{});
  devices::DeviceReading lost;
  lost.lost = true;
  EXPECT_TRUE(h.OnReading(devices::Vendor::kNvidia, 1, lost, t0_));
  EXPECT_EQ(States(h, 5), (std::vector<bool>{true, false, false, false, true}));
  // A lost device does not recover by quiet time alone.
  EXPECT_FALSE(h.Tick(t0_ + seconds(100000)));
  EXPECT_TRUE(h.OnReading(devices::Vendor::kNvidia, 1, devices::DeviceReading{}, t0_ + seconds(1)));
  EXPECT_EQ(States(h, 5), (std::vector<bool>{true, true, true, true, true}));
}

TEST_F(KubeHealthTest, DisabledPolicyKeepsEverythingHealthy) {
  HealthPolicy policy;
  policy.enabled = false;
  DeviceHealth h(node_, policy);
  devices::DeviceReading lost;
  lost.lost = true;
  EXPECT_FALSE(h.OnEvent(Xid(0, 79), t0_));
  EXPECT_FALSE(h.OnReading(devices::Vendor::kNvidia, 0, lost, t0_));
  EXPECT_TRUE(h.healthy(0));
  EXPECT_FALSE(h.healthy(99));  // out of range
}

TEST_F(KubeHealthTest, ConfiguredIgnoredXids) {
  PluginConfig config = testing::Config("health: {ignoredXids: [79]}");
  DeviceHealth h(node_, config.health);
  EXPECT_FALSE(h.OnEvent(Xid(0, 79), t0_));
  EXPECT_TRUE(h.OnEvent(Xid(0, 43), t0_));  // no longer in the (replaced) ignored set
}

TEST_F(KubeHealthTest, ServiceDownOverridesEveryPolicyUntilUp) {
  DeviceHealth h(node_, HealthPolicy{});
  EXPECT_TRUE(h.SetServiceDown({0, 4, 99}, true));  // 99: out of range, ignored
  EXPECT_EQ(States(h, 5), (std::vector<bool>{false, true, true, true, false}));
  EXPECT_FALSE(h.SetServiceDown({0}, true));  // no change
  uint64_t generation = h.generation();
  // A critical XID while the service is down keeps the unit out once the service is back.
  h.OnEvent(Xid(0, 79), t0_);
  EXPECT_TRUE(h.SetServiceDown({0, 4}, false));
  EXPECT_GT(h.generation(), generation);
  EXPECT_EQ(States(h, 5), (std::vector<bool>{false, true, true, true, true}));
  // Health checks disabled: device faults never count, a service that is down still does.
  HealthPolicy off;
  off.enabled = false;
  DeviceHealth disabled(node_, off);
  disabled.SetServiceDown({1}, true);
  EXPECT_FALSE(disabled.healthy(1));
  disabled.SetServiceDown({1}, false);
  EXPECT_TRUE(disabled.healthy(1));
}

}  // namespace
}  // namespace accel::kube
