// Fleet capacity: how many more instances of each flavor the fleet takes, and which free
// accelerators no flavor can use (stranded), and why.
//
// Defined exactly so a test can check it: count(flavor) = how many instances the scheduler would
// place if asked for one at a time until nothing fits, from the current claims, each flavor on
// its own. Hosts are independent (an instance lands on one host), so that number is the sum over
// eligible hosts of how many times the engine fits the flavor on the host in a row — which is
// what is computed, once per distinct (hardware, policy, usage).
// Eligible hosts are those the scheduler would consider: enabled, not stale, matching --where.
//
// The distinct states' fills are independent, so they run on a few threads (CapacityOptions::
// threads); each fill has its own placement::HostState, and the report is assembled in host and
// flavor order afterwards, so it is the same for any number of threads.
//
// Thread-safety: reads the view only; the view must not change during the call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"
#include "fleet/labels.h"
#include "placement/request.h"

namespace accel::fleet {

/// Threads Capacity uses by default: the machine's hardware threads, at most this many (the
/// fills of one fleet run out before more threads pay off, and a service shares its host).
inline constexpr int kMaxDefaultCapacityThreads = 8;

struct CapacityOptions {
  std::vector<LabelRequirement> where;  ///< only hosts matching every term
  std::string group_by;                 ///< label key to break counts down by; "" = none
  int64_t now_unix = 0;                 ///< for staleness; 0 = the view's taken_at
  int max_per_host = 4096;              ///< stop filling one host after this many instances
  /// Threads filling host states: 0 = std::thread::hardware_concurrency(), at most
  /// kMaxDefaultCapacityThreads; 1 = on the calling thread only. The report does not depend on it.
  int threads = 0;
};

struct FlavorCapacity {
  std::string flavor;                      ///< flavor name
  int64_t count = 0;                       ///< instances the fleet still takes
  std::map<std::string, int64_t> by_group; ///< group_by label value -> count ("(none)": no label)
  /// The resource that runs out first: the cause most eligible hosts stop on ("CPUs",
  /// "PCI devices", "memory", ...), and on how many hosts.
  std::string runs_out_first;
  std::map<std::string, int> stops_on;     ///< cause -> hosts that stop on it
};

/// Free accelerators of one host that no given flavor can use.
struct StrandedHost {
  std::string host;
  int free_accelerators = 0;              ///< free now
  std::vector<std::string> stranded;      ///< addresses no flavor takes even when the host is filled
  std::string reason;                     ///< why, e.g. "gpu-1g: node 1: 0 free dedicated CPUs, needs 8"
};

struct CapacityReport {
  std::vector<FlavorCapacity> flavors;    ///< in the order given
  std::vector<StrandedHost> stranded;     ///< hosts with stranded accelerators, by name
  int stranded_accelerators = 0;          ///< sum over hosts
  int eligible_hosts = 0;                 ///< hosts counted
  int engine_fills = 0;                   ///< distinct host states filled (for benchmarks)
};

/// Computes capacity for `flavors` (requests built from them) over `view`, on
/// options.threads threads (the caller's among them). Rethrows the first exception a fill
/// throws, after every thread has stopped.
CapacityReport Capacity(const FleetView& view, const std::vector<placement::PlacementRequest>& flavors,
                        const CapacityOptions& options);

}  // namespace accel::fleet
