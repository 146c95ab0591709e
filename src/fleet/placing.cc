#include "fleet/placing.h"

#include <set>

#include "placement/placement_json.h"

namespace accel::fleet {

PlaceOutcome PlaceInFleet(FleetStore* store, const std::function<ScheduleResult()>& schedule_round,
                          int max_rounds) {
  PlaceOutcome out;
  for (out.rounds = 1;; ++out.rounds) {
    out.decision = schedule_round();
    if (!out.decision.all_placed) {
      out.why_not = out.decision.why_not;
      return out;
    }
    if (store == nullptr) {
      for (const InstanceDecision& d : out.decision.instances) out.instances.push_back(d.chosen);
      out.placed = true;
      return out;
    }
    ClaimOutcome claimed = ClaimDecision(*store, out.decision);
    out.retries += claimed.retries;
    out.conflicts.insert(out.conflicts.end(), claimed.conflicts.begin(), claimed.conflicts.end());
    if (claimed.committed) {
      for (const ClaimedInstance& c : claimed.instances) {
        out.instances.push_back(c.where);
        out.claim_ids.push_back(c.claim_id);
      }
      out.placed = true;
      return out;
    }
    if (out.rounds >= max_rounds) {
      out.lost_race = true;
      std::set<std::string> hosts;  // each candidate host once, however many rounds refused it
      for (const InstanceDecision& d : out.decision.instances) {
        hosts.insert(d.chosen.host);
        for (const Candidate& a : d.alternates) hosts.insert(a.host);
      }
      out.why_not.push_back({"taken by other schedulers", static_cast<int>(hosts.size()),
                             out.conflicts.empty() ? "" : out.conflicts.back()});
      return out;
    }
  }
}

nlohmann::ordered_json PlaceOutcomeJson(const PlaceOutcome& o, const std::string& flavor, int count, bool claimed) {
  nlohmann::ordered_json doc;
  doc["schema"] = "accel.fleet-placement/v1";
  doc["flavor"] = flavor;
  doc["count"] = count;
  doc["placed"] = o.placed;
  doc["instances"] = nlohmann::ordered_json::array();
  for (size_t k = 0; k < o.instances.size(); ++k) {
    nlohmann::ordered_json i;
    i["host"] = o.instances[k].host;
    if (k < o.claim_ids.size()) i["claim"] = o.claim_ids[k];
    i["placement"] = placement::PlacementToJson(o.instances[k].placement);
    doc["instances"].push_back(std::move(i));
  }
  if (claimed) {
    doc["retries"] = o.retries;
    doc["conflicts"] = o.conflicts;
  }
  if (!o.placed) {
    doc["why_not"] = nlohmann::ordered_json::array();
    for (const CauseCount& c : o.why_not)
      doc["why_not"].push_back({{"cause", c.cause}, {"hosts", c.hosts}, {"example", c.example}});
  }
  doc["hosts_ranked"] = o.decision.hosts_ranked;
  return doc;
}

}  // namespace accel::fleet
