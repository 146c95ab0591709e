// A node group's node as its kubelet sees it: the extended resources the group's device plugins
// advertise (as `accel cluster plan`'s vendor and network stacks configure them), and the
// kubelet::KubeletNode of a group's plan — what `accel cluster pods` and `accel cluster check`
// admit pods on.
//
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "cluster/plan.h"
#include "cluster/template.h"
#include "kubelet/guest_layout.h"
#include "kubelet/node.h"

namespace accel::cluster {

/// The extended resources the device plugins of `group` advertise on one of its nodes, whose guest
/// is `layout` (`t` decides the GPU Operator's cluster-wide MIG strategy). The names and rules are
/// those the vendor and network stacks of `accel cluster plan` configure (vendor_stack.h,
/// network_stack.h):
///   - GPUs/HPUs of the group's vendor: nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi; NVIDIA MIG
///     (NVIDIA's default mig-parted configs all-disabled, all-enabled, all-balanced, all-<profile>,
///     laid out per GPU model by sharing::DefaultMigConfig) as nvidia.com/gpu under MIG strategy
///     single (GPU Operator groups when every NVIDIA operator group's config is uniform; accel agent
///     groups with all-<profile>) or nvidia.com/mig-<profile> under mixed; time-slicing or MPS
///     replicas multiply the shared resource (renamed <name>.shared with renameByDefault;
///     failRequestsGreaterThanOne caps a container at 1). Every device and replica reports its
///     GPU's guest cell (NVIDIA's plugin copies the parent's topology to MIG devices and replicas;
///     that AMD's and Habana's plugins report the NUMA node is assumed, unconfirmed — if they do
///     not, the kubelet admits more than accel predicts, never less).
///   - RDMA NICs (network_stack.h's RdmaNicsOf; vendor not habana) under RdmaResourceName: rdma
///     sriov, one per NIC on its cell (the SR-IOV device plugin reports the NUMA node); rdma
///     shared, rdmaHcaMax (63) for the node without a NUMA node (the RDMA shared device plugin
///     reports none, shared/reference/fabric-doctor.md §3.2).
/// Throws InputError (template, spec.nodeGroups[i].sharing.mig) for a MIG config other than those
/// names, or a MIG config on GPUs accel's MIG catalog does not know.
std::vector<kubelet::NodeResource> AdvertisedResources(const ClusterTemplate& t, const NodeGroup& group,
                                              const kubelet::GuestLayout& layout);

/// The node of `plan` (PlanCluster's plan of `group`) with the group's advertised resources.
kubelet::KubeletNode KubeletNodeOf(const ClusterTemplate& t, const NodeGroup& group, const GroupPlan& plan);

}  // namespace accel::cluster
