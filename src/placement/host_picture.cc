#include "placement/host_picture.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "common/strings.h"
#include "placement/libvirt_xml_writer.h"

namespace accel::placement {

namespace {

using topology::HostTopology;
using topology::NumaNode;
using topology::PciDevice;
using topology::PciRole;

// Tableau 10 without its grey (grey would read as "free"), then three more of similar weight.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#bcbd22", "#6b4c9a"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

// Neutral colours, close to lstopo's: grey packages, tan NUMA nodes, grey cores, white PUs.
constexpr const char* kMachineFill = "#fcfcfc";
constexpr const char* kPackageFill = "#e9e9e9";
constexpr const char* kNodeFill = "#f6eedb";
constexpr const char* kCoreFill = "#cfcfcf";
constexpr const char* kFreeFill = "#ffffff";
constexpr const char* kGroupFill = "#eef1f5";  // devices of no known node
constexpr const char* kStroke = "#8a8a8a";
constexpr const char* kDarkStroke = "#3c3c3c";
constexpr const char* kConflictStroke = "#d00000";
constexpr const char* kText = "#1a1a1a";
constexpr const char* kMuted = "#555555";
constexpr const char* kSiblingOpacity = "0.4";  // held-but-idle CPUs: the claim colour, paler

// Geometry, in px. All coordinates are integers, so the output has no float formatting.
constexpr int kPad = 8;             // inside every box
constexpr int kGap = 10;            // between sibling boxes (nodes, packages)
constexpr int kBoxHeader = 22;      // a box's title line
constexpr int kPuH = 18;
constexpr int kPuGap = 2;           // between SMT siblings
constexpr int kCorePad = 3;
constexpr int kCoreGap = 4;
constexpr int kCoreRowTarget = 520;  // auto cores_per_row fills about this width
constexpr int kPoolRowH = 16;
constexpr int kPoolBarH = 10;
constexpr int kPoolLabelW = 210;
constexpr int kChipH = 32;
constexpr int kChipGap = 4;
constexpr int kChipMinW = 140;
constexpr int kNodeMinInner = 330;
constexpr int kMinWidth = 640;
constexpr int kLegendColW = 440;
constexpr int kLegendRowH = 32;
constexpr int kHeaderH = 62;
// Character widths used to cut text to fit: monospace advances 0.6 em; sans-serif text is
// estimated at the same (DejaVu Sans averages a little less), so cut text always fits.
constexpr double kEm = 0.6;

constexpr const char* kMono = "DejaVu Sans Mono, Menlo, Consolas, monospace";

std::string Num(long long v) { return std::to_string(v); }

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// 1073741824 KiB -> "1.0 TiB"; 31 GiB -> "31.0 GiB"; 512 MiB -> "512.0 MiB".
std::string HumanKib(uint64_t kib) {
  if (kib >= (uint64_t{1} << 30)) return Format("%.1f TiB", kib / double(uint64_t{1} << 30));
  if (kib >= (uint64_t{1} << 20)) return Format("%.1f GiB", kib / double(uint64_t{1} << 20));
  if (kib >= 1024) return Format("%.1f MiB", kib / 1024.0);
  return Num(static_cast<long long>(kib)) + " KiB";
}

// 4 -> "4 KiB", 2048 -> "2 MiB", 1048576 -> "1 GiB".
std::string PageSizeName(uint64_t kib) {
  if (kib >= 1048576 && kib % 1048576 == 0) return Num(kib / 1048576) + " GiB";
  if (kib >= 1024 && kib % 1024 == 0) return Num(kib / 1024) + " MiB";
  return Num(static_cast<long long>(kib)) + " KiB";
}

std::string Plural(long long n, const std::string& one, const std::string& many) {
  return Num(n) + " " + (n == 1 ? one : many);
}

// Code points in `s` (bytes that do not continue a UTF-8 sequence).
size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (uint8_t(c) & 0xC0) != 0x80; }));
}

// `s` cut to at most `max_chars` code points, ending in "…" when cut.
std::string Fit(std::string_view s, int max_chars) {
  if (max_chars < 1) return "";
  if (CodePoints(s) <= static_cast<size_t>(max_chars)) return std::string(s);
  size_t kept = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((uint8_t(s[i]) & 0xC0) != 0x80) {
      if (kept == static_cast<size_t>(max_chars - 1)) break;
      ++kept;
    }
  }
  return std::string(s.substr(0, i)) + "\xE2\x80\xA6";
}

// How many characters of font size `px` fit in `width` px.
int CharsFitting(int width, int px) { return static_cast<int>(width / (px * kEm)); }
int TextWidth(std::string_view s, int px) { return static_cast<int>(std::ceil(CodePoints(s) * px * kEm)); }

// A claim id made safe for a class name: [A-Za-z0-9_-] kept, anything else '_'.
std::string ClassSafe(std::string_view id) {
  std::string out;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out;
}

// Dark text on light fills, white on dark ones (Rec. 709 luma of the colour, after blending
// with white at `opacity`).
const char* TextOn(const std::string& hex, double opacity = 1.0) {
  auto channel = [&](int at) {
    const int v = std::stoi(hex.substr(at, 2), nullptr, 16);
    return opacity * v + (1 - opacity) * 255;
  };
  const double luma = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luma < 140 ? "#ffffff" : kText;
}

