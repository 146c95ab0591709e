#include "fleet/change_feed.h"

#include <utility>

namespace accel::fleet {

ChangeBatch ReadChanges(FleetStore& store, int64_t mark,
                        const std::function<int64_t(const std::string& host)>& known_generation) {
  FleetChanges changes = store.ChangedSince(mark, [&](const HostRecord& r) {
    return known_generation(r.name) != r.generation;
  });
  ChangeBatch batch;
  batch.mark = changes.change;
  batch.removed = std::move(changes.removed);
  for (HostRecord& r : changes.hosts) {
    auto it = changes.claims.find(r.name);
    if (it == changes.claims.end()) {
      batch.same_generation.push_back(std::move(r));
      continue;
    }
    std::vector<const Claim*> claims;
    claims.reserve(it->second.size());
    for (const Claim& c : it->second) claims.push_back(&c);
    batch.fresh.push_back(MakeHostEntry(r, store.Topology(r.topology_id), claims));
  }
  return batch;
}

void ApplyChanges(ChangeBatch batch, FleetView* view, int64_t now_unix) {
  for (HostEntry& e : batch.fresh) {
    // Two polls may race with a scheduler's own claims: keep the newer host.
    const HostEntry* known = view->Find(e.record.name);
    if (known && known->record.generation > e.record.generation) continue;
    view->Upsert(std::move(e));
  }
  for (const std::string& name : batch.removed) view->Remove(name);
  for (const HostRecord& r : batch.same_generation) {
    const int i = view->IndexOf(r.name);
    if (i < 0) continue;
    const HostRecord& known = view->hosts()[i].record;
    if (known.generation != r.generation ||
        (known.heartbeat_at == r.heartbeat_at && known.stale_after_s == r.stale_after_s))
      continue;
    HostEntry e = view->hosts()[i];
    e.record.heartbeat_at = r.heartbeat_at;
    e.record.stale_after_s = r.stale_after_s;
    view->Upsert(std::move(e));
  }
  view->set_taken_at(now_unix);
}

}  // namespace accel::fleet
