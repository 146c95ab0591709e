#include "kubelet/guest_layout.h"

#include "common/error.h"
#include "placement/flavor_cpu_topology.h"

namespace accel::kubelet {

std::vector<GuestCellLayout> GuestLayout::cells_or_one() const {
  if (!cells.empty()) return cells;
  GuestCellLayout one;
  one.cell = 0;
  for (int v = 0; v < vcpus; ++v) one.vcpus.Add(v);
  one.shared_vcpus = one.vcpus;
  one.memory_mib = memory_mib;
  return {one};
}

CpuSet GuestLayout::CoreVcpus(int core) const {
  CpuSet siblings;
  for (int t = 0; t < threads_per_core; ++t) {
    const int v = core * threads_per_core + t;
    if (v < vcpus) siblings.Add(v);
  }
  return siblings;
}

GuestLayout GuestLayoutOf(const placement::PlacementRequest& request, const placement::Placement& placement,
                          const topology::HostTopology& host, DeviceCellSource source) {
  if (placement.cells.size() != request.cells.size())
    throw InputError("placement of " + request.flavor, "cells",
                     std::to_string(placement.cells.size()) + " placed cells for a flavor of " +
                         std::to_string(request.cells.size()),
                     "pass the placement the engine made for this flavor");
  GuestLayout g;
  g.flavor = request.flavor;
  g.host = placement.host;
  g.vcpus = request.vcpus;
  g.memory_mib = request.memory_mib;
  g.device_cells = source;
  // Nova's choice (vcpus >= 1 is checked when the request is built; (vcpus, 1, 1) always exists
  // without maximums).
  if (auto t = placement::BestGuestCpuTopology(request.vcpus, request.guest_topology, {})) {
    g.sockets = t->sockets;
    g.cores_per_socket = t->cores;
    g.threads_per_core = t->threads;
  }
  for (size_t i = 0; i < request.cells.size(); ++i) {
    const placement::GuestCell& want = request.cells[i];
    const placement::CellPlacement& placed = placement.cells[i];
    GuestCellLayout c;
    c.cell = static_cast<int>(i);
    c.dedicated_vcpus = want.dedicated_vcpus;
    c.shared_vcpus = want.shared_vcpus;
    c.vcpus = want.dedicated_vcpus.Union(want.shared_vcpus);
    c.memory_mib = want.memory_mib;
    c.host_page_kib = placed.page_size_kib ? placed.page_size_kib : 4;
    c.host_node = placed.host_node;
    g.cells.push_back(c);
  }
  for (const placement::DevicePlacement& d : placement.devices) {
    GuestDevice gd;
    gd.alias = d.request_alias;
    gd.host_address = d.address;
    gd.vendor_id = d.vendor_id;
    gd.device_id = d.device_id;
    for (const topology::PciDevice& hd : host.pci)
      if (hd.address == d.address) {
        gd.role = hd.role;
        gd.rdma = hd.is_rdma();
        // A VF's RDMA device may be listed on its PF only.
        if (!gd.rdma && hd.is_vf())
          for (const topology::PciDevice& pf : host.pci)
            if (pf.address == hd.physfn) gd.rdma = pf.is_rdma();
        break;
      }
    gd.guest_cell = source == DeviceCellSource::kExpanderBus ? d.guest_cell : -1;
    g.devices.push_back(gd);
  }
  return g;
}

}  // namespace accel::kubelet