// ---- What the claims hold, indexed by what is drawn -----------------------------------------

struct CpuHold {
  size_t claim = 0;     ///< index into the claims
  std::string use;      ///< "vcpu", "emulator" or "sibling"
  std::string detail;   ///< for the tooltip, e.g. "vCPU 3 of guest cell 0"
};

/// One claim's totals, for the legend.
struct ClaimSummary {
  int vcpus = 0, emulator = 0, siblings = 0;
  std::vector<std::string> pages;    ///< "node 0: 128 × 1 GiB"
  std::vector<std::string> devices;  ///< "GPU 0000:18:00.0"
  int not_on_host = 0;               ///< CPUs, pools and devices the host does not have
};

struct Holdings {
  std::map<int, std::vector<CpuHold>> cpus;  ///< host CPU -> who holds it, claim order
  /// (node id, page size KiB) -> (claim, pages), claim order
  std::map<std::pair<int, uint64_t>, std::vector<std::pair<size_t, uint64_t>>> pages;
  std::map<std::string, std::vector<size_t>> devices;  ///< PCI address -> claims, claim order
  std::vector<ClaimSummary> summaries;                 ///< by claim
};

const char* RoleLabel(const PciDevice& dev) {
  switch (dev.role) {
    case PciRole::kGpu: return "GPU";
    case PciRole::kHpu: return "HPU";
    case PciRole::kNvSwitch: return "NVSwitch";
    case PciRole::kNic: return "NIC";
    case PciRole::kStorage: return "Storage";
    case PciRole::kBridge: return "Bridge";
    case PciRole::kHostBridge: return "Host bridge";
    case PciRole::kOther: break;
  }
  return "PCI";
}

bool HasPool(const NumaNode& node, uint64_t size_kib) {
  return std::any_of(node.pages.begin(), node.pages.end(),
                     [&](const topology::HugepagePool& p) { return p.size_kib == size_kib; });
}

Holdings Index(const HostTopology& host, const std::vector<PictureClaim>& claims) {
  Holdings h;
  const CpuSet all = host.AllCpus();
  for (size_t i = 0; i < claims.size(); ++i) {
    const Placement& p = claims[i].placement;
    ClaimSummary s;
    std::set<int> seen;
    auto hold = [&](int cpu, const std::string& use, const std::string& detail) {
      if (!seen.insert(cpu).second) return;
      if (!all.Contains(cpu)) {
        ++s.not_on_host;
        return;
      }
      (use == "vcpu" ? s.vcpus : use == "emulator" ? s.emulator : s.siblings)++;
      h.cpus[cpu].push_back({i, use, detail});
    };
    for (const CellPlacement& cell : p.cells) {
      const std::string of_cell = " of guest cell " + Num(cell.guest_cell);
      for (const auto& [vcpu, cpu] : cell.pinning) hold(cpu, "vcpu", "vCPU " + Num(vcpu) + of_cell);
      for (int cpu : cell.consumed_cpus.ToVector())
        hold(cpu, "sibling", "idle sibling held for a pinned vCPU" + of_cell + " (thread policy isolate)");
      if (cell.pages == 0) continue;
      const int node_index = host.NodeIndex(cell.host_node);
      if (node_index < 0 || !HasPool(host.numa_nodes[node_index], cell.page_size_kib)) {
        ++s.not_on_host;
        continue;
      }
      h.pages[{cell.host_node, cell.page_size_kib}].push_back({i, cell.pages});
      s.pages.push_back("node " + Num(cell.host_node) + ": " + Num(static_cast<long long>(cell.pages)) +
                        " \xC3\x97 " + PageSizeName(cell.page_size_kib));
    }
    for (int cpu : p.emulator_cpus.ToVector()) hold(cpu, "emulator", "emulator threads");
    for (int cpu : p.emulator_consumed_cpus.ToVector())
      hold(cpu, "sibling", "idle sibling held for the emulator CPU (thread policy isolate)");
    std::set<std::string> seen_devices;
    for (const DevicePlacement& d : p.devices) {
      if (!seen_devices.insert(d.address).second) continue;
      const PciDevice* dev = host.FindPci(d.address);
      if (!dev) {
        ++s.not_on_host;
        continue;
      }
      h.devices[d.address].push_back(i);
      s.devices.push_back(std::string(RoleLabel(*dev)) + " " + d.address);
    }
    h.summaries.push_back(std::move(s));
  }
  return h;
}

// ---- Layout ------------------------------------------------------------------------------------

// Devices a node box shows: accelerators, NVSwitches, NICs and storage (not VFs: their PF counts
// them), plus any device a claim holds.
bool Shown(const PciDevice& dev, const Holdings& held) {
  if (held.devices.count(dev.address)) return true;
  if (dev.is_vf()) return false;
  return dev.is_accelerator() || dev.role == PciRole::kNvSwitch || dev.role == PciRole::kNic ||
         dev.role == PciRole::kStorage;
}

int RoleRank(const PciDevice& dev) {
  switch (dev.role) {
    case PciRole::kGpu: case PciRole::kHpu: return 0;
    case PciRole::kNvSwitch: return 1;
    case PciRole::kNic: return 2;
    case PciRole::kStorage: return 3;
    default: return 4;
  }
}

