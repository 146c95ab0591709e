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
#include <string>
#include <vector>

#include "devices/device.h"
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
  /// How GPUs are paired with NICs (rails).
  fabric::PairingOptions pairing;
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

  /// The device named `name`, or null.
  const DraDevice* Find(const std::string& name) const;
};

/// Builds the inventory of a node: `node_devices` from the vendor backends, `host` for the PCI
/// tree (pcieRoot, PCIe switch, NUMA), `ports` from fabric::ReadNicPorts (empty = unknown:
/// every RDMA port assumed active). Throws InputError when options.driver or node_name is not a
/// valid name.
Inventory BuildInventory(const std::vector<kube::NodeDevice>& node_devices,
                         const topology::HostTopology& host, const std::vector<fabric::NicPort>& ports,
                         const InventoryOptions& options);

}  // namespace accel::dra
