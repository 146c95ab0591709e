// RunDoctor: reads the shared facts once (BuildContext), runs every check in id order, and never
// lets one check's surprise stop the others.
#include "doctor/doctor.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <set>

#include "common/error.h"
#include "common/strings.h"
#include "doctor/doctor_internal.h"
#include "topology/classify.h"

namespace accel::doctor {

const char* SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kOk: return "ok";
    case Severity::kNotApplicable: return "n/a";
    case Severity::kInfo: return "info";
    case Severity::kWarn: return "warn";
    case Severity::kFail: return "fail";
  }
  return "?";
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kBareMetal: return "bare-metal";
    case Role::kHypervisor: return "hypervisor";
    case Role::kK8sNode: return "k8s-node";
  }
  return "?";
}

bool ParseRole(const std::string& text, Role* role) {
  for (Role r : {Role::kBareMetal, Role::kHypervisor, Role::kK8sNode}) {
    if (text == RoleName(r)) {
      *role = r;
      return true;
    }
  }
  return false;
}

Severity DoctorReport::Worst() const {
  Severity worst = Severity::kOk;
  for (const Finding& f : findings) worst = std::max(worst, f.severity);
  return worst;
}

int DoctorExitCode(const DoctorReport& report) {
  switch (report.Worst()) {
    case Severity::kFail: return 4;
    case Severity::kWarn: return 1;
    default: return 0;
  }
}

// ---- helpers shared by the check files ----

Finding MakeFinding(const char* id, const char* title, Severity severity, std::string summary) {
  Finding f;
  f.id = id;
  f.title = title;
  f.severity = severity;
  f.summary = std::move(summary);
  return f;
}

Finding ProblemFinding(const char* id, const char* title, Severity severity,
                       const std::vector<std::string>& problems, std::string fix) {
  Finding f = MakeFinding(id, title, severity, JoinStrings(problems, "; "));
  if (!fix.empty() && fix.back() == '\n') fix.pop_back();
  f.fix = std::move(fix);
  return f;
}

std::string PciAttr(const std::string& address, const std::string& attr) {
  return "/sys/bus/pci/devices/" + address + (attr.empty() ? "" : "/" + attr);
}

std::string DeviceLabel(const topology::PciDevice& dev) {
  using topology::PciRole;
  std::string kind = dev.role == PciRole::kGpu      ? "GPU"
                     : dev.role == PciRole::kHpu    ? "HPU"
                     : dev.role == PciRole::kNic    ? "NIC"
                     : dev.role == PciRole::kBridge ? "bridge"
                     : dev.role == PciRole::kNvSwitch ? "NVSwitch"
                                                      : "device";
  std::string label = kind + " " + dev.address;
  if (!dev.rdma_devices.empty()) label += " (" + dev.rdma_devices.front() + ")";
  return label;
}

std::string JoinList(const std::vector<std::string>& items, size_t max) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > max) out += " and " + std::to_string(items.size() - max) + " more";
  return out;
}

std::string SizeText(unsigned long long bytes) {
  constexpr unsigned long long kGiBytes = 1ull << 30;
  char buf[32];
  if (bytes >= kGiBytes && bytes % kGiBytes == 0)
    std::snprintf(buf, sizeof buf, "%llu GiB", bytes / kGiBytes);
  else if (bytes >= kGiBytes)
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / kGiBytes);
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%llu MiB", bytes >> 20);
  else
    std::snprintf(buf, sizeof buf, "%llu KiB", bytes >> 10);
  return buf;
}

std::string CpuSetText(const CpuSet& cpus) { return cpus.Empty() ? "(none)" : cpus.ToString(); }

std::optional<long long> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    bool hex = text.rfind("0x", 0) == 0;
    std::string digits = hex ? text.substr(2) : text;
    size_t used = 0;
    long long v = std::stoll(digits, &used, hex ? 16 : 10);
    if (used != digits.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> Context::ComputeNicAddresses() const {
  std::set<std::string> set;
  for (const fabric::FabricNic* nic : fabric.UsedNics()) set.insert(nic->pci_address);
  return {set.begin(), set.end()};
}

namespace {

bool ContainsWord(const std::string& text, const std::string& word) {
  size_t at = 0;
  while ((at = text.find(word, at)) != std::string::npos) {
    bool left = at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1]));
    size_t end = at + word.size();
    bool right = end == text.size() || std::isspace(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
    at = end;
  }
  return false;
}