/// A row-major grid of boxes: where each goes and the size of the whole.
struct Grid {
  std::vector<std::pair<int, int>> at;  ///< (x, y) of each box, relative to the grid
  int width = 0, height = 0;
};

Grid LayOut(const std::vector<std::pair<int, int>>& sizes, int cols) {
  Grid g;
  int y = 0;
  for (size_t row = 0; row * cols < sizes.size(); ++row) {
    int x = 0, row_h = 0;
    for (size_t i = row * cols; i < std::min(sizes.size(), (row + 1) * cols); ++i) {
      if (x > 0) x += kGap;
      g.at.push_back({x, y});
      x += sizes[i].first;
      row_h = std::max(row_h, sizes[i].second);
    }
    g.width = std::max(g.width, x);
    y += row_h + kGap;
  }
  g.height = sizes.empty() ? 0 : y - kGap;
  return g;
}

// The column count whose grid is closest to a 16:10 landscape (ties: fewer columns).
int ChooseColumns(const std::vector<std::pair<int, int>>& sizes) {
  int best = 1;
  double best_score = 1e300;
  for (size_t cols = 1; cols <= std::max<size_t>(1, sizes.size()); ++cols) {
    const Grid g = LayOut(sizes, static_cast<int>(cols));
    if (g.width == 0 || g.height == 0) break;
    const double score = std::fabs(std::log(double(g.width) / g.height / 1.6));
    if (score < best_score - 1e-9) {
      best_score = score;
      best = static_cast<int>(cols);
    }
  }
  return best;
}

/// Sizes shared by every node box (so the grid lines up).
struct Metrics {
  int pu_w = 20, core_w = 0, core_h = 0, cores_per_row = 1;
  int node_inner = kNodeMinInner, chip_w = kChipMinW, chips_per_row = 1;
  int node_w() const { return node_inner + 2 * kPad; }
};

struct NodeBox {
  size_t index = 0;                     ///< into host.numa_nodes
  std::vector<const PciDevice*> devices;  ///< drawn in this order
  std::vector<size_t> pools;            ///< indexes into node.pages drawn as bars
  int height = 0;
};

/// A box of nodes: a package, or the nodes of no single package.
struct GroupBox {
  int package = -1;  ///< package id; -1 for the others
  std::string title;
  std::vector<NodeBox> nodes;
  Grid grid;
  int width = 0, height = 0;
};

int Rows(size_t items, int per_row) { return items == 0 ? 0 : static_cast<int>((items + per_row - 1) / per_row); }

Metrics Measure(const HostTopology& host, const HostPictureOptions& opts) {
  Metrics m;
  int max_cpu = 0, threads = 1;
  size_t max_cores = 0;
  for (const NumaNode& n : host.numa_nodes) {
    for (const CpuSet& core : n.cores) threads = std::max(threads, core.Count());
    for (int cpu : n.cpus.ToVector()) max_cpu = std::max(max_cpu, cpu);
    max_cores = std::max(max_cores, n.cores.size());
  }
  m.pu_w = std::max(20, 6 * static_cast<int>(Num(max_cpu).size()) + 8);
  m.core_w = threads * m.pu_w + (threads - 1) * kPuGap + 2 * kCorePad;
  m.core_h = kPuH + 2 * kCorePad;
  m.cores_per_row = opts.cores_per_row > 0 ? opts.cores_per_row
                                           : std::max(1, (kCoreRowTarget + kCoreGap) / (m.core_w + kCoreGap));
  m.cores_per_row = std::max(1, std::min<int>(m.cores_per_row, static_cast<int>(std::max<size_t>(1, max_cores))));
  const int cores_w = m.cores_per_row * m.core_w + (m.cores_per_row - 1) * kCoreGap;
  m.node_inner = std::max(cores_w, kNodeMinInner);
  m.chips_per_row = std::max(1, (m.node_inner + kChipGap) / (kChipMinW + kChipGap));
  m.chip_w = (m.node_inner - (m.chips_per_row - 1) * kChipGap) / m.chips_per_row;
  return m;
}

// The cores of a node as drawn: its sibling sets, plus any CPU of the node no set holds (a host
// that fails CheckInvariants) as a core of its own, so every CPU is drawn.
std::vector<CpuSet> DrawnCores(const NumaNode& node) {
  std::vector<CpuSet> cores = node.cores;
  CpuSet covered;
  for (const CpuSet& c : cores) covered = covered.Union(c);
  for (int cpu : node.cpus.Minus(covered).ToVector()) cores.push_back(CpuSet{cpu});
  return cores;
}

NodeBox MeasureNode(const HostTopology& host, size_t index, const Metrics& m, const Holdings& held,
                    const std::map<int, std::vector<const PciDevice*>>& devices_by_node) {
  const NumaNode& node = host.numa_nodes[index];
  NodeBox box;
  box.index = index;
  if (auto it = devices_by_node.find(node.id); it != devices_by_node.end()) box.devices = it->second;
  for (size_t p = 0; p < node.pages.size(); ++p)
    if (node.pages[p].total > 0 || held.pages.count({node.id, node.pages[p].size_kib})) box.pools.push_back(p);
  const int core_rows = Rows(DrawnCores(node).size(), m.cores_per_row);
  box.height = kBoxHeader + core_rows * (m.core_h + kCoreGap) + static_cast<int>(box.pools.size()) * kPoolRowH +
               (box.devices.empty() ? 0 : 4 + Rows(box.devices.size(), m.chips_per_row) * (kChipH + kChipGap)) +
               kPad;
  return box;
}

