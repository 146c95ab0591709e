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

/// How a MIG profile sits on GPUs of one model (from the MIG catalog, sharing/mig_geometry.h,
/// resolved by whoever builds the request: placement does not know MIG geometry).
struct MigShape {
  std::string model_profile;  ///< "MODEL/PROFILE" as resolved, for messages
  uint16_t vendor_id = 0;     ///< GPUs with these PCI ids have this shape
  uint16_t device_id = 0;
  int gpu_slices = 8;         ///< memory slices of the GPU (8, or 4 on A30)
  int memory_slices = 1;      ///< memory slices one instance covers
  std::vector<int> starts;    ///< allowed first slices, ascending
};

/// GPUs asked for by model and size, as Kubernetes pods and vGPU flavors ask for them, instead
/// of by PCI alias: whole GPUs of one host, a share of one GPU, or one MIG slice.
///   - count >= 1, milli 1000, no profile: `count` whole GPUs of one host, exclusive;
///   - count 1, milli 1..999: that many thousandths of one GPU (time-slicing / MPS). The shares
///     on one GPU never sum above 1000, and a GPU holding shares is never handed out whole;
///   - count 1, mig_profile set: one GPU instance of that profile, at a placement the model's MIG
///     catalog allows beside the slices already on that GPU (sharing/mig_geometry.h).
struct GpuRequest {
  int count = 1;                    ///< GPUs (1..64); 1 with a share or a MIG profile
  int milli = 1000;                 ///< thousandths of each GPU, 1..1000; < 1000 only with count 1
  std::string mig_profile;          ///< MIG profile name on the GPU's model ("1g.10gb"); "" = none
  /// Allowed GPU models, any of them (placement/gpu_fit.h: GpuModelMatches); empty = any GPU.
  std::vector<std::string> models;
  /// With a MIG profile: its shape on each model that has it; a GPU of another model cannot
  /// take the request.
  std::vector<MigShape> mig_shapes;
  /// GPU capacity asked for in thousandths: count x milli (a MIG slice counts its memory
  /// slices' fraction of the GPU, computed where the model is known).
  int64_t TotalMilli() const { return static_cast<int64_t>(count) * milli; }
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
  /// Pod-shaped CPU: thousandths of a CPU from the host's shared pool, not pinned (Kubernetes'
  /// requests.cpu). Only for requests without guest NUMA cells; charged beside vcpus x 1000.
  int64_t cpu_milli = 0;
  /// GPUs by model and size (shares, MIG slices, whole GPUs of a model list); unset = none.
  /// Only for requests without guest NUMA cells.
  std::optional<GpuRequest> gpu;
  GuestCpuTopology guest_topology;
  /// The flavor's extra specs as given, for the record (output, libvirt metadata).
  std::vector<std::pair<std::string, std::string>> extra_specs;
};

const char* CpuPolicyName(CpuPolicy p);            ///< "shared", "dedicated", "mixed"
const char* ThreadPolicyName(ThreadPolicy p);      ///< "prefer", "isolate", "require"
const char* EmulatorPolicyName(EmulatorPolicy p);  ///< "share", "isolate"
const char* PciNumaPolicyName(PciNumaPolicy p);    ///< "required", "legacy", "preferred", "socket"

}  // namespace accel::placement
