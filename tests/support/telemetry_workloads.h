// Workloads the telemetry tests and bench/telemetry_bench share, so what a benchmark measures is
// exactly what a test checks: a realistic exposition body and a full MIG node with 64 pods.
// Header-only; plain functions.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "kube/pod_resources.h"
#include "telemetry/snapshot.h"

namespace accel::test_support {

/// About `bytes` of exposition text with dcgm-exporter's label set.
inline std::string SampleExposition(size_t bytes) {
  std::string out = "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
                    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n";
  for (int i = 0; out.size() < bytes; ++i) {
    out += "DCGM_FI_DEV_GPU_TEMP{gpu=\"" + std::to_string(i % 8) +
           "\",UUID=\"GPU-3b9c4a1e-52f0-4d1b-9a4c-" + std::to_string(100000000000 + i) +
           "\",pci_bus_id=\"00000000:1B:00.0\",device=\"nvidia" + std::to_string(i % 8) +
           "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-17\"} " +
           std::to_string(30 + i % 50) + "\n";
  }
  return out;
}

/// 8 NVIDIA GPUs, each in MIG mode with 7 1g.10gb instances (GPU instances 7..13, CI 0).
inline std::vector<telemetry::DeviceState> FullMigNode() {
  std::vector<telemetry::DeviceState> node;
  for (unsigned index = 0; index < 8; ++index) {
    telemetry::DeviceState d;
    char text[64];
    std::snprintf(text, sizeof text, "GPU-%08x-0000-0000-0000-000000000000", index);
    d.identity.vendor = devices::Vendor::kNvidia;
    d.identity.index = index;
    d.identity.uuid = text;
    std::snprintf(text, sizeof text, "0000:%02x:00.0", 0x10 + index);
    d.identity.pci_address = text;
    d.identity.serial = "serial" + std::to_string(index);
    d.mig_enabled = true;
    for (unsigned gi = 0; gi < 7; ++gi) {
      telemetry::MigState m;
      std::snprintf(text, sizeof text, "MIG-%08x-%04x-0000-0000-000000000000", index, gi);
      m.instance.uuid = text;
      m.instance.gpu_instance_id = gi + 7;
      m.instance.compute_instance_id = 0;
      m.instance.profile = "1g.10gb";
      d.mig.push_back(std::move(m));
    }
    node.push_back(std::move(d));
  }
  return node;
}

/// 64 pods on FullMigNode(): 56 on one MIG instance each, named in every ID form the kubelet
/// reports (MIG UUID, legacy MIG-GPU-.../gi/ci, GKE's nvidiaN/giM), and 8 time-slicing replicas.
inline std::vector<kube::ContainerDevices> SixtyFourPods(
    const std::vector<telemetry::DeviceState>& node) {
  std::vector<kube::ContainerDevices> pods;
  for (unsigned p = 0; p < 64; ++p) {
    unsigned gpu = p % 8, slot = p / 8;
    const telemetry::DeviceState& d = node[gpu];
    std::string id;
    if (slot == 7) {
      id = d.identity.uuid + "::" + std::to_string(p);
    } else if (p % 3 == 0) {
      id = d.mig[slot].instance.uuid;
    } else if (p % 3 == 1) {
      id = "MIG-" + d.identity.uuid + "/" + std::to_string(slot + 7) + "/0";
    } else {
      id = "nvidia" + std::to_string(gpu) + "/gi" + std::to_string(slot + 7);
    }
    pods.push_back({"ns", "pod-" + std::to_string(p), "main", "nvidia.com/mig-1g.10gb", {id}});
  }
  return pods;
}

}  // namespace accel::test_support
