// Choosing PCI devices for a guest's PCI requests under Nova's NUMA affinity policies.
//
// A DevicePool holds the free host devices that match at least one request. Given the host
// nodes S the guest's cells occupy, it decides whether every request can get its count of
// distinct devices, and which. Eligible, as Nova's PciDeviceStats._filter_pools_for_numa_cells
// (nova/pci/stats.py) decides for a guest with a NUMA topology:
//   - required:  devices on S;
//   - legacy:    devices on S or of unknown NUMA node (topology::PciDevice::numa_node < 0);
//   - socket:    devices on S or on a node of a package that holds a node of S — never devices
//                of unknown node; and only S when some node of the host has no single package
//                (NumaNode::package -1: Nova's NUMACell.socket None, and Nova then drops the
//                socket fallback for the whole host);
//   - preferred: any device.
// A guest without NUMA topology (`floating`) may take any device, whatever the policy. Nova uses
// only local devices when they are enough and widens otherwise; a count decides the same, so the
// pool simply prefers: local devices first, then devices of unknown NUMA node, then same-socket,
// then remote; among equals round-robin over nodes (so a guest spanning nodes gets a device per
// cell), then in address order. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/small_vector.h"
#include "placement/node_view.h"
#include "placement/request.h"
#include "topology/host.h"

namespace accel::placement {

/// Whether `dev` matches one alias entry (vendor, product, device type).
bool SpecMatches(const PciSpec& spec, const topology::PciDevice& dev);

/// One device DevicePool::Choose hands to a request.
struct ChosenDevice {
  int request = 0;                               ///< index into the requests
  const topology::PciDevice* device = nullptr;   ///< the host's device (owned by the topology)
};
/// Devices chosen for every request: grouped by request ascending, each group in address
/// (host.pci) order. Inline up to 16 devices, so a typical Choose allocates nothing.
using DeviceChoice = SmallVector<ChosenDevice, 16>;

class DevicePool {
 public:
  /// Keeps references to `nodes` and `requests`: both must outlive the pool.
  DevicePool(const topology::HostTopology& host, const HostUsage& usage,
             const std::vector<NodeView>& nodes, const std::vector<PciRequest>& requests);

  /// Chooses devices for every request when the guest's cells sit on the nodes marked in
  /// `on_node` (non-zero entries; indexed like HostTopology::numa_nodes, one entry per node). `floating` = the
  /// guest has no NUMA topology, so every device is eligible. Returns true and, when `chosen`
  /// is not null, fills it (see DeviceChoice) on success; false when some request cannot get
  /// its count.
  bool Choose(std::span<const uint8_t> on_node, bool floating, DeviceChoice* chosen) const;

  /// Node indexes whose devices matter for a policy that restricts locality (required,
  /// legacy, socket): nodes holding a matching free device, widened to whole packages for
  /// socket (when every node has a package). Ascending.
  SmallVector<int, 16> ConstrainingNodes() const;
  /// Free matching devices on node index `node` (-1: devices of unknown node) for any request.
  int DevicesOnNode(int node) const { return per_node_[node + 1]; }
  /// Free devices matching request `r`, all nodes together.
  int MatchingCount(size_t r) const { return match_begin_[r + 1] - match_begin_[r]; }
  /// True when a request needs devices and some policy restricts where they come from.
  bool Constrains() const { return constrains_; }
  /// Slots of requests whose policy restricts locality (for counting bounds).
  int ConstrainedSlots() const { return constrained_slots_; }
  /// True when any request uses the socket policy.
  bool HasSocketPolicy() const { return has_socket_; }

 private:
  struct Candidate {
    const topology::PciDevice* dev;
    int node;  // index into numa_nodes, -1 unknown
  };
  int Rank(const PciRequest& req, int node, std::span<const uint8_t> on_node, bool floating,
           std::span<const uint8_t> on_package) const;

  const std::vector<NodeView>& nodes_;
  const std::vector<PciRequest>& requests_;
  SmallVector<Candidate, 16> candidates_;  // free devices matching some request, by address
  // Per request r: candidate indexes match_[match_begin_[r] .. match_begin_[r + 1]), ascending.
  SmallVector<int, 16> match_;
  SmallVector<int, 8> match_begin_;
  SmallVector<int, 16> per_node_;  // [node + 1]: candidates on that node (0: unknown node)
  int constrained_slots_ = 0;
  bool constrains_ = false;
  bool has_socket_ = false;
  bool packages_known_ = true;  // every node has a package: the socket policy may look past S
};

}  // namespace accel::placement
