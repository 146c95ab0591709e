#include "cli/fabric_common.h"

#include <filesystem>

#include "common/error.h"
#include "common/strings.h"
#include "fabric/nic_ports.h"
#include "topology/sources.h"

namespace accel::cli {

void AddFabricInputOptions(CLI::App* cmd, FabricInputs* inputs) {
  cmd->add_option("--topology,-t", inputs->topology,
                  "'live' (this machine), an hwloc XML export, accel host JSON, or a copied "
                  "sysfs root (sysfs:DIR)")
      ->capture_default_str();
  cmd->add_option("--root", inputs->root,
                  "filesystem root to read RDMA ports from (ROOT/sys/class/infiniband: state, "
                  "link layer, rate, netdev); default / with a live topology; with a file "
                  "topology and no --root, every RDMA port counts as up");
  cmd->add_option("--gpus", inputs->gpus,
                  "comma-separated accelerator PCI addresses to pair (0000:1b:00.0 or "
                  "1b:00.0); default all");
  cmd->add_option("--link-layer", inputs->link_layer,
                  "IB or Ethernet (RoCE); default the most common among usable NICs, as NCCL "
                  "cannot mix them");
  cmd->add_option("--exclude", inputs->exclude,
                  "comma-separated NICs never to use: RDMA devices (mlx5_1, mlx5_1:2), netdevs "
                  "or PCI addresses");
  cmd->add_flag("--keep-unswitched", inputs->keep_unswitched,
                "keep NICs outside every accelerator's PCIe switch (by default they are taken "
                "for storage/management NICs when other NICs sit beside the GPUs)");
  cmd->add_flag("--include-vfs", inputs->include_vfs,
                "pair SR-IOV virtual functions too (inside a pod or VM)");
}

fabric::PairingOptions ToPairingOptions(const FabricInputs& inputs) {
  fabric::PairingOptions options;
  options.gpus = SplitList(inputs.gpus);
  options.exclude = SplitList(inputs.exclude);
  options.keep_unswitched = inputs.keep_unswitched;
  options.include_vfs = inputs.include_vfs;
  std::string l;
  for (char c : inputs.link_layer) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l.empty()) {
    options.link_layer = "";
  } else if (l == "ib" || l == "infiniband") {
    options.link_layer = "InfiniBand";
  } else if (l == "eth" || l == "ethernet" || l == "roce") {
    options.link_layer = "Ethernet";
  } else {
    throw InputError("command line", "--link-layer",
                     "unknown link layer '" + inputs.link_layer + "'",
                     "use IB (InfiniBand) or Ethernet (RoCE)");
  }
  return options;
}

fabric::Fabric LoadFabric(const FabricInputs& inputs, topology::HostTopology* host_out) {
  fabric::PairingOptions options = ToPairingOptions(inputs);
  std::string root = inputs.root;
  if (!root.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) {
      throw InputError("command line", "--root", "'" + root + "' is not a directory",
                       "give the directory that holds sys/class/infiniband, e.g. /");
    }
  } else if (inputs.topology == "live") {
    root = "/";
  }
  topology::HostTopology host = topology::LoadTopology(inputs.topology);
  std::vector<fabric::NicPort> ports;
  if (!root.empty()) ports = fabric::ReadNicPorts(root);
  fabric::Fabric result = fabric::PairGpusWithNics(host, ports, options);
  if (host_out) *host_out = std::move(host);
  return result;
}

}  // namespace accel::cli
