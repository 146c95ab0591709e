// GPUDirect RDMA checks that read drivers, the IOMMU, RDMA ports and the NVSwitch fabric
// manager: GDR-01, GDR-02, GDR-03, GDR-06, GDR-10 (docs/doctor.md). PCI-level checks (ACS,
// links, BAR1) are in device_checks.cc.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "doctor/doctor_internal.h"
#include "fabric/path.h"

namespace accel::doctor {

namespace {

using topology::PciDevice;
using topology::PciRole;

// "5.15.0-91-generic" → {5, 15}; {0, 0} when unparsable.
std::pair<int, int> KernelVersion(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

std::string Ports(const fabric::NicPort& p) {
  return p.rdma_device + ":" + std::to_string(p.port);
}

std::string PortDir(const fabric::NicPort& p) {
  return "/sys/class/infiniband/" + p.rdma_device + "/ports/" + std::to_string(p.port);
}

bool IsAmdHost(const topology::HostTopology& host) {
  for (const topology::Package& pkg : host.packages)
    if (pkg.model.find("AMD") != std::string::npos || pkg.model.find("EPYC") != std::string::npos)
      return true;
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Finding CheckGdr01PeerMemory(const Context& ctx) {
  const char* id = "GDR-01";
  const char* title = "peer memory for GPUDirect RDMA";
  if (ctx.nvidia_gpus.empty())
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "no NVIDIA GPU: nvidia_peermem / DMA-BUF registration is NVIDIA's path "
                       "(AMD and Habana drivers export DMA-BUF themselves)");
  if (ctx.rdma_pfs.empty())
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "no RDMA NIC: GPUDirect RDMA needs one");
  if (ctx.hypervisor())
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "hypervisor role: GPUs and NICs are passed to guests, which load the peer "
                       "memory module themselves (run accel doctor inside the guest)");
  FileValue peermem = ReadFile(ctx.root, "/sys/module/nvidia_peermem/version");
  FileValue nv_mem = ReadFile(ctx.root, "/sys/kernel/mm/memory_peers/nv_mem/version");
  FileValue nv_mem_nc = ReadFile(ctx.root, "/sys/kernel/mm/memory_peers/nv_mem_nc/version");
  FileValue driver = ReadFile(ctx.root, "/proc/driver/nvidia/version", 16 * 1024);
  FileValue release = ReadFile(ctx.root, "/proc/sys/kernel/osrelease");
  bool open_modules = driver.ok && driver.value.find("Open Kernel Module") != std::string::npos;
  auto [major, minor] = KernelVersion(release.value);
  bool kernel_ok = release.ok && (major > 5 || (major == 5 && minor >= 12));
  bool dmabuf = open_modules && kernel_ok;

  Finding f;
  std::string dmabuf_note =
      dmabuf ? "; DMA-BUF also possible (open kernel modules, kernel " + release.value + ")" : "";
  if (peermem.ok) {
    f = MakeFinding(id, title, Severity::kOk,
                    "nvidia_peermem " + peermem.value + " is loaded" + dmabuf_note);
  } else if (nv_mem.ok || nv_mem_nc.ok) {
    f = MakeFinding(id, title, Severity::kOk,
                    "legacy nv_peer_mem " + (nv_mem.ok ? nv_mem.value : nv_mem_nc.value) +
                        " is loaded" + dmabuf_note);
  } else if (dmabuf) {
    f = MakeFinding(id, title, Severity::kOk,
                    "no peer memory module, but the open GPU kernel modules on kernel " +
                        release.value +
                        " let NCCL register GPU memory through DMA-BUF (NCCL confirms it at run "
                        "time with ibv_reg_dmabuf_mr)");
  } else {
    std::string why = !driver.ok ? "the NVIDIA driver is not loaded (" + driver.value + ")"
                      : !open_modules
                          ? "the proprietary kernel modules cannot do DMA-BUF"
                          : "kernel " + release.value + " is older than 5.12 (no DMA-BUF for RDMA)";
    f = MakeFinding(id, title, Severity::kFail,
                    "neither nvidia_peermem nor DMA-BUF: NCCL will copy through host memory "
                    "(\"GPU Direct RDMA Disabled\"); " + why);
    f.fix =
        "modprobe nvidia-peermem\n"
        "echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf   # load at boot\n"
        "# nvidia-peermem needs MLNX_OFED/DOCA-OFED's peer-memory API; with inbox mlx5 drivers it\n"
        "# fails with \"Invalid argument\": install DOCA-OFED, or use DMA-BUF instead (open GPU\n"
        "# kernel modules on kernel >= 5.12; GPU Operator: driver.kernelModuleType=open).\n"
        "# GPU Operator with peermem: driver.rdma.enabled=true (+ driver.rdma.useHostMofed=true\n"
        "# when OFED is installed on the host)";
  }
  f.evidence = {peermem.ToEvidence(), nv_mem.ToEvidence(), nv_mem_nc.ToEvidence()};
  // Only the first line of the driver banner matters.
  Evidence drv = driver.ToEvidence();
  drv.value = drv.value.substr(0, drv.value.find('\n'));
  f.evidence.push_back(drv);
  f.evidence.push_back(release.ToEvidence());
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr02PathDistance(const Context& ctx) {
  const char* id = "GDR-02";
  const char* title = "GPU-NIC PCIe distance";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  if (!ctx.pairing_error.empty())
    return MakeFinding(id, title, Severity::kInfo,
                       "could not pair accelerators with NICs: " + ctx.pairing_error);
  const fabric::Fabric& fab = ctx.fabric;
  bool any_usable = false;
  for (const fabric::FabricNic& nic : fab.nics) any_usable |= nic.excluded.empty();
  if (fab.nics.empty() || !any_usable)
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "no usable RDMA NIC: nothing for GPUDirect RDMA to reach");

