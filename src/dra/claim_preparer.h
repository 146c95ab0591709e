// ClaimPreparer: accel's NodePrepareResources / NodeUnprepareResources (the ClaimHandler the
// DRA gRPC service calls). For one claim:
//   Prepare   — checkpoint hit: the same answer, no API read (idempotent across restarts);
//               else read the claim from the API server (fetch_claim), take our driver's
//               allocation results, find each device in the node's inventory, write the claim's
//               CDI spec (cdi_spec.h: device nodes per device; claim-wide the vendors'
//               visible-devices lists and the NCCL/UCX env of ClaimNcclEnv), record it in the
//               checkpoint, and answer the devices with their CDI ids.
//   Unprepare — remove the CDI spec, then the checkpoint entry; an unknown claim is success.
// Every failure is that claim's error string (the kubelet retries it); other claims are not
// affected, and nothing half-written stays in the CDI directory (the spec is written
// atomically, and removed again when the checkpoint cannot be written).
//
// NCCL wired at allocation (ClaimNcclEnv): a claim with accelerators and RDMA NICs gets, in its
// CDI spec's containerEdits env, what fabric/training_env.h computes for a Fabric restricted to
// the claim's GPUs and NICs: NCCL_IB_HCA ("=mlx5_0:1,mlx5_3:1": the NICs paired with the claim's
// GPUs, PCI order, then any other NIC of the claim), NCCL_SOCKET_IFNAME, NCCL_CROSS_NIC /
// NCCL_IB_TC when configured, NCCL_TOPO_FILE (and its mount) when a topo file is configured
// (inside a VM, whose PCI tree is not the host's), UCX_TLS, CUDA_DEVICE_ORDER, and
// NCCL_NET_GDR_LEVEL from the measured GPU→NIC paths. UCX does not pair by topology and CDI env
// is container-wide, so the per-rank UCX_NET_DEVICES become ACCEL_UCX_NET_DEVICES_<local rank>
// (rank k = the claim's k-th GPU in PCI order, as CUDA_DEVICE_ORDER=PCI_BUS_ID numbers them);
// a rank wrapper (training_env.h's RenderRankWrapper does the same with its own table) picks
// its own before exec'ing the program:
//     eval "export UCX_NET_DEVICES=\${ACCEL_UCX_NET_DEVICES_${LOCAL_RANK}}"
// A claim with only GPUs or only NICs gets no NCCL env: with GPUs only the claim says nothing
// about the network (the pod may get its NICs from another claim or a device plugin, and an
// NCCL_IB_HCA naming none of them would turn RDMA off); NICs alone have no GPU to pair with.
// Gaudi claims get none either: HCCL uses the HPUs' own RoCE ports, not NCCL.
//
// Thread-safe: Prepare/Unprepare of different claims run concurrently (one mutex per claim
// uid serialises calls for the same claim); SetInventory may be called at any time (a Prepare
// in flight keeps the inventory it started with).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/cdi_spec.h"
#include "dra/checkpoint.h"
#include "dra/claim_allocation.h"
#include "dra/claim_types.h"
#include "dra/inventory.h"

