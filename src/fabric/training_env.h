// Settings a training pod or rank needs for its GPUs: NCCL's pod-wide environment, UCX's
// per-rank NIC, and a Kubeflow PyTorchJob / pod-spec fragment (env, IPC_LOCK, /dev/shm, the
// RDMA resources to request). Built from a Fabric (pairing.h); pure functions, thread-safe.
//
// NCCL picks each GPU's NIC itself from the PCI topology, so it only needs to be told which
// NICs exist for training (NCCL_IB_HCA, exact names) and how the cluster is wired
// (NCCL_CROSS_NIC). UCX does not pair by topology, so every rank gets its own
// UCX_NET_DEVICES; torchrun sets LOCAL_RANK per process, and a small wrapper script
// (RenderRankWrapper) maps it to the rank's NIC before exec'ing the training program.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fabric/nic_ports.h"
#include "fabric/pairing.h"

namespace accel::fabric {

/// How the cluster's fabric is built, as far as NCCL needs to know.
struct TrainingOptions {
  /// NCCL_SOCKET_IFNAME: the bootstrap interface (pod network), e.g. "eth0"; "" = leave unset.
  /// Written with NCCL's exact-match prefix "=" unless it already starts with '=' or '^'.
  std::string socket_ifname = "eth0";
  /// Rail-optimised fabric (NIC k of every node on rail k): "rail" → NCCL_CROSS_NIC=0;
  /// "any" (rails interconnected, fat tree) → 1; "auto" → leave NCCL's default (2).
  /// Anything else is treated as "auto" with a warning.
  std::string fabric_design = "auto";
  /// NCCL_TOPO_FILE path to emit; "" = none (bare metal with a true PCI tree).
  std::string topo_file;
  /// RoCE traffic class (NCCL_IB_TC) for lossless Ethernet; -1 = leave unset.
  int ib_tc = -1;
  /// Resource name an RDMA NIC is requested by in the pod spec, e.g. "rdma/rdma_shared_device_a"
  /// (one of it), or a per-rail pattern with "%d" such as "nvidia.com/rdma_rail%d" (one of
  /// each rail 0..N-1, N = NICs in use; the names network_configs.h generates); "" = none.
  std::string rdma_resource;
  /// Accelerator resource, e.g. "nvidia.com/gpu"; "" = derived from accelerator_vendor.
  std::string gpu_resource;
  /// Vendor of the GPUs as topology::AcceleratorVendor names it ("nvidia", "amd", "habana"):
  /// picks UCX's GPU transports (cuda_* or rocm_*) and the default GPU resource.
  std::string accelerator_vendor = "nvidia";
  /// Name of the PyTorchJob (metadata.name). The container itself is always called "pytorch":
  /// the training operator finds the container it injects MASTER_ADDR etc. into by that name.
  std::string job_name = "train";
  /// Container image of the PyTorchJob; "" = a placeholder to replace.
  std::string image;
  /// Nodes (pods) of the job: one Master plus nodes-1 Workers, each with all paired GPUs.
  int nodes = 2;
  /// Add NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH,NET (first bring-up).
  bool debug = false;
  /// The machine's RDMA ports (ReadNicPorts), used to check RoCE ports for a RoCE v2 GID;
  /// empty = unknown (no GID check).
  std::vector<NicPort> ports;
};

/// One environment variable with why it is set.
struct EnvVar {
  std::string name;
  std::string value;
  std::string why;  ///< one line for comments / JSON, e.g. "exact HCA list: 8 compute NICs"
};

/// Settings of one rank (one GPU).
struct RankSettings {
  int local_rank = 0;  ///< index into the pod's GPUs (LOCAL_RANK)
  std::string gpu_address;
  std::vector<EnvVar> env;  ///< UCX_NET_DEVICES=mlx5_0:1; empty when the GPU has no NIC
};

/// Everything a pod needs.
struct TrainingSettings {
  std::vector<EnvVar> env;          ///< pod-wide: NCCL_IB_HCA, NCCL_SOCKET_IFNAME, ...
  std::vector<RankSettings> ranks;  ///< one per paired GPU
  /// What may hurt: "GPU 0000:1b:00.0 reaches its NIC mlx5_0 only through SYS: ...".
  std::vector<std::string> warnings;
  /// The pairing's own facts (Fabric::notes), for the record: "NICs outside ... left out".
  std::vector<std::string> notes;
  /// The NICs the pairs use, each once, PCI order (NCCL_IB_HCA's list), as "mlx5_0:1".
  std::vector<std::string> hcas;
};

/// Builds the settings for the GPUs of `fabric` (all its pairs). NCCL_IB_HCA is "=" + the exact
/// used NIC list "mlx5_0:1,mlx5_3:1,..." (PCI order); RoCE leaves NCCL_IB_GID_INDEX to NCCL's
/// auto-selection and warns when a port has no RoCE v2 GID. Pod-wide: CUDA_DEVICE_ORDER
/// (NVIDIA; LOCAL_RANK k must be the k-th GPU in PCI order, the order of the pairs), NCCL_*,
/// UCX_TLS; per rank: UCX_NET_DEVICES. Never throws.
TrainingSettings BuildTrainingSettings(const Fabric& fabric, const TrainingOptions& options);

/// `export NAME=value` lines (shell-quoted), pod-wide first, with "# why" comments (warnings
/// and notes as comments too); per-rank variables as a `case "$LOCAL_RANK" in` block a
/// torchrun wrapper can source.
std::string RenderEnvShell(const TrainingSettings& settings);

/// JSON: {"env": {...}, "why": {...}, "ranks": [{"local_rank", "gpu", "env": {...}}],
/// "warnings": [...], "notes": [...]}.
std::string RenderEnvJson(const TrainingSettings& settings);

/// A POSIX sh wrapper for `torchrun --no-python WRAPPER PROGRAM ARGS...`: exports the per-rank
/// variables of $LOCAL_RANK, then exec's its arguments. Ends with a newline.
std::string RenderRankWrapper(const TrainingSettings& settings);

/// A ConfigMap "<job>-rank-env" holding RenderRankWrapper as rank-env.sh, then a Kubeflow
/// PyTorchJob (kubeflow.org/v1) whose Master and Worker templates carry the pod-wide env,
/// securityContext.capabilities.add [IPC_LOCK], a Memory emptyDir on /dev/shm, the wrapper
/// mounted at /etc/accel, resources.limits for the GPUs and the RDMA resource(s), and a
/// torchrun command that runs through the wrapper; comments at the top explain each part.
/// Two YAML documents separated by "---".
std::string RenderPyTorchJob(const TrainingSettings& settings, const Fabric& fabric,
                             const TrainingOptions& options);

/// The device plugin resources a pod of `settings` asks for, in order: the accelerator
/// (options.gpu_resource, else the vendor's: nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi) ×
/// the paired GPUs, then the RDMA resource × 1, or with a "%d" pattern one of each rail
/// 0..hcas-1. Shared by the PyTorchJob and the Trainer v2 runtime.
std::vector<std::pair<std::string, int>> DevicePluginResources(const TrainingSettings& settings,
                                                               const TrainingOptions& options);

}  // namespace accel::fabric
