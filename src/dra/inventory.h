// Inventory: every device accel's DRA driver publishes for its node — whole accelerators
// (NVIDIA, AMD, Gaudi), the MIG devices of MIG-enabled GPUs, and RDMA NICs (physical functions
// and SR-IOV virtual functions) — each with its ResourceSlice name, attributes, capacities and
// counter consumption, and what Prepare needs to hand it to a container.
//
// What no other DRA driver publishes is accel's GPU↔NIC pairing (fabric/pairing.h): a GPU and
// the NIC it should use for multi-node training carry the same `rail` attribute, so a claim's
// `matchAttribute: accel.io/rail` pairs them on every board, whether or not they share a PCIe
// switch (on many boards none does, so `resource.kubernetes.io/pcieRoot` cannot).
//
// MIG: a MIG-enabled GPU publishes its whole device and its configured MIG devices; all of them
// consume one counter set per GPU (memory slices, compute slices, memory), so the scheduler can
// never hand out the whole GPU and one of its slices, or more slices than the GPU has.
//
// Plain data and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device.h"
#include "devices/interconnect.h"
#include "dra/node_hardware.h"
#include "fabric/nic_ports.h"
#include "fabric/pairing.h"
#include "kube/node_devices.h"
#include "topology/host.h"

namespace accel::dra {

/// A typed ResourceSlice attribute value (resource.k8s.io/v1 DeviceAttribute: exactly one of
/// int, bool, string, version).
struct AttributeValue {
  enum class Type { kInt, kBool, kString, kVersion };
  Type type = Type::kString;
  int64_t int_value = 0;
  bool bool_value = false;
  /// The string, or the semantic version ("580.95.5") of a kVersion.
  std::string string_value;

