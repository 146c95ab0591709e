#include "placement/libvirt_domain.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/error.h"
#include "placement/flavor_cpu_topology.h"
#include "placement/libvirt_pci_layout.h"
#include "placement/libvirt_xml_writer.h"

namespace accel::placement {

namespace {

using topology::HostTopology;

// Far above what QEMU runs (q35 tops out in the low thousands); keeps CPU sets bounded.
constexpr int kMaxLibvirtVcpus = 16384;

[[noreturn]] void Fail(const std::string& where, const std::string& field,
                       const std::string& problem, const std::string& hint = "") {
  throw InputError(where, field, problem, hint);
}

std::string CellField(size_t i, const char* member) {
  return "cells[" + std::to_string(i) + "]." + member;
}

// ---------------------------------------------------------------------------------------------
// The guest as the XML describes it, checked once up front.

/// One guest NUMA cell: its vCPUs and where it landed.
struct CellView {
  const CellPlacement* placed = nullptr;
  CpuSet vcpus;      // pinned and shared vCPUs of the cell
  CpuSet dedicated;  // the pinned ones
};

struct GuestView {
  std::vector<CellView> cells;  // by guest cell id 0..k-1; empty: no NUMA topology
  uint64_t memory_kib = 0;
  uint64_t smallest_page_kib = 4;  // the host's base page; larger pages are "huge"
};

uint64_t SmallestPageKib(const HostTopology& host) {
  uint64_t smallest = 0;
  for (const auto& node : host.numa_nodes)
    if (!node.pages.empty() && (smallest == 0 || node.pages.front().size_kib < smallest))
      smallest = node.pages.front().size_kib;
  return smallest == 0 ? 4 : smallest;
}

CellView ViewCell(const HostTopology& host, int vcpus, const CellPlacement& cell, size_t i) {
  if (cell.host_node < 0 || (!host.numa_nodes.empty() && host.NodeIndex(cell.host_node) < 0))
    Fail("placement", CellField(i, "host_node"),
         "host " + host.hostname + " has no NUMA node " + std::to_string(cell.host_node),
         "place the request again on this host");
  CellView view{&cell, {}, {}};
  for (const auto& [vcpu, pcpu] : cell.pinning) {
    if (vcpu < 0 || vcpu >= vcpus || pcpu < 0)
      Fail("placement", CellField(i, "pinning"),
           "vCPU " + std::to_string(vcpu) + " -> host CPU " + std::to_string(pcpu) +
               " is out of range (the flavor has " + std::to_string(vcpus) + " vCPUs)");
    view.dedicated.Add(vcpu);
  }
  if (view.dedicated.Intersects(cell.shared_vcpus))
    Fail("placement", CellField(i, "shared_vcpus"),
         "vCPUs " + view.dedicated.Intersect(cell.shared_vcpus).ToString() +
             " are both pinned and shared");
  if (!cell.shared_vcpus.Empty() && cell.shared_cpus.Empty())
    Fail("placement", CellField(i, "shared_cpus"),
         "guest cell " + std::to_string(cell.guest_cell) + " has shared vCPUs but no host CPUs "
         "to run them on", "give the host node a shared CPU set");
  if (cell.memory_mib == 0)
    Fail("placement", CellField(i, "memory_mib"), "guest cell has no memory");
  view.vcpus = view.dedicated.Union(cell.shared_vcpus);
  return view;
}

// Cells sorted by guest id, which must be 0..k-1 (Nova renumbers guest cells the same way).
std::vector<CellView> ViewCells(const HostTopology& host, int vcpus, const Placement& placement) {
  std::vector<CellView> cells(placement.cells.size());
  std::vector<bool> seen(placement.cells.size(), false);
  for (size_t i = 0; i < placement.cells.size(); ++i) {
    const int id = placement.cells[i].guest_cell;
    if (id < 0 || static_cast<size_t>(id) >= cells.size() || seen[id])
      Fail("placement", CellField(i, "guest_cell"),
           "guest cell ids must be 0.." + std::to_string(cells.size() - 1) + ", each once; got " +
               std::to_string(id));
    seen[id] = true;
    cells[id] = ViewCell(host, vcpus, placement.cells[i], i);
  }
  return cells;
}

void CheckVcpusCovered(const PlacementRequest& request, const std::vector<CellView>& cells) {
  CpuSet all;
  for (const CellView& cell : cells) {
    if (all.Intersects(cell.vcpus))
      Fail("placement", "cells", "vCPUs " + all.Intersect(cell.vcpus).ToString() +
                                     " are in more than one guest cell");
    all = all.Union(cell.vcpus);
  }
  CpuSet want;
  for (int v = 0; v < request.vcpus; ++v) want.Add(v);
  if (all != want)
    Fail("placement", "cells",
         "the guest cells hold vCPUs '" + all.ToString() + "' but the flavor has " +
             std::to_string(request.vcpus) + " vCPUs ('" + want.ToString() + "')",
         "place the request again");
}

GuestView ViewGuest(const HostTopology& host, const PlacementRequest& request,
                    const Placement& placement) {
  if (request.vcpus < 1 || request.vcpus > kMaxLibvirtVcpus)
    Fail("request", "vcpus", std::to_string(request.vcpus) + " is not in 1.." +
                                 std::to_string(kMaxLibvirtVcpus));
  if (request.memory_mib == 0) Fail("request", "memory_mib", "must be more than 0");
  if (placement.cells.empty() && !request.cells.empty())
    Fail("placement", "cells", "is empty, but the flavor has a NUMA topology",
         "place the request again");
  if (!request.cells.empty() && request.cells.size() != placement.cells.size())
    Fail("placement", "cells",
         "has " + std::to_string(placement.cells.size()) + " cells, the flavor asks for " +
             std::to_string(request.cells.size()));
  if (request.emulator_policy == EmulatorPolicy::kIsolate && !placement.cells.empty() &&
      placement.emulator_cpus.Empty())
    Fail("placement", "emulator_cpus", "is empty, but the flavor asks for emulator isolate",
         "place the request again");

  GuestView view;
  view.smallest_page_kib = SmallestPageKib(host);
  view.cells = ViewCells(host, request.vcpus, placement);
  uint64_t memory_mib = request.memory_mib;
  if (!view.cells.empty()) {
    CheckVcpusCovered(request, view.cells);
    memory_mib = 0;
    for (const CellView& cell : view.cells) memory_mib += cell.placed->memory_mib;
    if (memory_mib != request.memory_mib)
      Fail("placement", "cells", "cell memory adds up to " + std::to_string(memory_mib) +
                                     " MiB, the flavor has " +
                                     std::to_string(request.memory_mib) + " MiB");
  }
  view.memory_kib = memory_mib * 1024;
  return view;
}

bool UsesHugepages(const GuestView& view, const CellView& cell) {
  return cell.placed->page_size_kib > view.smallest_page_kib;
}

// ---------------------------------------------------------------------------------------------
// Small values.

std::string DomainName(const PlacementRequest& request, const DomainOptions& options) {
  auto bad = [](char c) { return c == '/' || static_cast<unsigned char>(c) < 0x20; };
  if (!options.name.empty()) {
    if (std::any_of(options.name.begin(), options.name.end(), bad))
      Fail("options", "name", "'" + options.name + "' has a '/' or a control character",
           "libvirt refuses these in domain names; choose another name");
    return options.name;
  }
  std::string name = request.flavor;
  std::replace_if(name.begin(), name.end(), bad, '_');
  if (name.empty())
    Fail("request", "flavor", "is empty, so the domain has no name", "give a domain name");
  return name;
}

// "C7A5FDBD-cdaf-..." or 32 hex digits -> canonical 8-4-4-4-12 lower case.
std::string CanonicalUuid(const std::string& text) {
  std::string hex;
  for (char c : text) {
    if (c == '-') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      Fail("options", "uuid", "'" + text + "' is not a UUID", "use 32 hex digits");
    hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (hex.size() != 32)
    Fail("options", "uuid", "'" + text + "' has " + std::to_string(hex.size()) +
                                " hex digits, a UUID has 32");
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

bool IsQ35(const std::string& machine) {
  return machine == "q35" || machine.rfind("pc-q35", 0) == 0;
}

/// A host PCI address split into libvirt's <address> attributes ("0x0000", "0x41", ...).
struct PciAttrs {
  std::string domain, bus, slot, function;
};

bool IsHex(const std::string& s, size_t min_len, size_t max_len) {
  return s.size() >= min_len && s.size() <= max_len &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit((unsigned char)c); });
}

PciAttrs ParsePciAddress(const std::string& address, size_t i) {
  // dddd:bb:dd.f, domain 4-8 hex digits
  const size_t colon2 = address.rfind(':');
  const size_t colon1 = colon2 == std::string::npos ? colon2 : address.rfind(':', colon2 - 1);
  const size_t dot = address.rfind('.');
  PciAttrs a;
  if (colon1 != std::string::npos && dot != std::string::npos && dot > colon2) {
    a.domain = address.substr(0, colon1);
    a.bus = address.substr(colon1 + 1, colon2 - colon1 - 1);
    a.slot = address.substr(colon2 + 1, dot - colon2 - 1);
    a.function = address.substr(dot + 1);
  }
  if (!IsHex(a.domain, 4, 8) || !IsHex(a.bus, 2, 2) || !IsHex(a.slot, 2, 2) ||
      !IsHex(a.function, 1, 1) || std::stoi(a.slot, nullptr, 16) > 0x1f ||
      std::stoi(a.function, nullptr, 16) > 7)
    Fail("placement", "devices[" + std::to_string(i) + "].address",
         "'" + address + "' is not a PCI address", "write it as dddd:bb:dd.f, e.g. 0000:41:00.0");
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return "0x" + s;
  };
  return {lower(a.domain), lower(a.bus), lower(a.slot), lower(a.function)};
}

std::string Hex2(int v) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[(v >> 4) & 0xf] + digits[v & 0xf];
}

