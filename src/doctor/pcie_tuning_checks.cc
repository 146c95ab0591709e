// GDR-07: the PCI Express Device Control settings that pace RDMA reads and writes — Max Read
// Request Size on the RDMA NICs, Max Payload Size along every GPU-NIC path, and whether the
// NICs may use Relaxed Ordering. See docs/doctor.md.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "doctor/doctor_internal.h"
#include "common/strings.h"
#include "doctor/pci_config.h"

namespace accel::doctor {

namespace {

using topology::PciDevice;

// The standard config space (256 bytes) holds the PCI Express capability.
constexpr size_t kStandardConfigBytes = 256;
// What RDMA NICs should request per read: the largest size PCIe allows.
constexpr int kWantedReadRequest = 4096;

// One device's PCI Express registers, read once per run.
struct RegsRead {
  bool known = false;           // regs holds the device's registers
  bool needs_root = false;      // only the first 64 bytes could be read
  PcieDeviceRegs regs;
  std::string evidence;         // what to show for the config file
};

class RegsCache {
 public:
  explicit RegsCache(const Context& ctx) : ctx_(ctx) {}

  const RegsRead& Get(const PciDevice* dev) {
    auto it = cache_.find(dev);
    if (it != cache_.end()) return it->second;
    RegsRead r;
    std::string bytes;
    if (!ReadConfigSpace(ctx_, dev->address, kStandardConfigBytes, &bytes, &r.evidence)) {
      // unreadable: r.evidence says why
    } else if (IsTruncatedConfig(bytes)) {
      r.needs_root = true;
      r.evidence = std::to_string(bytes.size()) + " bytes (the PCI Express capability needs root)";
    } else if (std::optional<PcieDeviceRegs> regs = ReadPcieDevice(bytes)) {
      r.known = true;
      r.regs = *regs;
      char at[16];
      std::snprintf(at, sizeof at, "0x%02zx", regs->cap_offset);
      r.evidence = "CAP_EXP at " + std::string(at) + ", DevCtl 0x" + Hex4(regs->device_control) +
                   ": " + DevCtlText(*regs) + " (MaxPayload supported " +
                   std::to_string(regs->max_payload_supported()) + " bytes)";
    } else {
      r.evidence = "no PCI Express capability";
    }
    return cache_.emplace(dev, std::move(r)).first->second;
  }

