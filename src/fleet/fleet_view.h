// FleetView: the fleet in memory, as a scheduler ranks and fits it — every host with its
// record, its hardware (one shared HostTopology per SKU, however many hosts have it), what its
// live claims hold, and the counts that let a scheduler skip or rank a host without running the
// placement engine on it.
//
// Built from a FleetSnapshot; kept current by Refresh (a service polls the store) and by Apply
// (a scheduler's own working copy, e.g. while placing --count N). 10,000 hosts of a few SKUs
// cost one topology per SKU plus, per host, its record, its usage and a few counters.
//
// Beside each host the view keeps a RankRow: the few numbers a scheduler reads of every host in
// every decision (free accelerators as a bitmask, free pinnable CPUs, flags, a staleness deadline
// and an interned state id), contiguous in one vector. A decision over 10,000 hosts then walks
// one array instead of 10,000 HostEntry objects spread over the heap (docs/benchmarks.md,
// "Where a decision's time goes": 10 ms before, about 1 ms after).
//
// Not synchronized: one writer; concurrent readers only while nobody writes.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleet/fleet_store.h"
#include "fleet/gpu_policy.h"
#include "fleet/host_record.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::fleet {

/// Counts of a host under its usage, for skipping and ranking it cheaply.
struct HostSummary {
  int free_accelerators = 0;        ///< GPUs/HPUs no claim holds
  int total_accelerators = 0;       ///< GPUs/HPUs of the hardware
  int whole_free_accelerator_nodes = 0;  ///< nodes with accelerators, all of them free
  int free_pinnable_cpus = 0;       ///< dedicated-set CPUs nobody holds, all nodes
  int total_pinnable_cpus = 0;      ///< dedicated-set CPUs, all nodes
  /// Per node (numa_nodes order): free accelerators; and whether some are free and some held.
  std::vector<int> node_free_accelerators;
  std::vector<bool> node_partly_used;
  bool has_partly_used_node = false;  ///< some node_partly_used entry is true
  bool idle = true;                 ///< no claim holds anything on the host
  /// For requests with GPUs by model and size and pod CPU (fleet/gpu_policy.h): free and total
  /// shared CPU (thousandths) and floating memory, and each accelerator's state. `allowed`,
  /// `gpu_shapes` and `hardware` are left for the scheduler to set.
  ShareHostState share;
};

struct HostEntry {
  HostRecord record;
  std::shared_ptr<const topology::HostTopology> hardware;  ///< shared by hosts of one SKU
  placement::HostUsage usage;       ///< sum of its live claims
  std::vector<std::string> claims;  ///< ids of its live claims, oldest first
  /// Its live claims by GPU shape: whole GPUs by count, 0 for a share or MIG slice (claims
  /// without GPUs by model and size are not counted). What GpuPolicy::kClustering reads.
  std::map<int, int> gpu_shapes;
  HostSummary summary;              ///< counts of hardware under usage and policy
  /// Identifies (hardware, policy, usage): two hosts with the same key get the same answer
  /// from the placement engine, so a scheduler asks once per key.
  std::string usage_key;
};

/// Counts `p` in a host's gpu_shapes (HostEntry::gpu_shapes) with `sign` +1 (claimed) or -1.
void CountGpuShape(const placement::Placement& p, int sign, std::map<int, int>* shapes);

/// Computes summary and usage_key of `entry` from its hardware, policy and usage.
void Summarize(HostEntry* entry);

/// One piece of hardware (a SKU) of the view, with its accelerators in a fixed order: bit j of
/// RankRow::free_accelerator_mask is accelerators[j].
struct HardwareInfo {
  std::shared_ptr<const topology::HostTopology> topology;
  std::vector<const topology::PciDevice*> accelerators;  ///< the hardware's GPUs/HPUs, PCI order
  std::vector<int> accelerator_node;  ///< index in numa_nodes of each, -1 when not known
  /// accelerators.size() <= 64: the masks describe every accelerator. Otherwise schedulers
  /// count free devices from HostEntry::usage instead.
  bool masks_complete = true;
};

/// Identifies an interned (hardware, policy, usage) state; kNoState for a host copy the view
/// does not hold (a scheduler's working copy).
inline constexpr uint32_t kNoState = std::numeric_limits<uint32_t>::max();

