// AgentConfig: the one YAML file `accel serve` reads — which parts of the node agent run
// (exporter, device plugin, node labels, MIG manager) and how each is set up.
//
//   # /etc/accel/agent.yaml (every key optional; these are the defaults)
//   vendors: [nvidia, amd, habana]
//   libraries: {nvml: "", rocmSmi: "", hlml: ""}     # "" = the loader's search path
//   topology: live                                   # or an hwloc XML / accel host JSON
//   exporter:
//     enabled: true
//     listen: ":9400"
//     webConfigFile: ""
//     profile: auto                                  # dcgm, amd, gaudi, none, comma lists
//     collectInterval: 5s
//     staleAfter: 15s                                # default (unset): 3 x collectInterval
//     accelMetrics: true                             # the accel_* family beside the profiles
//     hostnameLabel: Hostname                        # dcgm profile: Hostname, hostname or none
//     collectors: ""                                 # dcgm-exporter counters CSV (its -f file)
//     amdMetricsConfig: ""                           # device-metrics-exporter config.json
//     pods: auto                                     # auto (socket exists at start), always, never
//     podResourcesSocket: /var/lib/kubelet/pod-resources/kubelet.sock
//     podRefreshInterval: 10s
//   devicePlugin:
//     enabled: true                                  # runs when kubelet.sock exists
//     config: {...}                                  # NVIDIA k8s-device-plugin v1 schema + health
//     configFile: ""                                 # or that config in its own file
//   labels:
//     enabled: true
//     file: /etc/kubernetes/node-feature-discovery/features.d/accel
//     interval: 60s
//   mig:
//     enabled: false
//     configFile: /etc/accel/mig-parted.yaml         # mig-parted v1
//     config: ""                                     # name to apply at start and on reload
//     stateFile: /etc/kubernetes/node-feature-discovery/features.d/accel-mig
//   fleet:                                           # publish this host to a fleet store
//     enabled: false
//     store: ""                                      # sqlite:PATH | postgresql://...; "" = $ACCEL_FLEET_STORE
//     name: ""                                       # host name in the fleet; "" = the topology's
//     labels: {}                                     # e.g. {az: rack-3, gpu: h100}
//     policyFile: ""                                 # host policy (nova.conf names, docs/fleet.md)
//     heartbeat: 30s
//     staleAfter: 90s                                # default (unset): 3 x heartbeat
//   dra:                                             # Dynamic Resource Allocation driver (docs/dra.md)
//     enabled: false
//     driverName: accel.io
//     nodeName: ""                                   # "" = $NODE_NAME, else the host name
//     kubeconfig: ""                                 # "" = in-cluster (service account)
//     registryDir: /var/lib/kubelet/plugins_registry
//     pluginDir: ""                                  # "" = /var/lib/kubelet/plugins/<driverName>
//     cdiDir: /var/run/cdi
//     stateDir: /var/lib/accel/dra                   # the prepared-claims checkpoint
//     publishVfs: true                               # SR-IOV VFs of RDMA NICs as devices
//     partitionableDevices: true                     # MIG GPUs whole + slices with counters (k8s >= 1.36)
//     hostRoot: /                                    # where the host's /sys and /dev are seen
//     resyncInterval: 60s                            # re-publish ResourceSlices at least this often
//     nccl:
//       socketIfname: eth0                           # NCCL_SOCKET_IFNAME of claims with GPUs+NICs
//       topoFile: ""                                 # NCCL_TOPO_FILE (inside a VM), mounted into pods
//
// Plain data; the parser is stateless and thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dra/node_hardware.h"
#include "kube/plugin_config.h"
#include "telemetry/field_selection.h"

