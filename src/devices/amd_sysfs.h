// What the AMD backend reads from sysfs instead of ROCm SMI: the current DPM clock levels, whose
// rsmi_frequencies_t layout changed between ROCm releases (research notes, telemetry.md §3.3).
//
// Plain functions over files; safe from any thread.
#pragma once

#include <optional>
#include <string>

namespace accel::devices::amd_sysfs {

/// The sysfs mount point: $ACCEL_SYSFS_ROOT when set and non-empty (tests point it at a temp
/// tree), else "/sys".
std::string SysfsRoot();

/// The amdgpu device directory of the PCI device `bdf` (canonical "0000:0c:00.0"):
/// "<root>/class/drm/cardN/device" for the cardN listed in <root>/bus/pci/devices/<bdf>/drm/,
/// else the PCI device directory itself when it exists. Returns "" when sysfs has no such device.
std::string CardDeviceDir(const std::string& root, const std::string& bdf);

/// The MHz of the level marked '*' in pp_dpm_sclk / pp_dpm_mclk text such as
/// "0: 500Mhz\n1: 1700Mhz *\n". Returns nullopt when no line is marked or the marked line does
/// not parse.
std::optional<double> CurrentDpmLevelMhz(const std::string& text);

}  // namespace accel::devices::amd_sysfs
