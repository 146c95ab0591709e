// The scheduler's path for requests with GPUs by model and size or pod CPU (scheduler.h):
// every eligible host whose free CPU, memory and GPUs can hold the request is scored per GPU
// choice by the GPU policy (gpu_policy.h); the engine then places the best (host, choice) and
// its alternates exactly (PlaceWithGpuChoice).
#include "fleet/share_scheduler.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "common/hash.h"
#include "placement/engine.h"

namespace accel::fleet {

namespace {

// `before` with `choice` of `ask` given.
void ApplyChoice(const placement::GpuRequest* gpu, const MixEntry& ask, const placement::GpuChoice& choice,
                 ShareHostState* after) {
  after->free_cpu_milli -= ask.cpu_milli;
  after->free_memory_mib = after->free_memory_mib > ask.memory_mib ? after->free_memory_mib - ask.memory_mib : 0;
  if (!gpu) return;
  for (int g : choice.gpus) {
    placement::GpuSlot& s = after->gpus[static_cast<size_t>(g)];
    if (choice.mig_start >= 0) {
      s.mig_slices |= ((uint32_t{1} << choice.mig_slices) - 1) << choice.mig_start;
      s.free_milli = std::max(0, s.free_milli - placement::MigMilli(choice.mig_slices, choice.mig_gpu_slices));
    } else if (gpu->count == 1 && gpu->milli < 1000) {
      s.free_milli -= gpu->milli;
    } else {
      s.free_milli = 0;
      s.whole_held = true;
    }
  }
}

// One host's best choice under the scorer, or why it cannot take the request by counts.
struct HostBest {
  bool fits = false;
  std::string why;  ///< set when !fits
  placement::GpuChoice choice;
  ChoiceCost cost;
};

class ShareRanker {
 public:
  ShareRanker(const FleetView& view, const placement::PlacementRequest& request, const ScheduleOptions& options)
      : view_(view), request_(request), ask_(MixEntryOf(request)) {
    scorer_ = options.scorer ? options.scorer
                             : std::make_shared<GpuScorer>(options.gpu_policy, options.mix, options.random_seed);
    scorer_->UseAskAsMix(ask_);
    scorer_->BeginDecision();
    per_hardware_.resize(view.hardware().size());
    cacheable_ = scorer_->policy() != GpuPolicy::kRandom && scorer_->policy() != GpuPolicy::kClustering;
    std::string shape = std::to_string(ask_.cpu_milli) + "/" + std::to_string(ask_.memory_mib);
    if (request.gpu) {
      shape += "/" + std::to_string(request.gpu->count) + "/" + std::to_string(request.gpu->milli) + "/" +
               request.gpu->mig_profile;
      for (const std::string& m : request.gpu->models) shape += "/" + m;
      for (const placement::MigShape& m : request.gpu->mig_shapes) shape += "/" + m.model_profile;
    }
    ask_hash_ = Fnv1a(shape);
  }

  const MixEntry& ask() const { return ask_; }

  // The best choice of `e` (row `row` of the view), by counts and the policy; the reason when
  // none fits (built only then, and kept with the answer, so a host's "no" is worked out once).
  HostBest Best(const HostEntry& e, const RankRow& row) {
    if (!cacheable_) return Compute(e, row);
    const uint64_t key = Mix64(e.summary.share.key ^ (ask_hash_ * 0x9e3779b97f4a7c15ULL));
    auto& cache = scorer_->best_cache();
    auto it = cache.find(key);
    if (it != cache.end()) return {it->second.fits, it->second.why, it->second.choice, it->second.cost};
    HostBest best = Compute(e, row);
    if (cache.size() > 2000000) cache.clear();
    cache.emplace(key, GpuScorer::CachedBest{best.fits, best.choice, best.cost, best.why});
    return best;
  }

