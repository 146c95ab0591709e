// Path types between two PCI endpoints (GPU, NIC) in NCCL's terms, with nvidia-smi's label beside
// them, and the narrowest PCIe bandwidth on the path.
//
// NCCL decides GPUDirect RDMA and which NIC each GPU uses from exactly these values
// (NVIDIA/nccl src/graph/paths.cc), so accel reproduces its rules rather than inventing a
// distance: one node per PCIe switch (upstream port + its downstream ports), root ports
// invisible, root complexes merged per NUMA node, Broadcom Gen4/Gen5 two-level switches
// flattened. Pure functions over the shared topology model; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/host.h"

namespace accel::fabric {

/// NCCL's path types, ordered: lower is closer. Values are NCCL's own (src/include/graph.h).
enum class PathType : int {
  kLoc = 0,   ///< the same device
  kNvl = 1,   ///< direct NVLink (also through NVSwitch)
  kNvb = 2,   ///< NVLink through another GPU
  kC2c = 3,   ///< chip-to-chip (Grace <-> GPU)
  kPix = 4,   ///< through at most one PCIe switch
  kPxb = 5,   ///< through several PCIe switches, no host bridge
  kP2c = 6,   ///< GPU over C2C to its CPU, then PCIe to the NIC
  kPxn = 7,   ///< to the NIC of another GPU reached over NVLink
  kPhb = 8,   ///< through a CPU root complex of one NUMA node (nvidia-smi PHB or NODE)
  kSys = 9,   ///< across the socket interconnect (UPI, xGMI), or NUMA node unknown
  kNet = 10,  ///< through the network
  kDis = 11,  ///< disconnected
};

/// NCCL's name: "LOC", "NVL", ..., "DIS".
const char* PathTypeName(PathType type);

/// Parses what NCCL_NET_GDR_LEVEL / NCCL_P2P_LEVEL accept: a name (case-insensitive) or a
/// legacy integer 0..5 (LOC, PIX, PXB, PHB, SYS, SYS). Returns std::nullopt otherwise.
std::optional<PathType> ParsePathType(std::string_view text);

/// How two PCI endpoints reach each other.
struct PathInfo {
  PathType type = PathType::kSys;  ///< NCCL's type
  /// nvidia-smi topo -m's label: "X" (same device), "PIX", "PXB", "PHB" (one host bridge),
  /// "NODE" (host bridges of one NUMA node), "SYS".
  std::string smi;
  /// Narrowest PCIe link on the path in GB/s, NCCL's formula (width x per-lane rate / 8:
  /// Gen3 x16 = 12, Gen4 x16 = 24, Gen5 x16 = 48); 0 when the topology gives no link speeds.
  double bandwidth_gbs = 0;
  /// PCIe hops between the two in NCCL's collapsed graph (tie-breaker only).
  int hops = 0;
  /// The NUMA node of either end was unknown (-1), so the type fell back to SYS.
  bool numa_unknown = false;
};

/// A PCIe link as generation and lane count.
struct PcieLink {
  int gen = 0;    ///< 1..6
  int width = 0;  ///< lanes: 1, 2, 4, 8, 12, 16, 32
};

/// The (generation, width) whose bandwidth hwloc would report as `hwloc_gbs` (GB/s after line
/// encoding: Gen5 x16 = 63.015, Gen4 x16 = 31.5, Gen3 x16 = 15.75, Gen2 x16 = 8), within 1%.
/// Several pairs give the same value (Gen4 x8 = Gen3 x16); the widest wins, as slots are
/// mostly x16. Returns std::nullopt for 0 or a value no standard link has.
std::optional<PcieLink> PcieLinkFromHwloc(double hwloc_gbs);

/// NCCL's bandwidth of a link, width x per-lane rate / 80 GB/s with rates 15, 30, 60, 120, 240,
/// 480 for Gen1..6 (Gen3 x16 = 12, Gen4 x16 = 24, Gen5 x16 = 48).
double NcclPcieBandwidth(PcieLink link);

/// NCCL's bandwidth of a link hwloc reports as `hwloc_gbs`: through PcieLinkFromHwloc, else
/// (a non-standard value) scaled by NCCL's 0.75 over hwloc's 128/130 encoding. 0 stays 0.
double NcclPcieBandwidth(double hwloc_gbs);

/// NCCL's collapsed view of one host's PCI tree, built once so that many pairs can be
/// classified cheaply (ClassifyPath builds one per call). Holds a pointer to `host`, which
/// must outlive it and stay unchanged. Const methods are safe from any thread.
class PathClassifier {
 public:
  explicit PathClassifier(const topology::HostTopology& host);

  /// Index into host.pci of the object at `address` (canonical or short "1b:00.0"), or -1.
  int Find(const std::string& address) const;
  /// As ClassifyPath, by indexes into host.pci (both valid).
  PathInfo Classify(int a, int b) const;
  /// As ClassifyPath. Throws accel::InputError when either address is not in the host.
  PathInfo Classify(const std::string& a, const std::string& b) const;

 private:
  // One entry per host.pci object.
  struct Node {
    int parent = -1;         // raw parent index; -1 at a host bridge or a dangling parent
    int host_bridge = -1;    // index of the host bridge above (itself for a host bridge)
    int raw_switch = -1;     // NCCL's switch node before Broadcom flattening; -1 = on the CPU
    std::vector<int> chain;  // NCCL switch nodes above, nearest first, after flattening
    int cpu_numa = -1;       // NUMA node of the CPU node the chain ends at
    double uplink_bw = 0;    // NCCL bandwidth of the link to its NCCL parent; 0 unknown
  };
  void BuildRawSwitches();
  void FlattenBroadcom(std::vector<int>* rep) const;
  std::string SmiLabel(int a, int b, const PathInfo& nccl) const;

  const topology::HostTopology* host_;
  std::vector<Node> nodes_;
  std::vector<std::pair<std::string, int>> index_;  // canonical address → index, sorted
  bool multi_numa_ = false;
};

/// "dddd:bb:dd.f" for "bb:dd.f" or any case variant; host bridges ("pci0000:00") lower-cased;
/// anything else returned unchanged.
std::string CanonicalPciAddress(const std::string& address);

/// Classifies the path between the PCI functions at `a` and `b` (canonical or short
/// addresses). Rules, after collapsing switches as NCCL does:
///   same function → LOC/"X"; same switch node → PIX; common switch ancestor → PXB;
///   same host bridge → PHB/"PHB"; different host bridges on one NUMA node → PHB/"NODE";
///   different NUMA nodes, or either unknown on a host with several nodes → SYS/"SYS".
/// Throws accel::InputError when either address is not in `host`.
PathInfo ClassifyPath(const topology::HostTopology& host, const std::string& a,
                      const std::string& b);

}  // namespace accel::fabric
