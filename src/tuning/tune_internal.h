// Shared between the tuning planner's files; not part of the layer's interface.
#pragma once

#include <cstdint>

#include "tuning/tune_plan.h"

namespace accel::tuning {

inline constexpr uint64_t kPage2M = 2048;     ///< KiB
inline constexpr uint64_t kPage1G = 1048576;  ///< KiB

/// Fills plan->kernel_args, nova_conf, commands and the general notes from the nodes' pages and
/// CPU sets (already planned). `pin`: some planned flavor pins vCPUs, so CPUs are isolated.
void FinishPlan(const topology::HostTopology& host, const TuneOptions& options, bool pin,
                TunePlan* plan);

}  // namespace accel::tuning