namespace accel::dra {

/// How NCCL is wired into claims with GPUs and NICs.
struct NcclOptions {
  /// Wire NCCL/UCX env at all (a claim's parameters may still turn it off for that claim).
  bool enabled = true;
  /// NCCL_SOCKET_IFNAME (bootstrap over the pod network); "" = leave unset. A claim's
  /// ncclSocketIfname parameter overrides it. '=' is prepended as training_env.h does.
  std::string socket_ifname = "eth0";
  /// "rail" → NCCL_CROSS_NIC=0, "any" → 1, "auto" → unset (training_env.h).
  std::string fabric_design = "auto";
  /// NCCL_IB_TC for RoCE; −1 = unset.
  int ib_tc = -1;
  /// Add NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS.
  bool debug = false;
  /// Host path of an NCCL topology XML (inside a VM: fabric/guest_topology.h writes one);
  /// mounted read-only at topo_file_container_path and named by NCCL_TOPO_FILE. "" = none.
  std::string topo_file;
  std::string topo_file_container_path = "/etc/accel/nccl-topo.xml";
  /// Set NCCL_NET_GDR_LEVEL from the claim's pairs: the worst GPU→NIC path when every pair is
  /// within NCCL's GPUDirect ceiling (PIX or PXB), else PXB (GPUDirect RDMA kept for the pairs
  /// that have it, off for the rest: raising it past PXB makes traffic cross the CPU).
  bool gdr_level = true;
};

/// Claim-wide env and mounts for NCCL.
struct ClaimNccl {
  std::vector<std::pair<std::string, std::string>> env;  ///< in order
  std::vector<kube::MountSpec> mounts;
  /// Why nothing was set, warnings of training_env.h (a SYS pair, mixed link layers), notes.
  std::vector<std::string> notes;
};

/// The NCCL wiring of a claim holding `devices` (of `inventory`), as described above.
/// `parameters` are the claim's own (nccl off, socket ifname). Never throws.
ClaimNccl ClaimNcclEnv(const Inventory& inventory, const std::vector<const DraDevice*>& devices,
                       const NcclOptions& options, const ClaimParameters& parameters = {});

/// What a ClaimPreparer does and where.
struct PreparerOptions {
  /// Where CDI specs go (the runtime's CDI spec dirs: /etc/cdi and /var/run/cdi by default).
  std::string cdi_dir = "/var/run/cdi";
  /// The driver's state: checkpoint.json.
  std::string state_dir = "/var/lib/accel/dra";
  DeviceNodeOptions device_nodes;
  NcclOptions nccl;
  /// Called after every Prepare with the claim, its wall time and its answer (for p50/p99;
  /// may be empty). Called without the preparer's locks held.
  std::function<void(const ClaimRef&, std::chrono::nanoseconds, const PrepareResult&)>
      on_prepare;
};

/// Counters since construction.
struct PreparerStats {
  uint64_t prepared = 0;         ///< Prepare calls that succeeded (fresh or from checkpoint)
  uint64_t from_checkpoint = 0;  ///< of those, answered from the checkpoint
  uint64_t failed = 0;           ///< Prepare calls that answered an error
  uint64_t unprepared = 0;       ///< Unprepare calls that succeeded
  uint64_t fetches = 0;          ///< fetch_claim calls
};

class ClaimPreparer : public ClaimHandler {
 public:
  /// GET /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>: the claim object;
  /// throws (any std::exception) on API errors, whose what() becomes the claim's error.
  using FetchClaim = std::function<nlohmann::json(const ClaimRef&)>;
  using Log = std::function<void(const std::string&)>;

  /// Loads the checkpoint from options.state_dir (a corrupt file is logged and set aside).
  /// `inventory` must not be null. `log` may be empty.
  ClaimPreparer(std::shared_ptr<const Inventory> inventory, FetchClaim fetch_claim,
                PreparerOptions options, Log log = {});

  /// Replaces the inventory (devices changed). Claims prepared before keep their specs.
  void SetInventory(std::shared_ptr<const Inventory> inventory);

  PrepareResult Prepare(const ClaimRef& claim) override;
  std::string Unprepare(const ClaimRef& claim) override;

  /// The claims prepared now (the checkpoint's entries).
  std::map<std::string, CheckpointEntry> Prepared() const { return checkpoint_.Entries(); }
  PreparerStats stats() const;

 private:
  PrepareResult PrepareLocked(const ClaimRef& claim);
  std::string UnprepareLocked(const ClaimRef& claim);
  std::shared_ptr<std::mutex> ClaimMutex(const std::string& uid);
  std::shared_ptr<const Inventory> CurrentInventory() const;
  void Say(const std::string& line) const;

  FetchClaim fetch_claim_;
  PreparerOptions options_;
  Log log_;
  Checkpoint checkpoint_;

  mutable std::mutex mu_;  // guards inventory_, claim_mutexes_, stats_
  std::shared_ptr<const Inventory> inventory_;
  std::map<std::string, std::shared_ptr<std::mutex>> claim_mutexes_;
  PreparerStats stats_;
};

}  // namespace accel::dra