  fabric::PathType level = fabric::PathType::kPxb;
  std::string level_name = "PXB (NCCL's default)";
  if (!ctx.options->gdr_level.empty()) {
    if (auto parsed = fabric::ParsePathType(ctx.options->gdr_level)) {
      level = *parsed;
      level_name = std::string(fabric::PathTypeName(level)) + " (NCCL_NET_GDR_LEVEL)";
    }
  }
  bool nvswitch = false;
  for (const PciDevice& d : ctx.host->pci) nvswitch |= d.role == PciRole::kNvSwitch;
  // NCCL may read a topology file instead of the PCI tree (VMs).
  bool topo_file = PathExists(ctx.root, "/var/run/nvidia-topologyd/virtualTopology.xml");

  const size_t g_count = fab.gpus.size();
  const size_t width = g_count + fab.nics.size();
  Severity worst = Severity::kOk;
  std::vector<std::string> far, close;
  std::vector<Evidence> evidence;
  bool numa_unknown = false;
  for (size_t g = 0; g < g_count; ++g) {
    // The GPU's best path to any usable NIC decides; the pairing's NIC is shown beside it.
    int best = -1;
    for (size_t n = 0; n < fab.nics.size(); ++n) {
      if (!fab.nics[n].excluded.empty()) continue;
      const fabric::PathInfo& p = fab.matrix[g * width + g_count + n];
      if (best < 0 || p.type < fab.matrix[g * width + g_count + best].type) best = static_cast<int>(n);
    }
    if (best < 0) continue;
    const fabric::PathInfo& path = fab.matrix[g * width + g_count + best];
    numa_unknown |= path.numa_unknown;
    const fabric::FabricNic& nic = fab.nics[best];
    char bw[32];
    std::snprintf(bw, sizeof bw, "%.0f GB/s", path.bandwidth_gbs);
    evidence.push_back({PciAttr(fab.gpus[g], ""),
                        "nearest NIC " + nic.rdma_device + " (" + nic.pci_address + "): " +
                            fabric::PathTypeName(path.type) + " (nvidia-smi " + path.smi + ")" +
                            (path.bandwidth_gbs > 0 ? std::string(", ") + bw : "")});
    if (path.type <= level) {
      close.push_back(fab.gpus[g]);
      continue;
    }
    far.push_back(fab.gpus[g] + " (" + fabric::PathTypeName(path.type) + ")");
    worst = std::max(worst, path.type <= fabric::PathType::kPhb ? Severity::kWarn : Severity::kFail);
  }
  Finding f;
  if (far.empty()) {
    f = MakeFinding(id, title, Severity::kOk,
                    "every accelerator has an RDMA NIC within " + level_name + ": " +
                        std::to_string(close.size()) + " of " + std::to_string(g_count));
  } else {
    std::string summary = std::to_string(far.size()) + " of " + std::to_string(g_count) +
                          " accelerators have no NIC within " + level_name + ": " +
                          JoinList(far, 4) + "; NCCL turns GPUDirect RDMA off for them";
    Severity sev = worst;
    if (ctx.vm_guest) {
      // The distance is unknown rather than proven far: slow until NCCL gets a topology file.
      sev = std::min(sev, Severity::kWarn);
      summary += ". This is a VM: the guest's flat PCI tree hides the real distances";
      if (topo_file) {
        summary += ", and NCCL reads /var/run/nvidia-topologyd/virtualTopology.xml instead";
        sev = Severity::kInfo;
      }
    } else if (nvswitch && !close.empty()) {
      // PXN: NCCL routes through an NVLink peer that owns a near NIC.
      summary += "; with NVSwitch, NCCL's PXN can route them through a GPU that has a near NIC";
      sev = std::min(sev, Severity::kWarn);
    }
    f = MakeFinding(id, title, sev, summary);
    if (ctx.vm_guest) {
      f.fix =
          "on the hypervisor: accel fabric topo-xml (for this guest) > virtualTopology.xml\n"
          "in the guest: install it as /var/run/nvidia-topologyd/virtualTopology.xml (NCCL reads it\n"
          "by default) or set NCCL_TOPO_FILE=<path>; do not set NCCL_NET_GDR_LEVEL=SYS instead";
    } else {
      f.fix =
          "put each GPU's NIC in the same PCIe switch (riser) as the GPU;\n"
          "or keep PXN on (NCCL_PXN_DISABLE=0, the default) so traffic goes over NVLink to a GPU\n"
          "with a near NIC; raise NCCL_NET_GDR_LEVEL (e.g. PHB) only after measuring: P2P through\n"
          "the CPU is often slower than staging in host memory";
    }
  }
  if (numa_unknown && !ctx.vm_guest)
    f.summary += " (a NUMA node is unknown, so paths across host bridges count as SYS)";
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr03Iommu(const Context& ctx) {
  const char* id = "GDR-03";
  const char* title = "IOMMU mode";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  const KernelCmdline& cmd = ctx.cmdline;
  std::optional<std::string> intel = cmd.Last("intel_iommu");
  std::optional<std::string> amd = cmd.Last("amd_iommu");
  std::optional<std::string> iommu = cmd.Last("iommu");
  std::optional<std::string> passthrough = cmd.Last("iommu.passthrough");
  bool pt_cmdline = (iommu && *iommu == "pt") ||
                    (passthrough && (*passthrough == "1" || *passthrough == "on" || *passthrough == "y"));
  bool off_cmdline = (intel && intel->find("off") != std::string::npos) ||
                     (amd && amd->find("off") != std::string::npos) || (iommu && *iommu == "off");

  std::vector<std::string> units = ListDir(ctx.root, "/sys/class/iommu");
  std::vector<Evidence> evidence = {ctx.cmdline_file.ToEvidence(),
                                    {"/sys/class/iommu", units.empty() ? "(empty)" : JoinList(units, 6)}};
  // Domain type of every accelerator and RDMA function.
  std::vector<const PciDevice*> devices = ctx.accelerators;
  devices.insert(devices.end(), ctx.rdma_pfs.begin(), ctx.rdma_pfs.end());
  std::vector<std::string> translated;
  int with_group = 0, identity = 0;
  for (const PciDevice* dev : devices) {
    std::string group = LinkBaseName(ctx.root, PciAttr(dev->address, "iommu_group"));
    if (group.empty()) continue;
    ++with_group;
    FileValue type = ReadFile(ctx.root, "/sys/kernel/iommu_groups/" + group + "/type");
    evidence.push_back({type.path, type.value + " (" + DeviceLabel(*dev) + ")"});
    if (type.ok && type.value == "identity") {
      ++identity;
    } else if (type.ok && type.value.rfind("DMA", 0) == 0) {
      translated.push_back(dev->address + " (" + type.value + ")");
    }
  }
  bool active = !units.empty() || with_group > 0;
  bool amd_host = IsAmdHost(*ctx.host);
  std::string enable = amd_host ? "iommu=pt (AMD's IOMMU is on by default; enable it in the BIOS)"
                                : "intel_iommu=on iommu=pt";
  Finding f;
  if (ctx.hypervisor()) {
    if (!active || off_cmdline) {
      f = MakeFinding(id, title, Severity::kFail,
                      "no active IOMMU: VFIO cannot pass GPUs or VFs to guests");
      f.fix = "add to the kernel command line: " + enable +
              "\n(e.g. GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub or "
              "grub2-mkconfig -o /boot/grub2/grub.cfg; or grubby --update-kernel=ALL --args=...); reboot";
      f.needs_reboot = true;
    } else if (!pt_cmdline && !translated.empty()) {
      f = MakeFinding(id, title, Severity::kWarn,
                      "IOMMU is on without passthrough: devices the host keeps (" +
                          JoinList(translated, 4) + ") DMA through translation");
      f.fix = "add iommu=pt to the kernel command line; reboot";
      f.needs_reboot = true;
    } else {
      f = MakeFinding(id, title, Severity::kOk,
                      "IOMMU on" + std::string(pt_cmdline ? " with passthrough (iommu=pt)" : "") +
                          ": devices can be passed to guests");
    }
  } else if (!active) {
    f = MakeFinding(id, title, Severity::kOk, "IOMMU off: peer-to-peer DMA is not translated");
  } else if (!translated.empty()) {
    f = MakeFinding(id, title, Severity::kWarn,
                    "IOMMU translates DMA of " + JoinList(translated, 4) +
                        ": GPU-NIC peer-to-peer goes through the IOMMU (NCCL hangs or slows down)");
    f.fix = "add iommu=pt to the kernel command line (" + enable +
            " if VFIO is needed), or turn the IOMMU off (" +
            std::string(amd_host ? "amd_iommu=off" : "intel_iommu=off") + "); reboot";
    f.needs_reboot = true;
  } else {
    f = MakeFinding(id, title, Severity::kOk,
                    "IOMMU on in passthrough" +
                        (identity > 0 ? ": " + std::to_string(identity) + " devices in identity domains"
                                      : std::string(pt_cmdline ? " (iommu=pt)" : "")));
  }
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr06RdmaPorts(const Context& ctx) {
  const char* id = "GDR-06";
  const char* title = "RDMA ports";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  if (ctx.ports.empty()) {
    if (ctx.rdma_pfs.empty())
      return MakeFinding(id, title, Severity::kNotApplicable,
                         "no RDMA NIC (single-node training only)");
    Finding f = MakeFinding(id, title, Severity::kFail,
                            "RDMA NICs are in the PCI tree but /sys/class/infiniband is empty: the "
                            "RDMA driver (mlx5_ib, bnxt_re, ...) is not loaded");
    f.evidence = {{"/sys/class/infiniband", "(empty)"}};
    f.fix = "modprobe mlx5_ib   # or the NIC's RDMA driver; install DOCA-OFED/MLNX_OFED for peermem";
    return f;
  }
  std::vector<std::string> compute = ctx.ComputeNicAddresses();
  std::set<std::string> compute_set(compute.begin(), compute.end());
  std::vector<std::string> down, other_down, no_gid;
  std::map<std::string, int> layers;
  std::map<double, std::vector<std::string>> rates;
  std::vector<Evidence> evidence;
  int used = 0;
  for (const fabric::NicPort& p : ctx.ports) {
    const PciDevice* dev = ctx.host->FindPci(p.pci_address);
    if (!p.physfn.empty() || (dev != nullptr && dev->is_vf())) continue;  // VFs follow their PF
    bool is_compute = compute_set.empty() || compute_set.count(p.pci_address) > 0;
    bool up = p.active() && (p.phys_state.empty() || p.phys_state == "LinkUp");
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g Gb/s", p.rate_gbps);
    evidence.push_back({PortDir(p) + "/state",
                        (p.state.empty() ? "?" : p.state) + ", " +
                            (p.phys_state.empty() ? "?" : p.phys_state) + ", " +
                            (p.link_layer.empty() ? "?" : p.link_layer) + ", " + rate +
                            (is_compute ? "" : " (not a compute NIC)")});
    if (!is_compute) {
      if (!up) other_down.push_back(Ports(p));
      continue;
    }
    ++used;
    if (!up) {
      down.push_back(Ports(p) + " " + (p.state.empty() ? "state unknown" : p.state));
      continue;
    }
    layers[p.link_layer]++;
    rates[p.rate_gbps].push_back(Ports(p));
    if (p.link_layer == "Ethernet" && !p.roce_v2_gid)
      no_gid.push_back(Ports(p) + (p.netdev.empty() ? "" : " (" + p.netdev + ")"));
  }
  Finding f;
  std::vector<std::string> problems;
  Severity sev = Severity::kOk;
  std::string fix;
  if (!down.empty()) {
    sev = Severity::kFail;
    problems.push_back("compute NIC ports not ACTIVE/LinkUp: " + JoinList(down, 6));
    fix += "InfiniBand: check the cable and that a subnet manager runs (ibstat; sminfo);\n"
           "Ethernet/RoCE: ip link set <netdev> up, check the switch port;\n";
  }
  if (layers.size() > 1) {
    sev = std::max(sev, Severity::kWarn);
    std::vector<std::string> names;
    for (const auto& [layer, n] : layers) names.push_back(std::to_string(n) + " " + layer);
    problems.push_back("mixed link layers (" + JoinList(names) +
                       "): NCCL uses only one, the other NICs sit idle");
    fix += "list only one link layer's HCAs in NCCL_IB_HCA, or set the ports' link type "
           "(mlxconfig -d <dev> set LINK_TYPE_P1=IB|ETH, reboot);\n";
  }
  if (!no_gid.empty()) {
    sev = std::max(sev, Severity::kWarn);
    problems.push_back("RoCE ports without a RoCE v2 GID (no IP address on the netdev): " +
                       JoinList(no_gid, 6));
    fix += "ip addr add <address>/<prefix> dev <netdev>   # the RoCE v2 GID follows the IP;\n";
  }
  if (rates.size() > 1) {
    sev = std::max(sev, Severity::kWarn);
    std::vector<std::string> names;
    for (const auto& [r, list] : rates) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g Gb/s: ", r);
      names.push_back(buf + JoinList(list, 4));
    }
    problems.push_back("ports at different rates (" + JoinList(names, 4) +
                       "): the slowest one paces every ring");
    fix += "check cables/transceivers and the switch port speed of the slow ports (ibstat, ethtool);\n";
  }
  if (problems.empty()) {
    std::string layer = layers.empty() ? "" : " " + layers.begin()->first;
    f = MakeFinding(id, title, Severity::kOk,
                    std::to_string(used) + " compute NIC ports ACTIVE/LinkUp" + layer +
                        (rates.empty() ? "" : ", same rate"));
  } else {
    f = ProblemFinding(id, title, sev, problems, fix);
  }
  if (!other_down.empty())
    f.summary += " (not ACTIVE, not used for training: " + JoinList(other_down, 6) + ")";
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr10NvSwitch(const Context& ctx) {
  const char* id = "GDR-10";
  const char* title = "NVSwitch fabric manager";
  std::vector<const PciDevice*> switches;
  for (const PciDevice& d : ctx.host->pci)
    if (d.role == PciRole::kNvSwitch) switches.push_back(&d);
  if (switches.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no NVSwitch");
  std::string n = std::to_string(switches.size()) + " NVSwitches";
  std::string driver = LinkBaseName(ctx.root, PciAttr(switches.front()->address, "driver"));
  std::vector<Evidence> evidence = {
      {PciAttr(switches.front()->address, "driver"), driver.empty() ? "(none bound)" : driver}};
  if (driver == "vfio-pci") {
    Finding f = MakeFinding(id, title, Severity::kInfo,
                            n + " bound to vfio-pci: the fabric manager runs where they are "
                                "passed (a service VM, or inside full-passthrough guests)");
    f.evidence = std::move(evidence);
    return f;
  }
  // systemd leaves these behind for an active unit; both are world-readable.
  const std::string unit = "nvidia-fabricmanager.service";
  std::string invocation = LinkBaseName(ctx.root, "/run/systemd/units/invocation:" + unit);
  bool cgroup = PathExists(ctx.root, "/sys/fs/cgroup/system.slice/" + unit);
  bool systemd = PathExists(ctx.root, "/run/systemd/system");
  evidence.push_back({"/run/systemd/units/invocation:" + unit,
                      invocation.empty() ? "(missing)" : invocation});
  evidence.push_back({"/sys/fs/cgroup/system.slice/" + unit, cgroup ? "(present)" : "(missing)"});
  evidence.push_back({"/run/systemd/system", systemd ? "(present)" : "(missing)"});
  Finding f;
  if (!invocation.empty() || cgroup) {
    f = MakeFinding(id, title, Severity::kOk, n + ": nvidia-fabricmanager is running");
  } else if (systemd && ctx.options->role == Role::kBareMetal) {
    f = MakeFinding(id, title, Severity::kFail,
                    n + " but nvidia-fabricmanager is not running: CUDA initialisation fails "
                        "(\"system not yet initialized\") until the NVSwitch fabric is set up");
    f.fix =
        "systemctl enable --now nvidia-fabricmanager   # package nvidia-fabricmanager-<driver "
        "branch>, the same version as the driver\n"
        "check: nvidia-smi -q | grep -A2 Fabric   # State: Completed, Status: Success";
  } else {
    f = MakeFinding(id, title, Severity::kInfo,
                    n + ": could not tell whether the fabric manager runs" +
                        std::string(ctx.options->role == Role::kK8sNode
                                        ? " (with the GPU Operator it runs in the driver container)"
                                        : ""));
    f.fix = "check: nvidia-smi -q | grep -A2 Fabric   # State: Completed, Status: Success";
  }
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace accel::doctor
