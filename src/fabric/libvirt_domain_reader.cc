// ReadLibvirtDomain (guest_topology.h): libvirt domain XML → host/guest PCI addresses.
#include <libxml/parser.h>
#include <libxml/tree.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "common/error.h"
#include "fabric/guest_topology.h"

namespace accel::fabric {

namespace {

// Far beyond any real guest; they bound the work a hostile document can cause.
constexpr size_t kMaxCells = 1024;
constexpr size_t kMaxControllers = 4096;
constexpr size_t kMaxDevices = 4096;
constexpr int kLastBus = 255;

struct DocFree {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
struct CtxtFree {
  void operator()(xmlParserCtxt* ctxt) const { xmlFreeParserCtxt(ctxt); }
};

// "where:line" for errors about one element.
std::string At(const std::string& where, const xmlNode* node) {
  const long line = node ? xmlGetLineNo(node) : -1;
  return line > 0 ? where + ":" + std::to_string(line) : where;
}

bool Named(const xmlNode* node, const char* name) {
  return node->type == XML_ELEMENT_NODE && node->ns == nullptr &&
         xmlStrcmp(node->name, reinterpret_cast<const xmlChar*>(name)) == 0;
}

std::vector<xmlNode*> Children(const xmlNode* parent, const char* name) {
  std::vector<xmlNode*> out;
  if (!parent) return out;
  for (xmlNode* c = parent->children; c; c = c->next)
    if (Named(c, name)) out.push_back(c);
  return out;
}

xmlNode* Child(const xmlNode* parent, const char* name) {
  std::vector<xmlNode*> all = Children(parent, name);
  return all.empty() ? nullptr : all.front();
}

std::optional<std::string> Attr(const xmlNode* node, const char* name) {
  if (!node) return std::nullopt;
  xmlChar* value = xmlGetNoNsProp(node, reinterpret_cast<const xmlChar*>(name));
  if (!value) return std::nullopt;
  std::string out(reinterpret_cast<const char*>(value));
  xmlFree(value);
  return out;
}

std::string Text(const xmlNode* node) {
  if (!node) return "";
  xmlChar* value = xmlNodeGetContent(node);
  if (!value) return "";
  std::string out(reinterpret_cast<const char*>(value));
  xmlFree(value);
  const size_t first = out.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(" \t\r\n") - first + 1);
}

// A number as libvirt reads it (virStrToLong_uip with base 0: decimal, 0x hex, 0 octal).
unsigned long Number(const std::string& text, unsigned long max, const std::string& where,
                     const std::string& field) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const bool digits = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0]));
  const unsigned long value = digits ? std::strtoul(begin, &end, 0) : 0;
  if (!digits || errno != 0 || end != begin + text.size() || value > max)
    throw InputError(where, field, "'" + text + "' is not a number in 0.." + std::to_string(max),
                     "write it in decimal or as 0x hex, as libvirt does");
  return value;
}

int OptionalNumber(const xmlNode* node, const char* attr, unsigned long max,
                   const std::string& where, const std::string& element, int fallback) {
  std::optional<std::string> text = Attr(node, attr);
  if (!text) return fallback;
  return static_cast<int>(Number(*text, max, At(where, node), element + "@" + attr));
}

std::string FormatAddress(unsigned domain, unsigned bus, unsigned slot, unsigned function) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, slot, function);
  return buf;
}

/// One <address type='pci'> as numbers.
struct PciAddr {
  int domain = 0, bus = 0, slot = 0, function = 0;
};

// Reads an <address> element's domain/bus/slot/function (libvirt's limits).
PciAddr ReadAddress(const xmlNode* node, const std::string& where, const std::string& element) {
  PciAddr a;
  a.domain = OptionalNumber(node, "domain", 0xffff, where, element, 0);
  a.bus = OptionalNumber(node, "bus", 0xff, where, element, 0);
  a.slot = OptionalNumber(node, "slot", 0x1f, where, element, 0);
  a.function = OptionalNumber(node, "function", 7, where, element, 0);
  return a;
}