  static AttributeValue Int(int64_t v) { return {Type::kInt, v, false, ""}; }
  static AttributeValue Bool(bool v) { return {Type::kBool, 0, v, ""}; }
  static AttributeValue String(std::string v) { return {Type::kString, 0, false, std::move(v)}; }
  static AttributeValue Version(std::string v) { return {Type::kVersion, 0, false, std::move(v)}; }
  bool operator==(const AttributeValue&) const = default;
};

/// What a published device is.
enum class DeviceKind {
  kGpu,  ///< a whole accelerator (GPU or Gaudi HPU)
  kMig,  ///< one MIG device of a MIG-enabled NVIDIA GPU
  kNic,  ///< an RDMA NIC port: a physical function, or an SR-IOV virtual function
};

/// "gpu", "mig", "nic": the `type` attribute's value.
const char* DeviceKindName(DeviceKind kind);

/// Counters one device takes from a counter set while allocated (DeviceCounterConsumption).
struct CounterConsumption {
  std::string counter_set;                     ///< CounterSet::name
  std::map<std::string, std::string> counters; ///< counter name → quantity ("1", "10Gi")
};

/// A set of counters a pool shares among its devices (CounterSet in a ResourceSlice).
struct CounterSet {
  std::string name;                            ///< DNS label, e.g. "gpu-0-counters"
  std::map<std::string, std::string> counters; ///< counter name → quantity available
};

/// One published device.
struct DraDevice {
  /// DNS label, unique in the pool: "gpu-0" (accelerator index in PCI order),
  /// "gpu-0-mig-1g-10gb-0", "nic-0" (RDMA port in PCI order), "nic-0-vf-3".
  std::string name;
  DeviceKind kind = DeviceKind::kGpu;
  /// Vendor of an accelerator (kGpu, kMig); meaningless for NICs.
  devices::Vendor vendor = devices::Vendor::kNvidia;
  /// Canonical PCI address of the function (the physical GPU's for a MIG device).
  std::string pci_address;
  /// NUMA node; -1 unknown.
  int numa_node = -1;
  /// accel's rail: GPUs and the NIC they are paired with share it (the NIC's index among the
  /// NICs pairing uses, fabric::Fabric::UsedNics order); -1 when the device has no pair.
  int rail = -1;
  /// Index into Inventory::node_devices for kGpu/kMig; -1 for NICs.
  int node_device = -1;
  /// Index into Inventory::fabric.nics for kNic; -1 for accelerators.
  int nic = -1;
  /// Every attribute as published, by its full name: standard ones qualified
  /// ("resource.kubernetes.io/pciBusID", ".../pcieRoot", ".../numaNode"), the driver's own
  /// unqualified ("type", "rail", "pcieSwitch", "pathType", "vendor", "model", "uuid", ...).
  std::map<std::string, AttributeValue> attributes;
  /// Capacities: name → quantity ("memory" → "80Gi").
  std::map<std::string, std::string> capacity;
  /// Counter consumption (MIG-enabled GPUs and their MIG devices); empty otherwise.
  std::vector<CounterConsumption> consumes_counters;
};

/// What BuildInventory publishes and how.
struct InventoryOptions {
  /// The DRA driver name (a DNS subdomain ≤ 63 characters).
  std::string driver = "accel.io";
  /// The node's name in Kubernetes; the pool is named after it.
  std::string node_name;
  /// Publish SR-IOV virtual functions of RDMA NICs as devices of their own.
  bool include_vfs = true;
  /// How BuildInventory pairs GPUs with NICs (rails) from ports. BuildInventoryFromPairing and
  /// BuildNodeInventory take a pairing already made (the node's: NodeSource::pairing) and
  /// ignore this.
  fabric::PairingOptions pairing;
  /// Publish MIG-enabled GPUs as partitionable devices: the whole GPU beside its MIG devices,
  /// all consuming the GPU's counter set (KEP-4815: beta and on by default from Kubernetes
  /// 1.36; alpha behind the DRAPartitionableDevices gate in 1.33-1.35). false: a MIG-enabled
  /// GPU publishes only its MIG devices and no counters — what an API server without the
  /// feature needs, since it drops counters it does not know, which would let the scheduler
  /// hand out a GPU and its slices together.
  bool partitionable = true;
};

/// The node's devices as the driver publishes and prepares them.
struct Inventory {
  std::string driver;
  std::string node_name;  ///< also the pool name
  /// The accelerators and MIG devices the vendor backends reported (kube::DiscoverNodeDevices).
  std::vector<kube::NodeDevice> node_devices;
  /// The pairing of the node's accelerators and RDMA NICs (VFs included as NICs).
  fabric::Fabric fabric;
  /// Published devices: accelerators (each followed by its MIG devices), then NICs; PCI order.
  std::vector<DraDevice> devices;
  /// Counter sets of MIG-enabled GPUs, in GPU order.
  std::vector<CounterSet> counter_sets;
  /// What was left out or guessed, for the operator: "MIG device MIG-… has no parent GPU among
  /// the node's devices: not published", "GPU 0000:1b:00.0: model not in the MIG catalog, slice
  /// counts taken from the profile names".
  std::vector<std::string> notes;