// ---- Drawing -----------------------------------------------------------------------------------

class Painter {
 public:
  Painter(const HostTopology& host, const std::vector<PictureClaim>& claims, const Holdings& held, const Metrics& m)
      : host_(host), claims_(claims), held_(held), m_(m) {
    for (const PciDevice& d : host.pci)
      if (d.is_vf()) ++vfs_of_[d.physfn];
  }

  XmlWriter& w() { return w_; }

  void Rect(int x, int y, int width, int height, const std::string& fill, const std::string& stroke,
            XmlAttrs extra = {}) {
    XmlAttrs a = {{"x", Num(x)}, {"y", Num(y)}, {"width", Num(width)}, {"height", Num(height)},
                  {"fill", fill}, {"stroke", stroke}};
    a.insert(a.end(), extra.begin(), extra.end());
    w_.Empty("rect", a);
  }

  void Label(int x, int y, std::string_view text, int px, const std::string& fill, XmlAttrs extra = {}) {
    XmlAttrs a = {{"x", Num(x)}, {"y", Num(y)}, {"font-size", Num(px)}, {"fill", fill}};
    a.insert(a.end(), extra.begin(), extra.end());
    w_.Text("text", text, a);
  }

  std::string ClaimName(size_t i) const {
    return claims_[i].id + (claims_[i].label.empty() ? "" : " (" + claims_[i].label + ")");
  }

  // class="... ah-claimed ah-claim-A ah-claim-B [ah-conflict]" and data-claim (the first).
  void AddClaimAttrs(XmlAttrs* a, std::string* cls, const std::vector<size_t>& who) const {
    *cls += " ah-claimed";
    for (size_t i : who) *cls += " ah-claim-" + ClassSafe(claims_[i].id);
    if (who.size() > 1) *cls += " ah-conflict";
    a->push_back({"data-claim", claims_[who.front()].id});
  }

  void Cpu(int x, int y, int cpu, const CpuSet& core, int node_id) {
    std::string title = "CPU " + Num(cpu) + " \xC2\xB7 core " + core.ToString() + " \xC2\xB7 NUMA node " + Num(node_id);
    std::string cls = "ah-cpu";
    XmlAttrs a;
    std::string fill = kFreeFill, stroke = kStroke;
    const char* text_fill = kText;
    XmlAttrs rect_extra;
    auto it = held_.cpus.find(cpu);
    if (it == held_.cpus.end()) {
      cls += " ah-free";
      title += "\nfree";
    } else {
      std::vector<size_t> who;
      for (const CpuHold& h : it->second) {
        who.push_back(h.claim);
        title += "\n" + ClaimName(h.claim) + ": " + h.detail;
      }
      AddClaimAttrs(&a, &cls, who);
      const CpuHold& first = it->second.front();
      a.push_back({"data-use", first.use});
      fill = HostPictureColor(first.claim);
      const bool pale = first.use == "sibling";
      if (pale) rect_extra.push_back({"fill-opacity", kSiblingOpacity});
      text_fill = TextOn(fill, pale ? 0.4 : 1.0);
      if (who.size() > 1) {
        stroke = kConflictStroke;
        rect_extra.push_back({"stroke-width", "2"});
      }
    }
    a.insert(a.begin(), {{"class", cls}, {"data-cpu", Num(cpu)}});
    w_.Open("g", a);
    w_.Text("title", title);
    Rect(x, y, m_.pu_w, kPuH, fill, stroke, rect_extra);
    Label(x + m_.pu_w / 2, y + 13, Num(cpu), 10, text_fill, {{"text-anchor", "middle"}, {"font-family", kMono}});
    w_.Close();
  }

