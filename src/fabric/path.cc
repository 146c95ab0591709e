#include "fabric/path.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace accel::fabric {
namespace {

using topology::PciRole;

// A chain longer than this is a cycle in a malformed tree; real PCIe trees are < 10 deep.
constexpr int kMaxDepth = 64;

constexpr std::array<const char*, 12> kNames = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};

// Per-lane data rate after line encoding, in GB/s, as hwloc computes it (8b/10b for Gen1/2,
// 128b/130b for Gen3-5, 242/256 FLIT for Gen6).
double HwlocLaneRate(int gen) {
  static constexpr double kGt[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (gen <= 2) return kGt[gen] * 8 / 10 / 8;
  if (gen <= 5) return kGt[gen] * 128 / 130 / 8;
  return kGt[gen] * 242 / 256 / 8;
}

// NCCL's per-lane rate unit (src/graph/topo.cc kvDictPciGen), divided by 80 for GB/s.
int NcclLaneUnit(int gen) {
  static constexpr int kUnit[] = {0, 15, 30, 60, 120, 240, 480};
  return kUnit[gen];
}

bool IsBroadcomPex(const topology::PciDevice& dev) {
  return dev.vendor_id == 0x1000 && (dev.device_id == 0xc010 || dev.device_id == 0xc030);
}

double MinKnown(double a, double b) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return std::min(a, b);
}

}  // namespace

const char* PathTypeName(PathType type) {
  int v = static_cast<int>(type);
  return v >= 0 && v < static_cast<int>(kNames.size()) ? kNames[v] : "?";
}

std::optional<PathType> ParsePathType(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '5') {
    // NCCL's levelsOldToNew: the pre-2.7 integer levels.
    static constexpr PathType kOld[] = {PathType::kLoc, PathType::kPix, PathType::kPxb,
                                        PathType::kPhb, PathType::kSys, PathType::kSys};
    return kOld[text[0] - '0'];
  }
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // NCCL accepts LOC..SYS only (ncclGetLevel loops up to PATH_SYS).
  for (int v = 0; v <= static_cast<int>(PathType::kSys); ++v) {
    if (upper == kNames[v]) return static_cast<PathType>(v);
  }
  return std::nullopt;
}

std::optional<PcieLink> PcieLinkFromHwloc(double hwloc_gbs) {
  if (!(hwloc_gbs > 0)) return std::nullopt;
  static constexpr int kWidths[] = {16, 8, 32, 4, 2, 1, 12};
  for (int width : kWidths) {
    for (int gen = 6; gen >= 1; --gen) {
      double expect = width * HwlocLaneRate(gen);
      if (std::fabs(expect - hwloc_gbs) <= 0.01 * expect) return PcieLink{gen, width};
    }
  }
  return std::nullopt;
}

double NcclPcieBandwidth(PcieLink link) {
  if (link.gen < 1 || link.gen > 6 || link.width <= 0) return 0;
  return link.width * NcclLaneUnit(link.gen) / 80.0;
}

double NcclPcieBandwidth(double hwloc_gbs) {
  if (!(hwloc_gbs > 0)) return 0;
  if (std::optional<PcieLink> link = PcieLinkFromHwloc(hwloc_gbs)) return NcclPcieBandwidth(*link);
  return hwloc_gbs * 0.75 * 130 / 128;
}

std::string CanonicalPciAddress(const std::string& address) {
  std::string s;
  for (char c : address) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("pci", 0) == 0) return s;
  size_t colons = std::count(s.begin(), s.end(), ':');
  if (colons == 1 && s.find('.') != std::string::npos) s = "0000:" + s;
  return s;
}

