// PodAsk: what a Kubernetes pod asks of the fleet — the contract between pods and accel's
// scheduler extender (fleet/scheduler_extender.h), read from the v1.Pod kube-scheduler sends.
//
// The contract (docs/fleet-kubernetes.md says it for users):
//   whole GPUs  nvidia.com/gpu, amd.com/gpu or habana.ai/gaudi: N in the containers' limits (or
//               requests; Kubernetes makes them equal for extended resources). Only GPUs of that
//               vendor (PCI vendor 10de, 1002, 1da3) are given; 1..64 per pod.
//   a share     accel.dev/gpu-milli: N in the limits: N thousandths of one GPU (1..1000), a
//               time-slicing/MPS share. kube-scheduler is told to leave this resource to the
//               extender (managedResources with ignoredByScheduler: true) and the kubelet admits a
//               pod asking for an extended resource its node does not advertise (it drops those
//               before its resource check), so the pod runs on whatever the node's device plugin
//               gives; the fleet's claim holds the share.
//   a MIG slice nvidia.com/mig-PROFILE: 1 (the resource names of NVIDIA's device plugin under the
//               mixed MIG strategy): one GPU instance of PROFILE on an NVIDIA GPU whose model has
//               it (the MIG catalog, through a MigShapeResolver).
//   models      annotation accel.dev/gpu-models: "H100|A100": any of these, as GpuModelMatches
//               reads them (a word of the model name, the whole name, or the PCI ids vvvv:dddd).
//   CPU, memory requests.cpu in thousandths and requests.memory in MiB (rounded up), plus
//               spec.overhead's, as kube-scheduler counts them: the charge on the host's shared
//               CPU and memory.
// Every amount is the pod's effective value as kube-scheduler computes it (KEP-753: the larger of
// the app containers plus sidecars summed, and any one init container plus the sidecars started
// before it), read with kubelet/pod.h.
//
// A pod that asks for none of the GPU forms is not accel's (PodAsk::accel() false): the extender
// passes it through. A pod that uses the forms wrongly (a share above 1000, two forms at once, a
// MIG slice count other than 1, a pod kubelet/pod.h cannot read) is accel's and `refused` says
// why: no node takes it, and the reason is what the pod's events show.
//
// Pure functions over their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/fleet_view.h"
#include "placement/request.h"

namespace accel::fleet {

/// The resource of a share, in thousandths of one GPU.
inline constexpr const char* kGpuMilliResource = "accel.dev/gpu-milli";
/// The annotation that names the GPU models a pod may get ("H100|A100").
inline constexpr const char* kGpuModelsAnnotation = "accel.dev/gpu-models";

/// A MIG profile's shape on each GPU model that has it (placement::GpuRequest::mig_shapes), from
/// the MIG catalog; empty when no model has the profile.
using MigShapeResolver = std::function<std::vector<placement::MigShape>(const std::string& profile)>;

/// What one pod asks of the fleet.
struct PodAsk {
  std::string ns;    ///< metadata.namespace
  std::string name;  ///< metadata.name
  std::string uid;   ///< metadata.uid
  int gpu_count = 0;          ///< whole GPUs; 0 = none
  uint16_t vendor_id = 0;     ///< the PCI vendor whole GPUs and MIG slices must have; 0 = any
  std::string gpu_resource;   ///< the resource the GPUs were asked by ("nvidia.com/gpu"), for messages
  int gpu_milli = 0;          ///< a share of one GPU in thousandths; 0 = none
  std::string mig_profile;    ///< a MIG slice of this profile; "" = none
  std::vector<std::string> models;  ///< from accel.dev/gpu-models; empty = any model
  int64_t cpu_milli = 0;      ///< CPU thousandths
  uint64_t memory_mib = 0;    ///< memory in MiB
  /// Why no node can take the pod as it asks (it breaks the contract above); "" = it does not.
  std::string refused;

  /// Whether the extender judges the pod (it asks for GPUs in one of the forms above).
  bool accel() const { return gpu_count > 0 || gpu_milli > 0 || !mig_profile.empty() || !refused.empty(); }
  /// "pod/NAMESPACE/NAME": the flavor of the pod's claim.
  std::string flavor() const { return "pod/" + ns + "/" + name; }
};

/// Reads the pod's ask. Throws InputError ("pod: metadata.uid: is missing") when `pod` lacks the
/// metadata.name, metadata.namespace or metadata.uid every pod kube-scheduler sends has; a pod
/// that breaks the contract is answered in PodAsk::refused, not thrown.
PodAsk ReadPodAsk(const nlohmann::json& pod);

/// The request the fleet places for `ask` (accel() true, refused ""): flavor "pod/NS/NAME", CPU
/// thousandths and memory, and a GpuRequest. The models of a whole-GPU or MIG request are the
/// PCI ids ("10de:2330") of the view's accelerators of the pod's vendor that match `ask.models`;
/// a share keeps ask.models as given. Returns nullopt and sets *why when nothing in the fleet can
/// ever take it: no accelerator of that vendor and models, or a MIG profile no model has (or no
/// `mig_shapes` resolver).
std::optional<placement::PlacementRequest> PodPlacementRequest(const PodAsk& ask, const FleetView& view,
                                                               const MigShapeResolver& mig_shapes, std::string* why);

}  // namespace accel::fleet