  HostBest Compute(const HostEntry& e, const RankRow& row) {
    HostBest best;
    ShareHostState before = e.summary.share;
    if (before.free_cpu_milli < ask_.cpu_milli) {
      best.why = "host: " + std::to_string(before.free_cpu_milli) + " CPU thousandths free, needs " +
                   std::to_string(ask_.cpu_milli);
      return best;
    }
    if (before.free_memory_mib < ask_.memory_mib) {
      best.why = "host: " + std::to_string(before.free_memory_mib) + " MiB of memory free, needs " +
                   std::to_string(ask_.memory_mib);
      return best;
    }
    Hardware& hw = HardwareOf(row.hardware);
    before.allowed = &scorer_->AllowedMasks(view_.hardware()[row.hardware].topology.get(), hw.accelerators);
    before.mig_shapes = &scorer_->MigShapes(view_.hardware()[row.hardware].topology.get(), hw.accelerators);
    before.gpu_shapes = &e.gpu_shapes;
    before.hardware = row.hardware;
    std::vector<placement::GpuChoice> choices;
    if (request_.gpu) {
      std::string why;
      choices = placement::GpuChoices(hw.accelerators, before.gpus, *request_.gpu, &why);
      if (choices.empty()) {
        best.why = "GPUs: " + why;
        return best;
      }
    } else {
      choices.emplace_back();
    }
    scorer_->BeginHost(row.name_hash);
    ShareHostState after;
    for (const placement::GpuChoice& c : choices) {
      after = before;
      ApplyChoice(request_.gpu ? &*request_.gpu : nullptr, ask_, c, &after);
      const ChoiceCost cost = scorer_->Cost(ask_, before, after, c);
      if (!best.fits || std::tie(cost.cost, cost.within) < std::tie(best.cost.cost, best.cost.within)) {
        best.fits = true;
        best.cost = cost;
        best.choice = c;
      }
    }
    return best;
  }

  GpuPolicy policy() const { return scorer_->policy(); }

 private:
  struct Hardware {
    bool ready = false;
    std::vector<const topology::PciDevice*> accelerators;
  };
  Hardware& HardwareOf(uint32_t id) {
    Hardware& h = per_hardware_[id];
    if (!h.ready) {
      h.accelerators = placement::AcceleratorsOf(*view_.hardware()[id].topology);
      h.ready = true;
    }
    return h;
  }

