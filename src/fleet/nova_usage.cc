#include "fleet/nova_usage.h"

#include <algorithm>
#include <set>

#include "common/error.h"

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
      const int node = static_cast<int>(p.contains("numa_node") && p["numa_node"].is_number_integer() ? p["numa_node"].get<int>() : -1);
      int64_t used = IntField(p, "used", where, field);
      std::vector<std::string> matching;
      for (const topology::PciDevice& d : host.pci)
        if (d.vendor_id == vendor && d.device_id == product && (node < 0 || d.numa_node == node) && !usage.devices.count(d.address))
          matching.push_back(d.address);
      std::sort(matching.begin(), matching.end());
      if (used > static_cast<int64_t>(matching.size()))
        throw InputError(where, field + ".used", std::to_string(used) + " used, but the host has " +
                                                     std::to_string(matching.size()) + " such devices there");
      for (int64_t k = 0; k < used; ++k) usage.devices.insert(matching[static_cast<size_t>(k)]);
    }
  }
  if (nova.contains("pci_free")) {
    // Nova's PCI pools count FREE devices (nova/pci/stats.py): a claimed device leaves its pool
    // and the scheduler drops a pool whose last device it consumed. So every device of the host
    // is held except, per entry, `free` devices with its vendor/product on its node.
    if (nova.contains("pci")) throw InputError(where, "pci_free", "give pci (used devices) or pci_free (free devices), not both");
    if (!nova["pci_free"].is_array()) throw InputError(where, "pci_free", "must be a list");
    std::set<std::string> free_devices;
    for (size_t i = 0; i < nova["pci_free"].size(); ++i) {
      const nlohmann::json& p = nova["pci_free"][i];
      const std::string field = "pci_free[" + std::to_string(i) + "]";
      if (!p.is_object()) throw InputError(where, field, "must be an object");
      const uint16_t vendor = HexId(p, "vendor_id", where, field);
      const uint16_t product = HexId(p, "product_id", where, field);
      const int node = static_cast<int>(p.contains("numa_node") && p["numa_node"].is_number_integer() ? p["numa_node"].get<int>() : -1);
      const int64_t free = IntField(p, "free", where, field);
      std::vector<std::string> matching;
      for (const topology::PciDevice& d : host.pci)
        if (d.vendor_id == vendor && d.device_id == product && (node < 0 || d.numa_node == node) && !free_devices.count(d.address))
          matching.push_back(d.address);
      std::sort(matching.begin(), matching.end());
      if (free > static_cast<int64_t>(matching.size()))
        throw InputError(where, field + ".free", std::to_string(free) + " free, but the host has " +
                                                     std::to_string(matching.size()) + " such devices there");
      for (int64_t k = 0; k < free; ++k) free_devices.insert(matching[static_cast<size_t>(k)]);
    }
    for (const topology::PciDevice& d : host.pci)
      if (!free_devices.count(d.address)) usage.devices.insert(d.address);
  }
  return usage;
}

}  // namespace accel::fleet