XmlAttrs GuestPciAddress(int bus, int slot) {
  return {{"type", "pci"}, {"domain", "0x0000"}, {"bus", Hex2(bus)}, {"slot", Hex2(slot)},
          {"function", "0x0"}};
}

// cpu_shared_set restricted to the host's CPUs; fails when nothing is left.
CpuSet SharedSetOnHost(const HostTopology& host, const CpuSet& shared) {
  const CpuSet all = host.AllCpus();
  const CpuSet usable = all.Empty() ? shared : shared.Intersect(all);
  if (usable.Empty())
    Fail("options", "cpu_shared_set",
         "'" + shared.ToString() + "' has no CPU of host " + host.hostname,
         "use the host's [compute]cpu_shared_set");
  return usable;
}

// ---------------------------------------------------------------------------------------------
// Sections, in document order.

void WriteMetadata(XmlWriter& w, const PlacementRequest& request, const Placement& placement,
                   const std::string& host_name) {
  w.Open("metadata");
  w.Open("accel:instance", {{"xmlns:accel", kAccelMetadataNamespace}});
  w.Empty("accel:flavor", {{"name", request.flavor},
                           {"vcpus", std::to_string(request.vcpus)},
                           {"memoryMiB", std::to_string(request.memory_mib)}});
  w.Empty("accel:host", {{"name", host_name}});
  w.Empty("accel:policy", {{"cpu", CpuPolicyName(request.cpu_policy)},
                           {"threads", ThreadPolicyName(request.thread_policy)},
                           {"emulator", EmulatorPolicyName(request.emulator_policy)}});
  for (const auto& [key, value] : request.extra_specs)
    w.Text("accel:extraSpec", value, {{"key", key}});
  for (const DevicePlacement& d : placement.devices)
    w.Empty("accel:device", {{"alias", d.request_alias},
                             {"address", d.address},
                             {"hostNode", std::to_string(d.numa_node)},
                             {"guestCell", std::to_string(d.guest_cell)}});
  w.Close();
  w.Close();
}

