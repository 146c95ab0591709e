#include "fleet/scheduler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "placement/pci_fit.h"

namespace accel::fleet {

namespace {

// FNV-1a of seed + name, then splitmix64's finalizer: a fixed, seeded order over host names.
// Without the finalizer names that differ in their last digits (gpu-0480 ... gpu-0489) stay next
// to each other under every seed, and replicas that meet there race for the same hosts.
uint64_t SeededHash(const std::string& seed, const std::string& name) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : seed) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ 0xff) * 1099511628211ULL;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// What the flavor needs, by count, and the devices of each hardware that could serve each of
// its PCI requests.
class CountCheck {
 public:
  explicit CountCheck(const placement::PlacementRequest& req) : req_(req) {
    for (const placement::GuestCell& c : req.cells) pinned_vcpus_ += c.dedicated_vcpus.Count();
  }

  // The cause when the host surely cannot fit by count ("CPUs", "PCI devices"), nullptr when
  // it might. Cheap: it runs for every host of every decision; Shortfall says it in words.
  const char* ShortfallCause(const HostEntry& e) {
    if (pinned_vcpus_ > e.summary.free_pinnable_cpus) return "CPUs";
    if (req_.pci.empty()) return nullptr;
    const std::vector<std::vector<const topology::PciDevice*>>& matching = MatchingOn(e);
    for (size_t r = 0; r < req_.pci.size(); ++r)
      if (FreeOf(e, matching[r]) < req_.pci[r].count) return "PCI devices";
    return nullptr;
  }

  // The reason ShortfallCause found, as a person reads it.
  std::string Shortfall(const HostEntry& e) {
    if (pinned_vcpus_ > e.summary.free_pinnable_cpus)
      return "host: " + std::to_string(e.summary.free_pinnable_cpus) + " free pinnable CPUs, needs " +
             std::to_string(pinned_vcpus_);
    const std::vector<std::vector<const topology::PciDevice*>>& matching = MatchingOn(e);
    for (size_t r = 0; r < req_.pci.size(); ++r) {
      const int free = FreeOf(e, matching[r]);
      if (free < req_.pci[r].count)
        return "PCI alias '" + req_.pci[r].alias + "': " + std::to_string(free) +
               " free matching devices on the host, needs " + std::to_string(req_.pci[r].count);
    }
    return "";
  }

 private:
  static int FreeOf(const HostEntry& e, const std::vector<const topology::PciDevice*>& devices) {
    if (e.usage.devices.empty()) return static_cast<int>(devices.size());
    int free = 0;
    for (const topology::PciDevice* d : devices) free += e.usage.devices.count(d->address) ? 0 : 1;
    return free;
  }

  const std::vector<std::vector<const topology::PciDevice*>>& MatchingOn(const HostEntry& e) {
    auto it = matching_.find(e.hardware.get());
    if (it != matching_.end()) return it->second;
    std::vector<std::vector<const topology::PciDevice*>> per_request(req_.pci.size());
    for (size_t r = 0; r < req_.pci.size(); ++r)
      for (const topology::PciDevice& d : e.hardware->pci)
        for (const placement::PciSpec& spec : req_.pci[r].specs)
          if (placement::SpecMatches(spec, d)) {
            per_request[r].push_back(&d);
            break;
          }
    return matching_.emplace(e.hardware.get(), std::move(per_request)).first->second;
  }

  const placement::PlacementRequest& req_;
  int pinned_vcpus_ = 0;
  std::unordered_map<const topology::HostTopology*, std::vector<std::vector<const topology::PciDevice*>>> matching_;
};

// The working copy of the hosts this request has placed instances on; the view stays const.
struct Working {
  std::unordered_map<size_t, HostEntry> changed;
  std::unordered_map<size_t, std::vector<int>> instances_on;  // host index -> instance numbers
  const HostEntry& Get(const FleetView& view, size_t i) const {
    auto it = changed.find(i);
    return it == changed.end() ? view.hosts()[i] : it->second;
  }
};

// The last element is the host's index in the view, which keeps hosts in name order.
using RankKey = std::tuple<int, int, int, int, uint64_t, size_t>;

RankKey KeyOf(const HostEntry& e, size_t index, const ScheduleOptions& o) {
  const HostSummary& s = e.summary;
  const int sign = o.strategy == FleetStrategy::kPack ? 1 : -1;
  // Fragmentation: a host with a partly used accelerator node keeps whole nodes whole.
  return {sign * s.free_accelerators, sign * s.free_pinnable_cpus, s.has_partly_used_node ? 0 : 1, s.idle ? 1 : 0,
          o.tiebreak_seed.empty() ? 0 : SeededHash(o.tiebreak_seed, e.record.name), index};
}

}  // namespace

std::string CauseOf(const std::string& reason) {
  auto has = [&](const char* word) { return reason.find(word) != std::string::npos; };
  if (has("PCI") || has("device")) return "PCI devices";
  if (has("NUMA cells")) return "NUMA cells";
  if (has("pages") || has("MiB") || has("memory")) return "memory";
  if (has("CPU") || has("core") || has("vCPU") || has("thread")) return "CPUs";
  return "other";
}

