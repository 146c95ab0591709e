#include "dra/inventory.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "common/error.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "dra/device_names.h"
#include "fabric/path.h"
#include "sharing/mig_geometry.h"

namespace accel::dra {

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kMig: return "mig";
    case DeviceKind::kNic: return "nic";
  }
  return "?";
}

const DraDevice* Inventory::Find(const std::string& name) const {
  for (const DraDevice& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

std::string TruncateUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  // Back up over continuation bytes (10xxxxxx) so a multi-byte character is not split.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string StripZeros(std::string_view s) {
  size_t i = 0;
  while (i + 1 < s.size() && s[i] == '0') ++i;
  return std::string(s.substr(i));
}

// Dot-separated identifiers of a pre-release or build part: [0-9A-Za-z-]+ each; numeric
// pre-release identifiers lose leading zeros (semver forbids them).
std::vector<std::string_view> SplitDots(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

std::optional<std::string> Identifiers(std::string_view part, bool strip_numeric_zeros) {
  std::string out;
  for (std::string_view id : SplitDots(part)) {
    if (id.empty()) return std::nullopt;
    for (char c : id) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
      if (!ok) return std::nullopt;
    }
    if (!out.empty()) out += '.';
    out += (strip_numeric_zeros && AllDigits(id)) ? StripZeros(id) : std::string(id);
  }
  return out;
}

}  // namespace

std::optional<std::string> NormalizeSemver(std::string_view version) {
  version = Trim(version);
  if (!version.empty() && (version[0] == 'v' || version[0] == 'V')) version.remove_prefix(1);
  if (version.empty()) return std::nullopt;
  size_t cut = version.find_first_of("-+");
  std::string_view core = version.substr(0, cut);
  std::vector<std::string> nums;
  for (std::string_view part : SplitDots(core)) {
    if (!AllDigits(part)) return std::nullopt;
    nums.push_back(StripZeros(part));
  }
  if (nums.size() > 3) return std::nullopt;
  while (nums.size() < 3) nums.push_back("0");
  std::string out = nums[0] + "." + nums[1] + "." + nums[2];
  if (cut != std::string_view::npos) {
    std::string_view rest = version.substr(cut);
    std::string_view pre, build;
    if (rest[0] == '-') {
      size_t plus = rest.find('+');
      pre = rest.substr(1, plus == std::string_view::npos ? plus : plus - 1);
      if (plus != std::string_view::npos) build = rest.substr(plus + 1);
      if (pre.empty() || (plus != std::string_view::npos && build.empty())) return std::nullopt;
    } else {
      build = rest.substr(1);
      if (build.empty()) return std::nullopt;
    }
    if (!pre.empty()) {
      auto p = Identifiers(pre, true);
      if (!p) return std::nullopt;
      out += "-" + *p;
    }
    if (!build.empty()) {
      auto b = Identifiers(build, false);
      if (!b) return std::nullopt;
      out += "+" + *b;
    }
  }
  if (out.size() > kMaxAttributeStringLength) return std::nullopt;
  return out;
}

namespace {

using topology::HostTopology;
using topology::PciDevice;
using topology::PciRole;

// The PCI tree, indexed by canonical address.
class PciTree {
 public:
  explicit PciTree(const HostTopology& host) : host_(host) {
    for (size_t i = 0; i < host.pci.size(); ++i) index_[host.pci[i].address] = static_cast<int>(i);
  }

  int Find(const std::string& address) const {
    if (address.empty()) return -1;
    auto it = index_.find(fabric::CanonicalPciAddress(address));
    return it == index_.end() ? -1 : it->second;
  }
  const PciDevice* At(int i) const { return i < 0 ? nullptr : &host_.pci[i]; }

  // Indexes from `i` up to its host bridge, `i` first. Stops at a dangling parent or a cycle.
  std::vector<int> Chain(int i) const {
    std::vector<int> out;
    while (i >= 0 && out.size() <= host_.pci.size()) {
      out.push_back(i);
      const std::string& parent = host_.pci[i].parent;
      if (parent.empty()) break;
      auto it = index_.find(parent);
      i = it == index_.end() ? -1 : it->second;
    }
    return out;
  }

