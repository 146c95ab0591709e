// NetworkStack: what gives a node group's pods its RDMA NICs — the NVIDIA Network Operator's
// objects — and, for groups whose guests hold GPUs and RDMA NICs, the guest's NCCL topology file
// and NCCL settings. One of the generators of `accel cluster plan` (stack_part.h).
//
// Network Operator objects (mellanox.com/v1alpha1; shared/reference/platform.md §3.4, CRDs in
// shared/crds/nvidia-network-operator). The rule that keeps the operator's "no overlaps" promise:
//   - one NicClusterPolicy "nic-cluster-policy" (the operator's singleton) holds only the
//     cluster-wide pieces no node group configures differently: Multus and the CNI plugins
//     (secondaryNetwork) and nv-ipam, run on the RDMA groups' nodes (nodeAffinity on
//     accel.io/node-group) with their taints tolerated;
//   - one NicNodePolicy "<group>-rdma" per RDMA group holds everything per group: the device
//     plugin of the group's mode with the group's config, and the DOCA driver (ofedDriver) when
//     spec.operators.network.driverVersion is set and the group's NICs are all ConnectX/BlueField
//     (vendor 15b3; DOCA drives nothing else). Its nodeSelector is accel.io/node-group=<group>,
//     and no two groups share a value of that label, so no two policies select one node; and no
//     section sits in both kinds (the operator's webhook refuses a section in both).
//   NicNodePolicy was added to the operator in 2026-03 (platform.md §3.4): older releases know
//   only NicClusterPolicy.
//
// The guest's view. A node-group VM sees its NICs as whole PCI functions (a host VF is a plain
// function in the guest, with no PF beside it), so inside the guest:
//   - rdma: sriov → the SR-IOV network device plugin hands each function to one pod: resource
//     nvidia.com/<group>_rdma (group name with '-' → '_', the plugins allow [A-Za-z0-9_] only),
//     selected by vendor and device id, isRdma; plus a HostDeviceNetwork "<group>-rdma" that moves
//     the function's netdev into the pod (host-device CNI) with nv-ipam pool "<group>-rdma" —
//     the IPPool itself (nv-ipam.nvidia.com) is the operator's to create: accel does not know the
//     RDMA subnet, and its CRD is not in shared/crds;
//   - rdma: shared → the RDMA shared device plugin shares all the group's NICs: resource
//     rdma/<group>_shared (rdmaHcaMax pods per node), selected by vendor and device ids. The pod
//     network on it (MacvlanNetwork over the guest's netdev for RoCE, IPoIBNetwork for
//     InfiniBand) names a netdev the guest names at boot, so it is not generated.
//   The vendor/device-id selectors are used, not fabric/network_configs.h's per-rail selectors
//   (rootDevices, pciAddresses, ifNames): those name the host's PCI addresses and netdevs, which
//   the guest does not have, and its netdev names are unknown before it boots. Resource prefix,
//   rdmaHcaMax, image repository and version are network_configs.h's NetworkConfigOptions
//   defaults, so the two generators stay one source.
//   Groups of vendor habana get no Network Operator objects: a Gaudi's RoCE ports belong to the
//   HPU and reach pods with habana.ai/gaudi. A group whose flavor passes no RDMA NIC gets none
//   either (the policy header says why).
//
// NCCL topology ("<group>/nccl/nccl-topo.xml", nvidia and amd groups with GPUs and RDMA NICs):
// fabric::WriteNcclTopologyXml — what `accel fabric topo-xml` writes — on the group's
// hypervisor, its GPU↔NIC pairing restricted to the NICs the guest holds, and the guest's PCI
// addresses. Those are known before the guest boots because accel's libvirt XML fixes them:
// each device sits behind root port k of its guest cell's pcie-expander-bus with busNr B, which
// both SeaBIOS and OVMF number bus B+1+k (fabric/guest_topology.h; placement/libvirt_pci_layout.h
// chooses B and k). GuestPciView computes them exactly as that layout does. A guest booted with
// pci=assign-busses, or a device hot-plugged later, differs: then run `accel fabric topo-xml` on
// the running domain (`virsh dumpxml`). A device without a guest cell (no expander) has no fixed
// address and is left out of the file; NCCL then adds it from its own (flat) view.
// "<group>/nccl/nccl.env": NCCL_TOPO_FILE and the settings fabric::BuildTrainingSettings
// recommends for that pairing, as NAME=value lines (`kubectl create configmap --from-env-file`),
// without NCCL_IB_HCA: in the guest the only RDMA devices are the group's NICs (a pod sees only
// those its device plugin gave it), their mlx5_N names are assigned at boot, and the topology
// file already pairs each GPU with its NIC by PCI address.
//
// Pure functions over a loaded template and its plan; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kubelet/guest_layout.h"
#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"
#include "fabric/guest_topology.h"

namespace accel::cluster {

/// Where nccl.env's NCCL_TOPO_FILE points: mount nccl-topo.xml there in the training container.
inline constexpr const char* kGuestNcclTopoPath = "/etc/nccl/nccl-topo.xml";

/// The devices of `layout` that pods get as RDMA NICs: role nic with RDMA (an RDMA NIC or a VF
/// of one), in layout order. Pointers into `layout`.
std::vector<const kubelet::GuestDevice*> RdmaNicsOf(const kubelet::GuestLayout& layout);

/// The extended resource a pod of `group` requests for an RDMA NIC: "nvidia.com/<g>_rdma" for
/// rdma: sriov, "rdma/<g>_shared" for rdma: shared (g = the group name with '-' → '_'); "" for
/// rdma: none.
std::string RdmaResourceName(const NodeGroup& group);

/// The guest's PCI view of `layout`, as fabric::ReadLibvirtDomain would read it from the domain
/// accel writes for it (placement/libvirt_domain.h with PCI expander buses): per device its host
/// address, guest address ("" when the device has no guest cell, hence no fixed address, or the
/// layout's devices carry no guest cells; a note says which) and guest cell; the guest cells'
/// vCPUs and host nodes. Throws InputError when the layout cannot be laid out on expander buses
/// (a device in a cell the layout lacks, more than 32 devices in one cell).
fabric::GuestDeviceMap GuestPciView(const kubelet::GuestLayout& layout);

/// The Network Operator objects and NCCL files of every group of `plan` (each group's settings
/// from `t`, matched by name). Files:
///   stack/network/nic-cluster-policy.yaml        when at least one group gets a NicNodePolicy
///   <group>/network/nic-node-policy.yaml         rdma sriov|shared, vendor nvidia|amd|none, NICs
///   <group>/network/host-device-network.yaml     rdma sriov, as above
///   <group>/nccl/nccl-topo.xml, <group>/nccl/nccl.env   nvidia|amd groups with GPUs and RDMA NICs
/// No node labels (the policies select accel.io/node-group, which the plan sets). Deterministic.
/// Throws InputError when a plan group is not in `t` (a caller's mix-up), or from GuestPciView
/// and fabric (a topology the pairing refuses).
StackPart NetworkStack(const ClusterTemplate& t, const ClusterPlan& plan);

}  // namespace accel::cluster
