// ClusterApiObjects: how a cluster template's node groups become VMs that join the cluster
// already tuned — Cluster API objects for OpenStack (CAPI + CAPO) per group, and the equivalent
// `openstack coe nodegroup create` lines for Magnum.
//
// Files (StackPart::files), per node group G of cluster C, in namespace
// spec.infrastructure.namespace:
//
//   G/cluster-api.yaml   three documents, applied to the management cluster:
//     MachineDeployment C-G (cluster.x-k8s.io/v1beta2, the CRD's storage version)
//       replicas = count; version = spec.kubernetesVersion; failureDomain when set; with
//       minCount/maxCount the cluster autoscaler's annotations
//       cluster.x-k8s.io/cluster-api-autoscaler-node-group-{min,max}-size (the bound the template
//       leaves out is the count), and at a minimum of 0 the scale-from-zero capacity
//       annotations capacity.cluster-autoscaler.kubernetes.io/{cpu,memory,maxPods,gpu-type,
//       gpu-count,labels,taints} (kubernetes/autoscaler cluster-autoscaler/cloudprovider/
//       clusterapi/README.md). Autoscaled groups with accelerators also get the node label
//       cluster-api/accelerator=<vendor> (same README: it stops the autoscaler from scaling up
//       again while the device plugin has not yet advertised the new node's GPUs).
//     KubeadmConfigTemplate C-G-<hash> (bootstrap.cluster.x-k8s.io/v1beta2)
//       joinConfiguration.nodeRegistration: name '{{ local_hostname }}'; kubeletExtraArgs
//       (v1beta2: a list of {name, value}) cloud-provider=external and
//       provider-id=openstack:///'{{ instance_id }}' as CAPO's own templates write them,
//       node-labels (kNodeGroupLabel=G, the group's labels, the labels the other generators
//       need — `node_labels` — and cluster-api/accelerator), config-dir; taints = the group's.
//       joinConfiguration.patches.directory /etc/kubernetes/patches, and `files` writing there
//       the plan's kubeadm patch (GroupFiles: kubeadm/patches/kubeletconfiguration+strategic.json,
//       applied by kubeadm join from Kubernetes 1.25), the same settings as a kubelet drop-in to
//       /etc/kubernetes/kubelet.conf.d/50-accel.conf (kKubeletConfigDir, passed as --config-dir;
//       from 1.31, where the drop-in directory is beta and on by default on every account —
//       KEP-3983; it outlives a later `kubeadm upgrade node` rewriting
//       /var/lib/kubelet/config.yaml), and the guest's
//       hugepage unit to /etc/systemd/system/accel-guest-hugepages.service, enabled and started
//       by preKubeadmCommands before kubeadm join starts the kubelet. kubeadm cannot set the
//       kernel command line: 1 GiB guest pages reserved at boot by the unit can fall short on a
//       fragmented guest, so an image whose command line already carries
//       hugepages/kernel-cmdline.txt is the sure way (said in the file).
//     OpenStackMachineTemplate C-G-<hash> (infrastructure.cluster.x-k8s.io/v1beta2)
//       flavor and image by name filter (the group's flavor, ClusterTemplate::ImageOf),
//       sshKeyName when set, identityRef {type: Secret, name: identitySecret, cloudName}, one
//       port per spec.infrastructure.networks entry (none: CAPO's default, the cluster network).
//       A group with RDMA (network.rdma) whose flavor passes no RDMA NIC through gets its RDMA
//       NICs as Neutron SR-IOV ports (vnicType direct); the template has no key naming those
//       networks, so the file says which port to add.
//   The two templates are named with a hash of their spec: CAPO refuses changes to an
//   OpenStackMachineTemplate, and a MachineDeployment rolls its machines only when it points at
//   another template — so applying a changed plan creates new templates and rolls the group.
//
//   magnum/nodegroups.sh   `sh magnum/nodegroups.sh [CLUSTER]`: one `openstack coe nodegroup
//     create CLUSTER G --flavor F --image I --node-count N --min-nodes A --max-nodes B --role
//     worker --merge-labels --labels K=V ...` per group (option names of python-magnumclient's
//     magnumclient/osc/v1/nodegroups.py). Fixed-size groups pass min = max = count, so an
//     autoscaler enabled on the cluster leaves them alone (the client's default minimum is 0).
//     One --labels per label: with several, the client splits none of them at ',' or ';'.
//     The node labels ride as Magnum labels (the autoscaler's Magnum provider reads them for
//     scale-from-zero templates), and the `kubelet_options` label — which Magnum's Heat driver
//     appends verbatim to the kubelet's flags — carries --node-labels, --register-with-taints
//     and the kubelet configuration as flags where the kubelet has one (KubeletConfigFlags).
//     What Magnum cannot express (no kubeadm patch or drop-in, no boot unit for hugepages, no
//     extra SR-IOV ports per group; the Cluster API drivers k8s_capi_helm / k8s_cluster_api pass
//     no Magnum label to the kubelet) is written as comments, with the kubectl lines that label
//     and taint the nodes after they joined.
//
// StackPart::node_labels holds the labels this part adds itself (cluster-api/accelerator);
// StackPart::objects every Kubernetes object above, in file order.
//
// Pure functions of their arguments; deterministic output (maps in key order); thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"

