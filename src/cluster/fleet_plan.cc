#include "cluster/fleet_plan.h"

#include <map>

#include "common/error.h"
#include "fleet/fleet_view.h"
#include "fleet/placing.h"

namespace accel::cluster {

namespace {

// Releases what was claimed for earlier groups; a release that fails is left to `accel fleet
// release` (the ids are in the error the caller reports).
void ReleaseAll(fleet::FleetStore& store, const ClusterPlan& plan) {
  for (const GroupPlan& g : plan.groups)
    for (const std::string& id : g.claim_ids) {
      try {
        store.Release(id);
      } catch (const std::exception&) {
      }
    }
}

// The kubelet-relevant shape of a plan: the configuration it derives.
bool SameKubelet(const GroupPlan& a, const GroupPlan& b) { return a.kubelet.config == b.kubelet.config; }

}  // namespace

FleetPlanResult PlanClusterOnFleet(const ClusterTemplate& t, fleet::FleetStore& store, const FleetPlanOptions& o) {
  FleetPlanResult result;
  result.plan.cluster = t.name;
  // Deciding only: one snapshot, and each group's decisions applied to it, so later groups see
  // the hosts earlier ones took. Claiming: a fresh snapshot per round (it holds our claims).
  fleet::FleetView decided;
  bool have_decided = false;
  try {
    for (const NodeGroup& g : t.groups) {
      fleet::ScheduleOptions so;
      so.count = g.count > 0 ? g.count : 1;
      so.different_hosts = true;
      so.strategy = o.strategy;
      so.tiebreak_seed = o.seed;
      const bool claim = o.claim && g.count > 0;
      fleet::FleetView fresh;
      const fleet::FleetView* current = &fresh;
      fleet::PlaceOutcome out = fleet::PlaceInFleet(claim ? &store : nullptr, [&] {
        if (o.claim) {
          fresh = fleet::FleetView::FromSnapshot(store.Snapshot());
        } else {
          if (!have_decided) decided = fleet::FleetView::FromSnapshot(store.Snapshot());
          have_decided = true;
          current = &decided;
        }
        const fleet::FleetView& view = *current;
        if (view.hosts().empty())
          throw InputError("--fleet", "", "the fleet store has no hosts",
                           "add hypervisors first (accel fleet host add NAME --topology FILE, or run accel agents "
                           "with --fleet), or plan on host files without --fleet");
        return fleet::Schedule(view, g.request, so);
      });
      if (!out.placed) {
        UnplacedGroup u;
        u.group = g.name;
        u.wanted = so.count;
        u.fitted = static_cast<int>(out.decision.instances.size());
        u.why = fleet::DescribeCauses(out.decision.why_not);
        if (out.lost_race) u.why.push_back("every candidate host was taken by another scheduler meanwhile; run again");
        ReleaseAll(store, result.plan);
        for (const std::string& id : out.claim_ids) store.Release(id);
        result.unplaced.push_back(std::move(u));
        return result;
      }
      const fleet::FleetView& view = *current;
      // One plan per hardware shape; the first instance's is the group's.
      std::map<const topology::HostTopology*, size_t> shapes;
      GroupPlan first;
      for (size_t k = 0; k < out.instances.size(); ++k) {
        const fleet::HostEntry& e = view.hosts()[out.instances[k].host_index];
        if (shapes.count(e.hardware.get())) continue;
        topology::HostTopology hw = *e.hardware;
        hw.hostname = e.record.name;
        GroupPlan gp = PlanGroup(t, g, hw, out.instances[k].placement);
        if (shapes.empty()) {
          first = std::move(gp);
        } else if (!SameKubelet(first, gp)) {
          first.findings.push_back(
              {kubelet::Severity::kError, "(group)",
               "its VMs land on hardware of different shapes: the guest on " + e.record.name +
                   " needs another kubelet configuration than the one on " + first.hypervisor,
               "keep the group on one hardware (give its hosts a label and the group its own flavor with an "
               "aggregate/trait), or split the group per hardware"});
        }
        shapes[e.hardware.get()] = k;
      }
      if (g.count > 0)
        for (const fleet::Candidate& c : out.instances) first.fleet_hosts.push_back(c.host);
      if (claim) first.claim_ids = out.claim_ids;
      if (!o.claim && g.count > 0)
        for (const fleet::Candidate& c : out.instances) decided.Apply(c.host_index, c.placement);
      result.plan.groups.push_back(std::move(first));
    }
  } catch (...) {
    ReleaseAll(store, result.plan);
    throw;
  }
  return result;
}

}  // namespace accel::cluster
