// What every `accel fabric` subcommand reads first: a topology (--topology), the RDMA ports of
// the machine (--root), and the pairing options (--gpus, --link-layer, --exclude, ...), turned
// into a fabric::Fabric by one call. Sharing this keeps the flags and their meaning identical
// across `fabric matrix|pairs|env|pod|topo-xml|netconf`. Not thread-safe (CLI setup only).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "fabric/pairing.h"
#include "topology/host.h"

namespace accel::cli {

/// The raw flag values of the shared fabric options, as typed on the command line.
struct FabricInputs {
  std::string topology = "live";  ///< --topology: "live", an hwloc XML or accel host JSON
  /// --root: filesystem root under which sys/class/infiniband is read (port state, link layer,
  /// rate, netdev). Used only when `topology` is "live" or when set explicitly; "" = not set.
  std::string root;
  std::string gpus;        ///< --gpus: comma-separated accelerator addresses; "" = all
  std::string link_layer;  ///< --link-layer: "", "IB"/"InfiniBand", "Ethernet"/"RoCE"/"Eth"
  std::string exclude;     ///< --exclude: comma-separated RDMA devices, netdevs or addresses
  bool keep_unswitched = false;  ///< --keep-unswitched (see PairingOptions)
  bool include_vfs = false;      ///< --include-vfs (see PairingOptions)
};

/// Adds --topology/-t, --root, --gpus, --link-layer, --exclude, --keep-unswitched and
/// --include-vfs to `cmd`, writing into `*inputs` (which must outlive `cmd`'s parsing).
void AddFabricInputOptions(CLI::App* cmd, FabricInputs* inputs);

/// Converts the flags into PairingOptions. Throws accel::InputError (where "--link-layer")
/// for an unknown link layer.
fabric::PairingOptions ToPairingOptions(const FabricInputs& inputs);

/// Loads the topology, reads the NIC ports (ReadNicPorts of --root, default "/" for a live
/// topology; none for a file topology unless --root is given) and pairs. Stores the topology
/// in *host_out when non-null. Throws accel::InputError for a bad topology, an unknown GPU
/// address or a bad flag; the caller prints it and exits 2.
fabric::Fabric LoadFabric(const FabricInputs& inputs, topology::HostTopology* host_out);

}  // namespace accel::cli
