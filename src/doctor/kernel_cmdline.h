// The kernel command line (/proc/cmdline) as the kernel itself reads it, and the CPU lists in
// it (isolcpus, nohz_full, rcu_nocbs, irqaffinity).
//
// Parsing follows kernel/params.c (next_arg) and lib/bitmap.c (bitmap_parselist): parameters
// are separated by spaces outside double quotes, "--" ends the kernel's part, '-' and '_' are
// the same in a name, and a CPU list may hold "all", "N" (the last CPU) and strided groups
// "0-31:2/4". Pure functions over text; safe from any thread; never throw.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpuset.h"

namespace accel::doctor {

/// One parameter as written: "isolcpus=domain,2-5" → {"isolcpus", "domain,2-5", true}.
struct KernelParam {
  std::string key;         ///< name as written (quotes removed)
  std::string value;       ///< text after the first '=' (quotes removed); "" when none
  bool has_value = false;  ///< an '=' was present
};

/// The parsed command line.
class KernelCmdline {
 public:
  /// Splits `text` (the whole of /proc/cmdline). Parameters after a lone "--" belong to init
  /// and are kept apart (init_args).
  static KernelCmdline Parse(std::string_view text);

  /// Every kernel parameter, in order.
  const std::vector<KernelParam>& params() const { return params_; }
  /// Words after "--", passed to init.
  const std::vector<std::string>& init_args() const { return init_args_; }

  /// True when a parameter named `key` is present ('-' and '_' compare equal).
  bool Has(std::string_view key) const;
  /// The value of the last `key` (the kernel lets a later one override an earlier one for
  /// most parameters); std::nullopt when absent. A bare "key" gives "".
  std::optional<std::string> Last(std::string_view key) const;
  /// Values of every `key`, in order (hugepagesz/hugepages come in pairs).
  std::vector<std::string> All(std::string_view key) const;

 private:
  std::vector<KernelParam> params_;
  std::vector<std::string> init_args_;
};

/// Parses a kernel CPU list for a machine of `nr_cpus` CPUs (ids 0..nr_cpus-1): comma-separated
/// "N", "A-B", "A-B:USED/GROUP", "all", and "N" for the last CPU. Returns false with *error
/// naming the bad part ("CPU 300 is beyond the last CPU 223") when the kernel would refuse the
/// list — it then ignores the whole parameter.
bool ParseKernelCpuList(std::string_view text, int nr_cpus, CpuSet* out, std::string* error);

/// isolcpus=[flag,...,]cpu-list.
struct IsolCpus {
  CpuSet cpus;                     ///< the CPU list
  std::vector<std::string> flags;  ///< as written: "nohz", "domain", "managed_irq"
  bool domain = false;   ///< scheduler-domain isolation (the default when no flag is given);
                         ///< only then does /sys/devices/system/cpu/isolated list the CPUs
  bool nohz = false;         ///< the "nohz" flag
  bool managed_irq = false;  ///< the "managed_irq" flag
};

/// Parses the value of isolcpus= as kernel/sched/isolation.c does: leading words followed by
/// ',' are flags (unknown ones are an error here, the kernel warns and drops them), the rest is
/// a CPU list. Returns false with *error on a bad flag or list.
bool ParseIsolCpus(std::string_view value, int nr_cpus, IsolCpus* out, std::string* error);

}  // namespace accel::doctor
