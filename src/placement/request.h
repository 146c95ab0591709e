// PlacementRequest: what a flavor asks of a host, after its extra specs were parsed and checked.
//
// Built by placement/flavor.h from a Nova flavor (+ PCI aliases); consumed by the placement
// engine (placement/engine.h) and by the libvirt domain writer. Plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cpuset.h"

namespace accel::placement {

enum class CpuPolicy { kShared, kDedicated, kMixed };
enum class ThreadPolicy { kPrefer, kIsolate, kRequire };
enum class EmulatorPolicy { kShare, kIsolate };
/// Nova's hw:pci_numa_affinity_policy / alias numa_policy.
enum class PciNumaPolicy { kRequired, kLegacy, kPreferred, kSocket };

/// Page size request, as hw:mem_page_size says it.
struct PageSizeRequest {
  enum Kind { kNone, kSmall, kLarge, kAny, kExplicit };
  Kind kind = kNone;       ///< kNone: not set (base pages, no hugepages)
  uint64_t size_kib = 0;   ///< for kExplicit: the page size in KiB (e.g. 2048, 1048576)
};

/// One guest NUMA cell.
struct GuestCell {
  CpuSet dedicated_vcpus;  ///< vCPUs pinned 1:1 to host CPUs (all of them under "dedicated")
  CpuSet shared_vcpus;     ///< vCPUs floating over the host node's shared CPUs
  uint64_t memory_mib = 0; ///< guest memory of this cell
};

/// One PCI device match spec (a Nova [pci]alias entry).
struct PciSpec {
  std::string alias;               ///< alias name it came from
  std::optional<uint16_t> vendor_id;   ///< unset: any vendor
  std::optional<uint16_t> product_id;  ///< unset: any product
  std::string device_type;         ///< "type-PCI", "type-PF", "type-VF" or "" (any)
};

/// "count devices matching any of specs", with a NUMA affinity policy.
struct PciRequest {
  std::string alias;          ///< the alias name as written in pci_passthrough:alias
  int count = 1;              ///< devices wanted
  std::vector<PciSpec> specs; ///< a device matches the request if it matches one spec
  PciNumaPolicy numa_policy = PciNumaPolicy::kLegacy;
};

/// Guest-visible CPU topology (hw:cpu_sockets/cores/threads); 0 = not set.
struct GuestCpuTopology {
  int sockets = 0;
  int cores = 0;
  int threads = 0;
};

struct PlacementRequest {
  std::string flavor;            ///< flavor name
  int vcpus = 0;                 ///< total vCPUs
  uint64_t memory_mib = 0;       ///< total guest memory
  CpuPolicy cpu_policy = CpuPolicy::kShared;
  ThreadPolicy thread_policy = ThreadPolicy::kPrefer;
  EmulatorPolicy emulator_policy = EmulatorPolicy::kShare;
  PageSizeRequest page_size;
  /// Guest NUMA cells; empty when the flavor has no NUMA topology (Nova: no hw:numa_nodes, no
  /// page size, shared CPUs) and the guest floats over the host.
  std::vector<GuestCell> cells;
  std::vector<PciRequest> pci;   ///< in the order of pci_passthrough:alias
  GuestCpuTopology guest_topology;
  /// The flavor's extra specs as given, for the record (output, libvirt metadata).
  std::vector<std::pair<std::string, std::string>> extra_specs;
};

const char* CpuPolicyName(CpuPolicy p);            ///< "shared", "dedicated", "mixed"
const char* ThreadPolicyName(ThreadPolicy p);      ///< "prefer", "isolate", "require"
const char* EmulatorPolicyName(EmulatorPolicy p);  ///< "share", "isolate"
const char* PciNumaPolicyName(PciNumaPolicy p);    ///< "required", "legacy", "preferred", "socket"

}  // namespace accel::placement