namespace accel::agent {

/// When the exporter asks the kubelet which pod holds which device.
enum class PodAttribution {
  kAuto,    ///< when the pod-resources socket exists at start
  kAlways,  ///< even if the socket is missing at start (the kubelet may come later)
  kNever,   ///< never
};

/// The exporter part: `accel serve`'s exporter section, and everything `accel exporter` runs.
struct ExporterSection {
  /// Serve /metrics (and /topology) over HTTP; when false the collector still runs (health).
  bool enabled = true;
  /// [host]:port to listen on.
  std::string listen = ":9400";
  /// exporter-toolkit web config (TLS, basic auth); "" = plain HTTP.
  std::string web_config_file;
  /// Vendor profiles: "auto", "none", or a comma list of dcgm, amd, gaudi.
  std::string profile = "auto";
  /// Print the accel_* family beside the vendor profiles.
  bool accel_metrics = true;
  /// The dcgm profile's node label name: "Hostname", "hostname", or "" for none.
  std::string hostname_label = "Hostname";
  std::chrono::milliseconds collect_interval{5000};
  /// A device whose newest reading is older is reported stale; 0 = 3 x collect_interval.
  std::chrono::milliseconds stale_after{0};
  PodAttribution pods = PodAttribution::kAuto;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  /// Time between kubelet List calls.
  std::chrono::milliseconds pod_refresh_interval{10000};
  /// A dcgm-exporter counters CSV (`-f` / DCGM_EXPORTER_COLLECTORS format): the dcgm profile
  /// serves exactly its fields. "" = the built-in 25.
  std::string collectors;
  /// AMD device-metrics-exporter's config.json (or its ConfigMap): the amd profile serves its
  /// GPUConfig.Fields, prefixed with its MetricsFieldPrefix. "" = every gpu_* family.
  std::string amd_metrics_config;
  /// The two files as read by LoadFieldSelection; null when neither is set.
  std::shared_ptr<const telemetry::FieldSelection> fields;
};

struct DevicePluginSection {
  bool enabled = true;
  kube::PluginConfig config;
};

struct LabelsSection {
  bool enabled = true;
  std::string file = "/etc/kubernetes/node-feature-discovery/features.d/accel";
  std::chrono::milliseconds interval{60000};
};

struct MigSection {
  bool enabled = false;
  std::string config_file = "/etc/accel/mig-parted.yaml";
  /// Config name to apply; empty = none (the manager only reports state).
  std::string config;
  std::string state_file = "/etc/kubernetes/node-feature-discovery/features.d/accel-mig";
};

/// Publishing the host to the fleet store (accel fleet): at start and whenever the topology
/// changes the agent upserts its host; every heartbeat it records that it is alive. A host whose
/// heartbeats stop is shown stale and gets no new placements.
struct FleetSection {
  bool enabled = false;
  std::string store;   ///< store URL; "" = $ACCEL_FLEET_STORE or the default SQLite file
  std::string name;    ///< host name; "" = the topology's hostname
  std::map<std::string, std::string> labels;  ///< labels set on the host (merged over others)
  std::string policy_file;  ///< host policy file; "" = leave the stored policy as it is
  std::chrono::milliseconds heartbeat{30000};
  /// Without a heartbeat for this long the host is stale; 0 = 3 x heartbeat.
  std::chrono::milliseconds stale_after{0};
};

/// The DRA driver (resource.k8s.io/v1): ResourceSlices for the node's GPUs, MIG devices and RDMA
/// NICs, and NodePrepareResources writing CDI specs with NCCL wired (docs/dra.md).
struct DraSection {
  bool enabled = false;
  /// Driver name: a DNS subdomain ≤ 63 characters; DeviceClasses select on it.
  std::string driver_name = "accel.io";
  /// The node's Kubernetes name (pool and ResourceSlice nodeName); "" = $NODE_NAME (the
  /// DaemonSet sets it from spec.nodeName), else the host name.
  std::string node_name;
  /// kubeconfig file; "" = in-cluster config (service account). `accel serve --kubeconfig`.
  std::string kubeconfig;
  /// The kubelet's plugin watcher directory (registration socket).
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  /// Where the DRA service socket lives; "" = /var/lib/kubelet/plugins/<driver_name>.
  std::string plugin_dir;
  /// CDI spec directory the container runtime reads.
  std::string cdi_dir = "/var/run/cdi";
  /// Prepared-claims checkpoint directory (survives agent restarts).
  std::string state_dir = "/var/lib/accel/dra";
  /// Publish SR-IOV virtual functions of RDMA NICs as devices.
  bool publish_vfs = true;
  /// MIG-enabled GPUs as partitionable devices (whole GPU + MIG devices sharing a counter set;
  /// Kubernetes ≥ 1.36, or the DRAPartitionableDevices gate); false: MIG devices only, no
  /// counters (dra::InventoryOptions::partitionable).
  bool partitionable_devices = true;
  /// Where the host's /sys, /dev and /proc are seen ("/" in a privileged pod or on the host;
  /// "/host" when the host is mounted there): uverbs nodes are read below it, and the node's
  /// RDMA ports by dra::RdmaPortRoot's rule (for the DRA rails and the device plugin's
  /// NCCL_IB_HCA alike, whether or not the DRA driver runs).
  std::string host_root = "/";
  /// ResourceSlices are re-published when devices or health change, and at least this often.
  std::chrono::milliseconds resync_interval{60000};
  /// NCCL_SOCKET_IFNAME for claims with GPUs and NICs ("" = unset).
  std::string nccl_socket_ifname = "eth0";
  /// NCCL_TOPO_FILE for claims (inside a VM: the guest's topology file); "" = none.
  std::string nccl_topo_file;
};

struct AgentConfig {
  /// "nvidia", "amd", "habana".
  std::vector<std::string> vendors = {"nvidia", "amd", "habana"};
  std::string nvml_library, rocm_smi_library, hlml_library;
  /// Topology source for NUMA nodes and interconnect: "live", a file, or "none".
  std::string topology = "live";
  ExporterSection exporter;
  DevicePluginSection device_plugin;
  LabelsSection labels;
  MigSection mig;
  FleetSection fleet;
  DraSection dra;
};

/// Parses agent YAML. `source` names the file in errors. Unknown keys, bad durations, unknown
/// vendors and every error of the embedded plugin config are InputError (where = source, field
/// = key path). A devicePlugin.configFile is read relative to the agent file's directory.
AgentConfig ParseAgentConfig(const std::string& yaml, const std::string& source);

/// The dcgm profile's hostname label for a setting: "Hostname" and "hostname" as they are,
/// "none" or "" → "" (no label). Throws InputError(where, field) for anything else.
std::string HostnameLabel(const std::string& where, const std::string& value,
                          const std::string& field);

/// Reads `path`; an empty path gives the defaults. Throws InputError.
AgentConfig LoadAgentConfig(const std::string& path);

/// The node this config reads (dra/node_hardware.h): `topology` and dra.hostRoot, NodeSource's
/// defaults for the rest (NVLink links read, default pairing). The agent and `accel dra` both
/// start from it.
dra::NodeSource NodeSourceOf(const AgentConfig& config);

/// Reads exporter->collectors and exporter->amd_metrics_config into exporter->fields (null when
/// both are empty). A relative path is taken relative to `base_dir` when it is not empty (the
/// agent file's directory), else as given. Throws InputError from the readers: "<file>:<line>"
/// for the CSV, "<file>: GPUConfig.Fields[i]" for the AMD config, or an unreadable file.
void LoadFieldSelection(ExporterSection* exporter, const std::string& base_dir);

}  // namespace accel::agent
