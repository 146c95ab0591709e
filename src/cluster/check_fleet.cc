// Fits against a fleet: whether a group's flavor fits any host's hardware, how many instances
// the fleet takes now, and whether the groups' VMs fit on distinct hosts, alone and together.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/check_internal.h"
#include "common/strings.h"
#include "fleet/capacity.h"
#include "fleet/host_policy_file.h"
#include "fleet/scheduler.h"
#include "placement/engine.h"

namespace accel::cluster::check_internal {

namespace {

// Key of (hardware, policy): hosts sharing it give the same answer on an empty host.
std::string HardwareKey(const fleet::HostEntry& e) {
  return e.record.topology_id + "|" + fleet::HostPolicyToJson(e.record.policy).dump();
}

std::string CausesText(const std::vector<fleet::CauseCount>& causes) {
  return JoinStrings(fleet::DescribeCauses(causes), "; ");
}

}  // namespace

EmptyFit FitEmpty(const fleet::FleetView& view, const placement::PlacementRequest& request) {
  EmptyFit out;
  std::map<std::string, std::optional<placement::Placement>> memo;
  for (const fleet::HostEntry& e : view.hosts()) {
    if (!e.hardware) continue;
    const std::string key = HardwareKey(e);
    auto it = memo.find(key);
    if (it == memo.end()) {
      placement::PlaceResult r = placement::Place(*e.hardware, placement::HostUsage{}, e.record.policy, request);
      if (!r.fits() && out.why_not.empty())
        out.why_not = e.record.name + ": " + JoinStrings(r.no_fit.reasons, "; ");
      it = memo.emplace(key, r.placement).first;
    }
    if (!it->second) continue;
    ++out.hosts;
    if (!out.first) {
      out.first = &e;
      out.placement = it->second;
    }
  }
  return out;
}

void Checker::CheckFleet() {
  const fleet::FleetView& view = *in_.fleet;
  fleet::FleetView together = view;  // the groups' VMs, applied in template order
  for (size_t i = 0; i < states_.size(); ++i) {
    const NodeGroup& g = *states_[i].group;
    GroupCheck& gc = report_.groups[i];
    GroupFleetFit fit;
    fit.hosts = static_cast<int>(view.hosts().size());
    fit.count = g.count;
    const EmptyFit empty = FitEmpty(view, g.request);
    fit.hardware_fit_hosts = empty.hosts;
    fleet::CapacityOptions co;
    co.threads = 1;
    co.now_unix = in_.now_unix;
    const fleet::CapacityReport cap = fleet::Capacity(view, {g.request}, co);
    fit.capacity = cap.flavors.empty() ? 0 : cap.flavors.front().count;
    fleet::ScheduleOptions so;
    so.count = std::max(g.count, 1);
    so.different_hosts = true;
    so.alternates = 0;
    so.now_unix = in_.now_unix;
    const fleet::ScheduleResult alone = fleet::Schedule(view, g.request, so);
    fit.distinct_placed = std::min(static_cast<int>(alone.instances.size()), g.count);
    fit.fits_alone = fit.distinct_placed >= g.count;
    const fleet::ScheduleResult with_others = fleet::Schedule(together, g.request, so);
    fit.fits_together = static_cast<int>(with_others.instances.size()) >= g.count;
    for (size_t k = 0; k < with_others.instances.size() && static_cast<int>(k) < g.count; ++k) {
      const fleet::Candidate& c = with_others.instances[k].chosen;
      together.Apply(c.host_index, c.placement);
    }
    const std::string key = GroupKey(i) + ".flavor";
    const std::string fleet_name = in_.fleet_name.empty() ? std::string("the fleet") : in_.fleet_name;
    if (empty.hosts == 0) {
      // The "fit" finding of planning says so when the group had no hypervisor of its own.
      if (g.hypervisor)
        Add(Error("fleet", g.name, key,
                  "flavor " + g.flavor_name + " fits no host of " + fleet_name + " (" + CountOf(view.hosts().size(), "host") +
                      "), even empty" + (empty.why_not.empty() ? std::string() : ": " + empty.why_not),
                  "choose a flavor the fleet's hardware can hold, or add hosts that can"));
    } else if (fit.capacity == 0) {
      Add(Error("fleet", g.name, key,
                "flavor " + g.flavor_name + " fits the hardware of " + CountOf(static_cast<size_t>(empty.hosts), "host") +
                    " of " + fleet_name + ", but none has room now" +
                    (alone.why_not.empty() ? std::string() : ": " + CausesText(alone.why_not)),
                "release claims or add hosts (accel fleet capacity shows what is left)"));
    } else if (!fit.fits_alone) {
      Add(Error("fleet", g.name, GroupKey(i) + ".count",
                "only " + std::to_string(fit.distinct_placed) + " of " + std::to_string(g.count) + " VMs fit on distinct hosts of " +
                    fleet_name + (alone.why_not.empty() ? std::string() : ": " + CausesText(alone.why_not)),
                "lower count, or add hosts that can take flavor " + g.flavor_name));
    } else if (!fit.fits_together) {
      Add(Error("fleet", g.name, GroupKey(i) + ".count",
                "the group fits alone, but after the groups before it in the template only " +
                    std::to_string(std::min<size_t>(with_others.instances.size(), static_cast<size_t>(g.count))) +
                    " of " + std::to_string(g.count) + " VMs fit on distinct hosts" +
                    (with_others.why_not.empty() ? std::string() : ": " + CausesText(with_others.why_not)),
                "lower the counts, or add hosts"));
    }
    gc.fleet = fit;
  }
}

}  // namespace accel::cluster::check_internal
