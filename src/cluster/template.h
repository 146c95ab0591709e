// ClusterTemplate: a Kubernetes cluster's node groups on tuned flavors, as the operator writes
// them in a cluster template (`apiVersion: accel.cluster/v1`, `kind: ClusterTemplate`; YAML or
// JSON; every key in docs/schemas.md, "Cluster template: accel.cluster/v1").
//
//   apiVersion: accel.cluster/v1
//   kind: ClusterTemplate
//   metadata: {name: ai-prod}
//   spec:
//     kubernetesVersion: v1.33.2
//     flavors: [../flavors/, flavors/]        # files or directories, relative to the template
//     aliases: ../flavors/aliases.json        # Nova [pci]alias definitions
//     hypervisor: ../../fixtures/hosts/hgx-h100.json
//     kubelet: {featureGates: {CPUManagerPolicyAlphaOptions: true}}
//     nodeGroups:
//     - {name: h100-train, flavor: gpu-4-2cell, count: 4, vendor: nvidia, stack: operator,
//        sharing: {mig: all-1g.10gb}, network: {rdma: sriov}}
//
// LoadClusterTemplate reads the template strictly and everything it names: the flavors
// (placement::LoadFlavors; each group's flavor is also built into its PlacementRequest, so a
// flavor Nova would refuse is refused here), the alias table and the hypervisor topologies
// (topology::LoadTopology, each file once). The result holds all of it, so later stages (guest
// layout, kubelet configuration, vendor stack objects, `accel cluster plan|check|pods`) never
// read a file again.
//
// Strict reading: an unknown key is an error naming its key path and the keys known there;
// a wrong type, a bad value and an impossible combination (MIG on an AMD group, a flavor no file
// defines, two groups with one name, minCount above count, ...) are errors naming the key path
// ("spec.nodeGroups[2].sharing.mig") and the fix. All errors are accel::InputError (exit 2);
// a template that fails to load leaves nothing behind (the loader writes nothing).
//
// Plain data. The loaders are free functions, thread-safe; a loaded ClusterTemplate is
// immutable in practice and its shared_ptr members may be shared across threads.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "placement/flavor.h"
#include "kubelet/version.h"
#include "placement/pci_alias.h"
#include "placement/request.h"
#include "topology/host.h"

