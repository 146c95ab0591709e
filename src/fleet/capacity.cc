#include "fleet/capacity.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "fleet/scheduler.h"
#include "placement/engine.h"
#include "placement/host_state.h"

namespace accel::fleet {

namespace {

// One host filled with one flavor until it stops.
struct Fill {
  int64_t count = 0;
  std::string stop_reason;               ///< the engine's first reason at the stop
  std::set<std::string> free_left;       ///< accelerator addresses still free at the stop
};

Fill FillHost(const HostEntry& e, const placement::PlacementRequest& req, int max_per_host) {
  Fill f;
  placement::HostState state(*e.hardware, e.usage, e.record.policy);
  for (;;) {
    if (f.count >= max_per_host) {
      f.stop_reason = "stopped after " + std::to_string(max_per_host) + " instances (--max-per-host)";
      break;
    }
    placement::PlaceResult r = placement::Place(state, req);
    if (!r.fits()) {
      f.stop_reason = r.no_fit.reasons.empty() ? "does not fit" : r.no_fit.reasons.front();
      break;
    }
    if (!state.Apply(*r.placement).empty()) break;  // never: the engine places on free units
    ++f.count;
  }
  for (const topology::PciDevice& d : e.hardware->pci)
    if (d.is_accelerator() && !state.usage().devices.count(d.address)) f.free_left.insert(d.address);
  return f;
}

}  // namespace

CapacityReport Capacity(const FleetView& view, const std::vector<placement::PlacementRequest>& flavors,
                        const CapacityOptions& options) {
  CapacityReport report;
  const int64_t now = options.now_unix ? options.now_unix : view.taken_at();
  std::vector<const HostEntry*> eligible;
  for (const HostEntry& e : view.hosts()) {
    if (e.record.state != HostAdminState::kEnabled || IsStale(e.record, now) ||
        !MatchesAll(options.where, e.record.labels))
      continue;
    eligible.push_back(&e);
  }
  report.eligible_hosts = static_cast<int>(eligible.size());
  // fills[f][usage_key]
  std::vector<std::unordered_map<std::string, Fill>> fills(flavors.size());
  for (size_t f = 0; f < flavors.size(); ++f) {
    FlavorCapacity fc;
    fc.flavor = flavors[f].flavor;
    for (const HostEntry* e : eligible) {
      auto it = fills[f].find(e->usage_key);
      if (it == fills[f].end()) {
        it = fills[f].emplace(e->usage_key, FillHost(*e, flavors[f], options.max_per_host)).first;
        ++report.engine_fills;
      }
      const Fill& fill = it->second;
      fc.count += fill.count;
      if (!options.group_by.empty()) {
        auto label = e->record.labels.find(options.group_by);
        fc.by_group[label == e->record.labels.end() ? "(none)" : label->second] += fill.count;
      }
      ++fc.stops_on[CauseOf(fill.stop_reason)];
    }
    int most = 0;
    for (const auto& [cause, hosts] : fc.stops_on)
      if (hosts > most) {
        most = hosts;
        fc.runs_out_first = cause;
      }
    report.flavors.push_back(std::move(fc));
  }
  // Stranded: free now, and still free after filling the host with each flavor in turn.
  for (const HostEntry* e : eligible) {
    if (e->summary.free_accelerators == 0) continue;
    std::set<std::string> stranded;
    for (const topology::PciDevice& d : e->hardware->pci)
      if (d.is_accelerator() && !e->usage.devices.count(d.address)) stranded.insert(d.address);
    std::string reason;
    for (size_t f = 0; f < flavors.size() && !stranded.empty(); ++f) {
      const Fill& fill = fills[f].at(e->usage_key);
      std::set<std::string> still;
      std::set_intersection(stranded.begin(), stranded.end(), fill.free_left.begin(), fill.free_left.end(),
                            std::inserter(still, still.end()));
      stranded = std::move(still);
      if (reason.empty() || (!flavors[f].pci.empty() && reason.rfind("(no PCI)", 0) == 0))
        reason = (flavors[f].pci.empty() ? "(no PCI) " : "") + flavors[f].flavor + ": " + fill.stop_reason;
    }
    if (stranded.empty() || flavors.empty()) continue;
    if (reason.rfind("(no PCI) ", 0) == 0) reason = "no given flavor asks for accelerators (" + reason.substr(9) + ")";
    StrandedHost s{e->record.name, e->summary.free_accelerators,
                   std::vector<std::string>(stranded.begin(), stranded.end()), reason};
    report.stranded_accelerators += static_cast<int>(s.stranded.size());
    report.stranded.push_back(std::move(s));
  }
  return report;
}

}  // namespace accel::fleet