  // "pci0000:15": the host bridge above `address`; "" when unknown.
  std::string PcieRoot(const std::string& address) const {
    for (int i : Chain(Find(address))) {
      if (host_.pci[i].role == PciRole::kHostBridge) return host_.pci[i].address;
    }
    return "";
  }

  // The lowest bridge both `a` and `b` are below; "" when they meet only at a host bridge (or
  // not at all).
  std::string CommonBridge(const std::string& a, const std::string& b) const {
    std::vector<int> ca = Chain(Find(a)), cb = Chain(Find(b));
    if (ca.empty() || cb.empty()) return "";
    for (size_t i = 1; i < ca.size(); ++i) {
      if (std::find(cb.begin() + 1, cb.end(), ca[i]) != cb.end()) {
        const PciDevice& d = host_.pci[ca[i]];
        return d.role == PciRole::kBridge ? d.address : "";
      }
    }
    return "";
  }

 private:
  const HostTopology& host_;
  std::unordered_map<std::string, int> index_;
};

const char* NicVendorName(uint16_t vendor_id) {
  switch (vendor_id) {
    case 0x15b3: return "mellanox";
    case 0x14e4: return "broadcom";
    case 0x8086: return "intel";
    case 0x1dd8: return "pensando";
    case 0x1077: return "qlogic";
    case 0x19e5: return "huawei";
    case 0x1924: return "solarflare";
    case 0x17cb: return "qualcomm";
    case 0x1d0f: return "amazon";
    case 0x1af4: return "virtio";
    case 0x1fc1: return "cornelis";
    default: return nullptr;
  }
}

void SetString(DraDevice* d, const std::string& name, const std::string& value) {
  if (!value.empty()) d->attributes[name] = AttributeValue::String(TruncateUtf8(value));
}

// What pairing says about one accelerator: its rail, its path to its NIC and the switch both
// are under.
struct PairFacts {
  int rail = -1;
  std::string path_type;
  fabric::PathType type = fabric::PathType::kSys;
  std::string pcie_switch;
};

void SetPairFacts(DraDevice* d, const PairFacts& f) {
  d->rail = f.rail;
  if (f.rail >= 0) {
    d->attributes["rail"] = AttributeValue::Int(f.rail);
    SetString(d, "pathType", f.path_type);
    SetString(d, "pcieSwitch", f.pcie_switch);
  }
}

void SetPlacement(DraDevice* d, const PciTree& tree, const std::string& address, int numa) {
  d->pci_address = address;
  d->numa_node = numa;
  SetString(d, kAttrPciBusId, address);
  SetString(d, kAttrPcieRoot, tree.PcieRoot(address));
  if (numa >= 0) d->attributes[kAttrNumaNode] = AttributeValue::Int(numa);
}

// Slice counts of one MIG profile on one GPU model.
struct Slices {
  int memory = 0;
  int compute = 0;
};

}  // namespace

Inventory BuildInventory(const std::vector<kube::NodeDevice>& node_devices,
                         const topology::HostTopology& host, const std::vector<fabric::NicPort>& ports,
                         const InventoryOptions& options) {
  return BuildInventoryFromPairing(node_devices, host, fabric::PairGpusWithNics(host, ports, options.pairing),
                                   options);
}

