// RDMA ports as Linux reports them: state, link layer and rate of every port of every RDMA
// device under ROOT/sys/class/infiniband. These change at run time (a cable, a subnet manager),
// so they are read here, next to their one use, rather than kept in the topology model.
// Plain functions; safe from any thread.
#pragma once

#include <string>
#include <vector>

namespace accel::fabric {

/// One port of one RDMA device.
struct NicPort {
  std::string rdma_device;   ///< e.g. "mlx5_0"
  int port = 1;              ///< 1-based port number
  std::string pci_address;   ///< canonical address of the device's PCI function; "" unknown
  std::string state;         ///< "ACTIVE", "DOWN", "INIT", "ARMED", ...; "" unknown
  std::string phys_state;    ///< "LinkUp", "Disabled", "Polling", ...; "" unknown
  std::string link_layer;    ///< "InfiniBand" or "Ethernet"; "" unknown
  double rate_gbps = 0;      ///< port rate in Gb/s (400 for NDR); 0 unknown
  std::string netdev;        ///< the port's network interface (IPoIB or RoCE); "" none
  bool roce_v2_gid = false;  ///< Ethernet ports: a "RoCE v2" GID exists (gid_attrs/types/*)
  std::string physfn;        ///< SR-IOV virtual function: its PF's canonical address; "" otherwise

  bool active() const { return state == "ACTIVE"; }
};

/// Returns every port under ROOT/sys/class/infiniband, sorted by (rdma_device, port), names
/// in natural order (mlx5_2 before mlx5_10). A missing directory gives an empty list (no RDMA
/// stack); an unreadable attribute leaves its field empty. Never throws for missing files.
/// The PCI address is the last component of realpath(DEV/device), as NCCL takes it; the
/// netdev is the port's first gid_attrs/ndevs entry, else the DEV/device/net/* interface
/// whose dev_port is port-1, else the only one.
std::vector<NicPort> ReadNicPorts(const std::string& root);

}  // namespace accel::fabric
