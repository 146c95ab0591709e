#include "cli/placement_text.h"

#include <sstream>

#include "placement/cell_fit.h"

namespace accel::cli {

namespace {

std::string Memory(uint64_t mib) {
  if (mib % 1024 == 0) return std::to_string(mib / 1024) + " GiB";
  return std::to_string(mib) + " MiB";
}

// "0-3->16-17,80-81" style would hide the pairing; print vCPU:pCPU pairs, compact enough.
std::string Pinning(const std::map<int, int>& pinning) {
  std::string s;
  for (const auto& [vcpu, cpu] : pinning) s += (s.empty() ? "" : " ") + std::to_string(vcpu) + ":" + std::to_string(cpu);
  return s;
}

std::string Policies(const placement::PlacementRequest& r) {
  std::string s = std::string("cpu_policy=") + placement::CpuPolicyName(r.cpu_policy);
  if (r.cpu_policy != placement::CpuPolicy::kShared)
    s += std::string(" thread_policy=") + placement::ThreadPolicyName(r.thread_policy) +
         " emulator=" + placement::EmulatorPolicyName(r.emulator_policy);
  return s;
}

}  // namespace

std::string RenderPlacementText(const topology::HostTopology& host,
                                const placement::PlacementRequest& request,
                                const placement::PlaceResult& result, const std::string& claim_id,
                                const std::string& state_path) {
  std::ostringstream o;
  o << request.flavor << " on " << host.hostname << ": " << (result.fits() ? "fits" : "NO FIT") << "  ("
    << request.vcpus << " vCPUs, " << Memory(request.memory_mib) << ", " << Policies(request) << ")\n";
  if (!result.fits()) {
    for (const std::string& r : result.no_fit.reasons) o << "  - " << r << "\n";
    return o.str();
  }
  const placement::Placement& p = *result.placement;
  if (p.cells.empty() && p.floating_cpu_milli > 0)
    o << "  floating over the host's shared CPUs (no NUMA topology): " << p.floating_cpu_milli << " CPU thousandths, "
      << Memory(p.floating_memory_mib) << "\n";
  else if (p.cells.empty())
    o << "  floating over the host's shared CPUs (no NUMA topology): " << p.floating_vcpus << " vCPUs, "
      << Memory(p.floating_memory_mib) << "\n";
  for (const placement::CellPlacement& c : p.cells) {
    o << "  cell " << c.guest_cell << " -> node " << c.host_node << ": " << Memory(c.memory_mib) << " in " << c.pages
      << " x " << placement::PageSizeName(c.page_size_kib) << " pages";
    if (!c.pinning.empty()) o << "; " << c.pinning.size() << " pinned vCPUs";
    if (!c.shared_vcpus.Empty()) o << "; shared vCPUs " << c.shared_vcpus.ToString() << " on CPUs " << c.shared_cpus.ToString();
    o << "\n";
    if (!c.pinning.empty()) o << "    pinning vCPU:CPU " << Pinning(c.pinning) << "\n";
    if (c.consumed_cpus != CpuSet() && c.consumed_cpus.Count() != static_cast<int>(c.pinning.size()))
      o << "    reserved whole cores " << c.consumed_cpus.ToString() << "\n";
  }
  if (!p.emulator_cpus.Empty()) o << "  emulator threads on CPU " << p.emulator_cpus.ToString() << "\n";
  for (const placement::DevicePlacement& d : p.devices) {
    const topology::PciDevice* dev = host.FindPci(d.address);
    o << "  device " << d.address << " (" << d.request_alias;
    if (dev && !dev->name.empty()) o << ", " << dev->name;
    o << ") node " << d.numa_node;
    o << (d.guest_cell >= 0 ? ", local to cell " + std::to_string(d.guest_cell) : std::string(p.cells.empty() ? "" : ", REMOTE"))
      << "\n";
  }
  for (const placement::GpuPlacement& g : p.gpus) {
    o << "  GPU " << g.address << " (" << g.model << ") node " << g.numa_node << ": ";
    if (g.is_mig())
      o << "MIG " << g.mig_profile << " at memory slices " << g.mig_start << "-" << g.mig_start + g.mig_slices - 1;
    else if (g.is_share())
      o << g.milli << "/1000 shared (time-slicing/MPS)";
    else
      o << "whole";
    o << "\n";
  }
  for (const std::string& n : p.notes) o << "  note: " << n << "\n";
  if (!claim_id.empty()) o << "  claimed as " << claim_id << " in " << state_path << "\n";
  return o.str();
}

}  // namespace accel::cli
