// Fleet capacity: how many more instances of each flavor the fleet takes, which free
// accelerators no flavor can use — stranded by fragmentation, or of a kind no flavor asks for —
// and why, and the fleet's GPU fragmentation for the flavors as a number (F, in GPU
// thousandths: the free GPU capacity the flavors cannot use; FGD's measure with the engine's
// exact fills, docs/fleet-efficiency.md).
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
  /// Stranded by fragmentation: addresses of a kind some flavor asks for, yet no flavor takes
  /// them even when the host is filled (its CPUs, memory, NUMA layout or devices run out first).
  std::vector<std::string> stranded;
  /// Not wanted by the mix: addresses of a kind no given flavor asks for (an MI300X beside
  /// H100-only flavors). Not fragmentation: a flavor for them would use them.
  std::vector<std::string> unwanted;
  std::string reason;                     ///< why stranded, e.g. "gpu-1g: node 1: 0 free dedicated CPUs, needs 8"
};

/// One host's GPU fragmentation for the given flavors (docs/fleet-efficiency.md), in GPU
/// thousandths: of its free GPU capacity, what the flavors cannot use.
struct HostFragmentationLine {
  std::string host;
  int64_t free_milli = 0;         ///< free GPU capacity (whole free GPUs and free parts of shared ones)
  /// F(h): over the flavors (equal weights), the free capacity on GPUs of a kind the flavor asks
  /// for that is still free after filling the host with it — what the mix cannot use.
  double fragmented_milli = 0;
  int64_t unwanted_milli = 0;     ///< free capacity on GPUs no flavor asks for
};

struct CapacityReport {
  std::vector<FlavorCapacity> flavors;    ///< in the order given
  std::vector<StrandedHost> stranded;     ///< hosts with stranded or unwanted accelerators, by name
  int stranded_accelerators = 0;          ///< sum over hosts of stranded (by fragmentation)
  int unwanted_accelerators = 0;          ///< sum over hosts of unwanted (not asked for by the mix)
  /// Hosts with free GPU capacity, by name, and the fleet's sums of their lines.
  std::vector<HostFragmentationLine> fragmentation;
  int64_t free_gpu_milli = 0;
  double fragmented_gpu_milli = 0;
  int64_t unwanted_gpu_milli = 0;
  int eligible_hosts = 0;                 ///< hosts counted
  int engine_fills = 0;                   ///< distinct host states filled (for benchmarks)
};

/// Computes capacity for `flavors` (requests built from them) over `view`, on
/// options.threads threads (the caller's among them). Rethrows the first exception a fill
/// throws, after every thread has stopped.
CapacityReport Capacity(const FleetView& view, const std::vector<placement::PlacementRequest>& flavors,
                        const CapacityOptions& options);

}  // namespace accel::fleet
