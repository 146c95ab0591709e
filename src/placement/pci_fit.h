// Choosing PCI devices for a guest's PCI requests under Nova's NUMA affinity policies.
//
// A DevicePool holds the free host devices that match at least one request. Given the host
// nodes the guest's cells occupy, it decides whether every request can get its count of
// distinct devices, and which: local devices first, then devices of unknown NUMA node, then
// same-socket, then remote; among equals round-robin over nodes (so a guest spanning nodes gets
// a device per cell), then in address order. Immutable after construction; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "placement/node_view.h"
#include "placement/request.h"
#include "topology/host.h"

namespace accel::placement {

/// Whether `dev` matches one alias entry (vendor, product, device type).
bool SpecMatches(const PciSpec& spec, const topology::PciDevice& dev);

class DevicePool {
 public:
  DevicePool(const topology::HostTopology& host, const HostUsage& usage,
             const std::vector<NodeView>& nodes, const std::vector<PciRequest>& requests);

  /// Chooses devices for every request when the guest's cells sit on the nodes marked in
  /// `on_node` (indexed like HostTopology::numa_nodes). `floating` = the guest has no NUMA
  /// topology, so every device is eligible. Returns true and fills *chosen (one list of device
  /// addresses per request) on success; false when some request cannot get its count.
  bool Choose(const std::vector<bool>& on_node, bool floating,
              std::vector<std::vector<const topology::PciDevice*>>* chosen) const;

  /// Node indexes whose devices matter for a policy that restricts locality (required,
  /// legacy, socket): nodes holding a matching free device, widened to whole packages for
  /// socket. Ascending.
  std::vector<int> ConstrainingNodes() const;
  /// Free matching devices on node index `node` for any request.
  int DevicesOnNode(int node) const;
  /// Free devices matching request `r`, all nodes together.
  int MatchingCount(size_t r) const;
  /// True when a request needs devices and some policy restricts where they come from.
  bool Constrains() const;
  /// Slots of requests whose policy restricts locality (for counting bounds).
  int ConstrainedSlots() const;
  /// True when any request uses the socket policy.
  bool HasSocketPolicy() const;

 private:
  struct Candidate {
    const topology::PciDevice* dev;
    int node;  // index into numa_nodes, -1 unknown
  };
  int Rank(const PciRequest& req, int node, const std::vector<bool>& on_node, bool floating,
           const std::vector<bool>& on_package) const;

  const std::vector<NodeView>& nodes_;
  const std::vector<PciRequest>& requests_;
  std::vector<Candidate> candidates_;           // free devices matching some request, by address
  std::vector<std::vector<int>> matches_;       // per request: candidate indexes
};

}  // namespace accel::placement
