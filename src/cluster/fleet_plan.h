// PlanClusterOnFleet: `accel cluster plan --fleet STORE [--claim]` — each node group's VMs placed
// on real hypervisors of an accel fleet (fleet/), one VM per host, and the group's guest layout
// and kubelet configuration derived from where they landed instead of from an empty host file.
//
// Per group, `count` instances (one when count is 0, to learn the layout) are scheduled with
// different_hosts on a fresh snapshot of the store (fleet::Schedule: the exact placement engine
// on every candidate host, ranked by `strategy`), and with `claim` claimed through
// fleet::PlaceInFleet (generation-checked, with alternates when another scheduler took a host).
// All or nothing: when a group does not fit, the claims already made for earlier groups are
// released before returning, so a failed plan leaves the store as it found it.
//
// When a group's VMs land on hardware of different shapes (two SKUs), the guest layout of each
// shape is derived; a shape whose kubelet configuration differs from the first one's is a finding
// of the group (one KubeletConfiguration per group cannot fit both).
//
// Thread-safety: one call uses `store` from the calling thread only.
#pragma once

#include <string>
#include <vector>

#include "cluster/plan.h"
#include "cluster/template.h"
#include "fleet/fleet_store.h"
#include "fleet/scheduler.h"

namespace accel::cluster {

struct FleetPlanOptions {
  bool claim = false;  ///< claim the placed VMs (else decide only; the store is not written)
  fleet::FleetStrategy strategy = fleet::FleetStrategy::kPack;  ///< host ranking
  std::string seed;    ///< tiebreak seed (fleet::ScheduleOptions::tiebreak_seed); "" = by name
};

/// A group that did not fit the fleet, and why (fleet::DescribeCauses lines).
struct UnplacedGroup {
  std::string group;               ///< NodeGroup::name
  int wanted = 0;                  ///< VMs asked (count, or 1 for a group of count 0)
  int fitted = 0;                  ///< how many fit on distinct hosts
  std::vector<std::string> why;    ///< causes, "N hosts: cause (e.g. host)"
};

struct FleetPlanResult {
  /// The plan; groups in template order when placed, each with fleet_hosts (and claim_ids).
  ClusterPlan plan;
  /// Empty when every group was placed; else the first group that did not fit (nothing is
  /// claimed then, and `plan` is incomplete).
  std::vector<UnplacedGroup> unplaced;
  bool placed() const { return unplaced.empty(); }
};

/// Places every group of `t` on the fleet in `store`. Throws InputError when the store has no
/// hosts, SystemError/what the store throws when it fails (claims made before such a failure
/// are released on a best-effort basis).
FleetPlanResult PlanClusterOnFleet(const ClusterTemplate& t, fleet::FleetStore& store, const FleetPlanOptions& options);

}  // namespace accel::cluster
