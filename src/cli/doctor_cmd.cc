// accel doctor: what on this host blocks GPUDirect RDMA, training, or the flavors.
//
// The host is read with the sysfs source from --root (default "/"), never hwloc: the checks read
// their evidence from the same root, so the topology and the evidence always describe the same
// machine — this host, a fake tree in tests, or a copy of another host's /sys and /proc from a
// support case — and the command needs nothing beyond sysfs (no hwloc XML parsing in a child).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/error.h"
#include "doctor/doctor.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "topology/sysfs_source.h"
#include "tuning/flavor_set.h"

namespace accel::cli {

namespace {

struct DoctorCliOptions {
  std::string role = "bare-metal";
  std::string flavors;
  std::string aliases;
  std::string root = "/";
  std::string gdr_level;
  std::string output = "text";
  bool verbose = false;
};

int RunDoctorCommand(const DoctorCliOptions& o) {
  doctor::DoctorOptions d;
  d.root = o.root;
  if (!doctor::ParseRole(o.role, &d.role))
    throw InputError("--role", "", "unknown role \"" + o.role + "\"",
                     "use bare-metal, hypervisor or k8s-node");
  d.gdr_level = o.gdr_level;
  doctor::CheckGdrLevel(d.gdr_level);  // before anything is read: bad flags answer at once
  if (!o.flavors.empty()) {
    tuning::FlavorSet set = tuning::LoadFlavorSet(o.flavors, o.aliases);
    d.flavors = std::move(set.flavors);
    d.aliases = std::move(set.aliases);
  } else if (!o.aliases.empty()) {
    d.aliases = placement::LoadPciAliases(o.aliases);
  }
  topology::HostTopology host = topology::LoadSysfsHost(o.root);
  doctor::CheckDoctorOptions(host, d);
  doctor::DoctorReport report = doctor::RunDoctor(host, d);
  std::cout << (o.output == "json" ? doctor::RenderDoctorJson(report)
                                   : doctor::RenderDoctorText(report, o.verbose));
  std::cout.flush();
  return doctor::DoctorExitCode(report);
}

}  // namespace

void RegisterDoctor(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<DoctorCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check this host's readiness for GPUDirect RDMA, multi-node training and accelerator\n"
      "flavors. The checks read /sys and /proc, show what they read and print the exact fix; most\n"
      "run unprivileged (ACS needs root and says so). One check asks NVML when it is there:\n"
      "HOST-09 reads persistence mode (nvmlDeviceGetPersistenceMode) when no nvidia-persistenced\n"
      "socket exists; without NVML (or with --root) it judges from the socket alone.\n\n"
      "Checks (docs/doctor.md): GDR-01 peer memory (nvidia_peermem / DMA-BUF), GDR-02 GPU-NIC\n"
      "PCIe distance vs NCCL_NET_GDR_LEVEL, GDR-03 IOMMU mode, GDR-04 ACS on GPU-NIC bridges,\n"
      "GDR-05 PCIe link training, GDR-06 RDMA ports, GDR-07 MaxReadReq/MaxPayload/relaxed\n"
      "ordering (root), GDR-08 BAR1, GDR-09 pod plumbing (k8s-node: memlock, uverbs, /dev/shm),\n"
      "GDR-10 NVSwitch fabric manager, HOST-01 hugepages vs flavors, HOST-02 isolcpus/nohz_full/\n"
      "irqaffinity, HOST-03 NUMA balancing, HOST-04 THP, HOST-05 governor, HOST-06 C-states,\n"
      "HOST-07 IRQ affinity, HOST-08 device NUMA nodes, HOST-09 driver binding/persistenced,\n"
      "HOST-10 tuned profile, HOST-11 SR-IOV VFs. KUBE-01..05 (k8s-node): the kubelet's --config file\n"
      "and --config-dir drop-ins against this node's NUMA nodes, CPUs, hugepage pools and devices.\n\n"
      "Examples:\n"
      "  accel doctor                                   # a bare-metal training node\n"
      "  sudo accel doctor --verbose                    # everything, incl. ACS (root-only reads)\n"
      "  accel doctor --role hypervisor --flavors examples/flavors   # a flavor host: IOMMU on,\n"
      "                                                 # hugepages and isolated CPUs per node\n"
      "  accel doctor --role k8s-node -o json           # for a DaemonSet or fleet report\n"
      "  accel doctor --role k8s-node --root /host -o json   # the doctor Job: kubelet + node\n"
      "  accel doctor --root /tmp/host-sosreport        # another host's copied /sys and /proc\n"
      "  accel doctor --gdr-level PHB                   # as NCCL_NET_GDR_LEVEL=PHB would judge\n\n"
      "Exit status: 0 nothing worse than info; 1 warnings; 4 failures (GPUDirect RDMA or the\n"
      "flavors will not work); 2 bad input (flag, flavor file, --root without sys/);\n"
      "3 internal error.");
  cmd->add_option("--role", opts->role,
                  "what the host is for: bare-metal (training node), hypervisor (flavor host, "
                  "VMs with passthrough), k8s-node")
      ->check(CLI::IsMember({"bare-metal", "hypervisor", "k8s-node"}))
      ->capture_default_str();
  cmd->add_option("--flavors", opts->flavors,
                  "flavor file or directory (YAML/JSON, as accel place reads them) the host must "
                  "fit: hugepages per node, isolated CPUs, VFs; aliases*.json in the directory "
                  "are PCI aliases");
  cmd->add_option("--aliases", opts->aliases,
                  "PCI alias file for the flavors' pci_passthrough:alias (default: aliases* in "
                  "--flavors DIR, else by accelerator kind)");
  cmd->add_option("--root", opts->root,
                  "filesystem root holding sys/ and proc/ (a copy of another host's)")
      ->capture_default_str();
  cmd->add_option("--gdr-level", opts->gdr_level,
                  "GPU-NIC distance NCCL allows GPUDirect RDMA at, as NCCL_NET_GDR_LEVEL: LOC, "
                  "PIX, PXB (default), PHB, SYS, or 0-5");
  cmd->add_option("-o,--output", opts->output, "text (problems only) or json (every check)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", opts->verbose, "text: show ok and n/a checks and all evidence");
  cmd->callback([opts, exit_code] { *exit_code = RunDoctorCommand(*opts); });
}

}  // namespace accel::cli