  const FleetView& view_;
  const placement::PlacementRequest& request_;
  MixEntry ask_;
  uint64_t ask_hash_ = 0;
  bool cacheable_ = false;
  std::shared_ptr<GpuScorer> scorer_;
  std::vector<Hardware> per_hardware_;
};

// Whether host `i` passes the scheduler's filters; the cause when not.
const char* FilterCause(const FleetView& view, size_t i, const RankRow& row, int64_t now, const ScheduleOptions& options) {
  if (!row.enabled) return HostAdminStateName(view.hosts()[i].record.state);
  if (now > row.stale_after_unix) return "stale (no heartbeat from its agent)";
  if (!options.where.empty() && !MatchesAll(options.where, view.hosts()[i].record.labels))
    return "labels do not match --where";
  return nullptr;
}

std::string CauseOfShareReason(const std::string& why) {
  if (why.rfind("GPUs", 0) == 0) return "GPUs";
  return CauseOf(why);
}

}  // namespace

bool IsShareRequest(const placement::PlacementRequest& request) {
  return request.gpu.has_value() || request.cpu_milli > 0;
}

ScheduleResult ScheduleShares(const FleetView& view, const placement::PlacementRequest& request,
                              const ScheduleOptions& options) {
  ScheduleResult result;
  const int64_t now = options.now_unix ? options.now_unix : view.taken_at();
  const size_t n = view.hosts().size();
  const bool seeded = !options.tiebreak_seed.empty();
  const uint64_t seed_hash = seeded ? Fnv1a(options.tiebreak_seed) : 0;
  const SchedulePartition& part = options.partition;
  if (part.count < 1 || part.index < 0 || part.index >= part.count)
    throw InputError("schedule options", "partition", FormatPartition(part) + " is not INDEX/COUNT with 0 <= INDEX < COUNT");
  ShareRanker ranker(view, request, options);
  std::vector<char> skipped(n, 0);
  for (size_t i : options.skip_hosts)
    if (i < n) skipped[i] = 1;

  // Working copies of the hosts earlier instances of this request went to.
  std::unordered_map<size_t, HostEntry> changed;
  std::unordered_map<size_t, std::vector<int>> instances_on;
  auto entry_of = [&](size_t i) -> const HostEntry& {
    auto it = changed.find(i);
    return it == changed.end() ? view.hosts()[i] : it->second;
  };
  // Best choices per interned host state: hosts in one state score the same (not under kRandom,
  // whose draws are per host, nor kClustering, which reads the claims' shapes).
  const bool memo_states = ranker.policy() != GpuPolicy::kRandom && ranker.policy() != GpuPolicy::kClustering;

  struct Ranked {
    int outside;
    double cost;
    double within;
    uint64_t tiebreak;
    size_t index;
    placement::GpuChoice choice;
  };
  for (int instance = 0; instance < options.count; ++instance) {
    std::vector<int32_t> by_state(memo_states ? view.state_id_bound() : 0, -1);
    std::vector<HostBest> bests;
    std::map<std::string, CauseCount, std::less<>> causes;
    auto add_cause = [&](const std::string& cause, const std::string& host, const std::string& why) {
      auto it = causes.find(cause);
      if (it == causes.end()) it = causes.emplace(cause, CauseCount{cause, 0, why.empty() ? host : host + ": " + why}).first;
      ++it->second.hosts;
    };
    std::vector<Ranked> ranked;
    ranked.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const RankRow& row = view.rows()[i];
      const HostEntry& e = entry_of(i);
      if (const char* cause = FilterCause(view, i, row, now, options)) {
        add_cause(cause, e.record.name, "");
        continue;
      }
      if (skipped[i]) {
        add_cause("claim in flight on this scheduler", e.record.name, "");
        continue;
      }
      if (options.different_hosts && instances_on.count(i)) {
        add_cause("holds an earlier instance (--different-hosts)", e.record.name, "");
        continue;
      }
      const bool working = changed.count(i) > 0;
      const HostBest* best;
      if (memo_states && !working && row.state != kNoState) {
        int32_t& slot = by_state[row.state];
        if (slot < 0) {
          bests.push_back(ranker.Best(e, row));
          slot = static_cast<int32_t>(bests.size() - 1);
        }
        best = &bests[static_cast<size_t>(slot)];
      } else {
        bests.push_back(ranker.Best(e, working ? view.RowOf(e) : row));
        best = &bests.back();
      }
      if (!best->fits) {
        add_cause(CauseOfShareReason(best->why), e.record.name, best->why);
        continue;
      }
      const int outside = part.count > 1 && PartitionOf(row.name_hash, part.count) != part.index ? 1 : 0;
      ranked.push_back({outside, best->cost.cost, best->cost.within,
                        seeded ? Mix64(row.name_hash ^ (seed_hash * 0x9e3779b97f4a7c15ULL)) : 0, i, best->choice});
    }
    result.hosts_ranked = static_cast<int>(ranked.size());
    auto less = [](const Ranked& a, const Ranked& b) {
      return std::tie(a.outside, a.cost, a.within, a.tiebreak, a.index) <
             std::tie(b.outside, b.cost, b.within, b.tiebreak, b.index);
    };
    const size_t wanted = static_cast<size_t>(1 + std::max(0, options.alternates));
    const size_t head = std::min(ranked.size(), std::max<size_t>(wanted * 2, 16));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<long>(head), ranked.end(), less);
    std::vector<Candidate> found;
    for (size_t pos = 0; pos < ranked.size() && found.size() < wanted; ++pos) {
      if (pos == head) std::sort(ranked.begin() + static_cast<long>(head), ranked.end(), less);
      const size_t i = ranked[pos].index;
      const HostEntry& e = entry_of(i);
      ++result.engine_calls;
      placement::PlaceResult fit =
          placement::PlaceWithGpuChoice(*e.hardware, e.usage, e.record.policy, request, ranked[pos].choice);
      if (!fit.fits()) {
        const std::string why = NoFitReason(fit.no_fit);
        add_cause(CauseOfShareReason(why), e.record.name, why);
        continue;
      }
      Candidate c;
      c.host_index = i;
      c.host = e.record.name;
      c.generation = e.record.generation;
      c.placement = std::move(*fit.placement);
      c.placement.host = e.record.name;
      if (auto on = instances_on.find(i); on != instances_on.end()) c.assumed_instances = on->second;
      found.push_back(std::move(c));
    }
    if (found.empty()) {
      for (const auto& [cause, count] : causes) result.why_not.push_back(count);
      std::stable_sort(result.why_not.begin(), result.why_not.end(),
                       [](const CauseCount& a, const CauseCount& b) { return a.hosts > b.hosts; });
      return result;
    }
    InstanceDecision d;
    d.chosen = std::move(found.front());
    d.alternates.assign(std::make_move_iterator(found.begin() + 1), std::make_move_iterator(found.end()));
    if (instance + 1 < options.count) {
      const size_t i = d.chosen.host_index;
      auto [it, inserted] = changed.try_emplace(i, view.hosts()[i]);
      HostEntry& copy = it->second;
      copy.usage.Apply(d.chosen.placement);
      CountGpuShape(d.chosen.placement, +1, &copy.gpu_shapes);
      ++copy.record.generation;
      Summarize(&copy);
      instances_on[i].push_back(instance);
    }
    result.instances.push_back(std::move(d));
  }
  result.all_placed = true;
  return result;
}

