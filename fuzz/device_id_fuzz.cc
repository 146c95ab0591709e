// libFuzzer target: arbitrary bytes as a kubelet device ID, parsed and then attributed against a
// small fixed node (NVIDIA with and without MIG, AMD, Gaudi) under every vendor's resource.
//
// Device IDs come from whatever device plugin runs on the node; nothing may throw or crash, and
// one ID may attach to at most one device or MIG instance.
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/device_id_fuzz.cc \
//     src/telemetry/pod_attribution.cc src/devices/device.cc -o device_id_fuzz
//   ./device_id_fuzz fuzz/corpus/device_id
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/pod_attribution.h"

namespace {

using namespace accel::telemetry;
using accel::devices::Vendor;

void Check(bool ok) {
  if (!ok) std::abort();
}

DeviceState Device(Vendor vendor, unsigned index, const char* uuid, const char* pci,
                   const char* serial) {
  DeviceState d;
  d.identity.vendor = vendor;
  d.identity.index = index;
  d.identity.uuid = uuid;
  d.identity.pci_address = pci;
  d.identity.serial = serial;
  return d;
}

std::vector<DeviceState> FixedNode() {
  std::vector<DeviceState> node;
  node.push_back(Device(Vendor::kNvidia, 0, "GPU-8f6c1d2e-0b1a-4c3d-9e8f-0123456789ab",
                        "0000:3b:00.0", "1320000000001"));
  node.push_back(Device(Vendor::kNvidia, 1, "GPU-11111111-2222-3333-4444-555555555555",
                        "0000:86:00.0", "1320000000002"));
  node[1].mig_enabled = true;
  for (unsigned gi : {1u, 2u, 13u}) {
    MigState m;
    m.instance.uuid = "MIG-aaaaaaaa-bbbb-cccc-dddd-00000000000" + std::to_string(gi % 10);
    m.instance.gpu_instance_id = gi;
    node[1].mig.push_back(m);
  }
  node.push_back(Device(Vendor::kAmd, 0, "GPU-0123456789abcdef", "0000:c1:00.0", ""));
  node.push_back(Device(Vendor::kHabana, 0, "01P0-HL2080A0-15-TNE179-13-07-03", "0000:19:00.0",
                        "AM12345678"));
  return node;
}

void CheckRef(std::string_view id, const DeviceRef& ref) {
  switch (ref.kind) {
    case DeviceIdKind::kOpaque:
      Check(ref.key == id && ref.replica == -1 && ref.index == -1);
      break;
    case DeviceIdKind::kPciAddress:
      Check(ref.key.size() == 12 && ref.key[4] == ':' && ref.key[7] == ':' && ref.key[10] == '.');
      break;
    case DeviceIdKind::kGpuUuid:
    case DeviceIdKind::kReplica:
    case DeviceIdKind::kLegacyMig:
      Check(ref.key.compare(0, 4, "GPU-") == 0 && ref.key.size() > 4);
      Check((ref.kind == DeviceIdKind::kReplica) == (ref.replica >= 0));
      break;
    case DeviceIdKind::kMigUuid:
      Check(ref.key.compare(0, 4, "MIG-") == 0 && ref.key.size() > 4);
      break;
    case DeviceIdKind::kDeviceName:
    case DeviceIdKind::kGke:
      Check(ref.index >= 0);
      break;
  }
}

size_t AttachedPods(const std::vector<DeviceState>& node) {
  size_t n = 0;
  for (const DeviceState& d : node) {
    n += d.pods.size();
    for (const MigState& m : d.mig) n += m.pods.size();
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::vector<DeviceState> node = FixedNode();
  std::string id(reinterpret_cast<const char*>(data), size);
  CheckRef(id, ParseDeviceId(id));
  for (const char* resource : {"nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "x.io/y"}) {
    AttributionStats stats = AttributePods({{"ns", "pod", "c", resource, {id}}}, &node);
    Check(stats.matched + stats.unmatched + stats.ignored == 1);
    Check(AttachedPods(node) == stats.matched);
  }
  return 0;
}
