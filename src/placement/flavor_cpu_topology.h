// The guest-visible CPU topology Nova derives from hw:cpu_sockets/cores/threads and
// hw:cpu_max_* (nova.virt.hardware.get_best_cpu_topology, flavor without image). It changes what
// the guest sees in <cpu><topology>, never where it is placed. Pure function; thread-safe.
#pragma once

#include <optional>

#include "placement/request.h"

namespace accel::placement {

/// Nova's choice for `vcpus` given preferred values (0 = no preference) and maximums
/// (0 = unlimited): preferred values above a maximum are dropped (all three, as Nova does);
/// candidates are every sockets*cores*threads == vcpus within the maximums, ordered by
/// sockets*cores, then sockets, then threads, all descending; the first of those matching the
/// most preferred values wins. Returns nullopt when no candidate exists
/// (Nova: ImageVCPULimitsRangeImpossible).
std::optional<GuestCpuTopology> BestGuestCpuTopology(int vcpus, GuestCpuTopology preferred,
                                                     const GuestCpuTopology& maximum);

}  // namespace accel::placement