PathClassifier::PathClassifier(const topology::HostTopology& host) : host_(&host) {
  const auto& pci = host.pci;
  int n = static_cast<int>(pci.size());
  nodes_.resize(n);
  index_.reserve(n);
  for (int i = 0; i < n; ++i) index_.emplace_back(CanonicalPciAddress(pci[i].address), i);
  std::sort(index_.begin(), index_.end());

  int known_nodes = 0;
  for (const auto& node : host.numa_nodes) known_nodes += node.id >= 0;
  multi_numa_ = known_nodes > 1;

  for (int i = 0; i < n; ++i) {
    Node& node = nodes_[i];
    if (pci[i].role == PciRole::kHostBridge) {
      node.host_bridge = i;
      continue;
    }
    node.parent = pci[i].parent.empty() ? -1 : Find(pci[i].parent);
    if (node.parent == i) node.parent = -1;
    if (node.parent >= 0) {
      if (pci[node.parent].role == PciRole::kHostBridge) {
        node.host_bridge = node.parent;
      } else {
        node.host_bridge = nodes_[node.parent].host_bridge;
      }
    }
    node.uplink_bw = NcclPcieBandwidth(pci[i].link_gbps);
  }
  BuildRawSwitches();

  std::vector<int> rep(n);
  for (int i = 0; i < n; ++i) rep[i] = i;
  FlattenBroadcom(&rep);

  for (int i = 0; i < n; ++i) {
    Node& node = nodes_[i];
    int top = i;
    for (int s = node.raw_switch, depth = 0; s >= 0 && depth < kMaxDepth;
         s = nodes_[s].raw_switch, ++depth) {
      top = s;
      int r = rep[s];
      if (node.chain.empty() || node.chain.back() != r) node.chain.push_back(r);
    }
    // NCCL attaches the topmost node to the CPU of its own numa_node file; the tree model
    // may know the node only on an ancestor (a root port, the host bridge).
    for (int at = top, depth = 0; at >= 0 && depth < kMaxDepth; at = nodes_[at].parent, ++depth) {
      if (pci[at].numa_node >= 0) {
        node.cpu_numa = pci[at].numa_node;
        break;
      }
    }
  }
}

// NCCL walks sysfs paths upwards two components at a time: from a device it skips the
// downstream port and lands on the switch's upstream port; when a step reaches the root
// complex ("pci0000:00") the node hangs off the CPU. So root ports never appear.
void PathClassifier::BuildRawSwitches() {
  const auto& pci = host_->pci;
  auto is_bdf = [&](int at) { return at >= 0 && pci[at].role != PciRole::kHostBridge; };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (!is_bdf(static_cast<int>(i))) continue;
    int p1 = node.parent;
    if (!is_bdf(p1)) continue;
    int p2 = nodes_[p1].parent;
    if (!is_bdf(p2)) continue;
    node.raw_switch = p2;
  }
}

// NCCL's ncclTopoFlattenBcmSwitches: a Broadcom PEX Gen4/Gen5 switch presents itself as two
// levels; the sub-switches below a top one (same device id) are merged into it, once.
void PathClassifier::FlattenBroadcom(std::vector<int>* rep) const {
  const auto& pci = host_->pci;
  int n = static_cast<int>(nodes_.size());
  std::vector<char> is_switch(n, 0);
  for (const Node& node : nodes_) {
    if (node.raw_switch >= 0) is_switch[node.raw_switch] = 1;
  }
  std::vector<char> flattened(n, 0);
  for (int s = 0; s < n; ++s) {  // tree order: parents first
    if (!is_switch[s] || (*rep)[s] != s || !IsBroadcomPex(pci[s])) continue;
    int sub = nodes_[s].raw_switch;
    if (sub >= 0 && flattened[(*rep)[sub]]) continue;  // a level already merged above
    for (int t = 0; t < n; ++t) {
      if (t == s || !is_switch[t] || nodes_[t].raw_switch != s || (*rep)[t] != t) continue;
      if (!IsBroadcomPex(pci[t]) || pci[t].device_id != pci[s].device_id) continue;
      (*rep)[t] = s;
      flattened[s] = 1;
    }
  }
}

int PathClassifier::Find(const std::string& address) const {
  std::string key = CanonicalPciAddress(address);
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(key, -1));
  return it != index_.end() && it->first == key ? it->second : -1;
}

