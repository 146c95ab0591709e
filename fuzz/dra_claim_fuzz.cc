// libFuzzer target: arbitrary bytes as the ResourceClaim the API server returns for
// NodePrepareResources (dra/claim_allocation.h), and — when the first byte is 'C' — as the DRA
// checkpoint file the agent reads at start (dra/checkpoint.h).
//
// Only accel::InputError may leave the parsers. A claim that parses is then prepared against a
// small fixed inventory (two NVIDIA GPUs, one MIG device, two RDMA NICs), so the mapping of its
// results to devices, the per-device CDI edits and the NCCL wiring (dra/claim_preparer.h) see
// every allocation the parser lets through; nothing is written (no file system access beyond
// the host-root lookups, which point at a directory that does not exist).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "dra/cdi_spec.h"
#include "dra/checkpoint.h"
#include "dra/claim_allocation.h"
#include "dra/claim_preparer.h"

namespace {

accel::dra::Inventory Node() {
  using namespace accel::dra;
  Inventory inv;
  inv.driver = "accel.io";
  inv.node_name = "node-1";
  for (int k = 0; k < 2; ++k) {
    accel::kube::NodeDevice d;
    d.id = d.physical_id = "GPU-" + std::to_string(k);
    d.minor = k;
    d.pci_address = k == 0 ? "0000:18:00.0" : "0000:38:00.0";
    inv.node_devices.push_back(d);
    inv.fabric.gpus.push_back(d.pci_address);
    accel::fabric::FabricNic nic;
    nic.rdma_device = "mlx5_" + std::to_string(k);
    inv.fabric.nics.push_back(nic);
    accel::fabric::GpuNicPair pair;
    pair.gpu_address = d.pci_address;
    pair.nic = k;
    inv.fabric.pairs.push_back(pair);
  }
  accel::kube::NodeDevice mig = inv.node_devices[1];
  mig.id = "MIG-1";
  inv.node_devices.push_back(mig);
  auto add = [&](std::string name, DeviceKind kind, int node_device, int nic) {
    DraDevice d;
    d.name = std::move(name);
    d.kind = kind;
    d.node_device = node_device;
    d.nic = nic;
    inv.devices.push_back(d);
  };
  add("gpu-0", DeviceKind::kGpu, 0, -1);
  add("gpu-1", DeviceKind::kGpu, 1, -1);
  add("gpu-1-mig-1g-10gb-0", DeviceKind::kMig, 2, -1);
  add("nic-0", DeviceKind::kNic, -1, 0);
  add("nic-1", DeviceKind::kNic, -1, 1);
  return inv;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == 'C') {
    try {
      auto entries = accel::dra::ParseCheckpoint(std::string_view(text).substr(1), "checkpoint");
      (void)accel::dra::CheckpointJson(entries);
    } catch (const accel::InputError&) {
    }
    return 0;
  }
  static const accel::dra::Inventory inv = Node();
  accel::dra::ClaimAllocation allocation;
  try {
    allocation = accel::dra::ParseClaimAllocationText(text, {"ns", "", "claim"}, "accel.io");
  } catch (const accel::InputError&) {
    return 0;
  }
  std::vector<const accel::dra::DraDevice*> devices;
  accel::dra::DeviceNodeOptions nodes{"/nonexistent-accel-fuzz-root"};
  for (const accel::dra::AllocatedDevice& a : allocation.devices) {
    const accel::dra::DraDevice* d = inv.Find(a.device);
    if (!d) continue;
    devices.push_back(d);
    try {
      (void)accel::dra::DeviceCdiEdits(inv, *d, nodes);
    } catch (const accel::SystemError&) {  // NICs: no uverbs under the missing root
    }
  }
  accel::dra::ClaimNccl nccl =
      accel::dra::ClaimNcclEnv(inv, devices, accel::dra::NcclOptions{}, allocation.parameters);
  accel::dra::CdiSpec spec;
  spec.kind = accel::dra::ClaimCdiKind("accel.io");
  spec.edits.env = nccl.env;
  (void)accel::dra::CdiSpecJson(spec).dump();
  return 0;
}