namespace accel::cluster {

/// The node label every node of a group carries, its value the group's name
/// ("accel.io/node-group=h100-train"): the Cluster API objects set it through the kubelet
/// (nodeRegistration), and every per-group object (NVIDIADriver, DeviceConfig, NicNodePolicy,
/// accel's agent, scrape relabelling) selects the group's nodes with it.
inline constexpr const char* kNodeGroupLabel = "accel.io/node-group";

/// The accelerator vendor whose stack a node group runs.
enum class Vendor {
  kNone,    ///< "none": no accelerators (a system or CPU-only group)
  kNvidia,  ///< "nvidia"
  kAmd,     ///< "amd"
  kHabana,  ///< "habana" (Intel Gaudi)
};

/// Who runs the accelerator stack (device plugin, exporter, sharing) on a group's nodes.
enum class Stack {
  kAccel,     ///< "accel": accel's node agent (the default)
  kOperator,  ///< "operator": the vendor's operator (GPU Operator, AMD GPU Operator, Gaudi Base Operator)
};

/// How a group's RDMA NICs reach pods (NVIDIA Network Operator terms, platform.md §3.4).
enum class RdmaMode {
  kNone,    ///< "none": no RDMA resources (the default)
  kSriov,   ///< "sriov": one SR-IOV VF per pod (sriovDevicePlugin)
  kShared,  ///< "shared": pods share the RDMA device (rdmaSharedDevicePlugin)
};

/// The taint effects Kubernetes defines.
enum class TaintEffect {
  kNoSchedule,        ///< "NoSchedule"
  kPreferNoSchedule,  ///< "PreferNoSchedule"
  kNoExecute,         ///< "NoExecute"
};

/// sharing.timeSlicing or sharing.mps: NVIDIA device plugin replicas (k8s-device-plugin.md §2).
struct ReplicaSharing {
  int replicas = 0;                          ///< replicas per device, >= 2 (the device plugin's rule)
  bool rename_by_default = false;            ///< renameByDefault: advertise <resource>.shared
  bool fail_requests_greater_than_one = false;  ///< failRequestsGreaterThanOne
};

/// How a group's accelerators are shared. MIG may be combined with time-slicing (replicas of
/// each MIG device); MPS excludes both (the device plugin refuses MPS with MIG or time-slicing).
struct Sharing {
  std::string mig;                            ///< mig-parted config name ("all-1g.10gb"); "" = no MIG
  std::optional<ReplicaSharing> time_slicing;  ///< timeSlicing; nullopt = none
  std::optional<ReplicaSharing> mps;           ///< mps; nullopt = none
  /// True when nothing is shared (whole devices).
  bool none() const { return mig.empty() && !time_slicing && !mps; }
};

/// network: the group's RDMA NICs.
struct Network {
  RdmaMode rdma = RdmaMode::kNone;  ///< rdma
};

/// One node taint, as in a Node's spec.taints.
struct Taint {
  std::string key;    ///< label-key syntax ("nvidia.com/gpu")
  std::string value;  ///< label-value syntax; may be empty
  TaintEffect effect = TaintEffect::kNoSchedule;  ///< effect
};

/// driver: the accelerator driver a group's operator installs (NVIDIA: one NVIDIADriver per
/// group, so groups may run different driver branches).
struct DriverChoice {
  std::string version;  ///< version: driver version ("580.95.05"); "" = the operator's default
  /// kernelModuleType (NVIDIA): "auto" (the operator picks), "open" or "proprietary".
  std::string kernel_module_type = "auto";
};

/// One node group: `count` VMs of one flavor joined to the cluster as Kubernetes nodes.
struct NodeGroup {
  std::string name;          ///< DNS-1123 label, unique in the template
  std::string flavor_name;   ///< flavor (as the template names it)
  placement::Flavor flavor;  ///< that flavor, as loaded
  std::string flavor_file;   ///< the file it was loaded from (for messages)
  /// What the flavor asks of a host (placement::BuildRequest with the template's aliases).
  placement::PlacementRequest request;
  int count = 0;                  ///< count: nodes wanted, >= 0
  std::optional<int> min_count;   ///< minCount (autoscaling lower bound), <= count
  std::optional<int> max_count;   ///< maxCount (autoscaling upper bound), >= count
  Vendor vendor = Vendor::kNone;  ///< vendor
  Stack stack = Stack::kAccel;    ///< stack (default accel)
  Sharing sharing;                ///< sharing (default none)
  Network network;                ///< network (default rdma none)
  std::map<std::string, std::string> labels;  ///< labels: node labels, Kubernetes syntax
  std::vector<Taint> taints;                  ///< taints, in template order
  /// The hypervisor file this group plans on (resolved path): its own `hypervisor`, else
  /// spec.hypervisor; "" when neither is set (planning then needs a fleet).
  std::string hypervisor_path;
  /// That topology, loaded; nullptr when hypervisor_path is "". Shared with every group (and the
  /// template) naming the same file.
  std::shared_ptr<const topology::HostTopology> hypervisor;
  /// driver: this group's driver; its unset fields are taken from spec.operators.<vendor>.
  DriverChoice driver;
  /// image: the Glance image of this group's VMs; "" = spec.infrastructure.image.
  std::string image;
  nlohmann::json kubelet;         ///< kubelet: the group's own overrides, checked (an object)
  /// spec.kubelet with the group's kubelet merged over it (MergeKubeletOverrides): what the
  /// generator applies over what it derives. An object.
  nlohmann::json kubelet_merged;
};

/// spec.kubernetesVersion, "v1.33.2".
using kubelet::KubernetesVersion;

/// spec.infrastructure: how the groups' VMs are created (Cluster API on OpenStack, or Magnum).
struct Infrastructure {
  std::string namespace_name = "default";  ///< namespace: where the Cluster API objects go
  /// image: the Glance image of the nodes (CAPO image filter, Magnum --image); default
  /// "ubuntu-2404-kube-<kubernetesVersion>", the name image-builder gives its OpenStack images.
  std::string image;
  std::string ssh_key_name;                ///< sshKeyName: Nova keypair; "" = none
  std::string cloud_name = "openstack";    ///< cloudName: the clouds.yaml entry CAPO uses
  /// identitySecret: the Secret holding clouds.yaml; default "<metadata.name>-cloud-config".
  std::string identity_secret;
  /// networks: Neutron networks of each node's ports, in order; empty = the cluster's network.
  std::vector<std::string> networks;
  std::string failure_domain;  ///< failureDomain: Nova availability zone of the nodes; "" = any
};

/// spec.operators.<name>: where a vendor operator runs and what it installs by default.
struct OperatorSettings {
  std::string namespace_name;  ///< namespace: the operator's namespace (its namespaced objects go there)
  std::string driver_version;  ///< driverVersion: default driver of the groups; "" = the operator's default
};

/// spec.operators: the operators' namespaces and defaults, each defaulted as the vendor's Helm
/// chart installs it.
struct Operators {
  OperatorSettings nvidia{"gpu-operator", ""};              ///< NVIDIA GPU Operator
  OperatorSettings amd{"kube-amd-gpu", ""};                 ///< AMD GPU Operator
  OperatorSettings habana{"habana-ai-operator", ""};        ///< Intel Gaudi Base Operator
  OperatorSettings network{"nvidia-network-operator", ""};  ///< NVIDIA Network Operator (DOCA driver)
  OperatorSettings accel{"accel-system", ""};               ///< accel's node agent (stack: accel)
  OperatorSettings monitoring{"monitoring", ""};            ///< where the Prometheus Operator's objects go
};

/// A loaded cluster template.
struct ClusterTemplate {
  std::string source;    ///< the template file, or the `where` given to ParseClusterTemplateText
  std::string base_dir;  ///< the directory relative paths were resolved against
  std::string name;      ///< metadata.name: DNS-1123 label
  KubernetesVersion kubernetes_version;  ///< spec.kubernetesVersion
  /// spec.flavors, resolved against base_dir, in template order (a directory ends in '/').
  std::vector<std::string> flavor_paths;
  /// Every flavor of those files, in path order (a directory's files in name order), with the
  /// file each came from in flavor_files[i]. Names are unique across files.
  std::vector<placement::Flavor> flavors;
  std::vector<std::string> flavor_files;  ///< parallel to flavors
  std::string aliases_path;  ///< spec.aliases resolved; "" when absent
  /// The alias table; never null (an empty table when spec.aliases is absent).
  std::shared_ptr<const placement::PciAliasTable> aliases;
  std::string hypervisor_path;  ///< spec.hypervisor resolved; "" when absent
  /// spec.hypervisor loaded; nullptr when absent.
  std::shared_ptr<const topology::HostTopology> hypervisor;
  nlohmann::json kubelet;         ///< spec.kubelet: cluster-wide overrides, checked (an object)
  Infrastructure infrastructure;  ///< spec.infrastructure, defaults filled in
  Operators operators;            ///< spec.operators, defaults filled in
  std::vector<NodeGroup> groups;  ///< spec.nodeGroups, in template order (may be empty)

