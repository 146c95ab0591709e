// GPU↔NIC pairing: which RDMA NIC each GPU (or Gaudi/AMD accelerator) should use for
// multi-node training, computed from the topology model's PCI tree alone.
//
// NIC numbering does not follow GPU numbering, so the pairing comes from topology: every pair
// is classified in NCCL's terms (path.h), unusable NICs are excluded by rule, and NICs are
// assigned by a min-cost matching with capacity ceil(G/N) — deterministic, tie-broken by PCI
// address, so every node of a job computes the same answer. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "fabric/nic_ports.h"
#include "fabric/path.h"
#include "topology/host.h"

namespace accel::fabric {

/// An RDMA NIC port as pairing sees it.
struct FabricNic {
  std::string pci_address;  ///< canonical PCI address of the function
  std::string rdma_device;  ///< "mlx5_0"
  int port = 1;             ///< port number used (NCCL_IB_HCA mlx5_0:1)
  std::string netdev;       ///< "ibp24s0"; "" when none
  int numa_node = -1;       ///< NUMA node of the function; -1 unknown
  std::string link_layer;   ///< "InfiniBand", "Ethernet", or "" when unknown
  std::string state;        ///< port state ("ACTIVE", "DOWN"), "" unknown (then assumed usable)
  double rate_gbps = 0;     ///< port rate; 0 unknown
  bool is_vf = false;       ///< an SR-IOV virtual function
  /// Why pairing does not use it, "" when it does: "port DOWN", "link layer Ethernet (want
  /// InfiniBand)", "excluded by --exclude mlx5_1", "storage/management NIC: shares no PCIe
  /// switch with an accelerator while others do", "virtual function of mlx5_0", ...
  std::string excluded;
};

/// One accelerator and the NIC it should use.
struct GpuNicPair {
  std::string gpu_address;  ///< canonical PCI address
  int gpu_index = 0;        ///< index among the host's accelerators in PCI order (CUDA_DEVICE_ORDER=PCI_BUS_ID)
  int numa_node = -1;       ///< the GPU's NUMA node
  int nic = -1;             ///< index into Fabric::nics; -1 when no usable NIC exists
  PathInfo path;            ///< GPU→NIC path (type SYS with nic -1)
};

/// What pairing may use.
struct PairingOptions {
  /// Accelerator addresses to pair (canonical or short "1b:00.0"); empty = all of the host.
  std::vector<std::string> gpus;
  /// Wanted link layer: "" (take the most common among usable NICs; NCCL refuses to mix),
  /// "InfiniBand", or "Ethernet" (RoCE).
  std::string link_layer;
  /// NICs never used: RDMA device names, netdev names or PCI addresses.
  std::vector<std::string> exclude;
  /// Keep NICs that share no PCIe switch with an accelerator even when other NICs do (by
  /// default, on machines where some NICs sit beside GPUs, the others are storage/management).
  bool keep_unswitched = false;
  /// Use SR-IOV virtual functions as NICs (inside a pod or VM they are all there is; on a host,
  /// pairing is by physical function).
  bool include_vfs = false;
};

/// The pairing of one host.
struct Fabric {
  std::vector<std::string> gpus;   ///< accelerator addresses, PCI order
  std::vector<FabricNic> nics;     ///< every RDMA port found, PCI order, excluded ones included
  std::vector<GpuNicPair> pairs;   ///< one per entry of gpus (same order)
  /// (gpus.size() + nics.size())² matrix, row-major, GPUs first then NICs: the path of
  /// every pair, for `accel fabric matrix`.
  std::vector<PathInfo> matrix;
  /// Facts an operator should know: "GPU 0000:1b:00.0: NUMA node unknown, path to NICs
  /// treated as SYS", "4 NICs for 8 GPUs: each NIC serves 2 GPUs".
  std::vector<std::string> notes;

  /// The NICs pairs use, each once, PCI order (what NCCL_IB_HCA lists).
  std::vector<const FabricNic*> UsedNics() const;
};

/// Pairs the accelerators of `host` with its RDMA NICs. `ports` is ReadNicPorts' result for the
/// same machine, or empty when unknown (an hwloc XML or JSON topology): then every port of
/// every RDMA device in the tree is assumed ACTIVE with unknown link layer.
/// Cost of a pair, compared lexicographically: (path type, −bandwidth, hops, NIC address);
/// the assignment minimises the sum over GPUs (exact, fabric/matching.h; ~60 µs at 8×12), each
/// NIC serving at most ceil(G/N) GPUs. Throws accel::InputError when a requested GPU address
/// is not an accelerator of `host`; a host without usable NICs is not an error (pairs have
/// nic -1 and a note says why).
Fabric PairGpusWithNics(const topology::HostTopology& host, const std::vector<NicPort>& ports,
                        const PairingOptions& options = {});

}  // namespace accel::fabric