// Signs of a virtual machine, each with its evidence. Any one is enough.
void DetectVm(Context* ctx) {
  // x86 guests see the CPUID hypervisor bit as the "hypervisor" flag; the first CPU's block is
  // enough, so a bounded read keeps this fast on 400-CPU hosts.
  FileValue cpuinfo = ReadFile(ctx->root, "/proc/cpuinfo", 64 * 1024);
  if (cpuinfo.ok) {
    size_t flags = cpuinfo.value.find("\nflags");
    if (flags != std::string::npos) {
      size_t end = cpuinfo.value.find('\n', flags + 1);
      std::string line = cpuinfo.value.substr(flags + 1, end == std::string::npos ? end : end - flags - 1);
      if (ContainsWord(line, "hypervisor")) {
        ctx->vm_guest = true;
        ctx->vm_evidence.push_back({"/proc/cpuinfo", "flags include \"hypervisor\""});
      }
    }
  }
  static const char* kVmProducts[] = {"QEMU", "KVM", "Virtual Machine", "VMware", "VirtualBox",
                                      "OpenStack", "HVM domU", "Google Compute Engine", "Bochs",
                                      "BHYVE", "Cloud Hypervisor"};
  for (const char* path : {"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"}) {
    FileValue v = ReadFile(ctx->root, path);
    if (!v.ok) continue;
    for (const char* p : kVmProducts) {
      if (v.value.find(p) != std::string::npos) {
        ctx->vm_guest = true;
        ctx->vm_evidence.push_back(v.ToEvidence());
        break;
      }
    }
  }
  // Passthrough devices in a guest: no NUMA node, directly on a host bridge or behind QEMU's
  // PCIe root ports (Red Hat vendor id 1b36).
  if (!ctx->accelerators.empty()) {
    bool flat = true;
    for (const topology::PciDevice* dev : ctx->accelerators) {
      const topology::PciDevice* parent = ctx->host->FindPci(dev->parent);
      bool qemu_port = parent != nullptr && parent->vendor_id == 0x1b36;
      bool on_host_bridge = parent != nullptr && parent->role == topology::PciRole::kHostBridge;
      if (dev->numa_node != -1 || !(qemu_port || on_host_bridge)) flat = false;
    }
    if (flat) {
      ctx->vm_guest = true;
      ctx->vm_evidence.push_back({PciAttr(ctx->accelerators.front()->address, "numa_node"),
                                  "-1 (flat PCI tree: accelerators on emulated root ports)"});
    }
  }
}

}  // namespace

Context BuildContext(const topology::HostTopology& host, const DoctorOptions& options) {
  Context ctx;
  ctx.host = &host;
  ctx.options = &options;
  ctx.root = options.root.empty() ? "/" : options.root;
  ctx.privileged = ::geteuid() == 0 && !options.assume_unprivileged;
  ctx.cmdline_file = ReadFile(ctx.root, "/proc/cmdline");
  if (ctx.cmdline_file.ok) ctx.cmdline = KernelCmdline::Parse(ctx.cmdline_file.value);
  CpuSet all = host.AllCpus();
  int max_cpu = -1;
  for (int c = all.First(); c >= 0; c = all.Next(c)) max_cpu = c;
  ctx.nr_cpus = std::max(1, max_cpu + 1);

  for (const topology::PciDevice& dev : host.pci) {
    if (dev.is_accelerator()) {
      ctx.accelerators.push_back(&dev);
      if (dev.role == topology::PciRole::kGpu && dev.vendor_id == topology::kVendorNvidia)
        ctx.nvidia_gpus.push_back(&dev);
    }
    if (dev.is_rdma() && !dev.is_vf()) ctx.rdma_pfs.push_back(&dev);
  }
  DetectVm(&ctx);
  try {
    ctx.ports = fabric::ReadNicPorts(ctx.root);
  } catch (const std::exception&) {
    ctx.ports.clear();  // ReadNicPorts does not throw; a future change must not stop the doctor
  }
  if (!ctx.accelerators.empty()) {
    try {
      ctx.fabric = fabric::PairGpusWithNics(host, {});
    } catch (const std::exception& e) {
      ctx.pairing_error = e.what();
    }
  }
  if (!options.flavors.empty()) {
    try {
      tuning::TuneOptions tune;
      tune.aliases = options.aliases;
      ctx.plan = tuning::PlanTuning(host, options.flavors, tune);
    } catch (const std::exception& e) {
      ctx.plan_error = e.what();
    }
  }
  return ctx;
}