// The guest <address type='pci'> directly under a device or controller, if any.
const xmlNode* GuestAddressNode(const xmlNode* device) {
  for (xmlNode* a : Children(device, "address")) {
    std::optional<std::string> type = Attr(a, "type");
    if (type && *type == "pci") return a;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// PCI controllers and the bus numbers guest firmware gives them.

struct Controller {
  int index = -1;
  std::string model;
  int bus_nr = -1;  // <target busNr>, expander buses only
  int node = -1;    // <target><node>
  bool has_address = false;
  PciAddr address;  // where it is plugged (address.bus = parent controller index)
};

bool IsExpander(const std::string& model) {
  return model == "pcie-expander-bus" || model == "pci-expander-bus";
}

bool IsRoot(const std::string& model) { return model == "pcie-root" || model == "pci-root"; }

// Every model that is a PCI-to-PCI bridge to guest firmware, and so takes a bus number.
bool IsBridge(const std::string& model) {
  return model == "pcie-root-port" || model == "pcie-switch-upstream-port" ||
         model == "pcie-switch-downstream-port" || model == "pci-bridge" ||
         model == "dmi-to-pci-bridge" || model == "pcie-to-pci-bridge";
}

std::map<int, Controller> ReadControllers(const xmlNode* devices, const std::string& where) {
  std::map<int, Controller> out;
  for (xmlNode* node : Children(devices, "controller")) {
    std::optional<std::string> type = Attr(node, "type");
    if (!type || *type != "pci") continue;
    if (out.size() >= kMaxControllers)
      throw InputError(At(where, node), "controller",
                       "more than " + std::to_string(kMaxControllers) + " PCI controllers");
    Controller c;
    c.index = OptionalNumber(node, "index", 0xffff, where, "controller", -1);
    if (c.index < 0) continue;  // libvirt assigns one at define time; nothing can name it yet
    c.model = Attr(node, "model").value_or("");
    if (const xmlNode* target = Child(node, "target")) {
      c.bus_nr = OptionalNumber(target, "busNr", kLastBus, where, "controller/target", -1);
      if (const xmlNode* numa = Child(target, "node"))
        c.node =
            static_cast<int>(Number(Text(numa), 0xffff, At(where, numa), "controller/target/node"));
    }
    if (const xmlNode* addr = GuestAddressNode(node)) {
      c.has_address = true;
      c.address = ReadAddress(addr, where, "controller/address");
    }
    if (!out.emplace(c.index, c).second)
      throw InputError(At(where, node), "controller@index",
                       "PCI controller index " + std::to_string(c.index) + " appears twice");
  }
  return out;
}

// Controller index → the guest bus number behind it (its secondary bus; for root and
// expander buses, the bus itself). Controllers the firmware walk does not reach are absent.
std::map<int, int> NumberBuses(const std::map<int, Controller>& controllers) {
  std::map<int, std::vector<const Controller*>> bridges_on;  // parent index → bridges, by slot
  for (const auto& [index, c] : controllers)
    if (IsBridge(c.model) && c.has_address && c.address.bus != index)
      bridges_on[c.address.bus].push_back(&c);
  for (auto& [parent, list] : bridges_on)
    std::sort(list.begin(), list.end(), [](const Controller* a, const Controller* b) {
      return std::tie(a->address.slot, a->address.function, a->index) <
             std::tie(b->address.slot, b->address.function, b->index);
    });

  std::map<int, int> bus_of;
  std::set<int> visited;
  // Depth-first, as SeaBIOS's pci_bios_init_bus_rec and OVMF's PciScanBus number them.
  std::function<void(int, int*)> walk = [&](int parent, int* counter) {
    auto it = bridges_on.find(parent);
    if (it == bridges_on.end()) return;
    for (const Controller* bridge : it->second) {
      if (!visited.insert(bridge->index).second || *counter >= kLastBus) continue;
      bus_of[bridge->index] = ++*counter;
      walk(bridge->index, counter);
    }
  };
  int counter = 0;
  bus_of[0] = 0;
  visited.insert(0);
  walk(0, &counter);
  for (const auto& [index, c] : controllers) {
    if (!IsExpander(c.model) || c.bus_nr < 0 || !visited.insert(index).second) continue;
    bus_of[index] = c.bus_nr;
    int expander_counter = c.bus_nr;
    walk(index, &expander_counter);
  }
  return bus_of;
}

// The guest NUMA cell of the expander bus above controller `index`, or -1.
int CellAbove(const std::map<int, Controller>& controllers, int index) {
  std::set<int> seen;
  while (seen.insert(index).second) {
    auto it = controllers.find(index);
    if (it == controllers.end()) return -1;
    const Controller& c = it->second;
    if (IsExpander(c.model)) return c.node;
    if (IsRoot(c.model) || !c.has_address) return -1;
    index = c.address.bus;
  }
  return -1;  // a loop of controllers: no cell
}

// ---------------------------------------------------------------------------------------------
// Domain-level parts.

void ReadCells(const xmlNode* domain, const std::string& where, GuestDeviceMap* map) {
  const xmlNode* numa = Child(Child(domain, "cpu"), "numa");
  std::vector<xmlNode*> cells = Children(numa, "cell");
  if (cells.size() > kMaxCells)
    throw InputError(At(where, numa), "cpu/numa",
                     "more than " + std::to_string(kMaxCells) + " guest NUMA cells");
  map->guest_cells = static_cast<int>(cells.size());
  map->cell_cpus.assign(cells.size(), CpuSet());
  map->cell_host_node.assign(cells.size(), -1);
  for (size_t i = 0; i < cells.size(); ++i) {
    const int id =
        OptionalNumber(cells[i], "id", kMaxCells - 1, where, "cpu/numa/cell", static_cast<int>(i));
    if (static_cast<size_t>(id) >= cells.size())
      throw InputError(At(where, cells[i]), "cpu/numa/cell@id",
                       "cell id " + std::to_string(id) + " is not below the cell count " +
                           std::to_string(cells.size()),
                       "libvirt numbers guest cells 0..n-1");
    std::string error;
    CpuSet cpus;
    if (!CpuSet::Parse(Attr(cells[i], "cpus").value_or(""), &cpus, &error))
      throw InputError(At(where, cells[i]), "cpu/numa/cell@cpus", error);
    map->cell_cpus[id] = cpus;
  }
  for (xmlNode* memnode : Children(Child(domain, "numatune"), "memnode")) {
    const int cell =
        OptionalNumber(memnode, "cellid", kMaxCells - 1, where, "numatune/memnode", -1);
    std::string error;
    CpuSet nodes;
    if (!CpuSet::Parse(Attr(memnode, "nodeset").value_or(""), &nodes, &error))
      throw InputError(At(where, memnode), "numatune/memnode@nodeset", error);
    if (cell >= 0 && static_cast<size_t>(cell) < cells.size() && nodes.Count() == 1)
      map->cell_host_node[cell] = nodes.First();
  }
}

// Devices that pass a host PCI function through: <hostdev mode='subsystem' type='pci'> and
// <interface type='hostdev'> (how SR-IOV VFs are usually given to a guest).
std::vector<xmlNode*> PassthroughNodes(const xmlNode* devices) {
  std::vector<xmlNode*> out;
  for (xmlNode* c = devices ? devices->children : nullptr; c; c = c->next) {
    if (Named(c, "hostdev")) {
      if (Attr(c, "mode").value_or("subsystem") == "subsystem" && Attr(c, "type") == "pci")
        out.push_back(c);
    } else if (Named(c, "interface") && Attr(c, "type") == "hostdev") {
      out.push_back(c);
    }
  }
  return out;
}

GuestDevice ReadDevice(const xmlNode* node, const std::map<int, Controller>& controllers,
                       const std::map<int, int>& bus_of, const std::string& where,
                       GuestDeviceMap* map) {
  const std::string kind = reinterpret_cast<const char*>(node->name);
  const xmlNode* source = Child(Child(node, "source"), "address");
  if (!source)
    throw InputError(At(where, node), kind + "/source/address", "has no host PCI address",
                     "libvirt needs <source><address domain= bus= slot= function=/>");
  const PciAddr host = ReadAddress(source, where, kind + "/source/address");
  GuestDevice device;
  device.host_address = FormatAddress(host.domain, host.bus, host.slot, host.function);
  const xmlNode* guest_node = GuestAddressNode(node);
  const std::string label =
      kind + " " + device.host_address + " (line " + std::to_string(xmlGetLineNo(node)) + ")";
  if (!guest_node) {
    map->notes.push_back(label +
                         " has no guest <address>: libvirt chooses it at define time; "
                         "read `virsh dumpxml` of the defined domain or pass --guest-map");
    return device;
  }
  const PciAddr guest = ReadAddress(guest_node, where, kind + "/address");
  if (!controllers.count(guest.bus) && guest.bus != 0) {
    map->notes.push_back(label + ": its guest bus " + std::to_string(guest.bus) +
                         " names no PCI controller; pass --guest-map");
    return device;
  }
  auto bus = bus_of.find(guest.bus);
  if (bus == bus_of.end()) {
    map->notes.push_back(label + ": the guest firmware's number for PCI controller " +
                         std::to_string(guest.bus) +
                         " is unknown (an expander bus without "
                         "busNr, or a controller with no address); pass --guest-map");
    return device;
  }
  device.guest_address = FormatAddress(guest.domain, bus->second, guest.slot, guest.function);
  device.guest_cell = CellAbove(controllers, guest.bus);
  if (device.guest_cell >= map->guest_cells) {
    map->notes.push_back(label + ": its expander bus names guest cell " +
                         std::to_string(device.guest_cell) + ", which the domain does not have");
    device.guest_cell = -1;
  }
  return device;
}

xmlDoc* Parse(const std::string& xml, const std::string& where) {
  static std::once_flag init;
  std::call_once(init, [] { xmlInitParser(); });
  if (xml.size() > kMaxDomainXmlBytes)
    throw InputError(where, "",
                     "is " + std::to_string(xml.size()) + " bytes; a domain XML " + "is at most " +
                         std::to_string(kMaxDomainXmlBytes) + " bytes");
  // libvirt never writes a DTD; refusing one keeps entity expansion out entirely.
  if (xml.find("<!DOCTYPE") != std::string::npos)
    throw InputError(where, "", "has a <!DOCTYPE>; libvirt domain XML has none",
                     "give the output of `virsh dumpxml` or `accel place -o libvirt`");
  std::unique_ptr<xmlParserCtxt, CtxtFree> ctxt(xmlNewParserCtxt());
  if (!ctxt) throw InputError(where, "", "out of memory while parsing");
  // No XML_PARSE_NOENT (entity substitution), DTDLOAD or HUGE: nothing is fetched or expanded.
  xmlDoc* doc =
      xmlCtxtReadMemory(ctxt.get(), xml.data(), static_cast<int>(xml.size()), "domain.xml", nullptr,
                        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc || !ctxt->wellFormed) {
    if (doc) xmlFreeDoc(doc);
    const xmlError& e = ctxt->lastError;
    std::string message = e.message ? e.message : "not well-formed XML";
    while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
      message.pop_back();
    throw InputError(e.line > 0 ? where + ":" + std::to_string(e.line) : where, "",
                     "malformed XML: " + message, "give a libvirt domain XML");
  }
  return doc;
}

}  // namespace

GuestDeviceMap ReadLibvirtDomain(const std::string& xml, const std::string& where) {
  std::unique_ptr<xmlDoc, DocFree> doc(Parse(xml, where));
  const xmlNode* domain = xmlDocGetRootElement(doc.get());
  if (!domain || !Named(domain, "domain"))
    throw InputError(where, "", "the root element is not <domain>",
                     "give a libvirt domain XML (virsh dumpxml NAME)");
  GuestDeviceMap map;
  map.domain = Text(Child(domain, "name"));
  if (const xmlNode* vcpu = Child(domain, "vcpu"))
    map.vcpus = static_cast<int>(Number(Text(vcpu), 65536, At(where, vcpu), "vcpu"));
  if (std::optional<std::string> arch = Attr(Child(Child(domain, "os"), "type"), "arch"))
    map.arch = *arch;
  ReadCells(domain, where, &map);

  const xmlNode* devices = Child(domain, "devices");
  const std::map<int, Controller> controllers = ReadControllers(devices, where);
  const std::map<int, int> bus_of = NumberBuses(controllers);
  std::vector<xmlNode*> nodes = PassthroughNodes(devices);
  if (nodes.size() > kMaxDevices)
    throw InputError(where, "devices",
                     "more than " + std::to_string(kMaxDevices) + " passed-through PCI devices");
  for (const xmlNode* node : nodes)
    map.devices.push_back(ReadDevice(node, controllers, bus_of, where, &map));
  return map;
}

}  // namespace accel::fabric