  void Node(int x, int y, const NodeBox& box) {
    const NumaNode& node = host_.numa_nodes[box.index];
    const std::vector<CpuSet> cores = DrawnCores(node);
    int free = 0;
    for (int cpu : node.cpus.ToVector()) free += held_.cpus.count(cpu) ? 0 : 1;
    std::string heading = "NUMA node " + Num(node.id) + " \xC2\xB7 ";
    if (node.cpus.Empty())
      heading += "memory only";
    else
      heading += Plural(static_cast<long long>(cores.size()), "core", "cores") + ", " + Plural(node.cpus.Count(), "CPU", "CPUs") +
                 " (" + Num(free) + " free)";
    heading += " \xC2\xB7 " + HumanKib(node.memory_kib);
    std::string title = heading + (node.cpus.Empty() ? "" : "\nCPUs " + node.cpus.ToString());
    if (node.package >= 0) title += "\npackage " + Num(node.package);
    if (!node.distances.empty()) {
      std::vector<std::string> d;
      for (int v : node.distances) d.push_back(Num(v));
      title += "\ndistances " + JoinStrings(d, " ");
    }
    w_.Open("g", {{"class", "ah-node"}, {"data-node", Num(node.id)}});
    w_.Text("title", title);
    Rect(x, y, m_.node_w(), box.height, kNodeFill, kDarkStroke);
    Label(x + kPad, y + 15, Fit(heading, CharsFitting(m_.node_inner, 11)), 11, kText, {{"font-weight", "bold"}});
    int cy = y + kBoxHeader;
    for (size_t c = 0; c < cores.size(); ++c) {
      const int cx = x + kPad + static_cast<int>(c % m_.cores_per_row) * (m_.core_w + kCoreGap);
      const int ry = cy + static_cast<int>(c / m_.cores_per_row) * (m_.core_h + kCoreGap);
      w_.Open("g", {{"class", "ah-core"}, {"data-cpus", cores[c].ToString()}});
      Rect(cx, ry, m_.core_w, m_.core_h, kCoreFill, kStroke);
      int px = cx + kCorePad;
      for (int cpu : cores[c].ToVector()) {
        Cpu(px, ry + kCorePad, cpu, cores[c], node.id);
        px += m_.pu_w + kPuGap;
      }
      w_.Close();
    }
    cy += Rows(cores.size(), m_.cores_per_row) * (m_.core_h + kCoreGap);
    for (size_t p : box.pools) {
      Pool(x + kPad, cy, node, node.pages[p], p == 0);
      cy += kPoolRowH;
    }
    if (!box.devices.empty()) cy += 4;
    for (size_t d = 0; d < box.devices.size(); ++d) {
      const int dx = x + kPad + static_cast<int>(d % m_.chips_per_row) * (m_.chip_w + kChipGap);
      const int dy = cy + static_cast<int>(d / m_.chips_per_row) * (kChipH + kChipGap);
      Device(dx, dy, m_.chip_w, *box.devices[d]);
    }
    w_.Close();
  }

  // One pool's bar: each claim's pages in its colour, the rest white.
  void Pool(int x, int y, const NumaNode& node, const topology::HugepagePool& pool, bool base) {
    static const std::vector<std::pair<size_t, uint64_t>> kNone;
    auto it = held_.pages.find({node.id, pool.size_kib});
    const auto& shares = it == held_.pages.end() ? kNone : it->second;
    uint64_t claimed = 0;
    for (const auto& s : shares) claimed += s.second;
    const std::string size = PageSizeName(pool.size_kib);
    // "4 KiB: 224.0 GiB, 12.0 GiB held" for base pages; "1 GiB: 768 pages, 128 held" for hugepages.
    std::string label = size + ": ";
    if (base)
      label += HumanKib(pool.total * pool.size_kib) + ", " + (claimed ? HumanKib(claimed * pool.size_kib) : "none") + " held";
    else
      label += Plural(static_cast<long long>(pool.total), "page", "pages") + ", " +
               (claimed ? Num(static_cast<long long>(claimed)) : "none") + " held";
    std::string title = "NUMA node " + Num(node.id) + ", " + size + " pages: " +
                        Num(static_cast<long long>(pool.total)) + " (" + HumanKib(pool.total * pool.size_kib) +
                        "), " + Num(static_cast<long long>(pool.free)) + " free when the topology was read";
    for (const auto& [claim, pages] : shares)
      title += "\n" + ClaimName(claim) + ": " + Num(static_cast<long long>(pages)) + " pages";
    w_.Open("g", {{"class", "ah-pool"}, {"data-node", Num(node.id)}, {"data-page-kib", Num(static_cast<long long>(pool.size_kib))}});
    w_.Text("title", title);
    const int label_w = std::min(kPoolLabelW, m_.node_inner * 3 / 5);
    Label(x, y + 10, Fit(label, CharsFitting(label_w - 6, 10)), 10, kText);
    const int bar_x = x + label_w, bar_w = m_.node_inner - label_w;
    Rect(bar_x, y + 1, bar_w, kPoolBarH, kFreeFill, kStroke);
    // More pages held than the pool has (a host re-read with fewer pages): scale to the claims.
    const uint64_t scale = std::max<uint64_t>({pool.total, claimed, 1});
    uint64_t before = 0;
    for (const auto& [claim, pages] : shares) {
      const int x0 = bar_x + static_cast<int>(before * bar_w / scale);
      before += pages;
      const int x1 = bar_x + static_cast<int>(before * bar_w / scale);
      // A share too small to see still gets one pixel.
      w_.Empty("rect", {{"class", "ah-pages ah-claim-" + ClassSafe(claims_[claim].id)},
                        {"data-claim", claims_[claim].id}, {"data-pages", Num(static_cast<long long>(pages))},
                        {"x", Num(x0)}, {"y", Num(y + 1)}, {"width", Num(std::max(1, x1 - x0))},
                        {"height", Num(kPoolBarH)}, {"fill", HostPictureColor(claim)}, {"stroke", "none"}});
    }
    w_.Close();
  }

