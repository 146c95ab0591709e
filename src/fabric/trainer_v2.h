// Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) objects for the paired GPUs: a
// ClusterTrainingRuntime that carries everything the fabric needs, and a TrainJob that
// references it. Built from the same TrainingSettings as the PyTorchJob (training_env.h), which
// stays the output for clusters running the Training Operator v1.
//
// Trainer's maintainers decline vendor environment injection (kubeflow/trainer#1966), so the
// NCCL env lives in the runtime's pod template, next to IPC_LOCK, /dev/shm, the GPUs and NICs
// (device plugin resources, or a DRA ResourceClaimTemplate) and a torchrun command whose
// per-rank wrapper is inline (a cluster-scoped runtime cannot name a namespaced ConfigMap that
// every namespace would have). Every TrainJob that references the runtime inherits it; the
// TrainJob itself only says image, program (args), nodes and processes per node.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "fabric/training_env.h"

namespace accel::fabric {

/// How each training pod gets its GPUs and RDMA NICs.
enum class ClaimMode {
  /// resources.limits: the GPU resource (nvidia.com/gpu) and the RDMA device plugin's
  /// resource(s) (TrainingOptions::rdma_resource), as the PyTorchJob asks.
  kDevicePlugin,
  /// One ResourceClaim per pod from a ResourceClaimTemplate (DRA, resource.k8s.io/v1) that asks
  /// for GPUs each with its NIC (accel's DRA driver: matchAttribute accel.io/rail). The driver
  /// sets NCCL_IB_HCA for the allocated NICs in the claim's CDI env, so the runtime does not.
  kDra,
};

/// "device-plugin" or "dra".
const char* ClaimModeName(ClaimMode mode);

/// What the Trainer v2 output needs beyond TrainingOptions (whose job_name names the TrainJob,
/// image, nodes, gpu_resource and rdma_resource are used as for the PyTorchJob).
struct TrainerV2Options {
  /// metadata.name of the ClusterTrainingRuntime (cluster-scoped; one per cluster and fabric
  /// setting, shared by many TrainJobs).
  std::string runtime_name = "accel-torch-distributed";
  ClaimMode claims = ClaimMode::kDevicePlugin;
  /// kDra: the ResourceClaimTemplate each pod's claim is made from. It must exist in the
  /// TrainJob's namespace (deploy/kubernetes/dra/ has "gpu-with-nic" and "8-gpus-with-nics").
  std::string claim_template = "8-gpus-with-nics";
};

/// The name the pod's claim has (pod.spec.resourceClaims[].name, container resources.claims).
inline constexpr const char* kTrainerClaimName = "gpus-with-nics";

/// Warnings about the combination, for stderr and the output's comments: a DRA claim template
/// whose name says another GPU count than the pairing has ("8-gpus-with-nics" with 4 GPUs
/// paired), an empty rdma_resource in device plugin mode. Empty when nothing is off.
std::vector<std::string> TrainerV2Warnings(const TrainingSettings& settings,
                                           const TrainingOptions& training,
                                           const TrainerV2Options& options);

/// A ClusterTrainingRuntime (mlPolicy torch, numNodes = training.nodes; replicated job "node"
/// whose container "node" has the pod-wide env of `settings` — minus NCCL_IB_HCA with kDra —,
/// IPC_LOCK, a Memory emptyDir on /dev/shm, the GPUs and NICs per `options.claims`, and the
/// command `torchrun --no-python sh -c WRAPPER accel-rank-env` with args `python
/// /workspace/train.py`), then "---" and a TrainJob (runtimeRef to it, trainer.image,
/// trainer.args, numNodes, numProcPerNode = the paired GPUs). The wrapper sets UCX_NET_DEVICES
/// per LOCAL_RANK: from the pairing table (kDevicePlugin) or from the driver's
/// ACCEL_UCX_NET_DEVICES_<rank> (kDra). Comments at the top explain each part, then the
/// warnings and the pairing's notes. Never throws; names are not checked here (the CLI does).
std::string RenderTrainerV2(const TrainingSettings& settings, const TrainingOptions& training,
                            const TrainerV2Options& options);

}  // namespace accel::fabric