Inventory BuildInventoryFromPairing(const std::vector<kube::NodeDevice>& node_devices,
                                    const topology::HostTopology& host, const fabric::Fabric& pairing,
                                    const InventoryOptions& options) {
  if (options.driver.empty() || options.driver.size() > kMaxDriverNameLength ||
      !IsDnsSubdomain(options.driver)) {
    throw InputError("dra", "driver", "'" + options.driver + "' is not a valid DRA driver name",
                     "a lower-case DNS subdomain of at most 63 characters, e.g. accel.io");
  }
  if (!IsDnsSubdomain(options.node_name)) {
    throw InputError("dra", "node name",
                     "'" + options.node_name + "' is not a valid Kubernetes node name",
                     "a lower-case DNS subdomain of at most 253 characters (the Node object's "
                     "metadata.name)");
  }

  Inventory inv;
  inv.driver = options.driver;
  inv.node_name = options.node_name;
  inv.node_devices = node_devices;
  inv.fabric = pairing;
  const fabric::Fabric& fab = inv.fabric;
  PciTree tree(host);

  // Rails: the index of each used NIC among Fabric::UsedNics.
  std::vector<int> nic_rail(fab.nics.size(), -1);
  {
    std::vector<const fabric::FabricNic*> used = fab.UsedNics();
    for (size_t r = 0; r < used.size(); ++r) nic_rail[used[r] - fab.nics.data()] = static_cast<int>(r);
  }
  // Pairing facts by GPU address, and for each NIC the best path among its GPUs.
  std::map<std::string, PairFacts> gpu_facts;
  std::vector<PairFacts> nic_facts(fab.nics.size());
  for (const fabric::GpuNicPair& p : fab.pairs) {
    if (p.nic < 0 || p.nic >= static_cast<int>(fab.nics.size())) continue;
    PairFacts f;
    f.rail = nic_rail[p.nic];
    f.type = p.path.type;
    f.path_type = fabric::PathTypeName(p.path.type);
    if (p.path.type == fabric::PathType::kPix || p.path.type == fabric::PathType::kPxb) {
      f.pcie_switch = tree.CommonBridge(p.gpu_address, fab.nics[p.nic].pci_address);
    }
    gpu_facts[p.gpu_address] = f;
    PairFacts& nf = nic_facts[p.nic];
    if (nf.rail < 0 || f.type < nf.type) nf = f;  // pairs come in GPU order: first best wins
  }

  // Accelerators in PCI order (no address: last, in backend order).
  std::vector<size_t> whole;
  for (size_t i = 0; i < node_devices.size(); ++i) {
    if (!node_devices[i].is_mig()) whole.push_back(i);
  }
  std::stable_sort(whole.begin(), whole.end(), [&](size_t a, size_t b) {
    const std::string& pa = node_devices[a].pci_address;
    const std::string& pb = node_devices[b].pci_address;
    if (pa.empty() != pb.empty()) return pb.empty();
    return pa < pb;
  });
  std::vector<bool> mig_placed(node_devices.size(), false);

  for (size_t rank = 0; rank < whole.size(); ++rank) {
    const int gi = static_cast<int>(rank);
    const kube::NodeDevice& nd = node_devices[whole[rank]];
    const std::string address =
        nd.pci_address.empty() ? "" : fabric::CanonicalPciAddress(nd.pci_address);
    int numa = nd.numa_node;
    if (numa < 0) {
      if (const PciDevice* p = tree.At(tree.Find(address))) numa = p->numa_node;
    }
    PairFacts facts;
    if (auto it = gpu_facts.find(address); it != gpu_facts.end()) facts = it->second;

    // The GPU's common attributes, shared with its MIG devices.
    DraDevice base;
    base.kind = DeviceKind::kGpu;
    base.vendor = nd.vendor;
    base.node_device = static_cast<int>(whole[rank]);
    SetPlacement(&base, tree, address, numa);
    SetString(&base, "vendor", devices::VendorName(nd.vendor));
    SetString(&base, "model", nd.model);
    SetString(&base, "productName", nd.model);
    if (auto v = NormalizeSemver(nd.driver_version)) {
      base.attributes["driverVersion"] = AttributeValue::Version(*v);
    }
    SetPairFacts(&base, facts);

    DraDevice gpu = base;
    gpu.name = GpuDeviceName(gi);
    gpu.attributes["type"] = AttributeValue::String("gpu");
    if (nd.id != nd.pci_address) SetString(&gpu, "uuid", nd.id);
    gpu.attributes["index"] = AttributeValue::Int(nd.index);
    gpu.attributes["migEnabled"] = AttributeValue::Bool(nd.mig_enabled);
    if (nd.memory_bytes > 0) {
      gpu.capacity["memory"] = FormatBinaryQuantity(static_cast<int64_t>(nd.memory_bytes));
    }

    // Its MIG devices, in the order the backend listed them.
    std::vector<size_t> migs;
    for (size_t i = 0; i < node_devices.size(); ++i) {
      const kube::NodeDevice& m = node_devices[i];
      if (m.is_mig() && !mig_placed[i] && m.physical_id == nd.id) {
        migs.push_back(i);
        mig_placed[i] = true;
      }
    }
    std::vector<DraDevice> mig_devices;
    if (nd.mig_enabled || !migs.empty()) {
      const sharing::GpuModel* model = sharing::FindGpuModel(nd.model);
      if (!model) {
        inv.notes.push_back("GPU " + address + " (" + nd.model +
                            "): model not in the MIG catalog; slice counts taken from the "
                            "profile names");
      }
      std::vector<Slices> slices;
      Slices sum;
      uint64_t mig_memory = 0;
      for (size_t i : migs) {
        const kube::NodeDevice& m = node_devices[i];
        Slices s;
        std::optional<int> at = model ? sharing::FindProfile(*model, m.mig_profile) : std::nullopt;
        if (at) {
          s.memory = model->profiles[*at].memory_slices;
          s.compute = model->profiles[*at].compute_slices;
        } else if (auto parsed = sharing::ParseProfileName(m.mig_profile)) {
          // Unknown to the catalog: "<g>g" SM slices, and as many memory slices (true of every
          // 1g/2g/3g/7g profile; the counters only have to keep slices and the GPU apart).
          s.compute = s.memory = parsed->gpu_slices;
          if (model) {
            inv.notes.push_back("MIG profile " + m.mig_profile + " not known on " + model->name +
                                ": slice counts taken from its name");
          }
        } else {
          s.compute = s.memory = 1;
          inv.notes.push_back("MIG device " + m.id + ": profile '" + m.mig_profile +
                              "' unreadable; counted as one slice");
        }
        slices.push_back(s);
        sum.memory += s.memory;
        sum.compute += s.compute;
        mig_memory += m.memory_bytes;
      }
      // Totals: the model's, never less than what the configured MIG devices take (a static
      // configuration always fits, whatever the catalog says).
      CounterSet set;
      set.name = GpuCounterSetName(gi);
      set.counters["memory-slices"] =
          std::to_string(std::max(model ? model->memory_slices : 8, sum.memory));
      set.counters["compute-slices"] =
          std::to_string(std::max(model ? model->compute_slices : 7, sum.compute));
      const uint64_t total_memory = std::max<uint64_t>(nd.memory_bytes, mig_memory);
      if (total_memory > 0) {
        set.counters["memory"] = FormatBinaryQuantity(static_cast<int64_t>(total_memory));
      }
      if (options.partitionable) gpu.consumes_counters.push_back({set.name, set.counters});

      for (size_t k = 0; k < migs.size(); ++k) {
        const kube::NodeDevice& m = node_devices[migs[k]];
        DraDevice mig = base;
        mig.kind = DeviceKind::kMig;
        mig.node_device = static_cast<int>(migs[k]);
        mig.name = MigDeviceName(gi, m.mig_profile, static_cast<int>(m.mig_index));
        mig.attributes["type"] = AttributeValue::String("mig");
        SetString(&mig, "profile", m.mig_profile);
        SetString(&mig, "uuid", m.id);
        SetString(&mig, "parentUUID", nd.id);
        mig.attributes["parentIndex"] = AttributeValue::Int(nd.index);
        CounterConsumption use{set.name, {}};
        use.counters["memory-slices"] = std::to_string(slices[k].memory);
        use.counters["compute-slices"] = std::to_string(slices[k].compute);
        if (m.memory_bytes > 0) {
          mig.capacity["memory"] = FormatBinaryQuantity(static_cast<int64_t>(m.memory_bytes));
          if (total_memory > 0) use.counters["memory"] = mig.capacity["memory"];
        }
        if (options.partitionable) mig.consumes_counters.push_back(std::move(use));
        mig_devices.push_back(std::move(mig));
      }
      if (options.partitionable) inv.counter_sets.push_back(std::move(set));
    }
    // Without partitionable devices a MIG-enabled GPU is only its MIG devices: CUDA cannot use
    // it whole anyway, and nothing else would keep the scheduler from handing out both.
    if (options.partitionable || !nd.mig_enabled) inv.devices.push_back(std::move(gpu));
    for (DraDevice& m : mig_devices) inv.devices.push_back(std::move(m));
  }
  for (size_t i = 0; i < node_devices.size(); ++i) {
    if (node_devices[i].is_mig() && !mig_placed[i]) {
      inv.notes.push_back("MIG device " + node_devices[i].id + " has no parent GPU (" +
                          node_devices[i].physical_id +
                          ") among the node's devices: not published");
    }
  }

  // NICs: physical ports first get their numbers, then each VF is named after its PF.
  std::vector<int> pf_number(fab.nics.size(), -1);
  std::vector<int> vf_of(fab.nics.size(), -1);  // index of a VF's PF in fab.nics
  int next_pf = 0;
  for (size_t n = 0; n < fab.nics.size(); ++n) {
    const fabric::FabricNic& nic = fab.nics[n];
    if (nic.is_vf) {
      const PciDevice* dev = tree.At(tree.Find(nic.pci_address));
      if (dev && !dev->physfn.empty()) {
        for (size_t p = 0; p < fab.nics.size(); ++p) {
          if (!fab.nics[p].is_vf && fab.nics[p].pci_address == dev->physfn) {
            vf_of[n] = static_cast<int>(p);
            break;
          }
        }
      }
    }
    // A VF whose PF is not an RDMA port here (a VM guest sees only its VFs) counts as a port.
    if (vf_of[n] < 0) pf_number[n] = next_pf++;
  }
  std::vector<int> vfs_seen(fab.nics.size(), 0);
  for (size_t n = 0; n < fab.nics.size(); ++n) {
    const fabric::FabricNic& nic = fab.nics[n];
    const int pf = vf_of[n];
    if (pf >= 0 && !options.include_vfs) continue;
    DraDevice d;
    d.kind = DeviceKind::kNic;
    d.nic = static_cast<int>(n);
    d.name = pf >= 0 ? VfDeviceName(pf_number[pf], vfs_seen[pf]++) : NicDeviceName(pf_number[n]);
    const PciDevice* dev = tree.At(tree.Find(nic.pci_address));
    SetPlacement(&d, tree, nic.pci_address, nic.numa_node >= 0 ? nic.numa_node
                                                               : (dev ? dev->numa_node : -1));
    d.attributes["type"] = AttributeValue::String("nic");
    if (dev) {
      if (const char* v = NicVendorName(dev->vendor_id)) SetString(&d, "vendor", v);
      SetString(&d, "model", dev->name);
    }
    SetString(&d, "rdmaDevice", nic.rdma_device);
    d.attributes["port"] = AttributeValue::Int(nic.port);
    SetString(&d, "netdev", nic.netdev);
    SetString(&d, "linkLayer", nic.link_layer);
    d.attributes["sriovVf"] = AttributeValue::Bool(nic.is_vf);
    if (pf >= 0) SetString(&d, "pfName", fab.nics[pf].rdma_device);
    // A VF that pairing did not use itself sits on its PF's rail: same port, same PCIe path.
    const PairFacts& facts = (nic_facts[n].rail < 0 && pf >= 0) ? nic_facts[pf] : nic_facts[n];
    SetPairFacts(&d, facts);
    inv.devices.push_back(std::move(d));
  }
  return inv;
}

