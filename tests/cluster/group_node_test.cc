// What a node group's device plugins advertise on its nodes (cluster/group_node.h): the vendor's
// resource per guest cell, MIG under the single and mixed strategies, time-slicing replicas,
// RDMA resources, and the errors for MIG configs accel does not know.
#include "cluster/group_node.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "kubelet/test_guests.h"

namespace accel::cluster {
namespace group_node_test {

using kubelet::test_guests::Guest;

TEST(AdvertisedResources, FollowTheGroupsStack) {
  ClusterTemplate t;
  t.source = "t.yaml";
  NodeGroup g;
  g.name = "gpu-a";
  g.vendor = Vendor::kNvidia;
  g.stack = Stack::kOperator;
  t.groups = {g};
  kubelet::GuestLayout layout = Guest(2, 4, 1, 8192, {0, 0, 1, -1});
  kubelet::GuestDevice nic;
  nic.alias = "cx7";
  nic.role = topology::PciRole::kNic;
  nic.rdma = true;
  nic.guest_cell = 1;
  layout.devices.push_back(nic);

  std::vector<kubelet::NodeResource> r = AdvertisedResources(t, t.groups[0], layout);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].name, "nvidia.com/gpu");
  EXPECT_EQ(r[0].per_cell, (std::vector<int>{2, 1}));
  EXPECT_EQ(r[0].without_cell, 1);

  // MIG all-1g.10gb on H100 (7 instances) under strategy single, time-sliced 2 ways, renamed.
  t.groups[0].sharing.mig = "all-1g.10gb";
  t.groups[0].sharing.time_slicing = ReplicaSharing{2, true, true};
  t.groups[0].network.rdma = RdmaMode::kSriov;
  r = AdvertisedResources(t, t.groups[0], layout);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "nvidia.com/gpu.shared");
  EXPECT_EQ(r[0].per_cell, (std::vector<int>{28, 14}));
  EXPECT_EQ(r[0].max_per_container, 1);
  EXPECT_EQ(r[1].name, "nvidia.com/gpu_a_rdma");
  EXPECT_EQ(r[1].per_cell, (std::vector<int>{0, 1}));

  // all-balanced forces mixed: one resource per profile.
  t.groups[0].sharing = Sharing{};
  t.groups[0].sharing.mig = "all-balanced";
  t.groups[0].network.rdma = RdmaMode::kShared;
  r = AdvertisedResources(t, t.groups[0], layout);
  std::map<std::string, std::vector<int>> by_name;
  for (const kubelet::NodeResource& x : r) by_name[x.name] = x.per_cell;
  EXPECT_EQ(by_name["nvidia.com/mig-1g.10gb"], (std::vector<int>{4, 2}));
  EXPECT_EQ(by_name["nvidia.com/mig-2g.20gb"], (std::vector<int>{2, 1}));
  EXPECT_EQ(by_name["nvidia.com/mig-3g.40gb"], (std::vector<int>{2, 1}));
  ASSERT_TRUE(by_name.count("rdma/gpu_a_shared"));
  for (const kubelet::NodeResource& x : r)
    if (x.name == "rdma/gpu_a_shared") {
      EXPECT_FALSE(x.aligned());
      EXPECT_EQ(x.total(), 63);
    }

  t.groups[0].sharing.mig = "my-custom-layout";
  EXPECT_THROW(AdvertisedResources(t, t.groups[0], layout), InputError);
  // Devices of another vendor have no plugin on an AMD group.
  t.groups[0].sharing = Sharing{};
  t.groups[0].vendor = Vendor::kAmd;
  t.groups[0].network.rdma = RdmaMode::kNone;
  EXPECT_TRUE(AdvertisedResources(t, t.groups[0], layout).empty());
}

}  // namespace group_node_test
}  // namespace accel::cluster
