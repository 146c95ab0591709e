// The names accel's DRA driver gives its published devices and ResourceSlices, in one place so
// that the inventory, the slice builder and the claim preparer (which reads device names back
// from a claim's allocation) agree.
//
// Every device name is a DNS label (lower case, ≤ 63 characters) that stays the same for the
// same hardware: "gpu-<i>" (i = position of the accelerator among the node's accelerators in
// PCI order), "gpu-<i>-mig-<profile>-<n>" ("1g.10gb+me" → "1g-10gb-me"; n = the MIG device's
// position on its GPU), "nic-<j>" (j = position of the RDMA port among the node's non-VF ports
// in PCI order), "nic-<j>-vf-<k>" (k = the VF's position among its PF's VFs).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace accel::dra {

/// "gpu-<index>".
std::string GpuDeviceName(int index);

/// "gpu-<gpu>-mig-<profile>-<n>": the profile lower-cased, every character other than a-z 0-9
/// replaced by '-' (runs collapsed, none at either end). A name that would exceed 63
/// characters keeps its "gpu-<gpu>-mig-" head and "-<n>" tail and shortens the profile part.
std::string MigDeviceName(int gpu, std::string_view profile, int n);

/// "nic-<index>".
std::string NicDeviceName(int index);

/// "nic-<pf>-vf-<k>".
std::string VfDeviceName(int pf, int k);

/// The counter set of GPU `gpu`: "gpu-<gpu>-counters".
std::string GpuCounterSetName(int gpu);

/// `text` as a DNS label fragment: lower case, a-z 0-9 and single '-' only, no '-' at either
/// end; "" when nothing is left.
std::string DnsLabelFragment(std::string_view text);

/// The name of ResourceSlice number `n` of a node's pool: "<node>-<driver>-<n>". When that is
/// not a DNS subdomain of ≤ 253 characters (a very long node name), the "<node>-<driver>" part
/// is cut and a hash of the whole of it is put in front of "-<n>", so names stay unique and
/// the same on every call.
std::string ResourceSliceName(std::string_view node, std::string_view driver, int n);

}  // namespace accel::dra