std::vector<HostVerdict> JudgeHosts(const FleetView& view, const placement::PlacementRequest& request,
                                    const ScheduleOptions& options, const std::vector<size_t>& hosts) {
  if (!IsShareRequest(request))
    throw InputError("request", request.flavor, "asks for no GPUs by model and size and no CPU thousandths",
                     "judge flavors with `accel fleet place`");
  const int64_t now = options.now_unix ? options.now_unix : view.taken_at();
  ShareRanker ranker(view, request, options);
  std::vector<HostVerdict> out;
  double lo = 0, hi = 0;
  bool any = false;
  for (size_t i : hosts) {
    HostVerdict v;
    v.host_index = i;
    if (i >= view.hosts().size()) {
      v.reason = "not in the fleet";
      out.push_back(v);
      continue;
    }
    const RankRow& row = view.rows()[i];
    const HostEntry& e = view.hosts()[i];
    if (const char* cause = FilterCause(view, i, row, now, options)) {
      v.reason = cause;
      out.push_back(v);
      continue;
    }
    HostBest best = ranker.Best(e, row);
    if (best.fits) {
      placement::PlaceResult fit =
          placement::PlaceWithGpuChoice(*e.hardware, e.usage, e.record.policy, request, best.choice);
      if (!fit.fits()) {
        best.fits = false;
        best.why = NoFitReason(fit.no_fit);
      }
    }
    v.fits = best.fits;
    v.reason = best.why;
    v.cost = best.cost.cost;
    if (v.fits) {
      lo = any ? std::min(lo, v.cost) : v.cost;
      hi = any ? std::max(hi, v.cost) : v.cost;
      any = true;
    }
    out.push_back(v);
  }
  for (HostVerdict& v : out)
    if (v.fits) v.score = hi > lo ? static_cast<int>((hi - v.cost) * 100 / (hi - lo) + 0.5) : 100;
  return out;
}

}  // namespace accel::fleet