PathInfo PathClassifier::Classify(const std::string& a, const std::string& b) const {
  int ia = Find(a), ib = Find(b);
  for (const std::string* missing : {ia < 0 ? &a : nullptr, ib < 0 ? &b : nullptr}) {
    if (missing == nullptr) continue;
    throw InputError(host_->source.empty() ? "topology" : host_->source, *missing,
                     "no such PCI function in the topology",
                     "addresses look like 0000:1b:00.0; `accel topo` lists them");
  }
  return Classify(ia, ib);
}

PathInfo PathClassifier::Classify(int a, int b) const {
  PathInfo info;
  if (a == b) {
    info.type = PathType::kLoc;
    info.smi.push_back('X');  // not = "X": GCC 12 warns falsely (-Wrestrict)
    return info;
  }
  const Node& na = nodes_[a];
  const Node& nb = nodes_[b];
  const std::vector<int>& A = na.chain;
  const std::vector<int>& B = nb.chain;
  int ca = -1, cb = -1;
  for (size_t i = 0; i < A.size() && ca < 0; ++i) {
    auto hit = std::find(B.begin(), B.end(), A[i]);
    if (hit != B.end()) {
      ca = static_cast<int>(i);
      cb = static_cast<int>(hit - B.begin());
    }
  }
  // Links below the meeting point: the endpoint's own, then each switch's uplink.
  int up_a = ca >= 0 ? ca : static_cast<int>(A.size());
  int up_b = cb >= 0 ? cb : static_cast<int>(B.size());
  double bw = MinKnown(na.uplink_bw, nb.uplink_bw);
  for (int i = 0; i < up_a; ++i) bw = MinKnown(bw, nodes_[A[i]].uplink_bw);
  for (int j = 0; j < up_b; ++j) bw = MinKnown(bw, nodes_[B[j]].uplink_bw);
  info.bandwidth_gbs = bw;
  info.hops = up_a + up_b + 2;

  if (ca >= 0) {
    info.type = ca == 0 && cb == 0 ? PathType::kPix : PathType::kPxb;
  } else if (na.cpu_numa >= 0 && na.cpu_numa == nb.cpu_numa) {
    info.type = PathType::kPhb;
  } else if ((na.cpu_numa < 0 || nb.cpu_numa < 0) && !multi_numa_) {
    info.type = PathType::kPhb;  // one NUMA node: unknown can only mean that one
  } else {
    info.type = PathType::kSys;
    info.numa_unknown = na.cpu_numa < 0 || nb.cpu_numa < 0;
    info.hops += 1;  // the CPU-to-CPU link
  }
  info.smi = SmiLabel(a, b, info);
  return info;
}

// nvidia-smi counts bridges on the raw tree: no Broadcom flattening, root ports visible,
// and it tells one host bridge (PHB) from several of one NUMA node (NODE).
std::string PathClassifier::SmiLabel(int a, int b, const PathInfo& nccl) const {
  std::vector<int> up;
  for (int at = a, depth = 0; at >= 0 && depth < kMaxDepth; at = nodes_[at].parent, ++depth) {
    up.push_back(at);
  }
  int common = -1;
  for (int at = b, depth = 0; at >= 0 && depth < kMaxDepth; at = nodes_[at].parent, ++depth) {
    if (std::find(up.begin(), up.end(), at) != up.end()) {
      common = at;
      break;
    }
  }
  if (common < 0) {
    int hb_a = nodes_[a].host_bridge, hb_b = nodes_[b].host_bridge;
    if (hb_a >= 0 && hb_a == hb_b) return "PHB";
    return nccl.type == PathType::kSys ? "SYS" : "NODE";
  }
  if (host_->pci[common].role == PciRole::kHostBridge) return "PHB";
  if (common == a || common == b) return "PIX";
  const Node& na = nodes_[a];
  const Node& nb = nodes_[b];
  if (na.raw_switch >= 0 && na.raw_switch == nb.raw_switch) return "PIX";
  if (na.parent == common && nb.parent == common) return "PIX";
  return "PXB";
}

PathInfo ClassifyPath(const topology::HostTopology& host, const std::string& a,
                      const std::string& b) {
  return PathClassifier(host).Classify(a, b);
}

}  // namespace accel::fabric