void WriteMemoryBacking(XmlWriter& w, const GuestView& view) {
  bool any = false;
  for (size_t id = 0; id < view.cells.size(); ++id) {
    const CellView& cell = view.cells[id];
    if (!UsesHugepages(view, cell)) continue;
    if (!any) {
      w.Open("memoryBacking");
      w.Open("hugepages");
      any = true;
    }
    w.Empty("page", {{"size", std::to_string(cell.placed->page_size_kib)},
                     {"unit", "KiB"},
                     {"nodeset", std::to_string(id)}});
  }
  if (any) {
    w.Close();
    w.Close();
  }
}

void WriteVcpu(XmlWriter& w, const HostTopology& host, const PlacementRequest& request,
               const GuestView& view, const DomainOptions& options) {
  XmlAttrs attrs = {{"placement", "static"}};
  // Nova: only a guest without NUMA topology gets cpuset=, and only with a shared set.
  if (view.cells.empty() && options.cpu_shared_set)
    attrs.push_back({"cpuset", SharedSetOnHost(host, *options.cpu_shared_set).ToString()});
  w.Text("vcpu", std::to_string(request.vcpus), attrs);
}

// vCPU -> the host CPUs it may run on: its pCPU when pinned, its node's shared set when not.
std::map<int, CpuSet> VcpuPins(const GuestView& view) {
  std::map<int, CpuSet> pins;
  for (const CellView& cell : view.cells) {
    for (const auto& [vcpu, pcpu] : cell.placed->pinning) pins[vcpu] = CpuSet{pcpu};
    for (int vcpu : cell.placed->shared_vcpus.ToVector()) pins[vcpu] = cell.placed->shared_cpus;
  }
  return pins;
}