Inventory BuildNodeInventory(const NodeHardware& hw, const InventoryOptions& options) {
  Inventory inv = BuildInventoryFromPairing(hw.devices, hw.host, hw.pairing, options);
  AddNvlinkCliques(&inv, hw.interconnect);
  return inv;
}

void AddNvlinkCliques(Inventory* inventory, const devices::Interconnect& ic) {
  const size_t n = ic.size();
  std::vector<size_t> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = i;
  auto root = [&parent](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (ic.links[i * n + j] > 0) parent[root(i)] = root(j);
  // Groups of two or more, numbered by their first device in PCI order.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&ic](size_t a, size_t b) { return ic.devices[a] < ic.devices[b]; });
  std::map<size_t, int> size_of, index_of;
  for (size_t i = 0; i < n; ++i) ++size_of[root(i)];
  std::map<std::string, int> clique;  // canonical PCI address → clique index
  for (size_t i : order) {
    const size_t r = root(i);
    if (size_of[r] < 2) continue;
    auto [it, added] = index_of.emplace(r, static_cast<int>(index_of.size()));
    clique[ic.devices[i]] = it->second;
  }
  for (DraDevice& d : inventory->devices) {
    if (d.kind == DeviceKind::kNic) continue;
    auto it = clique.find(d.pci_address);
    if (it != clique.end()) d.attributes["nvlinkClique"] = AttributeValue::Int(it->second);
  }
}

}  // namespace accel::dra
