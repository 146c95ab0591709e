// accel fabric: GPU↔NIC pairing and what multi-node training needs from it.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/fabric_common.h"
#include "cli/table.h"
#include "common/error.h"
#include "common/yaml_out.h"
#include "devices/interconnect.h"
#include "devices/nvml_links.h"
#include "fabric/fabric_json.h"
#include "fabric/pairing.h"

namespace accel::cli {

namespace {

struct MatrixOptions {
  FabricInputs inputs;
  bool nccl = false;
  /// NVML to read NVLink peers from; "" = libnvidia-ml.so.1 for a live topology, none otherwise.
  std::string nvml_library;
};

// NVLink counts between the GPUs (n×n, row-major; all zero when NVML cannot say), so GPU pairs
// read "NV18" as in nvidia-smi. The PCI tree has no NVLink: only the vendor library knows.
std::vector<int> NvlinkCounts(const topology::HostTopology& host, const fabric::Fabric& f,
                              const MatrixOptions& o) {
  std::string library = o.nvml_library;
  if (library.empty() && o.inputs.topology == "live") library = "libnvidia-ml.so.1";
  if (library.empty() || f.gpus.empty()) return std::vector<int>(f.gpus.size() * f.gpus.size());
  devices::Interconnect ic = devices::PcieInterconnect(host, f.gpus);
  devices::AddPeerLinks(ic, devices::ReadNvmlPeerLinks(library, f.gpus));
  return ic.links;
}

struct PairsOptions {
  FabricInputs inputs;
  std::string output = "table";
};

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string NicLabel(const fabric::FabricNic& nic) {
  return nic.rdma_device + (nic.port != 1 ? ":" + std::to_string(nic.port) : "");
}

std::string CpuAffinity(const topology::HostTopology& host, int numa) {
  int at = numa >= 0 ? host.NodeIndex(numa) : -1;
  return at >= 0 ? host.numa_nodes[at].cpus.ToString() : "N/A";
}

// `nvidia-smi topo -m`'s layout: one row and column per GPU and NIC, then the legends.
std::string RenderMatrix(const topology::HostTopology& host, const fabric::Fabric& f, bool nccl,
                         const std::vector<int>& nvlinks) {
  size_t G = f.gpus.size(), E = G + f.nics.size();
  std::vector<std::string> names;
  for (size_t g = 0; g < G; ++g) names.push_back("GPU" + std::to_string(f.pairs[g].gpu_index));
  for (size_t n = 0; n < f.nics.size(); ++n) names.push_back("NIC" + std::to_string(n));

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{""};
  header.insert(header.end(), names.begin(), names.end());
  header.push_back("CPU Affinity");
  header.push_back("NUMA Affinity");
  rows.push_back(header);
  for (size_t i = 0; i < E; ++i) {
    std::vector<std::string> row{names[i]};
    for (size_t j = 0; j < E; ++j) {
      const fabric::PathInfo& p = f.matrix[i * E + j];
      int links = i < G && j < G ? nvlinks[i * G + j] : 0;
      if (i != j && links > 0) {
        row.push_back(nccl ? "NVL" : "NV" + std::to_string(links));
        continue;
      }
      row.push_back(i == j ? "X" : nccl ? fabric::PathTypeName(p.type) : p.smi);
    }
    if (i < G) {
      int numa = f.pairs[i].numa_node;
      row.push_back(CpuAffinity(host, numa));
      row.push_back(numa >= 0 ? std::to_string(numa) : "N/A");
    }
    rows.push_back(row);
  }

  std::string out = FormatTable(rows) + "\nLegend:\n\n  X    = Self\n";
  if (nccl) {
    out +=
        "  SYS  = across the socket interconnect (UPI, xGMI), or NUMA node unknown\n"
        "  PHB  = through a CPU root complex of one NUMA node (nvidia-smi PHB or NODE)\n"
        "  PXB  = through several PCIe switches, no host bridge\n"
        "  PIX  = through at most one PCIe switch (Broadcom two-level switches count as one)\n"
        "  NVL  = NVLink, direct or through NVSwitch (read from NVML)\n"
        "  NCCL uses GPUDirect RDMA up to NCCL_NET_GDR_LEVEL, PXB by default.\n";
  } else {
    out +=
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
        "(e.g., QPI/UPI)\n"
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
        "Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
        "Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n";
  }
  bool any_nvlink = false;
  for (int links : nvlinks) any_nvlink = any_nvlink || links > 0;
  if (!any_nvlink && f.gpus.size() > 1) {
    out += "  (no NVLink reported: GPU pairs show their PCIe path; NVLink counts come from NVML,\n"
           "   on a live host or with --nvml-library)\n";
  }
  if (!f.nics.empty()) {
    out += "\nNIC Legend:\n\n";
    for (size_t n = 0; n < f.nics.size(); ++n) {
      out += "  NIC" + std::to_string(n) + ": " + NicLabel(f.nics[n]);
      if (!f.nics[n].excluded.empty()) out += "  (not used: " + f.nics[n].excluded + ")";
      out += "\n";
    }
  }
  return out;
}

std::string RenderPairsTable(const fabric::Fabric& f) {
  std::vector<std::vector<std::string>> rows{
      {"GPU", "PCI", "NUMA", "NIC", "NIC PCI", "NETDEV", "NCCL", "SMI", "BW GB/s"}};
  for (const fabric::GpuNicPair& p : f.pairs) {
    std::vector<std::string> row{std::to_string(p.gpu_index), p.gpu_address,
                                 p.numa_node >= 0 ? std::to_string(p.numa_node) : "-"};
    if (p.nic >= 0) {
      const fabric::FabricNic& nic = f.nics[p.nic];
      row.insert(row.end(), {nic.rdma_device + ":" + std::to_string(nic.port), nic.pci_address,
                             nic.netdev.empty() ? "-" : nic.netdev,
                             fabric::PathTypeName(p.path.type), p.path.smi,
                             p.path.bandwidth_gbs > 0 ? Number(p.path.bandwidth_gbs) : "-"});
    } else {
      row.insert(row.end(), {"-", "-", "-", "-", "-", "-"});
    }
    rows.push_back(row);
  }
  std::string out = FormatTable(rows);
  std::vector<std::vector<std::string>> excluded{{"NIC", "PCI", "REASON"}};
  for (const fabric::FabricNic& nic : f.nics) {
    if (nic.excluded.empty()) continue;
    excluded.push_back({nic.rdma_device + ":" + std::to_string(nic.port), nic.pci_address,
                        nic.excluded});
  }
  if (excluded.size() > 1) out += "\nExcluded NICs:\n" + FormatTable(excluded);
  if (!f.notes.empty()) {
    out += "\nNotes:\n";
    for (const std::string& note : f.notes) out += "  - " + note + "\n";
  }
  return out;
}

int RunMatrix(const MatrixOptions& o) {
  topology::HostTopology host;
  fabric::Fabric f = LoadFabric(o.inputs, &host);
  std::cout << RenderMatrix(host, f, o.nccl, NvlinkCounts(host, f, o));
  std::cout.flush();
  return kExitOk;
}

int RunPairs(const PairsOptions& o) {
  fabric::Fabric f = LoadFabric(o.inputs, nullptr);
  if (o.output == "table") {
    std::cout << RenderPairsTable(f);
  } else {
    nlohmann::ordered_json j = fabric::FabricToJson(f);
    std::cout << (o.output == "yaml" ? ToYaml(j) : j.dump(2) + "\n");
  }
  std::cout.flush();
  return kExitOk;
}

void RegisterMatrix(CLI::App* fabric, int* exit_code) {
  auto o = std::make_shared<MatrixOptions>();
  CLI::App* cmd = fabric->add_subcommand(
      "matrix",
      "Print the path between every pair of GPUs and RDMA NICs, laid out like\n"
      "`nvidia-smi topo -m` (PIX, PXB, PHB, NODE, SYS), with CPU and NUMA affinity,\n"
      "the legend and a NIC legend. --nccl prints NCCL's path types instead: NCCL merges\n"
      "each PCIe switch into one node, flattens Broadcom two-level switches and calls\n"
      "nvidia-smi's NODE PHB, so an HGX board's PXB can be NCCL's PIX.\n\n"
      "Examples:\n"
      "  accel fabric matrix                                  # this machine\n"
      "  accel fabric matrix --nccl                           # NCCL's view (what GDR uses)\n"
      "  accel fabric matrix -t fixtures/hosts/hgx-h100.json  # a saved host\n"
      "  accel fabric matrix -t host.json --root /tmp/sysfs   # ports from a sysfs copy\n"
      "  accel fabric matrix -t host.json --nvml-library /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n\n"
      "Exit status: 0 printed; 2 bad input (topology file, --gpus, --root).");
  AddFabricInputOptions(cmd, &o->inputs);
  cmd->add_flag("--nccl", o->nccl, "print NCCL's path types (LOC, PIX, PXB, PHB, SYS)");
  cmd->add_option("--nvml-library", o->nvml_library,
                  "NVML to read NVLink/NVSwitch links from (GPU pairs print NV#); default "
                  "libnvidia-ml.so.1 with a live topology, none with a file");
  cmd->callback([o, exit_code] { *exit_code = RunMatrix(*o); });
}

void RegisterPairs(CLI::App* fabric, int* exit_code) {
  auto o = std::make_shared<PairsOptions>();
  CLI::App* cmd = fabric->add_subcommand(
      "pairs",
      "Pair each GPU with the RDMA NIC it should use for multi-node training, by topology,\n"
      "never by index: NICs that are down, of another link layer, excluded, VFs, or\n"
      "storage/management NICs (outside every GPU's PCIe switch while others sit beside the\n"
      "GPUs) are left out, then an exact min-cost assignment picks, per GPU, the closest\n"
      "path type, then the widest PCIe path, then fewest hops, then the lowest NIC address;\n"
      "with fewer NICs than GPUs each NIC serves ceil(GPUs/NICs). Every node of a job with\n"
      "the same hardware computes the same answer.\n\n"
      "Examples:\n"
      "  accel fabric pairs                                   # this machine\n"
      "  accel fabric pairs -t fixtures/hosts/hgx-h100.json   # a saved host, all ports up\n"
      "  accel fabric pairs --gpus 1b:00.0,43:00.0 -o json    # the GPUs of one pod\n"
      "  accel fabric pairs --link-layer Ethernet --exclude mlx5_1,mlx5_2\n"
      "  accel fabric pairs -o yaml --root /host              # ports from a mounted /sys\n\n"
      "Exit status: 0 printed (also when no NIC is usable: see the notes); 2 bad input.");
  AddFabricInputOptions(cmd, &o->inputs);
  cmd->add_option("-o,--output", o->output, "output format: table, json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}))
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = RunPairs(*o); });
}

}  // namespace

void RegisterFabric(CLI::App& app, int* exit_code) {
  CLI::App* fabric = app.add_subcommand("fabric", "GPU<->NIC pairing for multi-node training");
  fabric->require_subcommand(1);
  RegisterMatrix(fabric, exit_code);
  RegisterPairs(fabric, exit_code);
  RegisterFabricOutputs(fabric, exit_code);
}

}  // namespace accel::cli