// Nova's rule: isolate -> the reserved CPU(s); share with a shared set -> that set; otherwise
// every CPU a vCPU may run on.
CpuSet EmulatorCpus(const HostTopology& host, const Placement& placement,
                    const std::map<int, CpuSet>& pins, const DomainOptions& options) {
  if (!placement.emulator_cpus.Empty()) return placement.emulator_cpus;
  if (options.cpu_shared_set) return SharedSetOnHost(host, *options.cpu_shared_set);
  CpuSet all;
  for (const auto& [vcpu, cpus] : pins) all = all.Union(cpus);
  return all;
}

void WriteCputune(XmlWriter& w, const HostTopology& host, const Placement& placement,
                  const GuestView& view, const DomainOptions& options) {
  const std::map<int, CpuSet> pins = VcpuPins(view);
  w.Open("cputune");
  w.Empty("emulatorpin", {{"cpuset", EmulatorCpus(host, placement, pins, options).ToString()}});
  for (const auto& [vcpu, cpus] : pins)
    w.Empty("vcpupin", {{"vcpu", std::to_string(vcpu)}, {"cpuset", cpus.ToString()}});
  w.Close();
}

void WriteNumatune(XmlWriter& w, const GuestView& view) {
  CpuSet nodes;  // host node ids, in the same compact form as CPU lists
  for (const CellView& cell : view.cells) nodes.Add(cell.placed->host_node);
  w.Open("numatune");
  w.Empty("memory", {{"mode", "strict"}, {"nodeset", nodes.ToString()}});
  for (size_t id = 0; id < view.cells.size(); ++id)
    w.Empty("memnode", {{"cellid", std::to_string(id)},
                        {"mode", "strict"},
                        {"nodeset", std::to_string(view.cells[id].placed->host_node)}});
  w.Close();
}

void WriteOsAndFeatures(XmlWriter& w, const DomainOptions& options) {
  w.Open("os");
  w.Text("type", "hvm", {{"arch", "x86_64"}, {"machine", options.machine}});
  w.Close();
  w.Open("features");
  w.Empty("acpi");
  w.Empty("apic");
  w.Close();
}

void WriteCpu(XmlWriter& w, const PlacementRequest& request, const GuestView& view,
              const DomainOptions& options) {
  // Nova's get_best_cpu_topology (nova-numa.md §2.9). vcpus >= 1 was checked, and
  // (vcpus, 1, 1) is always a candidate without maximums.
  const GuestCpuTopology t = *BestGuestCpuTopology(request.vcpus, request.guest_topology, {});
  w.Open("cpu", {{"mode", "host-passthrough"}, {"check", "none"}, {"migratable", "off"}});
  XmlAttrs topo = {{"sockets", std::to_string(t.sockets)}};
  if (options.libvirt_major >= 8) topo.push_back({"dies", "1"});
  topo.push_back({"cores", std::to_string(t.cores)});
  topo.push_back({"threads", std::to_string(t.threads)});
  w.Empty("topology", topo);
  if (!view.cells.empty()) {
    w.Open("numa");
    for (size_t id = 0; id < view.cells.size(); ++id) {
      const CellView& cell = view.cells[id];
      XmlAttrs attrs = {{"id", std::to_string(id)},
                        {"cpus", cell.vcpus.ToString()},
                        {"memory", std::to_string(cell.placed->memory_mib * 1024)},
                        {"unit", "KiB"}};
      // Nova: so that vhost-user backends can map hugepage-backed guest memory.
      if (UsesHugepages(view, cell)) attrs.push_back({"memAccess", "shared"});
      w.Empty("cell", attrs);
    }
    w.Close();
  }
  w.Close();
}