/// What a scheduler reads of one host in every decision; FleetView keeps one per host, in
/// hosts() order.
struct RankRow {
  uint64_t free_accelerator_mask = 0;  ///< bit j: HardwareInfo::accelerators[j] is free
  uint64_t name_hash = 0;              ///< FNV-1a of the host name: seeded tiebreaks mix it
  /// Unix second after which the host is stale (no heartbeat); INT64_MAX when it never goes stale.
  int64_t stale_after_unix = std::numeric_limits<int64_t>::max();
  int free_accelerators = 0;           ///< HostSummary::free_accelerators
  int free_pinnable_cpus = 0;          ///< HostSummary::free_pinnable_cpus
  uint32_t state = kNoState;           ///< equal ids: same hardware, policy and usage (same engine answers)
  uint32_t hardware = 0;               ///< index in FleetView::hardware()
  bool enabled = false;                ///< admin state is enabled
  bool partly_used_node = false;       ///< HostSummary::has_partly_used_node
  bool idle = true;                    ///< HostSummary::idle
};

class FleetView {
 public:
  FleetView() = default;
  /// Builds the view of a snapshot. Throws InputError when a claim names a host's CPUs twice
  /// (a store that fails Audit).
  static FleetView FromSnapshot(const FleetSnapshot& snapshot);

  FleetView(const FleetView&) = default;
  FleetView(FleetView&&) = default;
  FleetView& operator=(const FleetView&) = default;
  FleetView& operator=(FleetView&&) = default;

  /// Every host, sorted by name (byte order, whatever order the store returned them in).
  const std::vector<HostEntry>& hosts() const { return hosts_; }
  /// One row per host, in hosts() order.
  const std::vector<RankRow>& rows() const { return rows_; }
  /// The distinct hardware of the view; RankRow::hardware indexes it. Entries are never removed
  /// while the view lives (a fleet has a few SKUs; a host's new hardware adds one).
  const std::vector<HardwareInfo>& hardware() const { return hardware_; }
  /// An upper bound of the state ids in rows(): a scheduler sizes per-state tables with it.
  /// Ids of states no host has any more are reused, so it stays at most hosts().size() plus
  /// the ids freed since.
  size_t state_id_bound() const { return state_refs_.size(); }
  /// The row of `entry` (a copy of one of this view's hosts, changed by the caller), with
  /// state = kNoState. Its hardware must be one of the view's.
  RankRow RowOf(const HostEntry& entry) const;
  /// The host named `name`, or nullptr.
  const HostEntry* Find(const std::string& name) const;
  /// Index of `name` in hosts(), or -1.
  int IndexOf(const std::string& name) const;

  /// Adds what `p` holds to host `index` (a placement the caller made on this view), bumping
  /// the view's generation of it by one, as a stored claim does. Returns "" or the conflict.
  std::string Apply(size_t index, const placement::Placement& p);
  /// Removes what `p` holds from host `index` (a placement applied to it before: a claim that
  /// left), bumping its generation by one, as a stored release does.
  void Release(size_t index, const placement::Placement& p);

  /// Replaces the host named entry.record.name (adding it, in name order, when new) with
  /// `entry` as the store now has it. For services that poll the store.
  void Upsert(HostEntry entry);
  /// Removes host `name`; nothing when there is none.
  void Remove(const std::string& name);
  /// Unix seconds of the snapshot (or the last refresh): staleness is judged against it.
  int64_t taken_at() const { return taken_at_; }
  void set_taken_at(int64_t t) { taken_at_ = t; }

 private:
  void Reindex();
  uint32_t HardwareId(const std::shared_ptr<const topology::HostTopology>& hardware);
  /// rows_[i] from hosts_[i], taking a reference on its state (the old row's is dropped).
  void SetRow(size_t i, bool had_row);
  uint32_t InternState(const std::string& usage_key);
  void DropState(uint32_t id);
  std::vector<HostEntry> hosts_;  ///< sorted by name (std::string order)
  std::vector<RankRow> rows_;     ///< rows_[i] describes hosts_[i]
  std::vector<HardwareInfo> hardware_;
  std::unordered_map<const topology::HostTopology*, uint32_t> hardware_ids_;
  std::unordered_map<std::string, uint32_t> state_ids_;  ///< usage_key -> id
  std::vector<uint32_t> state_refs_;  ///< hosts holding each id; 0 = free for reuse
  std::vector<std::string> state_keys_;  ///< the usage_key of each id (to forget it at 0)
  std::vector<uint32_t> free_states_;
  std::unordered_map<std::string, size_t> index_;
  int64_t taken_at_ = 0;
};

/// Builds one host's entry from the store's rows (its claims in `claims`, oldest first).
HostEntry MakeHostEntry(const HostRecord& record, std::shared_ptr<const topology::HostTopology> hardware,
                        const std::vector<const Claim*>& claims);

}  // namespace accel::fleet
