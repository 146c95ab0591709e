#include "fleet/nova_usage.h"

#include <algorithm>
#include <climits>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/strings.h"

namespace accel::fleet {

namespace {

int64_t IntField(const nlohmann::json& j, const char* key, const std::string& where, const std::string& field,
                 int64_t fallback = 0) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < 0)
    throw InputError(where, field + "." + key, "must be a whole number, 0 or more");
  return j[key].get<int64_t>();
}

uint16_t HexId(const nlohmann::json& j, const char* key, const std::string& where, const std::string& field) {
  if (!j.contains(key) || !j[key].is_string()) throw InputError(where, field + "." + key, "must be a hex string", "e.g. \"10de\"");
  const std::string s = j[key].get<std::string>();
  size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used, 16);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v > 0xffff) throw InputError(where, field + "." + key, "'" + s + "' is not a 16-bit hex id");
  return static_cast<uint16_t>(v);
}

// A pool's numa_node: the node id, or -1 for a pool of devices whose NUMA node is unknown (null,
// absent or -1: Nova keeps such devices in pools with numa_node None).
int PoolNode(const nlohmann::json& p, const std::string& where, const std::string& field) {
  if (!p.contains("numa_node") || p["numa_node"].is_null()) return -1;
  const nlohmann::json& n = p["numa_node"];
  const bool in_range = n.is_number_unsigned() ? n.get<uint64_t>() <= static_cast<uint64_t>(INT_MAX)
                                               : n.is_number_integer() && n.get<int64_t>() >= -1;
  if (!in_range)
    throw InputError(where, field + ".numa_node", n.dump() + " is not a NUMA node id",
                     "a host NUMA node id (0 or more), or null (or -1) for devices whose NUMA node is unknown");
  return static_cast<int>(n.get<int64_t>());
}

// "on NUMA node 1" / "whose NUMA node is unknown", for messages.
std::string NodePhrase(int node) {
  return node < 0 ? "whose NUMA node is unknown" : "on NUMA node " + std::to_string(node);
}

// The devices of `host` with this vendor/product in pool `node` (-1: devices of unknown NUMA
// node, not any node) that `taken` does not hold yet, in address order.
std::vector<std::string> PoolDevices(const topology::HostTopology& host, uint16_t vendor, uint16_t product, int node,
                                     const std::set<std::string>& taken) {
  std::vector<std::string> out;
  for (const topology::PciDevice& d : host.pci)
    if (d.vendor_id == vendor && d.device_id == product && (node < 0 ? d.numa_node < 0 : d.numa_node == node) &&
        !taken.count(d.address))
      out.push_back(d.address);
  std::sort(out.begin(), out.end());
  return out;
}

// The error for a pool entry that counts `n` devices (`what`: "used" or "free") beyond what the
// host has left in its pool once `taken` (earlier entries' devices) are out.
InputError TooMany(const std::string& where, const std::string& field, int64_t n, const char* what,
                   const topology::HostTopology& host, uint16_t vendor, uint16_t product, int node,
                   const std::set<std::string>& taken) {
  const size_t all = PoolDevices(host, vendor, product, node, {}).size();
  const size_t earlier = all - PoolDevices(host, vendor, product, node, taken).size();
  std::string problem = std::to_string(n) + " " + what + ", but the host has " + std::to_string(all) + " " +
                        Hex4(vendor) + ":" + Hex4(product) + " devices " + NodePhrase(node);
  if (earlier > 0) problem += " and earlier entries counted " + std::to_string(earlier) + " of them";
  return InputError(where, field, problem,
                    node < 0 ? "numa_node null (or -1, or none) is the pool of devices whose NUMA node is unknown, "
                               "not any node; check that accel's topology of the host is the compute node's"
                             : "check that accel's topology of the host is the compute node's");
}

}  // namespace