namespace accel::cluster {

/// Where the KubeadmConfigTemplate writes the plan's files on a node.
inline constexpr const char* kKubeadmPatchesDir = "/etc/kubernetes/patches";
/// The kubelet's --config-dir on every node accel plans (the kubelet has no default; this is
/// the directory the Kubernetes docs and the CIS benchmark name).
inline constexpr const char* kKubeletConfigDir = "/etc/kubernetes/kubelet.conf.d";
/// The guest hugepage unit's path on a node.
inline constexpr const char* kHugepagesUnitPath = "/etc/systemd/system/accel-guest-hugepages.service";

/// The Cluster API files and the Magnum script of every group of `plan` (see the header comment).
/// `node_labels`: group name -> labels the other generators need on that group's nodes (the
/// vendor stack's nvidia.com/mig.config, ...); groups may be missing.
/// Returns the StackPart. Throws InputError (exit 2, naming the template and key path) when a
/// group's own label contradicts a label the plan sets (kNodeGroupLabel, or one in
/// `node_labels`), when the labels or a file outgrow what the CRDs allow (node-labels 1024
/// characters, a file 10240), or when spec.kubernetesVersion is older than 1.25 (kubeadm join
/// applies no kubelet patch before); std::logic_error when `plan` and `t` do not match or
/// `node_labels` names a group `t` lacks (a caller's bug).
StackPart ClusterApiObjects(const ClusterTemplate& t, const ClusterPlan& plan,
                            const std::map<std::string, NodeLabels>& node_labels);

/// A KubeletConfiguration as kubelet command-line flags, for launchers that take flags only
/// (Magnum's kubelet_options).
struct KubeletFlags {
  /// "--cpu-manager-policy=static", ... in the config's field order; --reserved-memory once per
  /// NUMA node ("--reserved-memory=0:memory=2Gi").
  std::vector<std::string> flags;
  /// Fields with no kubelet flag (or a value the flag cannot hold), in field order; apiVersion
  /// and kind are not listed.
  std::vector<std::string> not_carried;
};

/// The flags of the fields of `config` (a KubeletConfiguration object) that have one: policies
/// and their options, reservedSystemCPUs (--reserved-cpus), kube/systemReserved, evictionHard/
/// Soft ("memory.available<100Mi"), reservedMemory, featureGates, maxPods, cgroupDriver,
/// containerRuntimeEndpoint and a few more. Never throws for an object; a non-object gives
/// nothing.
KubeletFlags KubeletConfigFlags(const nlohmann::json& config);

}  // namespace accel::cluster