void WriteDisk(XmlWriter& w, const std::string& image) {
  const bool qcow2 = image.size() >= 6 && image.compare(image.size() - 6, 6, ".qcow2") == 0;
  w.Open("disk", {{"type", "file"}, {"device", "disk"}});
  w.Empty("driver", {{"name", "qemu"}, {"type", qcow2 ? "qcow2" : "raw"}});
  w.Empty("source", {{"file", image}});
  w.Empty("target", {{"dev", "vda"}, {"bus", "virtio"}});
  w.Close();
}

void WriteExpanders(XmlWriter& w, const GuestPciLayout& layout) {
  if (layout.expanders.empty()) return;
  w.Empty("controller", {{"type", "pci"}, {"index", "0"}, {"model", "pcie-root"}});
  for (const ExpanderBus& bus : layout.expanders) {
    w.Open("controller",
           {{"type", "pci"}, {"index", std::to_string(bus.index)}, {"model", "pcie-expander-bus"}});
    w.Empty("model", {{"name", "pxb-pcie"}});
    w.Open("target", {{"busNr", std::to_string(bus.bus_nr)}});
    w.Text("node", std::to_string(bus.guest_cell));
    w.Close();
    w.Empty("address", GuestPciAddress(0, bus.root_slot));
    w.Close();
    for (size_t slot = 0; slot < bus.root_port_indexes.size(); ++slot) {
      w.Open("controller", {{"type", "pci"},
                            {"index", std::to_string(bus.root_port_indexes[slot])},
                            {"model", "pcie-root-port"}});
      w.Empty("address", GuestPciAddress(bus.index, static_cast<int>(slot)));
      w.Close();
    }
  }
}

void WriteHostdevs(XmlWriter& w, const Placement& placement, const GuestPciLayout& layout,
                   const DomainOptions& options) {
  for (size_t i = 0; i < placement.devices.size(); ++i) {
    const PciAttrs a = ParsePciAddress(placement.devices[i].address, i);
    w.Open("hostdev", {{"mode", "subsystem"},
                       {"type", "pci"},
                       {"managed", options.managed_hostdevs ? "yes" : "no"}});
    w.Open("source");
    w.Empty("address",
            {{"domain", a.domain}, {"bus", a.bus}, {"slot", a.slot}, {"function", a.function}});
    w.Close();
    if (layout.device_bus[i] >= 0) w.Empty("address", GuestPciAddress(layout.device_bus[i], 0));
    w.Close();
  }
}

void WriteDevices(XmlWriter& w, const Placement& placement, const GuestView& view,
                  const DomainOptions& options) {
  const bool expanders = options.pci_expander_buses && IsQ35(options.machine) && !view.cells.empty();
  const GuestPciLayout layout = expanders ? LayoutGuestPci(placement) : FlatGuestPci(placement);
  w.Open("devices");
  w.Text("emulator", options.emulator);
  if (options.disk_image) WriteDisk(w, *options.disk_image);
  WriteExpanders(w, layout);
  WriteHostdevs(w, placement, layout, options);
  w.Open("serial", {{"type", "pty"}});
  w.Empty("target", {{"port", "0"}});
  w.Close();
  w.Open("console", {{"type", "pty"}});
  w.Empty("target", {{"type", "serial"}, {"port", "0"}});
  w.Close();
  w.Close();
}

}  // namespace

std::string RenderDomainXml(const topology::HostTopology& host, const PlacementRequest& request,
                            const Placement& placement, const DomainOptions& options) {
  const GuestView view = ViewGuest(host, request, placement);
  XmlWriter w;
  w.Open("domain", {{"type", options.domain_type}});
  w.Text("name", DomainName(request, options));
  if (options.uuid) w.Text("uuid", CanonicalUuid(*options.uuid));
  WriteMetadata(w, request, placement, placement.host.empty() ? host.hostname : placement.host);
  w.Text("memory", std::to_string(view.memory_kib), {{"unit", "KiB"}});
  w.Text("currentMemory", std::to_string(view.memory_kib), {{"unit", "KiB"}});
  WriteMemoryBacking(w, view);
  WriteVcpu(w, host, request, view, options);
  if (!view.cells.empty()) {
    WriteCputune(w, host, placement, view, options);
    WriteNumatune(w, view);
  }
  WriteOsAndFeatures(w, options);
  WriteCpu(w, request, view, options);
  w.Empty("clock", {{"offset", "utc"}});
  w.Text("on_poweroff", "destroy");
  w.Text("on_reboot", "restart");
  w.Text("on_crash", "destroy");
  WriteDevices(w, placement, view, options);
  return w.Finish();
}

}  // namespace accel::placement