  void Device(int x, int y, int width, const PciDevice& dev) {
    std::string cls = "ah-pci ah-" + std::string(topology::PciRoleName(dev.role));
    XmlAttrs a;
    std::string fill = kFreeFill, stroke = dev.is_accelerator() ? kDarkStroke : kStroke;
    XmlAttrs rect_extra = {{"rx", "3"}};
    if (dev.is_accelerator()) rect_extra.push_back({"stroke-width", "1.5"});
    const char* text_fill = kText;
    const std::string ids = "[" + Hex4(dev.vendor_id) + ":" + Hex4(dev.device_id) + "]";
    std::string title = std::string(RoleLabel(dev)) + (dev.is_vf() ? " VF " : " ") + dev.address + " " + ids +
                        (dev.name.empty() ? "" : " " + dev.name);
    title += "\nNUMA node " + (dev.numa_node >= 0 ? Num(dev.numa_node) : std::string("unknown"));
    if (dev.link_gbps > 0) title += Format(" \xC2\xB7 link %.3g GB/s", dev.link_gbps);
    std::vector<std::string> os = dev.netdevs;
    os.insert(os.end(), dev.rdma_devices.begin(), dev.rdma_devices.end());
    os.insert(os.end(), dev.os_devices.begin(), dev.os_devices.end());
    if (!os.empty()) title += " \xC2\xB7 " + JoinStrings(os, ", ");
    const auto vfs = vfs_of_.find(dev.address);
    if (vfs != vfs_of_.end()) title += "\n" + Plural(vfs->second, "VF", "VFs");
    if (dev.is_vf()) title += "\nVF of " + dev.physfn;
    if (auto it = held_.devices.find(dev.address); it != held_.devices.end()) {
      for (size_t i : it->second) title += "\nheld by " + ClaimName(i);
      AddClaimAttrs(&a, &cls, it->second);
      fill = HostPictureColor(it->second.front());
      text_fill = TextOn(fill);
      if (it->second.size() > 1) {
        stroke = kConflictStroke;
        rect_extra.push_back({"stroke-width", "2"});
      }
    } else {
      cls += " ah-free";
      title += "\nfree";
    }
    a.insert(a.begin(), {{"class", cls}, {"data-pci", dev.address}, {"data-node", Num(dev.numa_node)}});
    w_.Open("g", a);
    w_.Text("title", title);
    Rect(x, y, width, kChipH, fill, stroke, rect_extra);
    std::string line1 = std::string(RoleLabel(dev)) + (dev.is_vf() ? " VF " : " ") + dev.address;
    if (vfs != vfs_of_.end()) line1 += " +" + Num(vfs->second) + " VF";
    std::string line2 = dev.netdevs.empty() ? "" : dev.netdevs.front() + " \xC2\xB7 ";
    line2 += dev.name.empty() ? ids : dev.name;
    Label(x + 4, y + 13, Fit(line1, CharsFitting(width - 8, 10)), 10, text_fill,
          {{"font-family", kMono}, {"font-weight", "bold"}});
    Label(x + 4, y + 26, Fit(line2, CharsFitting(width - 8, 9)), 9, text_fill);
    w_.Close();
  }

 private:
  const HostTopology& host_;
  const std::vector<PictureClaim>& claims_;
  const Holdings& held_;
  const Metrics& m_;
  std::map<std::string, int> vfs_of_;  // PF address -> its VFs in the topology
  XmlWriter w_;
};

std::string LegendLine(const PictureClaim& claim, const ClaimSummary& s) {
  std::vector<std::string> parts;
  if (s.vcpus > 0) parts.push_back(Plural(s.vcpus, "pinned vCPU", "pinned vCPUs"));
  if (s.emulator > 0) parts.push_back(Plural(s.emulator, "emulator CPU", "emulator CPUs"));
  if (s.siblings > 0) parts.push_back(Plural(s.siblings, "idle sibling", "idle siblings"));
  for (const std::string& p : s.pages) parts.push_back(p);
  if (s.devices.size() <= 2)
    parts.insert(parts.end(), s.devices.begin(), s.devices.end());
  else
    parts.push_back(Plural(static_cast<long long>(s.devices.size()), "device", "devices"));
  const Placement& p = claim.placement;
  if (p.floating_vcpus > 0)
    parts.push_back("floating: " + Plural(p.floating_vcpus, "vCPU", "vCPUs") + ", " +
                    HumanKib(p.floating_memory_mib * 1024));
  if (s.not_on_host > 0) parts.push_back(Num(s.not_on_host) + " not on this host");
  if (parts.empty()) parts.push_back("nothing on this host");
  return JoinStrings(parts, " \xC2\xB7 ");
}

}  // namespace

std::string HostPictureColor(size_t index) { return kPalette[index % kPaletteSize]; }

