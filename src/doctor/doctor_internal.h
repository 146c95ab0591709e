// Shared by the doctor's check files: what every check may look at (the host, the options, the
// kernel command line, device lists, RDMA ports, the GPU↔NIC pairing), read once per run, and
// small helpers to build findings. Not part of the public interface (doctor.h is).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor.h"
#include "doctor/finding.h"
#include "doctor/host_fs.h"
#include "doctor/kernel_cmdline.h"
#include "fabric/nic_ports.h"
#include "fabric/pairing.h"
#include "topology/host.h"
#include "tuning/tune_plan.h"

namespace accel::doctor {

/// Everything a run reads once and several checks share. Built by BuildContext; read-only after.
struct Context {
  const topology::HostTopology* host = nullptr;
  const DoctorOptions* options = nullptr;
  std::string root;         ///< options->root
  bool privileged = false;  ///< effective uid 0 and not options->assume_unprivileged

  FileValue cmdline_file;   ///< /proc/cmdline
  KernelCmdline cmdline;
  int nr_cpus = 0;          ///< highest CPU id of the host + 1

  /// A virtual machine guest: the CPU's hypervisor flag, a hypervisor's DMI vendor/product
  /// name, or accelerators without a NUMA node on QEMU root ports or a bare host bridge.
  bool vm_guest = false;
  std::vector<Evidence> vm_evidence;  ///< why vm_guest is set (empty when it is not)

  std::vector<const topology::PciDevice*> accelerators;  ///< GPUs and HPUs, PCI order
  std::vector<const topology::PciDevice*> nvidia_gpus;   ///< NVIDIA GPUs among them
  std::vector<const topology::PciDevice*> rdma_pfs;      ///< PCI functions with RDMA devices, not VFs
  std::vector<fabric::NicPort> ports;                    ///< every RDMA port under ROOT

  /// GPU↔NIC pairing by distance alone (every port assumed up), so a down port does not hide
  /// the NIC a GPU should use; empty when pairing failed (pairing_error says why).
  fabric::Fabric fabric;
  std::string pairing_error;

  /// The tuning plan for options->flavors (set when flavors were given and planning worked).
  std::optional<tuning::TunePlan> plan;
  std::string plan_error;

  bool multi_node() const { return host->numa_nodes.size() > 1; }
  bool hypervisor() const { return options->role == Role::kHypervisor; }
  /// The compute NICs: RDMA functions pairing uses (by PCI address, PCI order).
  std::vector<std::string> ComputeNicAddresses() const;
};

/// Reads the shared facts for one run. Never throws.
Context BuildContext(const topology::HostTopology& host, const DoctorOptions& options);

/// A finding with id, title and severity set; the caller fills in the rest.
Finding MakeFinding(const char* id, const char* title, Severity severity, std::string summary);

/// A finding for a check that collected problems: the summary is `problems` joined with "; ",
/// the fix is `fix` without its trailing newline.
Finding ProblemFinding(const char* id, const char* title, Severity severity,
                       const std::vector<std::string>& problems, std::string fix = "");

/// "/sys/bus/pci/devices/<addr>/<attr>".
std::string PciAttr(const std::string& address, const std::string& attr);

/// A short name for a PCI device in summaries: "GPU 0000:1b:00.0", "NIC 0000:18:00.0 (mlx5_0)".
std::string DeviceLabel(const topology::PciDevice& dev);

/// Joins with ", ", at most `max` items then "and N more".
std::string JoinList(const std::vector<std::string>& items, size_t max = 8);

/// A size for people: "64 GiB", "1.5 GiB", "256 MiB", "512 KiB".
std::string SizeText(unsigned long long bytes);

/// A CPU set for people: "0-3,8", or "(none)" when empty.
std::string CpuSetText(const CpuSet& cpus);

/// The value of a sysfs attribute with a leading "0x" parsed as hex, else decimal.
std::optional<long long> ParseNumber(const std::string& text);

// The checks, one function per id; each returns exactly one finding.
Finding CheckGdr01PeerMemory(const Context& ctx);
Finding CheckGdr02PathDistance(const Context& ctx);
Finding CheckGdr03Iommu(const Context& ctx);
Finding CheckGdr04Acs(const Context& ctx);
Finding CheckGdr05PcieLinks(const Context& ctx);
Finding CheckGdr06RdmaPorts(const Context& ctx);
Finding CheckGdr07PcieTuning(const Context& ctx);
Finding CheckGdr08Bar1(const Context& ctx);
Finding CheckGdr09PodPlumbing(const Context& ctx);
Finding CheckGdr10NvSwitch(const Context& ctx);
Finding CheckHost01Hugepages(const Context& ctx);
Finding CheckHost02Cmdline(const Context& ctx);
Finding CheckHost03NumaBalancing(const Context& ctx);
Finding CheckHost04Thp(const Context& ctx);
Finding CheckHost05Governor(const Context& ctx);
Finding CheckHost06CStates(const Context& ctx);
Finding CheckHost07IrqAffinity(const Context& ctx);
Finding CheckHost08NumaLocality(const Context& ctx);
Finding CheckHost09Persistence(const Context& ctx);
Finding CheckHost10Tuned(const Context& ctx);
Finding CheckHost11Sriov(const Context& ctx);

/// KUBE-01..05 (kubelet_checks.cc), for the k8s-node role: the running kubelet's configuration
/// (its --config file and --config-dir drop-ins, found through its command line or systemd unit)
/// against the NUMA nodes, CPUs, hugepage pools and devices sysfs shows; appends five findings.
void AppendKubeletChecks(const Context& ctx, std::vector<Finding>* out);

/// Bridges a peer-to-peer transfer between `a` and `b` passes through: their ancestors below
/// the lowest common ancestor, `a`'s side first (switch downstream ports; root ports when the
/// path crosses the root complex). Shared by GDR-04 and GDR-07.
std::vector<const topology::PciDevice*> PathBridges(const topology::HostTopology& host,
                                                    const topology::PciDevice* a,
                                                    const topology::PciDevice* b);

/// Config space of PCI function `address` as this process may see it: at most `max_bytes`,
/// cut to the 64 bytes Linux gives other users unless ctx.privileged. Returns false (with
/// `evidence_value` "(missing)" / "(unreadable: why)") when it cannot be read.
bool ReadConfigSpace(const Context& ctx, const std::string& address, size_t max_bytes,
                     std::string* bytes, std::string* evidence_value);

/// The CPUs the kernel isolated: /sys/devices/system/cpu/isolated, else isolcpus= from the
/// command line; empty when neither. Shared by HOST-02 and HOST-07.
CpuSet IsolatedCpus(const Context& ctx, std::vector<Evidence>* evidence);

}  // namespace accel::doctor
