// DevicePluginServer: one resource served to the kubelet over the device plugin API v1beta1
// (gRPC on a unix socket in the plugin directory), registered with the kubelet's Registration
// service. DevicePluginManager runs one server per resource and re-registers them all when the
// kubelet restarts (kubelet.sock re-created, or our socket removed).
//
// Thread-safety: Start/Stop/Update/NotifyHealthChanged may be called from any thread; gRPC
// handlers run on gRPC's threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "devices/interconnect.h"
#include "kube/device_health.h"
#include "kube/node_devices.h"
#include "kube/plugin_config.h"
#include "kube/resources.h"

namespace accel::kube {

/// The HCA each accelerator is paired with for NCCL: canonical PCI address of the physical
/// device (NodeDevice::pci_address) → "mlx5_0:1" (RDMA device and port). Accelerators without a
/// usable NIC are absent. Built by the agent from accel's GPU↔NIC pairing
/// (agent/nccl_hca.h); the kube layer only looks names up.
using NcclHcaMap = std::map<std::string, std::string>;

/// What every plugin of a node shares. Owned by the caller; must outlive the servers.
struct PluginNode {
  const std::vector<NodeDevice>* devices = nullptr;
  const PluginConfig* config = nullptr;
  /// Interconnect of the physical devices in NodeDevice::pci_address terms; may be null
  /// (preferred allocation then falls back to NUMA locality and index order).
  const devices::Interconnect* interconnect = nullptr;
  DeviceHealth* health = nullptr;
  /// Paired HCAs for NCCL_IB_HCA at Allocate (config->nccl.ib_hca); null = not added even when
  /// the config asks (the agent could not pair, e.g. no topology).
  const NcclHcaMap* nccl_hcas = nullptr;
};

class DevicePluginServer {
 public:
  DevicePluginServer(PluginResource resource, PluginNode node);
  ~DevicePluginServer();  ///< Stop()

  /// Removes a stale socket, listens on <plugin_dir>/<socket_name>, serves, then registers
  /// with <plugin_dir>/kubelet.sock (from a thread that does not block serving, since the
  /// kubelet calls back during Register). Returns once registered. Throws SystemError
  /// naming the socket when it cannot listen, or the kubelet's answer when Register fails.
  void Start();
  /// Sends an empty device list to open ListAndWatch streams (so capacity drops at once), ends
  /// them, stops serving and removes the socket. Idempotent.
  void Stop();
  /// Pushes the current device list (with health) to every ListAndWatch stream.
  void NotifyHealthChanged();

  const PluginResource& resource() const;
  /// Full path of the socket.
  std::string socket_path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Runs a server per resource; watches the plugin directory (inotify) and restarts and
/// re-registers every server within seconds of a kubelet restart; polls health. Thread-safe.
class DevicePluginManager {
 public:
  explicit DevicePluginManager(PluginNode node);
  ~DevicePluginManager();  ///< Stop()

  /// Starts a server for each resource (failures are retried every few seconds in the
  /// background and logged through `log`) and the watcher thread.
  void Start(std::vector<PluginResource> resources,
             std::function<void(const std::string&)> log = nullptr);
  /// Stops every server and the watcher. Idempotent.
  void Stop();
  /// Tells every server that health changed.
  void NotifyHealthChanged();
  /// How many times the servers were (re-)registered in total; for tests and metrics.
  int registrations() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::kube
