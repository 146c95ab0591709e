// AllocateContainer: the ContainerAllocateResponse each vendor's own plugin would give
// (NVIDIA internal/plugin/server.go getAllocateResponse, ROCm's Allocate, Habana's Allocate).
//
// Device node paths are computed, never probed: the plugin may run in a container whose /dev is
// not the host's. Two consequences, both documented limits:
//  * NVIDIA MIG devices get their parent /dev/nvidiaN but not the GI/CI capability nodes
//    (/dev/nvidia-caps/nvidia-cap<N>): N comes from /proc/driver/nvidia/capabilities, which needs
//    probing. The NVIDIA container runtime adds them from NVIDIA_VISIBLE_DEVICES / CDI anyway.
//  * AMD card nodes are derived as /dev/dri/card<renderD minor − 128>: DRM numbers card and
//    render nodes in the same order, which holds when every DRM device of the host has both (a
//    BMC VGA device with a card node but no render node would shift the card numbers).
#include "kube/allocate.h"
#include "common/hash.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/small_file.h"
#include "kube/mps_paths.h"

namespace accel::kube {

namespace {

constexpr const char* kNvidiaVisible = "NVIDIA_VISIBLE_DEVICES";
constexpr const char* kVolumeMountDir = "/var/run/nvidia-container-devices";
constexpr const char* kCdiKind = "k8s.device-plugin.nvidia.com/gpu";
constexpr int kFirstRenderMinor = 128;

std::string JoinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

// FNV-1a 64: the same request gives the same annotation key, so checkpoint replays match.
std::string StableHash(const std::vector<std::string>& ids) {
  std::string text;
  for (const std::string& id : ids) text += id + ",";
  const uint64_t h = Fnv1a(text);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// The requested units (NodeDevice indices), replicas reduced to their unit, first-seen order.
std::vector<size_t> RequestedUnits(const PluginResource& resource,
                                   const std::vector<NodeDevice>& devices,
                                   const std::vector<std::string>& ids) {
  std::string invalid = "invalid allocation request for \"" + resource.name + "\": ";
  if (ids.empty()) throw AllocationError(invalid + "no devices requested");
  if (resource.replicas > 1 && resource.fail_requests_greater_than_one && ids.size() > 1) {
    throw AllocationError(invalid + "maximum request size for shared resources is 1; found " +
                          std::to_string(ids.size()));
  }
  std::vector<size_t> units;
  for (const std::string& id : ids) {
    auto it = std::find_if(resource.devices.begin(), resource.devices.end(),
                           [&](const AdvertisedDevice& a) { return a.id == id; });
    if (it == resource.devices.end() || it->device >= devices.size()) {
      throw AllocationError(invalid + "unknown device: " + id);
    }
    if (std::find(units.begin(), units.end(), it->device) == units.end()) {
      units.push_back(it->device);
    }
  }
  return units;
}

// UUID, or NVIDIA's index form: "<gpu>" for a whole GPU, "<gpu>:<mig>" for a MIG device.
std::string NvidiaName(const NodeDevice& d, bool by_index) {
  if (!by_index) return d.id;
  return d.is_mig() ? std::to_string(d.index) + ":" + std::to_string(d.mig_index)
                    : std::to_string(d.index);
}

void AddNode(ContainerAllocation* out, const std::string& path, const std::string& host_path) {
  for (const DeviceNodeSpec& spec : out->devices) {
    if (spec.container_path == path) return;
  }
  out->devices.push_back({path, host_path, "rw"});
}

void AllocateNvidia(const std::vector<NodeDevice>& devices, const std::vector<size_t>& units,
                    const PluginConfig& config, ContainerAllocation* out) {
  std::vector<std::string> names, unit_ids, cdi;
  std::vector<DeviceEdits> edits;
  for (size_t u : units) {
    edits.push_back(EditsOfDevice(devices[u], config.dev_root, config.device_id_index));
    names.push_back(edits.back().visible_value);
    unit_ids.push_back(devices[u].id);
    cdi.push_back(std::string(kCdiKind) + "=" + names.back());
  }
  auto uses = [&](DeviceListStrategy s) {
    return std::find(config.device_list.begin(), config.device_list.end(), s) !=
           config.device_list.end();
  };
  if (uses(DeviceListStrategy::kCdiAnnotations)) {
    out->annotations[config.cdi_annotation_prefix + "accel-device-plugin_" +
                     StableHash(unit_ids)] = JoinComma(cdi);
  }
  if (uses(DeviceListStrategy::kCdiCri)) out->cdi_devices = cdi;
  // As NVIDIA's plugin: with CDI strategies only, the runtime needs nothing else.
  if (!uses(DeviceListStrategy::kEnvvar) && !uses(DeviceListStrategy::kVolumeMounts)) return;
  if (uses(DeviceListStrategy::kEnvvar)) out->envs[kNvidiaVisible] = JoinComma(names);
  if (uses(DeviceListStrategy::kVolumeMounts)) {
    out->envs[kNvidiaVisible] = kVolumeMountDir;
    for (const std::string& name : names) {
      out->mounts.push_back({std::string(kVolumeMountDir) + "/" + name, "/dev/null", true});
    }
  }
  if (!config.pass_device_specs) return;
  // An unknown node (no minor) has no entry: the runtime still has the env/CDI list.
  for (const DeviceEdits& e : edits)
    for (const DeviceNodeSpec& n : e.device_nodes) AddNode(out, n.container_path, n.host_path);
  for (const DeviceNodeSpec& n : EditsOfDevice(NodeDevice{}, config.dev_root).shared_nodes)
    AddNode(out, n.container_path, n.host_path);
}

// What NVIDIA's plugin adds for an MPS-shared resource (internal/plugin/mps.go updateReponse):
// the pipe directory of the resource's control daemon and the shared memory it uses.
void AddMps(const PluginResource& resource, const PluginConfig& config, ContainerAllocation* out) {
  MpsPaths paths = MpsPathsFor(config.mps_settings.root, resource.name);
  out->envs["CUDA_MPS_PIPE_DIRECTORY"] = paths.container_pipe_dir;
  out->mounts.push_back({paths.container_pipe_dir, paths.pipe_dir, false});
  out->mounts.push_back({kMpsShmDir, kMpsShmDir, false});
}

int RequireMinor(const PluginResource& resource, const NodeDevice& d, int lowest) {
  if (d.minor < lowest) {
    throw AllocationError("cannot allocate " + d.id + " of \"" + resource.name +
                          "\": its device node is unknown");
  }
  return d.minor;
}

void AllocateAmd(const PluginResource& resource, const std::vector<NodeDevice>& devices,
                 const std::vector<size_t>& units, ContainerAllocation* out) {
  AddNode(out, "/dev/kfd", "/dev/kfd");
  for (size_t u : units) {
    RequireMinor(resource, devices[u], kFirstRenderMinor);
    for (const DeviceNodeSpec& n : EditsOfDevice(devices[u]).device_nodes)
      AddNode(out, n.container_path, n.host_path);
  }
}

void AllocateGaudi(const PluginResource& resource, const std::vector<NodeDevice>& devices,
                   const std::vector<size_t>& units, ContainerAllocation* out) {
  std::vector<std::string> minors;
  for (size_t u : units) {
    RequireMinor(resource, devices[u], 0);
    DeviceEdits e = EditsOfDevice(devices[u]);
    minors.push_back(e.visible_value);
    for (const DeviceNodeSpec& n : e.device_nodes) AddNode(out, n.container_path, n.host_path);
  }
  out->envs["HABANA_VISIBLE_DEVICES"] = JoinComma(minors);
}

}  // namespace

DeviceEdits EditsOfDevice(const NodeDevice& device, const std::string& dev_root,
                          bool nvidia_by_index) {
  DeviceEdits e;
  auto node = [](const std::string& path, const std::string& host) {
    return DeviceNodeSpec{path, host, "rw"};
  };
  switch (device.vendor) {
    case devices::Vendor::kNvidia: {
      e.visible_env = kNvidiaVisible;
      e.visible_value = NvidiaName(device, nvidia_by_index);
      if (device.minor >= 0) {
        std::string path = "/dev/nvidia" + std::to_string(device.minor);
        e.device_nodes.push_back(node(path, PathUnderRoot(dev_root, path)));
      }
      for (const char* path : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"})
        e.shared_nodes.push_back(node(path, PathUnderRoot(dev_root, path)));
      break;
    }
    case devices::Vendor::kAmd: {
      e.shared_nodes.push_back(node("/dev/kfd", "/dev/kfd"));
      if (device.minor >= kFirstRenderMinor) {
        std::string card = "/dev/dri/card" + std::to_string(device.minor - kFirstRenderMinor);
        std::string render = "/dev/dri/renderD" + std::to_string(device.minor);
        e.device_nodes.push_back(node(card, card));
        e.device_nodes.push_back(node(render, render));
      }
      break;
    }
    case devices::Vendor::kHabana: {
      e.visible_env = "HABANA_VISIBLE_DEVICES";
      if (device.minor >= 0) {
        std::string n = std::to_string(device.minor);
        e.visible_value = n;
        e.device_nodes.push_back(node("/dev/accel/accel" + n, "/dev/accel/accel" + n));
        e.device_nodes.push_back(
            node("/dev/accel/accel_controlD" + n, "/dev/accel/accel_controlD" + n));
      }
      break;
    }
  }
  return e;
}

ContainerAllocation AllocateContainer(const PluginResource& resource,
                                      const std::vector<NodeDevice>& devices,
                                      const PluginConfig& config,
                                      const std::vector<std::string>& ids) {
  std::vector<size_t> units = RequestedUnits(resource, devices, ids);
  ContainerAllocation out;
  switch (resource.vendor) {
    case devices::Vendor::kNvidia:
      AllocateNvidia(devices, units, config, &out);
      if (resource.sharing == SharingStrategy::kMps) AddMps(resource, config, &out);
      break;
    case devices::Vendor::kAmd: AllocateAmd(resource, devices, units, &out); break;
    case devices::Vendor::kHabana: AllocateGaudi(resource, devices, units, &out); break;
  }
  return out;
}

}  // namespace accel::kube
