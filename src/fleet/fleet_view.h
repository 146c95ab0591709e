// FleetView: the fleet in memory, as a scheduler ranks and fits it — every host with its
// record, its hardware (one shared HostTopology per SKU, however many hosts have it), what its
// live claims hold, and the counts that let a scheduler skip or rank a host without running the
// placement engine on it.
//
// Built from a FleetSnapshot; kept current by Refresh (a service polls the store) and by Apply
// (a scheduler's own working copy, e.g. while placing --count N). 10,000 hosts of a few SKUs
// cost one topology per SKU plus, per host, its record, its usage and a few counters.
//
// Not synchronized: one writer; concurrent readers only while nobody writes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleet/fleet_store.h"
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
};

struct HostEntry {
  HostRecord record;
  std::shared_ptr<const topology::HostTopology> hardware;  ///< shared by hosts of one SKU
  placement::HostUsage usage;       ///< sum of its live claims
  std::vector<std::string> claims;  ///< ids of its live claims, oldest first
  HostSummary summary;              ///< counts of hardware under usage and policy
  /// Identifies (hardware, policy, usage): two hosts with the same key get the same answer
  /// from the placement engine, so a scheduler asks once per key.
  std::string usage_key;
};

/// Computes summary and usage_key of `entry` from its hardware, policy and usage.
void Summarize(HostEntry* entry);

class FleetView {
 public:
  FleetView() = default;
  /// Builds the view of a snapshot. Throws InputError when a claim names a host's CPUs twice
  /// (a store that fails Audit).
  static FleetView FromSnapshot(const FleetSnapshot& snapshot);

  /// Every host, sorted by name (byte order, whatever order the store returned them in).
  const std::vector<HostEntry>& hosts() const { return hosts_; }
  /// The host named `name`, or nullptr.
  const HostEntry* Find(const std::string& name) const;
  /// Index of `name` in hosts(), or -1.
  int IndexOf(const std::string& name) const;

  /// Adds what `p` holds to host `index` (a placement the caller made on this view), bumping
  /// the view's generation of it by one, as a stored claim does. Returns "" or the conflict.
  std::string Apply(size_t index, const placement::Placement& p);

  /// Replaces host `name` (adding it when new) with `entry` as the store now has it; a host
  /// missing from `present` is removed. For services that poll the store.
  void Upsert(HostEntry entry);
  void Remove(const std::string& name);
  /// Unix seconds of the snapshot (or the last refresh): staleness is judged against it.
  int64_t taken_at() const { return taken_at_; }
  void set_taken_at(int64_t t) { taken_at_ = t; }

 private:
  void Reindex();
  std::vector<HostEntry> hosts_;  ///< sorted by name (std::string order)
  std::unordered_map<std::string, size_t> index_;
  int64_t taken_at_ = 0;
};

/// Builds one host's entry from the store's rows (its claims in `claims`, oldest first).
HostEntry MakeHostEntry(const HostRecord& record, std::shared_ptr<const topology::HostTopology> hardware,
                        const std::vector<const Claim*>& claims);

}  // namespace accel::fleet
