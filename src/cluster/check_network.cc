// network.rdma against the devices the flavor passes through.
#include <algorithm>
#include <string>

#include "cluster/check_internal.h"

namespace accel::cluster::check_internal {

void Checker::CheckNetwork(const GroupState& s) {
  const NodeGroup& g = *s.group;
  if (g.network.rdma == RdmaMode::kNone) return;
  const bool any = std::any_of(s.plan->layout.devices.begin(), s.plan->layout.devices.end(),
                               [](const kubelet::GuestDevice& d) { return d.rdma; });
  if (any) return;
  Add(Warning("network", g.name, GroupKey(s.index) + ".network.rdma",
              "rdma is " + std::string(RdmaModeName(g.network.rdma)) + " but flavor " + g.flavor_name +
                  " passes through no RDMA device: the " +
                  (g.network.rdma == RdmaMode::kSriov ? "SR-IOV" : "RDMA shared") +
                  " device plugin finds nothing unless the VMs get RDMA NICs another way (Neutron ports with "
                  "vnic_type direct)",
              "add an RDMA NIC or VF alias to the flavor (e.g. pci_passthrough:alias cx7-vf:1), give the nodes "
              "direct ports, or set network.rdma: none"));
}

}  // namespace accel::cluster::check_internal