placement::HostUsage UsageFromNova(const nlohmann::json& nova, const topology::HostTopology& host,
                                   const std::string& where) {
  placement::HostUsage usage;
  if (!nova.is_object()) throw InputError(where, "", "must be an object with cells and pci");
  if (nova.contains("cells")) {
    if (!nova["cells"].is_array()) throw InputError(where, "cells", "must be a list");
    for (size_t i = 0; i < nova["cells"].size(); ++i) {
      const nlohmann::json& c = nova["cells"][i];
      const std::string field = "cells[" + std::to_string(i) + "]";
      if (!c.is_object()) throw InputError(where, field, "must be an object");
      const int id = static_cast<int>(IntField(c, "id", where, field, -1));
      const int index = host.NodeIndex(id);
      if (index < 0) throw InputError(where, field + ".id", "the host has no NUMA node " + std::to_string(id));
      placement::NodeUsage& nu = usage.nodes[id];
      if (c.contains("pinned_cpus")) {
        if (!c["pinned_cpus"].is_array()) throw InputError(where, field + ".pinned_cpus", "must be a list of CPU ids");
        for (const nlohmann::json& cpu : c["pinned_cpus"]) {
          if (!cpu.is_number_integer() || !host.numa_nodes[index].cpus.Contains(cpu.get<int>()))
            throw InputError(where, field + ".pinned_cpus", "CPU " + cpu.dump() + " is not on node " + std::to_string(id));
          nu.pinned_cpus.Add(cpu.get<int>());
        }
      }
      const int64_t cpu_usage = IntField(c, "cpu_usage", where, field);
      nu.shared_vcpus = static_cast<int>(std::max<int64_t>(0, cpu_usage - nu.pinned_cpus.Count()));
      if (c.contains("mempages")) {
        if (!c["mempages"].is_array()) throw InputError(where, field + ".mempages", "must be a list");
        for (const nlohmann::json& m : c["mempages"]) {
          if (!m.is_object()) throw InputError(where, field + ".mempages", "entries must be objects", "{\"size_kb\": 1048576, \"used\": 16}");
          const int64_t size = IntField(m, "size_kb", where, field + ".mempages");
          const int64_t used = IntField(m, "used", where, field + ".mempages");
          if (used > 0) nu.pages_used[static_cast<uint64_t>(size)] += static_cast<uint64_t>(used);
        }
      }
    }
  }
  if (nova.contains("pci")) {
    if (!nova["pci"].is_array()) throw InputError(where, "pci", "must be a list");
    for (size_t i = 0; i < nova["pci"].size(); ++i) {
      const nlohmann::json& p = nova["pci"][i];
      const std::string field = "pci[" + std::to_string(i) + "]";
      if (!p.is_object()) throw InputError(where, field, "must be an object");
      const uint16_t vendor = HexId(p, "vendor_id", where, field);
      const uint16_t product = HexId(p, "product_id", where, field);
      const int node = PoolNode(p, where, field);
      const int64_t used = IntField(p, "used", where, field);
      const std::vector<std::string> matching = PoolDevices(host, vendor, product, node, usage.devices);
      if (used > static_cast<int64_t>(matching.size()))
        throw TooMany(where, field + ".used", used, "used", host, vendor, product, node, usage.devices);
      for (int64_t k = 0; k < used; ++k) usage.devices.insert(matching[static_cast<size_t>(k)]);
    }
  }
  if (nova.contains("pci_free")) {
    // Nova's PCI pools count FREE devices (nova/pci/stats.py): a claimed device leaves its pool
    // and the scheduler drops a pool whose last device it consumed. So every device of the host
    // is held except, per entry, `free` devices with its vendor/product in its pool: on its node,
    // or (numa_node null) among the devices whose NUMA node is unknown.
    if (nova.contains("pci")) throw InputError(where, "pci_free", "give pci (used devices) or pci_free (free devices), not both");
    if (!nova["pci_free"].is_array()) throw InputError(where, "pci_free", "must be a list");
    std::set<std::string> free_devices;
    for (size_t i = 0; i < nova["pci_free"].size(); ++i) {
      const nlohmann::json& p = nova["pci_free"][i];
      const std::string field = "pci_free[" + std::to_string(i) + "]";
      if (!p.is_object()) throw InputError(where, field, "must be an object");
      const uint16_t vendor = HexId(p, "vendor_id", where, field);
      const uint16_t product = HexId(p, "product_id", where, field);
      const int node = PoolNode(p, where, field);
      const int64_t free = IntField(p, "free", where, field);
      const std::vector<std::string> matching = PoolDevices(host, vendor, product, node, free_devices);
      if (free > static_cast<int64_t>(matching.size()))
        throw TooMany(where, field + ".free", free, "free", host, vendor, product, node, free_devices);
      for (int64_t k = 0; k < free; ++k) free_devices.insert(matching[static_cast<size_t>(k)]);
    }
    for (const topology::PciDevice& d : host.pci)
      if (!free_devices.count(d.address)) usage.devices.insert(d.address);
  }
  return usage;
}

}  // namespace accel::fleet