  /// The group's image: its own, else spec.infrastructure.image (never "").
  std::string ImageOf(const NodeGroup& group) const;
  /// The group's driver version: its own driver.version, else its vendor's
  /// spec.operators.<vendor>.driverVersion; "" = the operator's default.
  std::string DriverVersionOf(const NodeGroup& group) const;

  /// The group called `name`, or nullptr.
  const NodeGroup* FindGroup(std::string_view name) const;
  /// The flavor called `name`, or nullptr.
  const placement::Flavor* FindFlavor(std::string_view name) const;
};

/// Reads the template at `path` and everything it names (paths relative to the template's
/// directory). Returns the loaded template. Throws InputError: for the template file itself
/// (unreadable, not YAML/JSON, a duplicate key), InputError(path, key path, what, fix) for any
/// key or combination (see the header comment and docs/schemas.md); errors inside a named
/// file (a flavor, the aliases, a host) name that file.
ClusterTemplate LoadClusterTemplate(const std::string& path);

/// The same for `text` in memory: `where` names it in errors, `base_dir` is where relative
/// paths in it are resolved ("" = the current directory). For tests and fuzzing.
ClusterTemplate ParseClusterTemplateText(std::string_view text, const std::string& where, const std::string& base_dir);

/// The template's words for the enums: "nvidia", "operator", "sriov", "NoSchedule", ...
std::string_view VendorName(Vendor vendor);
std::string_view StackName(Stack stack);
std::string_view RdmaModeName(RdmaMode mode);
std::string_view TaintEffectName(TaintEffect effect);

/// True when `name` is a DNS-1123 label: 1-63 of a-z 0-9 '-', starting and ending with a letter
/// or digit (Kubernetes object names such as a node group's MachineDeployment).
bool IsDns1123Label(std::string_view name);

}  // namespace accel::cluster
