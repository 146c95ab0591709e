// WriteNcclTopologyXml (guest_topology.h): the guest's NCCL topology from the host's truth.
#include "fabric/guest_topology.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/error.h"

namespace accel::fabric {

namespace {

using topology::HostTopology;
using topology::PciDevice;

// Virtual switches per fake bus (device numbers 1..31), and the first fake bus, as Azure's
// ND-series files do: domain ffff cannot clash with a real guest address.
constexpr int kSwitchesPerBus = 31;
constexpr int kFirstSwitchBus = 0xff;

// "1b:00.0" / "0000:1B:00.0" → "0000:1b:00.0"; "" when not a PCI function address.
std::string ParsePciAddress(const std::string& text) {
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  char tail = 0;
  int n = std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &slot, &function, &tail);
  if (n != 4) {
    domain = 0;
    n = std::sscanf(text.c_str(), "%x:%x.%x%c", &bus, &slot, &function, &tail);
    if (n != 3) return "";
  }
  // sscanf's %x also takes signs, spaces and 0x; the address must be hex digits and : . only.
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return "";
  if (domain > 0xffff || bus > 0xff || slot > 0x1f || function > 7) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, slot, function);
  return buf;
}

// Host address → guest device, the domain's devices with the command line's overrides.
std::map<std::string, GuestDevice> ApplyOverrides(const GuestDeviceMap& guest,
                                                  const std::vector<std::string>& overrides) {
  std::map<std::string, GuestDevice> by_host;
  for (const GuestDevice& d : guest.devices) by_host.emplace(d.host_address, d);
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    const std::string host = eq == std::string::npos ? "" : ParsePciAddress(o.substr(0, eq));
    const std::string target = eq == std::string::npos ? "" : ParsePciAddress(o.substr(eq + 1));
    if (host.empty() || target.empty())
      throw InputError("--guest-map", o, "is not HOST=GUEST with two PCI addresses",
                       "e.g. --guest-map 0000:1b:00.0=0000:f8:00.0");
    GuestDevice& d = by_host[host];
    d.host_address = host;
    d.guest_address = target;
  }
  return by_host;
}

/// One <pci> leaf or switch to write.
struct PciNode {
  std::string busid, pci_class, link_speed, link_width;
  bool fake_switch = false;
  std::vector<PciNode> children;
};

// hwloc's link bandwidth (GB/s, after line encoding) → Linux's "32.0 GT/s PCIe" and the
// width, trying x16 first (Gen4 x16 and Gen5 x8 give the same bandwidth; GPUs and NICs of
// this class are x16). Returns false when nothing matches within 1 %.
bool LinkOf(double gbs, std::string* speed, std::string* width) {
  struct Gen {
    const char* name;
    double lane_gbs;
  };
  static const Gen kGens[] = {
      {"64.0 GT/s PCIe", 64 * 242.0 / 256 / 8}, {"32.0 GT/s PCIe", 32 * 128.0 / 130 / 8},
      {"16.0 GT/s PCIe", 16 * 128.0 / 130 / 8}, {"8.0 GT/s PCIe", 8 * 128.0 / 130 / 8},
      {"5.0 GT/s PCIe", 5 * 0.8 / 8},           {"2.5 GT/s PCIe", 2.5 * 0.8 / 8}};
  if (!(gbs > 0)) return false;
  for (int lanes : {16, 8, 4, 2, 1, 32})
    for (const Gen& g : kGens)
      if (std::fabs(lanes * g.lane_gbs - gbs) <= 0.01 * gbs) {
        *speed = g.name;
        *width = std::to_string(lanes);
        return true;
      }
  return false;
}

std::string ClassOf(const PciDevice* dev, const char* fallback) {
  if (!dev || dev->class_id == 0) return fallback;
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x00", dev->class_id);
  return buf;
}

// Linux's cpumap text: 32-bit hex words, most significant first, `bits` wide.
std::string Cpumap(const CpuSet& cpus, int bits) {
  const int words = std::max(1, (bits + 31) / 32);
  std::string out;
  for (int w = words - 1; w >= 0; --w) {
    unsigned word = 0;
    for (int b = 0; b < 32; ++b)
      if (cpus.Contains(w * 32 + b)) word |= 1u << b;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", word);
    out += buf;
    if (w) out += ',';
  }
  return out;
}

std::string NcclArch(const std::string& libvirt_arch) {
  if (libvirt_arch == "aarch64") return "arm64";
  if (libvirt_arch.rfind("ppc64", 0) == 0) return "ppc64";
  return libvirt_arch;
}

// CPUID's vendor string from the host's CPU model names; "" when they do not say (then NCCL
// reads it, and family/model, from the guest's CPUID, which host-passthrough makes the host's).
std::string CpuVendor(const HostTopology& host) {
  std::set<std::string> vendors;
  for (const auto& p : host.packages) {
    if (p.model.find("Intel") != std::string::npos)
      vendors.insert("GenuineIntel");
    else if (p.model.find("AMD") != std::string::npos)
      vendors.insert("AuthenticAMD");
    else
      vendors.insert("");
  }
  return vendors.size() == 1 ? *vendors.begin() : "";
}

