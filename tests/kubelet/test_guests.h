// Hand-built guests for the kubelet layer's tests (and the cluster tests that model a group's
// node): cells of whole cores, GPUs on chosen cells.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kubelet/guest_layout.h"

namespace accel::kubelet::test_guests {

// A guest of `cells` cells, each `cores` cores of `threads` threads and `mib` MiB, GPUs on the
// given cells (-1: no guest NUMA node), vCPUs numbered cell by cell.
inline GuestLayout Guest(int cells, int cores, int threads, uint64_t mib, const std::vector<int>& gpu_cells = {}) {
  GuestLayout g;
  g.flavor = "test";
  g.threads_per_core = threads;
  g.cores_per_socket = cores * cells;
  g.vcpus = cells * cores * threads;
  g.memory_mib = mib * static_cast<uint64_t>(cells);
  for (int c = 0; c < cells; ++c) {
    GuestCellLayout cell;
    cell.cell = c;
    for (int v = c * cores * threads; v < (c + 1) * cores * threads; ++v) cell.vcpus.Add(v);
    cell.dedicated_vcpus = cell.vcpus;
    cell.memory_mib = mib;
    cell.host_page_kib = 1048576;
    g.cells.push_back(cell);
  }
  int n = 0;
  for (int c : gpu_cells) {
    GuestDevice d;
    d.alias = "h100";
    d.host_address = "0000:1" + std::to_string(n++) + ":00.0";
    d.vendor_id = 0x10de;
    d.device_id = 0x2330;
    d.role = topology::PciRole::kGpu;
    d.guest_cell = c;
    g.devices.push_back(d);
  }
  return g;
}

}  // namespace accel::kubelet::test_guests
