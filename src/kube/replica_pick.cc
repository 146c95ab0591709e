// PickReplicas: NVIDIA's replica allocation (internal/rm/allocate.go, distributed and packed),
// made deterministic: every tie is broken by a stated order instead of sort.Slice's whim.
#include <algorithm>
#include <map>

#include "kube/device_set.h"

namespace accel::kube {

std::vector<std::string> PickReplicas(const std::vector<ReplicaCandidate>& available,
                                      const std::vector<std::string>& required, int size,
                                      int total_replicas, ReplicaPolicy policy) {
  if (size <= 0 || static_cast<int>(required.size()) > size) return {};
  struct Physical {
    int available = 0;
    int picked = 0;
    std::vector<std::string> free;  // replica ids not yet picked
  };
  std::map<std::string, Physical> physicals;
  std::map<std::string, std::string> physical_of;
  for (const ReplicaCandidate& c : available) {
    if (!physical_of.emplace(c.id, c.physical).second) continue;
    Physical& ph = physicals[c.physical];
    ++ph.available;
    ph.free.push_back(c.id);
  }
  if (static_cast<int>(physical_of.size()) < size) return {};

  std::vector<std::string> picks;
  auto take = [&](std::string id) {  // a copy: `id` may be the element erased below
    Physical& ph = physicals[physical_of[id]];
    ph.free.erase(std::find(ph.free.begin(), ph.free.end(), id));
    ++ph.picked;
    picks.push_back(id);
  };
  for (const std::string& id : required) {
    if (!physical_of.count(id)) return {};
    if (std::find(picks.begin(), picks.end(), id) == picks.end()) take(id);
  }
  // "::2" before "::10": ids of one physical device differ only in the replica number.
  auto replica_order = [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  };
  while (static_cast<int>(picks.size()) < size) {
    const Physical* chosen = nullptr;
    int chosen_in_use = 0;
    for (const auto& [name, ph] : physicals) {  // by physical id, so the first wins ties
      if (ph.free.empty()) continue;
      int in_use = std::max(0, total_replicas - ph.available) + ph.picked;
      bool better = !chosen ||
                    (policy == ReplicaPolicy::kDistributed ? in_use < chosen_in_use
                                                           : in_use > chosen_in_use) ||
                    (in_use == chosen_in_use && ph.picked < chosen->picked);
      if (better) chosen = &ph, chosen_in_use = in_use;
    }
    take(*std::min_element(chosen->free.begin(), chosen->free.end(), replica_order));
  }
  return picks;
}

}  // namespace accel::kube