  /// The device named `name`, or null.
  const DraDevice* Find(const std::string& name) const;
};

/// Limits of resource.k8s.io/v1 that BuildInventory keeps (platform.md §4.3).
inline constexpr size_t kMaxAttributeStringLength = 64;    ///< string and version values
inline constexpr size_t kMaxAttributesAndCapacities = 32;  ///< per device
inline constexpr size_t kMaxDriverNameLength = 63;

/// The published attribute names (unqualified ones are the driver's own: `accel.io/rail` in
/// a claim). Standard ones are qualified.
inline constexpr const char* kAttrPciBusId = "resource.kubernetes.io/pciBusID";
inline constexpr const char* kAttrPcieRoot = "resource.kubernetes.io/pcieRoot";
inline constexpr const char* kAttrNumaNode = "resource.kubernetes.io/numaNode";

/// `version` as a semantic version (semver.org 2.0.0) the API server accepts, or nullopt.
/// Vendor driver versions are close to it but not quite: NVIDIA "580.95.05" (a leading zero)
/// becomes "580.95.5" as NVIDIA's own DRA driver publishes it, "550.54" becomes "550.54.0",
/// Gaudi "1.18.0-ee698fb" stays as it is. Refused: more than three numeric parts ("6.8.5.1"),
/// non-numeric parts, empty identifiers, more than 64 characters.
std::optional<std::string> NormalizeSemver(std::string_view version);

/// `s` cut to at most `max` bytes without splitting a UTF-8 sequence.
std::string TruncateUtf8(std::string_view s, size_t max = kMaxAttributeStringLength);

/// Builds the inventory of a node: `node_devices` from the vendor backends, `host` for the PCI
/// tree (pcieRoot, PCIe switch, NUMA), `ports` from fabric::ReadNicPorts (empty = unknown:
/// every RDMA port assumed active). Throws InputError when options.driver or node_name is not a
/// valid name.
///
/// Published devices and attributes (docs/dra.md):
///  - every whole accelerator ("gpu-<i>", i in PCI order): `type` "gpu" (Gaudi HPUs too),
///    `vendor` ("nvidia", "amd", "habana"), `model` and `productName` (the product name),
///    `uuid` (vendor id, when it is not just the PCI address), `index` (the vendor library's
///    index), `driverVersion` (a version, when NormalizeSemver accepts it), `migEnabled`;
///    capacity `memory` when known;
///  - each MIG device of a MIG-enabled GPU, right after its GPU: `type` "mig", `profile`,
///    `parentUUID`, `parentIndex`, `uuid`, the GPU's vendor/model/driver attributes; capacity
///    `memory`. The GPU and its MIG devices consume counter set "gpu-<i>-counters"
///    (`memory-slices`, `compute-slices` from sharing::MigCatalog, `memory` in bytes): the
///    whole GPU takes all of it, each MIG device its profile's share;
///  - every RDMA port fabric pairing found ("nic-<j>"), and with include_vfs its SR-IOV VFs
///    ("nic-<j>-vf-<k>"): `type` "nic", `vendor` ("mellanox", "broadcom", ... when the PCI
///    vendor is known), `model`, `rdmaDevice`, `port`, `netdev`, `linkLayer`, `sriovVf`,
///    `pfName` (a VF's PF RDMA device);
///  - on all, when known: resource.kubernetes.io/pciBusID, .../pcieRoot ("pci0000:15"),
///    .../numaNode; and the pairing: `rail` (GPU and its NIC: the NIC's index in
///    Fabric::UsedNics; MIG devices inherit their GPU's, VFs their PF's unless pairing used the
///    VF itself), `pathType` ("PIX", "PXB", "PHB", "SYS": GPU to its NIC; for a NIC the closest
///    of its GPUs), `pcieSwitch` (address of the PCIe switch port the GPU and its NIC are both
///    under, only when the path is PIX or PXB).
/// NVLink cliques are added by AddNvlinkCliques (BuildNodeInventory does both).
/// String values are cut to 64 bytes. Same inputs give the same inventory.
Inventory BuildInventory(const std::vector<kube::NodeDevice>& node_devices,
                         const topology::HostTopology& host, const std::vector<fabric::NicPort>& ports,
                         const InventoryOptions& options);

/// BuildInventory with the pairing already made (`pairing` = fabric::PairGpusWithNics of
/// `host`; options.pairing is not used).
Inventory BuildInventoryFromPairing(const std::vector<kube::NodeDevice>& node_devices,
                                    const topology::HostTopology& host, const fabric::Fabric& pairing,
                                    const InventoryOptions& options);

/// Gives each GPU joined to others by NVLink (directly or through NVSwitch), and its MIG
/// devices, the attribute `nvlinkClique`: the index, on this node, of its connected group of
/// GPUs in `interconnect` (groups numbered in PCI order of their first GPU). A node-local
/// clique: GPUs of one clique can be claimed together with matchAttribute
/// accel.io/nvlinkClique. Not a multi-node NVLink (MNNVL) fabric clique. NICs get none.
void AddNvlinkCliques(Inventory* inventory, const devices::Interconnect& interconnect);

/// What accel's DRA driver publishes for a node read by ReadNodeHardware — the agent's driver
/// and `accel dra slices|claim` both call this: BuildInventoryFromPairing over hw.devices and
/// hw.host with hw.pairing (the pairing the device plugin's NCCL_IB_HCA comes from), then AddNvlinkCliques
/// with hw.interconnect. options.pairing is not used (hw.pairing was made with the node's).
/// Throws InputError as BuildInventory does.
Inventory BuildNodeInventory(const NodeHardware& hw, const InventoryOptions& options);

}  // namespace accel::dra