std::vector<std::string> DescribeCauses(const std::vector<CauseCount>& causes) {
  auto with_commas = [](int n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
  };
  std::vector<std::string> lines;
  for (const CauseCount& c : causes)
    lines.push_back(with_commas(c.hosts) + (c.hosts == 1 ? " host: " : " hosts: ") + c.cause +
                    (c.example.empty() ? "" : " (e.g. " + c.example + ")"));
  return lines;
}

ScheduleResult Schedule(const FleetView& view, const placement::PlacementRequest& request,
                        const ScheduleOptions& options) {
  ScheduleResult result;
  const int64_t now = options.now_unix ? options.now_unix : view.taken_at();
  const size_t n = view.hosts().size();
  CountCheck counts(request);
  Working work;
  // Engine answers per distinct host state, for this request.
  std::unordered_map<std::string, placement::PlaceResult> memo;
  auto place_on = [&](const HostEntry& e) -> const placement::PlaceResult& {
    auto it = memo.find(e.usage_key);
    if (it != memo.end()) return it->second;
    ++result.engine_calls;
    return memo.emplace(e.usage_key, placement::Place(*e.hardware, e.usage, e.record.policy, request)).first->second;
  };

  for (int instance = 0; instance < options.count; ++instance) {
    std::map<std::string, CauseCount> causes;
    auto count_cause = [&](const std::string& cause, const std::string& example) {
      CauseCount& c = causes[cause];
      c.cause = cause;
      if (c.hosts++ == 0) c.example = example;
    };
    std::vector<std::pair<RankKey, size_t>> ranked;
    ranked.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const HostEntry& e = work.Get(view, i);
      const HostRecord& r = e.record;
      if (r.state != HostAdminState::kEnabled) {
        count_cause(HostAdminStateName(r.state), r.name);
        continue;
      }
      if (IsStale(r, now)) {
        count_cause("stale (no heartbeat from its agent)", r.name);
        continue;
      }
      if (!MatchesAll(options.where, r.labels)) {
        count_cause("labels do not match --where", r.name);
        continue;
      }
      if (options.different_hosts && work.instances_on.count(i)) {
        count_cause("holds an earlier instance (--different-hosts)", r.name);
        continue;
      }
      if (const char* cause = counts.ShortfallCause(e)) {
        CauseCount& c = causes[cause];
        c.cause = cause;
        if (c.hosts++ == 0) c.example = r.name + ": " + counts.Shortfall(e);
        continue;
      }
      ranked.emplace_back(KeyOf(e, i, options), i);
    }
    result.hosts_ranked = static_cast<int>(ranked.size());

    // Best first; sort only as deep as needed (most decisions end in the first few dozen).
    const int wanted = 1 + std::max(0, options.alternates);
    std::vector<Candidate> found;
    size_t sorted = 0;
    for (size_t pos = 0; pos < ranked.size() && static_cast<int>(found.size()) < wanted; ++pos) {
      if (pos == sorted) {
        const size_t next = std::min(ranked.size(), std::max<size_t>(64, sorted * 4));
        std::partial_sort(ranked.begin() + sorted, ranked.begin() + next, ranked.end());
        sorted = next;
      }
      const size_t i = ranked[pos].second;
      const HostEntry& e = work.Get(view, i);
      const placement::PlaceResult& fit = place_on(e);
      if (!fit.fits()) {
        const std::string why = fit.no_fit.reasons.empty() ? "does not fit" : fit.no_fit.reasons.front();
        count_cause(CauseOf(why), e.record.name + ": " + why);
        continue;
      }
      Candidate c;
      c.host_index = i;
      c.host = e.record.name;
      c.generation = e.record.generation;
      c.placement = *fit.placement;
      c.placement.host = e.record.name;
      if (auto on = work.instances_on.find(i); on != work.instances_on.end()) c.assumed_instances = on->second;
      found.push_back(std::move(c));
    }
    if (found.empty()) {
      for (auto& [cause, c] : causes) result.why_not.push_back(c);
      std::stable_sort(result.why_not.begin(), result.why_not.end(),
                       [](const CauseCount& a, const CauseCount& b) { return a.hosts > b.hosts; });
      return result;
    }
    InstanceDecision d;
    d.chosen = std::move(found.front());
    d.alternates.assign(std::make_move_iterator(found.begin() + 1), std::make_move_iterator(found.end()));
    // Apply to the working copy: the next instance sees this one.
    const size_t i = d.chosen.host_index;
    auto [it, inserted] = work.changed.try_emplace(i, view.hosts()[i]);
    HostEntry& copy = it->second;
    copy.usage.Apply(d.chosen.placement);
    ++copy.record.generation;
    Summarize(&copy);
    work.instances_on[i].push_back(instance);
    result.instances.push_back(std::move(d));
  }
  result.all_placed = true;
  return result;
}

}  // namespace accel::fleet