std::string RenderHostSvg(const HostTopology& host, const std::vector<PictureClaim>& claims,
                          const HostPictureOptions& opts) {
  const Holdings held = Index(host, claims);
  const Metrics m = Measure(host, opts);

  // Devices by the node they are drawn in; those of no (known) node go in a box of their own.
  std::map<int, std::vector<const PciDevice*>> devices_by_node;
  std::vector<const PciDevice*> unplaced;
  for (const PciDevice& dev : host.pci) {
    if (!Shown(dev, held)) continue;
    if (host.NodeIndex(dev.numa_node) >= 0) devices_by_node[dev.numa_node].push_back(&dev);
    else unplaced.push_back(&dev);
  }
  auto device_order = [](const PciDevice* a, const PciDevice* b) {
    if (RoleRank(*a) != RoleRank(*b)) return RoleRank(*a) < RoleRank(*b);
    return a->address < b->address;  // fixed-width lower-case hex: byte order is bus order
  };
  for (auto& [node, list] : devices_by_node) std::stable_sort(list.begin(), list.end(), device_order);
  std::stable_sort(unplaced.begin(), unplaced.end(), device_order);

  // Groups: one per package with its nodes, then the nodes of no single package.
  std::vector<GroupBox> groups;
  std::set<size_t> grouped;
  for (const topology::Package& pkg : host.packages) {
    GroupBox g;
    g.package = pkg.id;
    g.title = "Package " + Num(pkg.id) + " \xC2\xB7 " + Plural(pkg.cpus.Count(), "CPU", "CPUs") +
              (pkg.model.empty() ? "" : " \xC2\xB7 " + pkg.model);
    for (size_t i = 0; i < host.numa_nodes.size(); ++i)
      if (host.numa_nodes[i].package == pkg.id && grouped.insert(i).second)
        g.nodes.push_back(MeasureNode(host, i, m, held, devices_by_node));
    groups.push_back(std::move(g));
  }
  GroupBox others;
  others.title = host.packages.empty() ? "NUMA nodes (no package information)"
                                       : "NUMA nodes of no single package (memory only, or spanning packages)";
  for (size_t i = 0; i < host.numa_nodes.size(); ++i)
    if (!grouped.count(i)) others.nodes.push_back(MeasureNode(host, i, m, held, devices_by_node));
  if (!others.nodes.empty()) groups.push_back(std::move(others));

  std::vector<std::pair<int, int>> group_sizes;
  for (GroupBox& g : groups) {
    std::vector<std::pair<int, int>> sizes;
    for (const NodeBox& n : g.nodes) sizes.push_back({m.node_w(), n.height});
    g.grid = LayOut(sizes, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(sizes.size())) - 1e-9)));
    g.width = std::max(g.grid.width, m.node_w()) + 2 * kPad;
    g.height = kBoxHeader + g.grid.height + kPad;
    group_sizes.push_back({g.width, g.height});
  }
  const Grid outer = LayOut(group_sizes, ChooseColumns(group_sizes));

  // Header lines.
  std::map<std::string, std::pair<int, int>> role_counts;  // label -> (devices, free), in role order
  const std::vector<std::string> role_order = {"GPU", "HPU", "NVSwitch", "NIC"};
  int cores = 0;
  uint64_t memory_kib = 0;
  for (const NumaNode& n : host.numa_nodes) {
    cores += static_cast<int>(n.cores.size());
    memory_kib += n.memory_kib;
  }
  for (const PciDevice& dev : host.pci) {
    if (dev.is_vf() || !(dev.is_accelerator() || dev.role == PciRole::kNvSwitch || dev.role == PciRole::kNic)) continue;
    const std::string label = RoleLabel(dev);
    role_counts[label].first++;
    if (!held.devices.count(dev.address)) role_counts[label].second++;
  }
  const CpuSet all = host.AllCpus();
  int free_cpus = 0;
  for (int cpu : all.ToVector()) free_cpus += held.cpus.count(cpu) ? 0 : 1;
  std::vector<std::string> summary = {
      Plural(static_cast<long long>(host.packages.size()), "package", "packages"),
      Plural(static_cast<long long>(host.numa_nodes.size()), "NUMA node", "NUMA nodes"),
      Plural(cores, "core", "cores") + ", " + Plural(all.Count(), "CPU", "CPUs") + " (" + Num(free_cpus) + " free)",
      HumanKib(memory_kib)};
  for (const std::string& role : role_order) {
    if (!role_counts.count(role)) continue;
    const auto [count, free] = role_counts[role];
    summary.push_back(Num(count) + " " + role + (count == 1 ? "" : role == "NVSwitch" ? "es" : "s") +
                      (role == "NVSwitch" ? "" : " (" + Num(free) + " free)"));
  }
  const std::string line1 = host.hostname.empty() ? "(unnamed host)" : host.hostname;
  const std::string line2 = JoinStrings(summary, " \xC2\xB7 ");
  const std::string line3 = "source: " + host.source;

  // Devices of no known NUMA node: a box as wide as the grid.
  int inner_w = std::max({outer.width, kMinWidth, TextWidth(line2, 12)});
  const int unplaced_per_row = std::max(1, (inner_w - 2 * kPad + kChipGap) / (kChipMinW + kChipGap));
  const int unplaced_h =
      unplaced.empty() ? 0 : kBoxHeader + Rows(unplaced.size(), unplaced_per_row) * (kChipH + kChipGap) + kPad;

  const int legend_cols = std::max(1, (inner_w + kGap) / (kLegendColW + kGap));
  const int legend_col_w = (inner_w - (legend_cols - 1) * kGap) / legend_cols;
  const int legend_h = 22 + Rows(claims.size(), legend_cols) * kLegendRowH;

  const int width = inner_w + 2 * kPad;
  int y = kHeaderH + legend_h + kGap;
  const int grid_y = y;
  y += outer.height + (unplaced.empty() ? 0 : kGap + unplaced_h);
  const int height = y + kPad;
  const double scale = opts.scale > 0 ? opts.scale : 1.0;

  Painter paint(host, claims, held, m);
  XmlWriter& w = paint.w();
  w.Open("svg", {{"xmlns", "http://www.w3.org/2000/svg"},
                 {"version", "1.1"},
                 {"class", "ah-host"},
                 {"data-host", host.hostname},
                 {"width", Num(std::llround(width * scale))},
                 {"height", Num(std::llround(height * scale))},
                 {"viewBox", "0 0 " + Num(width) + " " + Num(height)},
                 {"font-family", "DejaVu Sans, Helvetica, Arial, sans-serif"},
                 {"role", "img"}});
  w.Text("title", line1 + ": " + line2 + " \xC2\xB7 " + Plural(static_cast<long long>(claims.size()), "claim", "claims"));
  paint.Rect(0, 0, width, height, kMachineFill, kDarkStroke, {{"class", "ah-machine"}});
  paint.Label(kPad, 22, Fit(line1, CharsFitting(inner_w, 16)), 16, kText, {{"font-weight", "bold"}, {"class", "ah-hostname"}});
  paint.Label(kPad, 40, Fit(line2, CharsFitting(inner_w, 12)), 12, kText, {{"class", "ah-summary"}});
  paint.Label(kPad, 55, Fit(line3, CharsFitting(inner_w, 10)), 10, kMuted);

  // Legend: the key, then one entry per claim in columns.
  w.Open("g", {{"class", "ah-legend"}});
  int ly = kHeaderH;
  paint.Rect(kPad, ly, 14, 12, kFreeFill, kStroke);
  paint.Rect(kPad + 60, ly, 14, 12, HostPictureColor(0), kStroke);
  paint.Rect(kPad + 250, ly, 14, 12, HostPictureColor(0), kStroke, {{"fill-opacity", kSiblingOpacity}});
  paint.Label(kPad + 18, ly + 10, "free", 10, kText);
  paint.Label(kPad + 78, ly + 10, "pinned vCPU or emulator CPU", 10, kText);
  paint.Label(kPad + 268, ly + 10,
              claims.empty() ? "idle sibling held (isolate) \xC2\xB7 no claims on this host"
                             : "idle sibling held (isolate) \xC2\xB7 each claim's pages and devices take its colour",
              10, kText);
  for (size_t i = 0; i < claims.size(); ++i) {
    const int lx = kPad + static_cast<int>(i % legend_cols) * (legend_col_w + kGap);
    const int row_y = ly + 22 + static_cast<int>(i / legend_cols) * kLegendRowH;
    const std::string color = HostPictureColor(i);
    const std::string line = LegendLine(claims[i], held.summaries[i]);
    w.Open("g", {{"class", "ah-legend-claim ah-claim-" + ClassSafe(claims[i].id)},
                 {"data-claim", claims[i].id}, {"data-color", color}});
    w.Text("title", paint.ClaimName(i) + "\n" + line);
    paint.Rect(lx, row_y, 18, 18, color, kDarkStroke);
    const std::string name = claims[i].id + (claims[i].label.empty() ? "" : "  " + claims[i].label);
    paint.Label(lx + 24, row_y + 11, Fit(name, CharsFitting(legend_col_w - 24, 11)), 11, kText, {{"font-weight", "bold"}});
    paint.Label(lx + 24, row_y + 25, Fit(line, CharsFitting(legend_col_w - 24, 10)), 10, kMuted);
    w.Close();
  }
  w.Close();

  for (size_t g = 0; g < groups.size(); ++g) {
    const GroupBox& group = groups[g];
    const int gx = kPad + outer.at[g].first, gy = grid_y + outer.at[g].second;
    XmlAttrs a = {{"class", group.package >= 0 ? "ah-package" : "ah-nodes-other"}};
    if (group.package >= 0) a.push_back({"data-package", Num(group.package)});
    w.Open("g", a);
    w.Text("title", group.title);
    paint.Rect(gx, gy, group.width, group.height, kPackageFill, kDarkStroke);
    paint.Label(gx + kPad, gy + 15, Fit(group.title, CharsFitting(group.width - 2 * kPad, 11)), 11, kText,
                {{"font-weight", "bold"}});
    for (size_t n = 0; n < group.nodes.size(); ++n)
      paint.Node(gx + kPad + group.grid.at[n].first, gy + kBoxHeader + group.grid.at[n].second, group.nodes[n]);
    w.Close();
  }

  if (!unplaced.empty()) {
    const int ux = kPad, uy = grid_y + outer.height + kGap;
    const int chip_w = (inner_w - 2 * kPad - (unplaced_per_row - 1) * kChipGap) / unplaced_per_row;
    w.Open("g", {{"class", "ah-pci-unplaced"}});
    w.Text("title", "PCI devices whose NUMA node is unknown");
    paint.Rect(ux, uy, inner_w, unplaced_h, kGroupFill, kDarkStroke);
    paint.Label(ux + kPad, uy + 15, "PCI devices of no known NUMA node", 11, kText, {{"font-weight", "bold"}});
    for (size_t d = 0; d < unplaced.size(); ++d)
      paint.Device(ux + kPad + static_cast<int>(d % unplaced_per_row) * (chip_w + kChipGap),
                   uy + kBoxHeader + static_cast<int>(d / unplaced_per_row) * (kChipH + kChipGap), chip_w,
                   *unplaced[d]);
    w.Close();
  }
  return w.Finish();
}

}  // namespace accel::placement