class TopologyBuilder {
 public:
  TopologyBuilder(const HostTopology& host, const Fabric& fabric, const GuestDeviceMap& guest,
                  std::map<std::string, GuestDevice> by_host, std::vector<std::string>* warnings)
      : host_(host),
        fabric_(fabric),
        guest_(guest),
        by_host_(std::move(by_host)),
        warnings_(warnings) {}

  std::string Build();

 private:
  void Warn(const std::string& w) {
    if (warnings_) warnings_->push_back(w);
  }
  int CellOf(const GuestDevice& d);
  PciNode Leaf(const GuestDevice& d, const char* fallback_class);
  std::vector<const GuestDevice*> NicsFor(const GpuNicPair& pair);
  void AddGpu(const GuestDevice& gpu, const std::vector<const GuestDevice*>& nics);
  void AddUnpairedNics();
  std::string Render() const;

  const HostTopology& host_;
  const Fabric& fabric_;
  const GuestDeviceMap& guest_;
  std::map<std::string, GuestDevice> by_host_;
  std::vector<std::string>* warnings_;
  std::map<int, std::vector<PciNode>> cells_;  // guest cell → its virtual switches
  std::map<int, std::vector<PciNode>> loose_;  // guest cell → NICs directly under its CPU
  std::set<std::string> placed_;               // host addresses already written
  int switches_ = 0;
};

int TopologyBuilder::CellOf(const GuestDevice& d) {
  if (d.guest_cell >= 0) return d.guest_cell;
  const PciDevice* dev = host_.FindPci(d.host_address);
  if (dev && dev->numa_node >= 0)
    for (size_t c = 0; c < guest_.cell_host_node.size(); ++c)
      if (guest_.cell_host_node[c] == dev->numa_node) return static_cast<int>(c);
  if (guest_.guest_cells > 1)
    Warn("device " + d.host_address + " (guest " + d.guest_address +
         ") has no guest NUMA "
         "cell (no expander bus, and its host node is not a cell's memory node): put under "
         "cell 0");
  return 0;
}

PciNode TopologyBuilder::Leaf(const GuestDevice& d, const char* fallback_class) {
  const PciDevice* dev = host_.FindPci(d.host_address);
  PciNode node;
  node.busid = d.guest_address;
  node.pci_class = ClassOf(dev, fallback_class);
  if (!LinkOf(dev ? dev->link_gbps : 0, &node.link_speed, &node.link_width))
    Warn("no PCIe link speed known for " + d.host_address +
         ": the guest's NCCL reads it from "
         "its own (emulated) PCI tree");
  placed_.insert(d.host_address);
  return node;
}

// The passed-through function(s) standing for the pair's NIC: the NIC itself, or else the
// virtual functions of it that the guest was given.
std::vector<const GuestDevice*> TopologyBuilder::NicsFor(const GpuNicPair& pair) {
  std::vector<const GuestDevice*> out;
  if (pair.nic < 0 || static_cast<size_t>(pair.nic) >= fabric_.nics.size()) return out;
  const FabricNic& nic = fabric_.nics[pair.nic];
  auto it = by_host_.find(nic.pci_address);
  if (it != by_host_.end()) {
    out.push_back(&it->second);
    return out;
  }
  for (const GuestDevice& d : guest_.devices) {
    const PciDevice* dev = host_.FindPci(d.host_address);
    if (dev && dev->physfn == nic.pci_address) out.push_back(&by_host_.at(d.host_address));
  }
  if (out.empty())
    Warn("GPU " + pair.gpu_address + " is passed through but its NIC " + nic.rdma_device + " (" +
         nic.pci_address + ") is not, nor a VF of it: the guest's NCCL uses a farther NIC");
  return out;
}

void TopologyBuilder::AddGpu(const GuestDevice& gpu, const std::vector<const GuestDevice*>& nics) {
  if (gpu.guest_address.empty())
    throw InputError("--domain", gpu.host_address,
                     "GPU " + gpu.host_address +
                         " is passed through but its guest address is "
                         "unknown",
                     "pass --guest-map " + gpu.host_address + "=GUEST_ADDRESS");
  const int cell = CellOf(gpu);
  PciNode sw;
  const int n = switches_++;
  char busid[32];
  std::snprintf(busid, sizeof busid, "ffff:%02x:%02x.0", kFirstSwitchBus - n / kSwitchesPerBus,
                n % kSwitchesPerBus + 1);
  sw.busid = busid;
  sw.pci_class = "0x060400";
  sw.fake_switch = true;
  sw.children.push_back(Leaf(gpu, "0x030200"));
  sw.link_speed = sw.children.front().link_speed;
  sw.link_width = sw.children.front().link_width;
  for (const GuestDevice* nic : nics) {
    if (nic->guest_address.empty()) {
      Warn("NIC " + nic->host_address + " of GPU " + gpu.host_address +
           " has no guest address: left out (pass --guest-map)");
      continue;
    }
    const int nic_cell = CellOf(*nic);
    if (nic_cell != cell) {
      Warn("GPU " + gpu.host_address + " is in guest cell " + std::to_string(cell) +
           " but its NIC " + nic->host_address + " is in cell " + std::to_string(nic_cell) +
           ": the guest cannot keep them on one NUMA node (path SYS); place them together");
      loose_[nic_cell].push_back(Leaf(*nic, "0x020700"));
      continue;
    }
    sw.children.push_back(Leaf(*nic, "0x020700"));
    if (sw.link_speed.empty()) {
      sw.link_speed = sw.children.back().link_speed;
      sw.link_width = sw.children.back().link_width;
    }
  }
  cells_[cell].push_back(std::move(sw));
}

