// The change feed applied to a view: how every scheduler that keeps a FleetView in memory (the
// fleet service's replicas, bench/fleet_bench's claimers) catches up with what other schedulers
// and the agents wrote to the store since it last looked.
//
// Two steps, so a service can read the store without holding its view exclusively: ReadChanges
// asks the store (FleetStore::ChangedSince) and builds the new host entries; ApplyChanges puts
// them into the view. Neither is thread-safe on its own: the caller serializes polls (answers
// applied out of order could undo a newer one) and guards the view.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"

namespace accel::fleet {

/// One poll of the feed, ready to apply.
struct ChangeBatch {
  /// Hosts whose claims were read (new to the view, or their generation moved), built as the
  /// store has them now.
  std::vector<HostEntry> fresh;
  /// Hosts written at the generation the view already has (a heartbeat, an agent's upsert of
  /// stale_after_s, or a row the feed returns again): only their record changes.
  std::vector<HostRecord> same_generation;
  /// Hosts removed from the store.
  std::vector<std::string> removed;
  /// The feed's mark after this batch: the next poll's `mark`.
  int64_t mark = 0;
};

/// Reads what changed in `store` after `mark`. `known_generation` answers, for a host the feed
/// returns, the generation the caller's view holds, or -1 when the view does not know the host
/// (it is called once per host, and may take the caller's lock on its view). Claims are read only
/// for hosts whose generation differs. Throws what FleetStore::ChangedSince and
/// FleetStore::Topology throw (SystemError when the store cannot be read).
ChangeBatch ReadChanges(FleetStore& store, int64_t mark,
                        const std::function<int64_t(const std::string& host)>& known_generation);

/// Applies `batch` to `view`: each fresh host unless the view already holds a newer generation
/// of it (its own claim applied since the read), then the removals, then the heartbeats of the
/// same-generation hosts. Sets the view's taken_at to `now_unix`.
void ApplyChanges(ChangeBatch batch, FleetView* view, int64_t now_unix);

}  // namespace accel::fleet
