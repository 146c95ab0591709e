// accel doctor: what on this host blocks GPUDirect RDMA, multi-node training, or the
// accelerator flavors — each check reads sysfs/procfs through a configurable root, reports its
// evidence and the exact fix, and runs unprivileged where it can.
//
// Checks are grouped by area (gdr_checks.cc: peer memory, GPU↔NIC distance, IOMMU, RDMA ports,
// NVSwitch; device_checks.cc: ACS, links, BAR1, NUMA locality, persistence, SR-IOV;
// pcie_tuning_checks.cc: MaxReadReq/MaxPayload/relaxed ordering; pod_checks.cc: pod plumbing;
// host_checks.cc: hugepages against flavors, NUMA balancing, THP; cpu_checks.cc: kernel command
// line, governor, C-states, IRQ affinity; tuned_checks.cc: the tuned profile). RunDoctor is
// thread-safe for distinct options.
#pragma once

#include <string>
#include <vector>

#include "doctor/finding.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "topology/host.h"

namespace accel::doctor {

/// What the host is for; ACS/IOMMU advice differs.
enum class Role {
  kBareMetal,   ///< a training node running jobs directly (default)
  kHypervisor,  ///< hosts accelerator flavors (VMs with passthrough): IOMMU must be on
  kK8sNode,     ///< a Kubernetes GPU node (bare metal or a VM): as bare metal plus pod plumbing
};
/// "bare-metal", "hypervisor", "k8s-node"; ParseRole returns false for other text.
const char* RoleName(Role role);
bool ParseRole(const std::string& text, Role* role);

/// What to check and where to read.
struct DoctorOptions {
  /// Filesystem root every read goes through: "/" on a real host, a fake tree in tests.
  std::string root = "/";
  Role role = Role::kBareMetal;
  /// Flavors the host should fit (hypervisor role); empty = skip the flavor checks.
  std::vector<placement::Flavor> flavors;
  /// PCI aliases the flavors' pci_passthrough:alias names refer to; empty = by accelerator
  /// kind, as tuning::PlanTuning resolves them.
  placement::PciAliasTable aliases;
  /// NCCL_NET_GDR_LEVEL in effect ("" = NCCL's default PXB).
  std::string gdr_level;
  /// Treat the process as unprivileged even when it is root (tests of the "needs root" path).
  bool assume_unprivileged = false;
  /// NVML to ask what sysfs cannot tell (persistence mode set by `nvidia-smi -pm 1`, HOST-09);
  /// "" = libnvidia-ml.so.1 when root is "/", none otherwise (another host's copy).
  std::string nvml_library;
};

/// All findings of one run, in check-id order.
struct DoctorReport {
  std::string hostname;
  std::string role;
  std::vector<Finding> findings;

  Severity Worst() const;  ///< kOk for an empty report
};

/// Runs every check against `host` (the topology read from the same root). Never throws for
/// what it reads: a missing or unreadable file becomes evidence and, where it matters, a
/// finding. On a host without accelerators the accelerator checks report kNotApplicable.
DoctorReport RunDoctor(const topology::HostTopology& host, const DoctorOptions& options);

/// Throws accel::InputError when `level` (a --gdr-level value) is neither empty nor something
/// NCCL_NET_GDR_LEVEL accepts.
void CheckGdrLevel(const std::string& level);

/// Checks what the command line can get wrong before anything is read: an unknown gdr_level
/// (NCCL_NET_GDR_LEVEL syntax), flavors whose extra specs or aliases the tuning plan refuses.
/// Throws accel::InputError naming the option or flavor file; returns when all is well.
void CheckDoctorOptions(const topology::HostTopology& host, const DoctorOptions& options);

/// Exit code for a report: 0 when nothing is worse than info, 1 for warnings, 4 for
/// failures (2 stays "bad input", 3 "internal error", as for every accel command).
int DoctorExitCode(const DoctorReport& report);

/// Renders: text (one block per finding: "[FAIL] GDR-01 peer memory ...", evidence, fix;
/// only non-ok findings unless `verbose`) or JSON (every finding).
std::string RenderDoctorText(const DoctorReport& report, bool verbose);
std::string RenderDoctorJson(const DoctorReport& report);

}  // namespace accel::doctor