void CheckGdrLevel(const std::string& level) {
  if (!level.empty() && !fabric::ParsePathType(level)) {
    throw InputError("--gdr-level", "", "unknown level \"" + level + "\"",
                     "use LOC, PIX, PXB, PHB, SYS (or NVL, NVB, C2C, P2C, PXN, or 0-5) as "
                     "NCCL_NET_GDR_LEVEL does");
  }
}

void CheckDoctorOptions(const topology::HostTopology& host, const DoctorOptions& options) {
  CheckGdrLevel(options.gdr_level);
  if (!options.flavors.empty()) {
    tuning::TuneOptions tune;
    tune.aliases = options.aliases;
    (void)tuning::PlanTuning(host, options.flavors, tune);  // throws InputError for bad flavors
  }
}

DoctorReport RunDoctor(const topology::HostTopology& host, const DoctorOptions& options) {
  DoctorReport report;
  report.hostname = host.hostname;
  report.role = RoleName(options.role);
  Context ctx = BuildContext(host, options);
  struct Check {
    const char* id;
    const char* title;
    Finding (*run)(const Context&);
  };
  static const Check kChecks[] = {
      {"GDR-01", "peer memory for GPUDirect RDMA", CheckGdr01PeerMemory},
      {"GDR-02", "GPU-NIC PCIe distance", CheckGdr02PathDistance},
      {"GDR-03", "IOMMU mode", CheckGdr03Iommu},
      {"GDR-04", "PCIe ACS on GPU-NIC paths", CheckGdr04Acs},
      {"GDR-05", "PCIe link speed and width", CheckGdr05PcieLinks},
      {"GDR-06", "RDMA ports", CheckGdr06RdmaPorts},
      {"GDR-07", "PCIe MaxReadReq, MaxPayload, relaxed ordering", CheckGdr07PcieTuning},
      {"GDR-08", "GPU BAR1 size", CheckGdr08Bar1},
      {"GDR-09", "pod plumbing for RDMA and NCCL", CheckGdr09PodPlumbing},
      {"GDR-10", "NVSwitch fabric manager", CheckGdr10NvSwitch},
      {"HOST-01", "hugepages per NUMA node", CheckHost01Hugepages},
      {"HOST-02", "kernel command line CPU isolation", CheckHost02Cmdline},
      {"HOST-03", "automatic NUMA balancing", CheckHost03NumaBalancing},
      {"HOST-04", "transparent hugepages", CheckHost04Thp},
      {"HOST-05", "CPU frequency governor", CheckHost05Governor},
      {"HOST-06", "CPU idle states", CheckHost06CStates},
      {"HOST-07", "IRQ affinity of GPUs and NICs", CheckHost07IrqAffinity},
      {"HOST-08", "device NUMA locality", CheckHost08NumaLocality},
      {"HOST-09", "GPU driver binding and persistence", CheckHost09Persistence},
      {"HOST-10", "tuned profile", CheckHost10Tuned},
      {"HOST-11", "SR-IOV virtual functions", CheckHost11Sriov},
  };
  for (const Check& check : kChecks) {
    try {
      report.findings.push_back(check.run(ctx));
    } catch (const std::exception& e) {
      // A check that trips over something unexpected reports it instead of stopping the run.
      report.findings.push_back(MakeFinding(check.id, check.title, Severity::kInfo,
                                            std::string("check could not complete: ") + e.what()));
    }
  }
  // The kubelet's configuration matters on Kubernetes nodes only; other roles keep their 21 ids.
  if (options.role == Role::kK8sNode) {
    try {
      AppendKubeletChecks(ctx, &report.findings);
    } catch (const std::exception& e) {
      report.findings.push_back(MakeFinding("KUBE-01", "kubelet configuration", Severity::kInfo,
                                            std::string("check could not complete: ") + e.what()));
    }
  }
  return report;
}

}  // namespace accel::doctor
