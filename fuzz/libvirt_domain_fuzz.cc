// libFuzzer target: arbitrary bytes as a libvirt domain XML (ReadLibvirtDomain), then the
// NCCL topology written from it for a small host.
//
// Only accel::InputError may leave the reader and the writer; anything else (another
// exception, a crash, a sanitizer report, a leak of libxml2 memory) is a bug. For every map
// that is read, the invariants the writer relies on are checked and a violation aborts.
//   ./libvirt_domain_fuzz -max_len=16384 fuzz/corpus/libvirt_domain examples/fabric
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "fabric/guest_topology.h"

namespace {

using namespace accel::fabric;

void Check(bool ok) {
  if (!ok) std::abort();
}

// Canonical "dddd:bb:dd.f", lower case.
bool Canonical(const std::string& a) {
  if (a.size() != 12 || a[4] != ':' || a[7] != ':' || a[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11})
    if (!((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'))) return false;
  return a[11] <= '7' && a.compare(8, 2, "20") < 0;
}

// Two GPUs and their NICs on two NUMA nodes, addresses the corpus uses.
const accel::topology::HostTopology& Host() {
  static const accel::topology::HostTopology host = [] {
    accel::topology::HostTopology h;
    h.hostname = "fuzz";
    const char* addrs[] = {"0000:1b:00.0", "0000:18:00.0", "0000:9d:00.0", "0000:9a:00.0"};
    for (int i = 0; i < 4; ++i) {
      accel::topology::PciDevice d;
      d.address = addrs[i];
      d.role = i % 2 == 0 ? accel::topology::PciRole::kGpu : accel::topology::PciRole::kNic;
      d.class_id = i % 2 == 0 ? 0x0302 : 0x0207;
      d.numa_node = i / 2;
      d.link_gbps = 63.015;
      if (i % 2) d.rdma_devices = {"mlx5_" + std::to_string(i / 2)};
      h.pci.push_back(d);
    }
    return h;
  }();
  return host;
}

const Fabric& Pairs() {
  static const Fabric fabric = [] {
    Fabric f;
    for (int i = 0; i < 2; ++i) {
      FabricNic n;
      n.pci_address = Host().pci[2 * i + 1].address;
      n.rdma_device = "mlx5_" + std::to_string(i);
      f.nics.push_back(n);
      GpuNicPair p;
      p.gpu_address = Host().pci[2 * i].address;
      p.gpu_index = i;
      p.nic = i;
      f.gpus.push_back(p.gpu_address);
      f.pairs.push_back(p);
    }
    return f;
  }();
  return fabric;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const GuestDeviceMap map = ReadLibvirtDomain(text, "fuzz input");
    Check(map.guest_cells >= 0 && map.cell_cpus.size() == static_cast<size_t>(map.guest_cells));
    Check(map.cell_host_node.size() == static_cast<size_t>(map.guest_cells));
    for (const GuestDevice& d : map.devices) {
      Check(Canonical(d.host_address));
      Check(d.guest_address.empty() || Canonical(d.guest_address));
      Check(d.guest_cell == -1 || (d.guest_cell >= 0 && d.guest_cell < map.guest_cells));
    }
    std::vector<std::string> warnings;
    const std::string xml = WriteNcclTopologyXml(Host(), Pairs(), map, {}, &warnings);
    Check(xml.rfind("<system version=\"1\">\n", 0) == 0);
  } catch (const accel::InputError&) {
  }
  return 0;
}
