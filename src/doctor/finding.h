// A doctor finding: one check's verdict on one host, with the evidence it read and the exact fix.
// Plain data; every check (doctor/*_checks.cc) produces these and the CLI renders them.
#pragma once

#include <string>
#include <vector>

namespace accel::doctor {

/// Severity, ordered: a report's exit code follows the worst one.
enum class Severity : int {
  kOk = 0,             ///< checked, fine
  kNotApplicable = 1,  ///< nothing to check on this host (no accelerators, no RDMA NICs, a VM)
  kInfo = 2,           ///< worth knowing, no action needed
  kWarn = 3,           ///< works, but slower or fragile
  kFail = 4,           ///< GPUDirect RDMA or the flavors' placement will not work
};

/// "ok", "n/a", "info", "warn", "fail".
const char* SeverityName(Severity severity);

/// One value read from the host.
struct Evidence {
  std::string path;   ///< what was read, as it is on a real host ("/proc/cmdline", "/sys/bus/pci/devices/0000:1b:00.0/current_link_width")
  std::string value;  ///< what it held (trimmed; "(missing)" or "(unreadable: Permission denied)")
};

/// One check's verdict.
struct Finding {
  std::string id;        ///< stable check id, e.g. "GDR-01", "HOST-02" (as in docs/doctor.md)
  std::string title;     ///< what is checked, e.g. "peer memory for GPUDirect RDMA"
  Severity severity = Severity::kOk;
  std::string summary;   ///< the verdict in one sentence, naming devices/nodes
  std::vector<Evidence> evidence;
  std::string fix;       ///< exact commands or settings; "" when nothing to do
  bool needs_root = false;    ///< the check could not read everything without root
  bool needs_reboot = false;  ///< the fix takes effect after a reboot
};

}  // namespace accel::doctor
