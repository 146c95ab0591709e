#include "placement/host_state.h"

#include <utility>

namespace accel::placement {

namespace {

// Every host CPU `p` holds: pinned vCPUs, what the pinning consumes, the emulator's CPUs.
CpuSet HeldCpus(const Placement& p) {
  CpuSet cpus = p.emulator_consumed_cpus.Union(p.emulator_cpus);
  for (const CellPlacement& c : p.cells) {
    cpus = cpus.Union(c.consumed_cpus);
    for (const auto& [vcpu, cpu] : c.pinning) cpus.Add(cpu);
  }
  return cpus;
}

}  // namespace

HostState::HostState(const topology::HostTopology& host, HostUsage usage, HostPolicy policy)
    : host_(&host), usage_(std::move(usage)), policy_(std::move(policy)) {
  sets_ = HostCpuSetsOf(host, usage_, policy_);
  nodes_ = BuildNodeViews(host, sets_, usage_, policy_, /*keep_cores=*/true);
  room_ = FloatingRoomOf(nodes_, usage_);
}

std::string HostState::Apply(const Placement& p) {
  if (std::string err = usage_.Apply(p); !err.empty()) return err;
  Refresh(p);
  return "";
}

void HostState::Release(const Placement& p) {
  usage_.Release(p);
  Refresh(p);
}

// A node changes when a cell of `p` sits on it (pages, shared load), when it holds a CPU of `p`
// (pinned CPUs count wherever a claim recorded them), or when it holds one of `p`'s devices.
void HostState::Refresh(const Placement& p) {
  sets_.pinned = CpuSet();
  for (const auto& [id, n] : usage_.nodes) sets_.pinned = sets_.pinned.Union(n.pinned_cpus);
  const CpuSet held = HeldCpus(p);
  std::vector<bool> touched(nodes_.size(), false);
  for (const CellPlacement& c : p.cells)
    if (int i = host_->NodeIndex(c.host_node); i >= 0) touched[i] = true;
  for (const DevicePlacement& d : p.devices)
    if (const topology::PciDevice* dev = host_->FindPci(d.address))
      if (int i = host_->NodeIndex(dev->numa_node); i >= 0) touched[i] = true;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!touched[i] && !host_->numa_nodes[i].cpus.Intersects(held)) continue;
    nodes_[i] = BuildNodeView(*host_, i, sets_, usage_, policy_, /*keep_cores=*/true);
    nodes_[i].free_accelerators = FreeAccelerators(*host_, usage_, i);
  }
  room_ = FloatingRoomOf(nodes_, usage_);
}

}  // namespace accel::placement
