// Checks of individual PCI devices and the bridges between them: GDR-04 (ACS), GDR-05 (link
// training), GDR-08 (BAR1), HOST-08 (NUMA locality), HOST-09 (driver binding, persistence),
// HOST-11 (SR-IOV). See docs/doctor.md for each rule.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "devices/nvml_links.h"
#include "common/strings.h"
#include "doctor/doctor_internal.h"
#include "doctor/pci_config.h"
#include "placement/flavor.h"

namespace accel::doctor {

namespace {

using topology::PciDevice;
using topology::PciRole;

// The device and its ancestors up to (and including) its host bridge, nearest first.
std::vector<const PciDevice*> Chain(const topology::HostTopology& host, const PciDevice* dev) {
  std::vector<const PciDevice*> chain;
  while (dev != nullptr && chain.size() <= host.pci.size()) {
    chain.push_back(dev);
    dev = dev->parent.empty() ? nullptr : host.FindPci(dev->parent);
  }
  return chain;
}

// "32.0 GT/s PCIe" → 32; 0 when unknown.
double LinkSpeed(const FileValue& v) {
  if (!v.ok) return 0;
  return std::strtod(v.value.c_str(), nullptr);
}

int LinkWidth(const FileValue& v) {
  if (!v.ok) return 0;
  return std::atoi(v.value.c_str());
}

std::string GenName(double gts) {
  if (gts >= 60) return "Gen6";
  if (gts >= 30) return "Gen5";
  if (gts >= 15) return "Gen4";
  if (gts >= 7) return "Gen3";
  if (gts >= 4) return "Gen2";
  if (gts > 0) return "Gen1";
  return "?";
}

}  // namespace

// Bridges a peer-to-peer transfer between `a` and `b` passes through, below their lowest
// common ancestor (whose own downstream routing is what the ingress ports' ACS controls).
std::vector<const PciDevice*> PathBridges(const topology::HostTopology& host, const PciDevice* a,
                                          const PciDevice* b) {
  std::vector<const PciDevice*> ca = Chain(host, a), cb = Chain(host, b);
  std::set<const PciDevice*> in_b(cb.begin(), cb.end());
  const PciDevice* lca = nullptr;
  for (const PciDevice* d : ca)
    if (in_b.count(d)) {
      lca = d;
      break;
    }
  std::vector<const PciDevice*> bridges;
  for (const auto* chain : {&ca, &cb})
    for (const PciDevice* d : *chain) {
      if (d == lca) break;
      if (d->role == PciRole::kBridge) bridges.push_back(d);
    }
  return bridges;
}

bool ReadConfigSpace(const Context& ctx, const std::string& address, size_t max_bytes,
                     std::string* bytes, std::string* evidence_value) {
  std::string why;
  if (!ReadBytes(ctx.root, PciAttr(address, "config"), max_bytes, bytes, &why)) {
    *evidence_value = why == "missing" ? "(missing)" : "(unreadable: " + why + ")";
    return false;
  }
  // What the kernel would hand an unprivileged reader.
  if (!ctx.privileged && bytes->size() > kUnprivilegedConfigBytes)
    bytes->resize(kUnprivilegedConfigBytes);
  return true;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr04Acs(const Context& ctx) {
  const char* id = "GDR-04";
  const char* title = "PCIe ACS on GPU-NIC paths";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  if (ctx.vm_guest)
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "a VM guest's bridges are emulated: ACS matters on the hypervisor (run "
                       "accel doctor --role hypervisor there)");
  // Bridges on the path of every GPU to the NIC it is paired with.
  std::vector<const PciDevice*> bridges;
  std::set<const PciDevice*> seen;
  for (const fabric::GpuNicPair& pair : ctx.fabric.pairs) {
    if (pair.nic < 0) continue;
    const PciDevice* gpu = ctx.host->FindPci(pair.gpu_address);
    const PciDevice* nic = ctx.host->FindPci(ctx.fabric.nics[pair.nic].pci_address);
    if (gpu == nullptr || nic == nullptr) continue;
    for (const PciDevice* b : PathBridges(*ctx.host, gpu, nic))
      if (seen.insert(b).second) bridges.push_back(b);
  }
  if (bridges.empty())
    return MakeFinding(id, title, Severity::kNotApplicable,
                       "no GPU-NIC pair with a PCIe bridge between them");
  std::sort(bridges.begin(), bridges.end(),
            [](const PciDevice* a, const PciDevice* b) { return a->address < b->address; });

  std::vector<Evidence> evidence;
  std::vector<const PciDevice*> redirect;
  std::map<const PciDevice*, uint16_t> control;
  std::vector<std::string> unknown;
  for (const PciDevice* b : bridges) {
    std::string path = PciAttr(b->address, "config");
    std::string bytes, unread;
    if (!ReadConfigSpace(ctx, b->address, kExtendedConfigSize, &bytes, &unread)) {
      evidence.push_back({path, unread});
      unknown.push_back(b->address);
      continue;
    }
    if (IsTruncatedConfig(bytes)) {
      evidence.push_back({path, std::to_string(bytes.size()) +
                                    " bytes (extended config space needs root)"});
      unknown.push_back(b->address);
      continue;
    }
    std::optional<uint16_t> ctrl = ReadAcsControl(bytes);
    if (!ctrl) {
      evidence.push_back({path, "no ACS capability"});
      continue;
    }
    control[b] = *ctrl;
    evidence.push_back({path, "ECAP_ACS+0x6 = 0x" + Hex4(*ctrl) + " (" + AcsBitNames(*ctrl) + ")"});
    if (*ctrl & kAcsRedirectBits) redirect.push_back(b);
  }
  Finding f;
  std::vector<std::string> names;
  for (const PciDevice* b : redirect) names.push_back(b->address);
  if (ctx.hypervisor()) {
    if (!redirect.empty()) {
      f = MakeFinding(id, title, Severity::kInfo,
                      "ACS redirect on " + std::to_string(redirect.size()) + " of " +
                          std::to_string(bridges.size()) +
                          " bridges on GPU-NIC paths: expected on a hypervisor (it keeps IOMMU "
                          "groups apart), but GPUDirect RDMA inside guests then goes through the "
                          "root complex unless the NICs use ATS");
      std::string fix =
          "keep ACS; for GPUDirect RDMA in guests enable ATS on each NIC and let translated\n"
          "requests go direct on these bridges (ACS Direct Translated P2P, bit 6):\n"
          "mlxconfig -d <nic BDF> set ATS_ENABLED=true   # then reboot the host\n";
      for (const PciDevice* b : redirect)
        fix += "setpci -s " + b->address + " ECAP_ACS+0x6.w=" + Hex4(control[b] | kAcsDt) + "\n";
      fix.pop_back();
      f.fix = fix;
    } else if (!unknown.empty() && control.empty()) {
      f = MakeFinding(id, title, Severity::kInfo,
                      "could not read ACS of " + std::to_string(unknown.size()) + " bridges");
      f.needs_root = true;
    } else {
      f = MakeFinding(id, title, Severity::kInfo,
                      "no ACS redirect on GPU-NIC paths: a GPU and the NIC beside it may share an "
                      "IOMMU group and can only be passed to the same guest");
    }
  } else if (!redirect.empty()) {
    f = MakeFinding(id, title, Severity::kFail,
                    "ACS redirects peer-to-peer traffic to the root complex on " +
                        JoinList(names, 6) +
                        ": GPUDirect RDMA between GPUs and their NICs is slow or hangs");
    std::string fix;
    for (const PciDevice* b : redirect)
      fix += "setpci -s " + b->address + " ECAP_ACS+0x6.w=0000   # until reboot\n";
    std::string list;
    for (const PciDevice* b : redirect) list += (list.empty() ? "" : ";") + b->address;
    fix += "persistent (kernel >= 5.1): add to the kernel command line pci=disable_acs_redir=" + list +
           "\nor disable ACS in the BIOS (PCIe ACS control / VT-d)";
    f.fix = fix;
  } else if (!unknown.empty()) {
    f = MakeFinding(id, title, Severity::kInfo,
                    "could not read the ACS control of " + std::to_string(unknown.size()) + " of " +
                        std::to_string(bridges.size()) + " bridges on GPU-NIC paths" +
                        (control.empty() ? "" : "; the others have no redirect"));
    f.needs_root = true;
    f.fix = "run as root (sudo accel doctor): config space past 64 bytes is root-only";
  } else {
    f = MakeFinding(id, title, Severity::kOk,
                    "no ACS redirect on the " + std::to_string(bridges.size()) +
                        " bridges between GPUs and their NICs");
  }
  if (!unknown.empty()) f.needs_root = true;
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr05PcieLinks(const Context& ctx) {
  const char* id = "GDR-05";
  const char* title = "PCIe link speed and width";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  // Links to check: each accelerator's and RDMA function's own link, and each switch upstream
  // port's link above them. A link is reported by the device below it; what it should run at is
  // the lower of the two ends' maximum (NCCL reads the same pair of files).
  std::vector<const PciDevice*> endpoints = ctx.accelerators;
  endpoints.insert(endpoints.end(), ctx.rdma_pfs.begin(), ctx.rdma_pfs.end());
  std::vector<const PciDevice*> below;  // devices whose upstream link is checked
  std::set<const PciDevice*> seen;
  for (const PciDevice* e : endpoints) {
    std::vector<const PciDevice*> chain = Chain(*ctx.host, e);
    // chain: e, parent, ..., host bridge. A bridge right under the host bridge is a root port;
    // below it, bridges alternate: switch upstream port, downstream port, upstream port, ...
    int n = static_cast<int>(chain.size());
    for (int i = 0; i < n; ++i) {
      const PciDevice* d = chain[i];
      if (d->role == PciRole::kHostBridge) break;
      int depth = n - 1 - i;  // 1 = root port or device on the host bridge
      bool upstream_port = d->role == PciRole::kBridge && depth >= 2 && depth % 2 == 0;
      if ((i == 0 || upstream_port) && seen.insert(d).second) below.push_back(d);
    }
  }
  std::vector<Evidence> evidence;
  std::vector<std::string> width_low, speed_low, idle_speed;
  int checked = 0;
  for (const PciDevice* d : below) {
    const PciDevice* parent = d->parent.empty() ? nullptr : ctx.host->FindPci(d->parent);
    FileValue cs = ReadFile(ctx.root, PciAttr(d->address, "current_link_speed"));
    FileValue cw = ReadFile(ctx.root, PciAttr(d->address, "current_link_width"));
    FileValue ms = ReadFile(ctx.root, PciAttr(d->address, "max_link_speed"));
    FileValue mw = ReadFile(ctx.root, PciAttr(d->address, "max_link_width"));
    double cur_s = LinkSpeed(cs), max_s = LinkSpeed(ms);
    int cur_w = LinkWidth(cw), max_w = LinkWidth(mw);
    if (parent != nullptr && parent->role == PciRole::kBridge) {
      double ps = LinkSpeed(ReadFile(ctx.root, PciAttr(parent->address, "max_link_speed")));
      int pw = LinkWidth(ReadFile(ctx.root, PciAttr(parent->address, "max_link_width")));
      if (ps > 0 && ps < max_s) max_s = ps;
      if (pw > 0 && pw < max_w) max_w = pw;
    }
    if (cur_s <= 0 || max_s <= 0 || cur_w <= 0 || max_w <= 0) continue;  // "Unknown" or absent
    ++checked;
    char now[48], best[48];
    std::snprintf(now, sizeof now, "%s x%d", GenName(cur_s).c_str(), cur_w);
    std::snprintf(best, sizeof best, "%s x%d", GenName(max_s).c_str(), max_w);
    std::string label = DeviceLabel(*d) + " " + now + " (can " + best + ")";
    bool low_w = cur_w < max_w, low_s = cur_s + 0.01 < max_s;
    if (!low_w && !low_s) continue;
    evidence.push_back(cs.ToEvidence());
    evidence.push_back(ms.ToEvidence());
    evidence.push_back(cw.ToEvidence());
    evidence.push_back(mw.ToEvidence());
    if (low_w) {
      width_low.push_back(label);
    } else if (d->is_accelerator()) {
      // GPUs lower their link speed when idle to save power; only the width is a fault then.
      idle_speed.push_back(label);
    } else {
      speed_low.push_back(label);
    }
  }
  if (checked == 0) {
    Finding f = MakeFinding(id, title, Severity::kNotApplicable,
                            "no PCIe link speeds readable for the accelerators and NICs");
    f.evidence = {ReadFile(ctx.root, PciAttr(ctx.accelerators.front()->address, "current_link_speed"))
                      .ToEvidence()};
    return f;
  }
  Finding f;
  std::vector<std::string> bad = width_low;
  bad.insert(bad.end(), speed_low.begin(), speed_low.end());
  if (!bad.empty()) {
    f = MakeFinding(id, title, ctx.vm_guest ? Severity::kInfo : Severity::kWarn,
                    std::to_string(bad.size()) + " downtrained link" + (bad.size() > 1 ? "s" : "") +
                        ": " + JoinList(bad, 4) +
                        (ctx.vm_guest ? " (a VM guest's emulated bridges report arbitrary "
                                        "speeds; NCCL needs a topology file: accel fabric topo-xml)"
                                      : ""));
    f.fix =
        "reseat the card, riser or cable; check the slot's BIOS link speed (Auto) and bifurcation;\n"
        "compare: lspci -vv -s <BDF> | grep -E 'LnkCap|LnkSta'";
  } else if (!idle_speed.empty()) {
    f = MakeFinding(id, title, Severity::kInfo,
                    std::to_string(idle_speed.size()) +
                        " accelerator links below their top speed at full width: " +
                        JoinList(idle_speed, 4) +
                        " (GPUs slow their link when idle; re-check under load)");
    f.fix = "under load: nvidia-smi -q -d PCIE (Link Gen Current vs Max), or rocm-smi --showbus";
  } else {
    f = MakeFinding(id, title, Severity::kOk,
                    std::to_string(checked) + " links at their full speed and width");
  }
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckGdr08Bar1(const Context& ctx) {
  const char* id = "GDR-08";
  const char* title = "GPU BAR1 size";
  if (ctx.nvidia_gpus.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no NVIDIA GPU");
  constexpr unsigned long long kMem = 0x200, kPrefetch = 0x2000, kMem64 = 0x100000;
  constexpr unsigned long long kSmall = 256ull << 20;
  std::vector<Evidence> evidence;
  std::vector<std::string> small, small_consumer, unknown;
  std::map<std::string, int> sizes;
  for (const PciDevice* gpu : ctx.nvidia_gpus) {
    FileValue res = ReadFile(ctx.root, PciAttr(gpu->address, "resource"));
    unsigned long long best = 0, best_flags = 0;
    if (res.ok) {
      std::istringstream lines(res.value);
      std::string line;
      for (int bar = 0; bar < 6 && std::getline(lines, line); ++bar) {
        unsigned long long start = 0, end = 0, flags = 0;
        if (std::sscanf(line.c_str(), "%llx %llx %llx", &start, &end, &flags) != 3) continue;
        if (end <= start || !(flags & kMem) || !(flags & kPrefetch)) continue;
        if (end - start + 1 > best) {
          best = end - start + 1;
          best_flags = flags;
        }
      }
    }
    if (best == 0) {
      evidence.push_back({res.path, res.ok ? "no prefetchable memory BAR" : res.value});
      unknown.push_back(gpu->address);
      continue;
    }
    std::string size = SizeText(best);
    evidence.push_back({res.path, "largest prefetchable BAR " + size +
                                      ((best_flags & kMem64) ? " (64-bit)" : " (32-bit)")});
    sizes[size]++;
    bool data_center = gpu->class_id == 0x0302;  // 3D controller; GeForce/RTX are VGA (0300)
    if (best <= kSmall) (data_center ? small : small_consumer).push_back(gpu->address + " " + size);
  }
  Finding f;
  if (!small.empty()) {
    f = MakeFinding(id, title, Severity::kWarn,
                    "small BAR1 on data-center GPUs: " + JoinList(small, 4) +
                        "; GPUDirect RDMA registrations map GPU memory through BAR1 and run out");
    f.fix =
        "BIOS: enable Above 4G Decoding and Resizable BAR (and a large MMIO high size); reboot\n"
        "in a VM: enlarge the guest's 64-bit MMIO window (QEMU: -global "
        "q35-pcihost.pci-hole64-size=2048G; OVMF: -fw_cfg name=opt/ovmf/X-PciMmio64Mb,string=2097152)";
    f.needs_reboot = true;
  } else if (!small_consumer.empty() || !unknown.empty()) {
    std::string s;
    if (!small_consumer.empty()) s = "small BAR1 on non-data-center GPUs: " + JoinList(small_consumer, 4);
    if (!unknown.empty())
      s += (s.empty() ? "" : "; ") + std::string("BAR1 unknown for ") + JoinList(unknown, 4);
    f = MakeFinding(id, title, Severity::kInfo, s);
  } else {
    std::vector<std::string> parts;
    for (const auto& [size, n] : sizes) parts.push_back(std::to_string(n) + " x " + size);
    f = MakeFinding(id, title, Severity::kOk, "BAR1: " + JoinList(parts));
  }
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost08NumaLocality(const Context& ctx) {
  const char* id = "HOST-08";
  const char* title = "device NUMA locality";
  if (ctx.accelerators.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no accelerators");
  std::vector<const PciDevice*> devices = ctx.accelerators;
  devices.insert(devices.end(), ctx.rdma_pfs.begin(), ctx.rdma_pfs.end());
  std::vector<Evidence> evidence;
  std::vector<std::string> unknown;
  std::map<std::string, int> node_of;
  for (const PciDevice* d : devices) {
    FileValue v = ReadFile(ctx.root, PciAttr(d->address, "numa_node"));
    evidence.push_back(v.ToEvidence());
    std::optional<long long> n = ParseNumber(v.value);
    int node = v.ok && n ? static_cast<int>(*n) : d->numa_node;
    node_of[d->address] = node;
    if (node < 0) unknown.push_back(DeviceLabel(*d));
  }
  // GPU and its paired NIC on different nodes: every byte crosses the socket link.
  std::vector<std::string> split;
  for (const fabric::GpuNicPair& pair : ctx.fabric.pairs) {
    if (pair.nic < 0) continue;
    const std::string& nic = ctx.fabric.nics[pair.nic].pci_address;
    int a = node_of.count(pair.gpu_address) ? node_of[pair.gpu_address] : -1;
    int b = node_of.count(nic) ? node_of[nic] : -1;
    if (a >= 0 && b >= 0 && a != b)
      split.push_back(pair.gpu_address + " (node " + std::to_string(a) + ") - " +
                      ctx.fabric.nics[pair.nic].rdma_device + " (node " + std::to_string(b) + ")");
  }
  Finding f;
  if (!unknown.empty() && ctx.vm_guest) {
    f = MakeFinding(id, title, Severity::kInfo,
                    "VM guest: " + std::to_string(unknown.size()) +
                        " devices have no NUMA node (numa_node -1), so NCCL cannot see which CPU "
                        "and NIC are near each GPU");
    f.fix =
        "on the hypervisor: accel fabric topo-xml for this guest, installed in the guest as\n"
        "/var/run/nvidia-topologyd/virtualTopology.xml (or NCCL_TOPO_FILE); better still, give the\n"
        "guest vNUMA with pxb-pcie expander bridges carrying numa_node";
    for (const Evidence& e : ctx.vm_evidence) f.evidence.push_back(e);
  } else if (!unknown.empty() && ctx.multi_node()) {
    f = MakeFinding(id, title, Severity::kWarn,
                    std::to_string(unknown.size()) + " devices without a NUMA node on a " +
                        std::to_string(ctx.host->numa_nodes.size()) + "-node host: " +
                        JoinList(unknown, 4) +
                        "; placement and NCCL treat them as far from every CPU");
    f.fix =
        "the firmware gives no proximity (_PXM) for these slots: update the BIOS, check its NUMA / "
        "NPS / SNC and ACPI SRAT settings;\nworkaround until reboot: echo <node> > "
        "/sys/bus/pci/devices/<BDF>/numa_node (taints the kernel)";
  } else if (!split.empty()) {
    f = MakeFinding(id, title, Severity::kWarn,
                    "GPUs paired with a NIC on another NUMA node: " + JoinList(split, 4));
    f.fix = "move the NIC (or GPU) to a slot of the same socket/NUMA node";
  } else {
    f = MakeFinding(id, title, Severity::kOk,
                    std::to_string(devices.size()) + " accelerators and RDMA NICs have a NUMA node" +
                        (ctx.fabric.pairs.empty() ? "" : "; every GPU shares it with its NIC"));
  }
  f.evidence.insert(f.evidence.end(), evidence.begin(), evidence.end());
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost09Persistence(const Context& ctx) {
  const char* id = "HOST-09";
  const char* title = "GPU driver binding and persistence";
  if (ctx.nvidia_gpus.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no NVIDIA GPU");
  std::map<std::string, std::vector<std::string>> by_driver;
  std::vector<Evidence> evidence;
  for (const PciDevice* gpu : ctx.nvidia_gpus) {
    std::string drv = LinkBaseName(ctx.root, PciAttr(gpu->address, "driver"));
    evidence.push_back({PciAttr(gpu->address, "driver"), drv.empty() ? "(none bound)" : drv});
    by_driver[drv.empty() ? "none" : drv].push_back(gpu->address);
  }
  auto count = [&](const std::string& d) {
    return by_driver.count(d) ? by_driver[d].size() : size_t{0};
  };
  const size_t total = ctx.nvidia_gpus.size();
  Finding f;
  if (ctx.hypervisor()) {
    if (count("vfio-pci") == total) {
      f = MakeFinding(id, title, Severity::kOk,
                      std::to_string(total) +
                          " GPUs bound to vfio-pci for passthrough (persistence is the guest's)");
    } else {
      std::vector<std::string> others;
      for (const auto& [drv, list] : by_driver)
        if (drv != "vfio-pci") others.push_back(std::to_string(list.size()) + " on " + drv);
      f = MakeFinding(id, title, Severity::kInfo,
                      "not every GPU is bound to vfio-pci (" + JoinList(others) +
                          "): those cannot be passed to guests (fine for a vGPU host)");
      f.fix =
          "bind for passthrough: driverctl set-override <BDF> vfio-pci (persistent), or\n"
          "options vfio-pci ids=10de:<device> in /etc/modprobe.d/vfio.conf and rebuild the initramfs";
    }
    f.evidence = std::move(evidence);
    return f;
  }
  if (count("nvidia") == total) {
    std::vector<std::string> sockets = {"/var/run/nvidia-persistenced/socket",
                                        "/run/nvidia-persistenced/socket"};
    if (ctx.options->role == Role::kK8sNode)  // GPU Operator's driver container root
      sockets.push_back("/run/nvidia/driver/var/run/nvidia-persistenced/socket");
    bool running = false;
    for (const std::string& s : sockets) {
      bool exists = PathExists(ctx.root, s);
      running |= exists;
      evidence.push_back({s, exists ? "(present)" : "(missing)"});
    }
    // Without the daemon, persistence mode may still be on (nvidia-smi -pm 1): only NVML knows.
    int legacy_on = 0;
    if (!running) {
      std::string library = ctx.options->nvml_library;
      if (library.empty() && ctx.root == "/") library = "libnvidia-ml.so.1";
      std::vector<std::string> addresses;
      for (const PciDevice* d : ctx.accelerators) addresses.push_back(d->address);
      std::vector<int> modes = devices::ReadNvmlPersistenceModes(library, addresses);
      for (size_t i = 0; i < modes.size(); ++i) legacy_on += modes[i] == 1;
      if (!library.empty()) {
        evidence.push_back({"nvmlDeviceGetPersistenceMode",
                            std::to_string(legacy_on) + " of " + std::to_string(modes.size()) +
                                " GPUs on"});
      }
    }
    if (running) {
      f = MakeFinding(id, title, Severity::kOk,
                      std::to_string(total) + " GPUs on the nvidia driver; nvidia-persistenced runs");
    } else if (legacy_on > 0 && static_cast<size_t>(legacy_on) == ctx.accelerators.size()) {
      f = MakeFinding(id, title, Severity::kInfo,
                      "persistence mode is on (nvidia-smi -pm 1) but nvidia-persistenced does not "
                      "run: it is lost when the driver reloads");
      f.fix = "systemctl enable --now nvidia-persistenced   # preferred over nvidia-smi -pm 1";
    } else {
      f = MakeFinding(id, title, Severity::kWarn,
                      "nvidia-persistenced is not running: the driver tears GPU state down when "
                      "the last client exits (slow job start, settings lost)");
      f.fix = "systemctl enable --now nvidia-persistenced   # preferred over nvidia-smi -pm 1";
    }
  } else {
    std::vector<std::string> others;
    for (const auto& [drv, list] : by_driver)
      if (drv != "nvidia") others.push_back(JoinList(list, 3) + " on " + drv);
    bool nouveau = count("nouveau") > 0;
    f = MakeFinding(id, title, nouveau ? Severity::kFail : Severity::kWarn,
                    "GPUs not on the nvidia driver: " + JoinList(others, 4) +
                        "; CUDA cannot use them");
    f.fix = nouveau ? "blacklist nouveau (echo 'blacklist nouveau' > "
                      "/etc/modprobe.d/blacklist-nouveau.conf; rebuild the initramfs), install the "
                      "NVIDIA driver; reboot"
                    : "load the NVIDIA driver (modprobe nvidia), or unbind vfio-pci: driverctl "
                      "unset-override <BDF>";
    f.needs_reboot = nouveau;
  }
  f.evidence = std::move(evidence);
  return f;
}

// ---------------------------------------------------------------------------------------------
Finding CheckHost11Sriov(const Context& ctx) {
  const char* id = "HOST-11";
  const char* title = "SR-IOV virtual functions";
  std::vector<std::string> compute = ctx.ComputeNicAddresses();
  std::set<std::string> compute_set(compute.begin(), compute.end());
  std::vector<Evidence> evidence;
  std::vector<std::string> without, with;
  int capable = 0;
  for (const PciDevice& d : ctx.host->pci) {
    if (d.role != PciRole::kNic || d.is_vf()) continue;
    FileValue total = ReadFile(ctx.root, PciAttr(d.address, "sriov_totalvfs"));
    if (!total.ok) continue;
    std::optional<long long> t = ParseNumber(total.value);
    if (!t || *t <= 0) continue;
    ++capable;
    FileValue num = ReadFile(ctx.root, PciAttr(d.address, "sriov_numvfs"));
    evidence.push_back(total.ToEvidence());
    evidence.push_back(num.ToEvidence());
    std::optional<long long> n = ParseNumber(num.value);
    std::string label = DeviceLabel(d);
    bool is_compute = compute_set.empty() || compute_set.count(d.address);
    if (n && *n > 0) {
      with.push_back(label + " " + std::to_string(*n) + "/" + std::to_string(*t));
    } else if (is_compute) {
      without.push_back(label);
    }
  }
  if (capable == 0)
    return MakeFinding(id, title, Severity::kNotApplicable, "no SR-IOV capable NIC");
  // Do the flavors ask for VFs? Only then is a missing VF a problem on a hypervisor.
  bool flavors_want_vfs = ctx.options->flavors.empty();
  if (!ctx.options->flavors.empty()) {
    for (const placement::Flavor& fl : ctx.options->flavors) {
      try {
        placement::PlacementRequest req = placement::BuildRequest(fl, ctx.options->aliases, fl.name);
        for (const placement::PciRequest& p : req.pci)
          for (const placement::PciSpec& s : p.specs) flavors_want_vfs |= s.device_type == "type-VF";
      } catch (const std::exception&) {
        // CheckDoctorOptions reports bad flavors; here they simply ask for nothing
      }
    }
  }
  Finding f;
  if (without.empty()) {
    f = MakeFinding(id, title, Severity::kOk,
                    with.empty() ? "no compute NIC lacks VFs"
                                 : "VFs enabled: " + JoinList(with, 4));
  } else if (ctx.options->role == Role::kBareMetal) {
    f = MakeFinding(id, title, Severity::kOk,
                    std::to_string(without.size()) +
                        " SR-IOV capable compute NICs use no VFs (not needed on bare metal)");
  } else {
    Severity sev = ctx.hypervisor() && flavors_want_vfs ? Severity::kWarn : Severity::kInfo;
    std::string why = ctx.hypervisor()
                          ? "guests cannot get an RDMA VF of them"
                          : "the SR-IOV network device plugin has nothing to offer (the shared "
                            "RDMA device plugin does not need VFs)";
    f = MakeFinding(id, title, sev,
                    "compute NICs with SR-IOV but no VFs: " + JoinList(without, 4) + "; " + why);
    f.fix =
        "echo <N> > /sys/bus/pci/devices/<PF>/sriov_numvfs   # now; persist with a udev rule, a "
        "systemd unit, or the SR-IOV network operator (SriovNetworkNodePolicy)\n"
        "firmware, once: mlxconfig -d <PF> set SRIOV_EN=1 NUM_OF_VFS=<N>; reboot";
  }
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace accel::doctor
