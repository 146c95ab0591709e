#include "fleet/claimer.h"

#include <algorithm>
#include <map>

namespace accel::fleet {

ClaimOutcome ClaimDecision(FleetStore& store, const ScheduleResult& decision) {
  ClaimOutcome out;
  // One instance: each candidate is one autocommitted statement on PostgreSQL (ClaimBatch's
  // one_claim): two round trips fewer per claim, the same all or nothing.
  ClaimBatch batch(store, decision.instances.size() == 1);
  std::map<std::string, std::vector<int>> claimed_on;  // host -> instances claimed there
  std::vector<ClaimedInstance> claimed;
  for (size_t k = 0; k < decision.instances.size(); ++k) {
    const InstanceDecision& d = decision.instances[k];
    std::vector<const Candidate*> order = {&d.chosen};
    for (const Candidate& alt : d.alternates) order.push_back(&alt);
    bool done = false;
    for (size_t rank = 0; rank < order.size() && !done; ++rank) {
      const Candidate& c = *order[rank];
      const std::vector<int>& here = claimed_on[c.host];
      // Valid only if every instance claimed on this host is one the placement accounted for.
      const bool assumed_all = std::all_of(here.begin(), here.end(), [&](int i) {
        return std::find(c.assumed_instances.begin(), c.assumed_instances.end(), i) != c.assumed_instances.end();
      });
      if (!assumed_all) {
        ++out.retries;
        out.conflicts.push_back("host " + c.host + ": placed assuming other instances of this request there");
        continue;
      }
      const int64_t expected = c.generation - static_cast<int64_t>(c.assumed_instances.size()) +
                               static_cast<int64_t>(here.size());
      ClaimResult r = batch.TryClaim(c.host, expected, c.placement);
      if (!r.claimed()) {
        ++out.retries;
        out.conflicts.push_back(std::move(r.refused));
        continue;
      }
      claimed_on[c.host].push_back(static_cast<int>(k));
      claimed.push_back({std::move(r.claim->id), c, static_cast<int>(rank)});
      done = true;
    }
    if (!done) return out;  // the batch rolls back: nothing claimed
  }
  batch.Commit();
  out.instances = std::move(claimed);
  out.committed = true;
  return out;
}

}  // namespace accel::fleet