 private:
  const Context& ctx_;
  std::map<const PciDevice*, RegsRead> cache_;
};

// GPU, the bridges on its side nearest first, the NIC's side top down, the NIC.
std::vector<const PciDevice*> PathDevices(const topology::HostTopology& host, const PciDevice* gpu,
                                          const PciDevice* nic) {
  std::vector<const PciDevice*> bridges = PathBridges(host, gpu, nic);
  std::set<const PciDevice*> gpu_side;
  for (const PciDevice* d = host.FindPci(gpu->parent); d != nullptr && gpu_side.size() <= host.pci.size();
       d = d->parent.empty() ? nullptr : host.FindPci(d->parent))
    gpu_side.insert(d);
  std::vector<const PciDevice*> up, down;
  for (const PciDevice* b : bridges) (gpu_side.count(b) ? up : down).push_back(b);
  std::vector<const PciDevice*> path = {gpu};
  path.insert(path.end(), up.begin(), up.end());
  path.insert(path.end(), down.rbegin(), down.rend());
  path.push_back(nic);
  return path;
}

std::string Short(const PciDevice& dev) {
  return dev.rdma_devices.empty() ? dev.address : dev.address + " (" + dev.rdma_devices.front() + ")";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Finding CheckGdr07PcieTuning(const Context& ctx) {
  const char* id = "GDR-07";
  const char* title = "PCIe MaxReadReq, MaxPayload, relaxed ordering";
  if (ctx.rdma_pfs.empty())
    return MakeFinding(id, title, Severity::kNotApplicable, "no RDMA NIC");
  RegsCache cache(ctx);
  std::vector<Evidence> evidence;
  std::vector<std::string> unknown, low_mrrs, ro_off, mismatched;
  std::string mrrs_fix, ro_fix;
  bool needs_root = false;
  int nics_known = 0;
  for (const PciDevice* nic : ctx.rdma_pfs) {
    const RegsRead& r = cache.Get(nic);
    evidence.push_back({PciAttr(nic->address, "config"),
                        r.evidence + (nic->rdma_devices.empty() ? "" : " [" + nic->rdma_devices.front() + "]")});
    needs_root |= r.needs_root;
    if (!r.known) {
      if (r.evidence != "no PCI Express capability") unknown.push_back(nic->address);
      continue;
    }
    ++nics_known;
    // Each setpci line starts from what the line before it leaves, so both can be applied.
    uint16_t ctrl = r.regs.device_control;
    int mrrs = r.regs.max_read_request();
    if (mrrs != kWantedReadRequest) {
      low_mrrs.push_back(Short(*nic) + " " +
                         (mrrs > 0 ? std::to_string(mrrs) + " bytes" : std::string("reserved")));
      uint16_t fixed = WithMaxReadRequest(ctrl, kWantedReadRequest);
      mrrs_fix += "setpci -s " + nic->address + " CAP_EXP+8.w=" + Hex4(fixed) + "   # was " +
                  Hex4(ctrl) + "\n";
      ctrl = fixed;
    }
    if (!r.regs.relaxed_ordering()) {
      ro_off.push_back(Short(*nic));
      ro_fix += "setpci -s " + nic->address + " CAP_EXP+8.w=" + Hex4(ctrl | kDevCtlRelaxedOrdering) +
                "   # was " + Hex4(ctrl) + "\n";
    }
  }

  // Max Payload Size along each GPU-NIC path the pairing chose.
  int paths_checked = 0;
  std::set<int> path_mps;
  for (const fabric::GpuNicPair& pair : ctx.fabric.pairs) {
    if (pair.nic < 0) continue;
    const PciDevice* gpu = ctx.host->FindPci(pair.gpu_address);
    const PciDevice* nic = ctx.host->FindPci(ctx.fabric.nics[pair.nic].pci_address);
    if (gpu == nullptr || nic == nullptr) continue;
    std::vector<std::string> parts;
    std::set<int> sizes;
    bool complete = true;
    for (const PciDevice* d : PathDevices(*ctx.host, gpu, nic)) {
      const RegsRead& r = cache.Get(d);
      needs_root |= r.needs_root;
      if (!r.known) {
        complete = false;
        parts.push_back(d->address + " ?");
        if (d->role != topology::PciRole::kNic && r.evidence != "no PCI Express capability")
          evidence.push_back({PciAttr(d->address, "config"), r.evidence});
        continue;
      }
      sizes.insert(r.regs.max_payload());
      parts.push_back(d->address + " " + std::to_string(r.regs.max_payload()));
    }
    std::string path_name = "GPU " + gpu->address + " - " + Short(*nic);
    if (sizes.size() > 1) {
      mismatched.push_back(path_name + " (" + JoinList(parts, 8) + ")");
    } else if (complete && sizes.size() == 1) {
      ++paths_checked;
      path_mps.insert(*sizes.begin());
    }
    evidence.push_back({PciAttr(gpu->address, "config"),
                        "MaxPayload on the path to " + Short(*nic) + ": " + JoinList(parts, 8)});
  }

  // pci=pcie_bus_perf sizes MPS per link and caps MRRS at MPS on purpose.
  bool bus_perf = false;
  for (const std::string& pci : ctx.cmdline.All("pci"))
    bus_perf |= pci.find("pcie_bus_perf") != std::string::npos;

  Severity sev = Severity::kOk;
  std::vector<std::string> problems;
  std::string fix;
  if (!low_mrrs.empty()) {
    sev = std::max(sev, Severity::kWarn);
    problems.push_back("MaxReadReq below " + std::to_string(kWantedReadRequest) +
                       " bytes on RDMA NICs " + JoinList(low_mrrs, 6) +
                       ": RDMA reads (GPUDirect sends, RDMA READ) need more round trips" +
                       (bus_perf ? " (pci=pcie_bus_perf caps MaxReadReq at MaxPayload)" : ""));
    fix += mrrs_fix +
           "# setpci lasts until reboot or device reset; keep it with the BIOS PCIe setting\n"
           "# \"Max Read Request Size\" = 4096 (or Auto), or run these lines at boot (a systemd oneshot)\n";
    if (bus_perf) fix += "# and drop pci=pcie_bus_perf from the kernel command line\n";
  }
  if (!mismatched.empty()) {
    sev = std::max(sev, bus_perf ? Severity::kInfo : Severity::kWarn);
    problems.push_back("MaxPayload differs along " + std::to_string(mismatched.size()) +
                       (mismatched.size() == 1 ? " GPU-NIC path: " : " GPU-NIC paths: ") +
                       JoinList(mismatched, 3) +
                       (bus_perf ? " (expected with pci=pcie_bus_perf)"
                                 : "; peer-to-peer writes are cut to the smallest size or, above "
                                   "a receiver's limit, rejected as malformed"));
    if (!bus_perf)
      fix += "MaxPayload: let firmware and kernel agree: BIOS \"Max Payload Size\" = Auto, or the "
             "kernel command line pci=pcie_bus_safe (reboot); setting MPS by hand must cover the "
             "whole hierarchy, upstream first\n";
  }
  std::vector<std::string> notes;
  if (!ro_off.empty()) {
    sev = std::max(sev, Severity::kInfo);
    notes.push_back("relaxed ordering off on " + JoinList(ro_off, 6) +
                    ": NCCL_IB_PCI_RELAXED_ORDERING (default 2 = when available) has no effect, "
                    "which costs bandwidth where the root complex or a VM's IOMMU orders strictly");
    fix += ro_fix +
           "# or enable \"Relaxed Ordering\" in the BIOS; the kernel keeps it off below root ports\n"
           "# known to mishandle it, then leave it. NIC firmware: mlxconfig -d <BDF> q PCI_WR_ORDERING\n"
           "# should show per_mkey (not force_relax)\n";
  }
  if (!unknown.empty() || needs_root) {
    sev = std::max(sev, Severity::kInfo);
    notes.push_back(needs_root ? "config space past 64 bytes is root-only: run as root to see the "
                                 "PCI Express settings"
                               : "could not read the config space of " + JoinList(unknown, 6));
    if (needs_root) fix += "sudo accel doctor   # reads the PCI Express capability\n";
  }
  if (ctx.vm_guest && sev > Severity::kInfo) {
    sev = Severity::kInfo;  // vfio virtualizes these fields: the host's values are what count
    notes.push_back("a VM guest sees virtualized Device Control values: check on the hypervisor");
  }

  Finding f;
  if (problems.empty() && notes.empty()) {
    std::string mps = path_mps.size() == 1 ? " (" + std::to_string(*path_mps.begin()) + " bytes)" : "";
    f = MakeFinding(id, title, Severity::kOk,
                    nics_known == 0
                        ? "no RDMA NIC has a PCI Express capability"
                        : "MaxReadReq " + std::to_string(kWantedReadRequest) + " bytes on " +
                              std::to_string(nics_known) + " RDMA NICs, relaxed ordering on" +
                              (paths_checked > 0 ? "; MaxPayload equal along " +
                                                       std::to_string(paths_checked) +
                                                       " GPU-NIC paths" + mps
                                                 : std::string()));
  } else {
    std::vector<std::string> all = problems;
    all.insert(all.end(), notes.begin(), notes.end());
    f = ProblemFinding(id, title, sev, all, fix);
  }
  f.needs_root = needs_root;
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace accel::doctor