// RDMA NICs (or VFs of one) the guest was given that no GPU's switch holds.
void TopologyBuilder::AddUnpairedNics() {
  std::set<std::string> rdma;
  for (const FabricNic& nic : fabric_.nics) rdma.insert(nic.pci_address);
  for (const GuestDevice& d : guest_.devices) {
    const GuestDevice& dev = by_host_.at(d.host_address);
    if (placed_.count(dev.host_address) || dev.guest_address.empty()) continue;
    const PciDevice* host_dev = host_.FindPci(dev.host_address);
    const bool is_rdma = rdma.count(dev.host_address) ||
                         (host_dev && (host_dev->is_rdma() || rdma.count(host_dev->physfn)));
    if (!is_rdma) continue;
    loose_[CellOf(dev)].push_back(Leaf(dev, "0x020700"));
  }
}

std::string TopologyBuilder::Build() {
  for (const GpuNicPair& pair : fabric_.pairs) {
    auto it = by_host_.find(pair.gpu_address);
    if (it == by_host_.end()) continue;  // not passed through
    std::vector<const GuestDevice*> nics = NicsFor(pair);
    AddGpu(it->second, nics);
  }
  // Accelerators the guest has that the pairing was not asked about (--gpus): alone.
  for (const GuestDevice& d : guest_.devices) {
    const PciDevice* dev = host_.FindPci(d.host_address);
    if (dev && dev->is_accelerator() && !placed_.count(d.host_address))
      AddGpu(by_host_.at(d.host_address), {});
  }
  AddUnpairedNics();
  return Render();
}

void WritePci(const PciNode& node, int depth, std::string* out) {
  out->append(2 * depth, ' ');
  *out += "<pci busid=\"" + node.busid + "\" class=\"" + node.pci_class + "\"";
  if (!node.link_speed.empty())
    *out += " link_speed=\"" + node.link_speed + "\" link_width=\"" + node.link_width + "\"";
  if (node.fake_switch)
    *out +=
        " vendor=\"0x0000\" device=\"0x0000\" subsystem_vendor=\"0x0000\" "
        "subsystem_device=\"0x0000\"";
  if (node.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const PciNode& child : node.children) WritePci(child, depth + 1, out);
  out->append(2 * depth, ' ');
  *out += "</pci>\n";
}

std::string TopologyBuilder::Render() const {
  int bits = guest_.vcpus;
  for (const CpuSet& cpus : guest_.cell_cpus)
    if (!cpus.Empty()) bits = std::max(bits, cpus.ToVector().back() + 1);
  const std::string arch = NcclArch(guest_.arch);
  const std::string vendor = arch == "x86_64" ? CpuVendor(host_) : "";
  std::map<int, std::vector<PciNode>> cells = cells_;  // switches first, then loose NICs
  for (const auto& [cell, nics] : loose_)
    cells[cell].insert(cells[cell].end(), nics.begin(), nics.end());
  std::string out = "<system version=\"1\">\n";
  for (const auto& [cell, children] : cells) {
    CpuSet cpus;
    if (static_cast<size_t>(cell) < guest_.cell_cpus.size())
      cpus = guest_.cell_cpus[cell];
    else if (guest_.guest_cells == 0)
      for (int v = 0; v < guest_.vcpus; ++v) cpus.Add(v);
    out += "  <cpu numaid=\"" + std::to_string(cell) + "\"";
    if (!cpus.Empty()) out += " affinity=\"" + Cpumap(cpus, bits) + "\"";
    out += " arch=\"" + arch + "\"";
    if (!vendor.empty()) out += " vendor=\"" + vendor + "\"";
    out += ">\n";
    for (const PciNode& child : children) WritePci(child, 2, &out);
    out += "  </cpu>\n";
  }
  out += "</system>\n";
  return out;
}

}  // namespace

std::string WriteNcclTopologyXml(const HostTopology& host, const Fabric& fabric,
                                 const GuestDeviceMap& guest,
                                 const std::vector<std::string>& overrides,
                                 std::vector<std::string>* warnings) {
  TopologyBuilder builder(host, fabric, guest, ApplyOverrides(guest, overrides), warnings);
  return builder.Build();
}

}  // namespace accel::fabric
