#include "fleet/scheduler.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "common/hash.h"
#include "fleet/share_scheduler.h"
#include "placement/pci_fit.h"

namespace accel::fleet {

namespace {

// A fixed, seeded order over hosts: the host name's FNV-1a (RankRow::name_hash) mixed with the
// seed's. The finalizer matters: without it names that differ in their last digits
// (gpu-0480 ... gpu-0489) stay next to each other under every seed, and replicas that meet there
// race for the same hosts.
uint64_t SeededTiebreak(uint64_t seed_hash, uint64_t name_hash) {
  return Mix64(name_hash ^ (seed_hash * 0x9e3779b97f4a7c15ULL));
}

// Why a host is skipped without the engine.
enum class Shortfall { kNone, kCpus, kDevices, kDevicesOnNodes };

// What the flavor needs, by count, and for each hardware of the view the accelerators that
// could serve each of its PCI requests, as masks over RankRow::free_accelerator_mask.
class CountCheck {
 public:
  CountCheck(const FleetView& view, const placement::PlacementRequest& req)
      : view_(view), req_(req), per_hardware_(view.hardware().size()) {
    for (const placement::GuestCell& c : req.cells) pinned_vcpus_ += c.dedicated_vcpus.Count();
  }

  // Whether the host surely cannot fit by count. Cheap: it runs for every host of every
  // decision and reads the row only (the entry only for hardware the masks cannot describe).
  Shortfall Check(const RankRow& row, const HostEntry& (*entry)(const void*, size_t), const void* ctx, size_t i) {
    if (pinned_vcpus_ > row.free_pinnable_cpus) return Shortfall::kCpus;
    if (req_.pci.empty()) return Shortfall::kNone;
    const Masks& m = MasksOf(row.hardware);
    for (size_t r = 0; r < req_.pci.size(); ++r) {
      if (!m.exact[r]) {
        if (FreeOf(entry(ctx, i), m.matching[r]) < req_.pci[r].count) return Shortfall::kDevices;
        continue;
      }
      if (__builtin_popcountll(row.free_accelerator_mask & m.match[r]) < req_.pci[r].count)
        return Shortfall::kDevices;
      if (m.bounded[r] && OnBestNodes(row, m, r) < req_.pci[r].count) return Shortfall::kDevicesOnNodes;
    }
    return Shortfall::kNone;
  }

  // The reason Check found, as a person reads it.
  std::string Explain(Shortfall why, const RankRow& row, const HostEntry& e) {
    if (why == Shortfall::kCpus)
      return "host: " + std::to_string(row.free_pinnable_cpus) + " free pinnable CPUs, needs " +
             std::to_string(pinned_vcpus_);
    const Masks& m = MasksOf(row.hardware);
    for (size_t r = 0; r < req_.pci.size(); ++r) {
      const placement::PciRequest& q = req_.pci[r];
      const int free = m.exact[r] ? __builtin_popcountll(row.free_accelerator_mask & m.match[r])
                                  : FreeOf(e, m.matching[r]);
      if (free < q.count)
        return "PCI alias '" + q.alias + "': " + std::to_string(free) + " free matching devices on the host, needs " +
               std::to_string(q.count);
      if (why == Shortfall::kDevicesOnNodes && m.exact[r] && m.bounded[r]) {
        const int on_nodes = OnBestNodes(row, m, r);
        if (on_nodes < q.count)
          return "PCI alias '" + q.alias + "': at most " + std::to_string(on_nodes) + " free matching devices on " +
                 std::to_string(req_.cells.size()) + " NUMA node" + (req_.cells.size() == 1 ? "" : "s") +
                 ", needs " + std::to_string(q.count) + " local to the guest's cells (numa_policy " +
                 (q.numa_policy == placement::PciNumaPolicy::kRequired ? "required" : "legacy") + ")";
      }
    }
    return "";
  }

 private:
  struct Masks {
    bool ready = false;
    std::vector<std::vector<const topology::PciDevice*>> matching;  ///< [request]: every matching device
    std::vector<bool> exact;     ///< [request]: all of them are among the masks' accelerators
    std::vector<uint64_t> match;  ///< [request]: matching accelerators
    std::vector<bool> bounded;   ///< [request]: the node bound applies
    std::vector<std::vector<uint64_t>> on_node;  ///< [request][node index]: matching accelerators there
    std::vector<uint64_t> no_node;  ///< [request]: matching accelerators of no known node
  };

  // Under numa_policy required (and legacy) every device sits on a host node that holds one of
  // the guest's cells (or, legacy only, on no known node); a guest has req_.cells.size() cells,
  // so the nodes with the most free matching devices bound what the host can give. Devices of
  // no known node count in full: the bound stays a necessary condition, never refusing a fit.
  int OnBestNodes(const RankRow& row, const Masks& m, size_t r) {
    best_.clear();
    for (uint64_t mask : m.on_node[r]) best_.push_back(__builtin_popcountll(row.free_accelerator_mask & mask));
    const size_t cells = std::min(best_.size(), req_.cells.size());
    std::partial_sort(best_.begin(), best_.begin() + static_cast<long>(cells), best_.end(), std::greater<int>());
    int sum = __builtin_popcountll(row.free_accelerator_mask & m.no_node[r]);
    for (size_t k = 0; k < cells; ++k) sum += best_[k];
    return sum;
  }

  static int FreeOf(const HostEntry& e, const std::vector<const topology::PciDevice*>& devices) {
    if (e.usage.devices.empty()) return static_cast<int>(devices.size());
    int free = 0;
    for (const topology::PciDevice* d : devices) free += e.usage.devices.count(d->address) ? 0 : 1;
    return free;
  }

  const Masks& MasksOf(uint32_t hardware) {
    Masks& m = per_hardware_[hardware];
    if (m.ready) return m;
    const HardwareInfo& info = view_.hardware()[hardware];
    const topology::HostTopology& hw = *info.topology;
    const size_t n = req_.pci.size();
    m.matching.assign(n, {});
    m.exact.assign(n, info.masks_complete);
    m.match.assign(n, 0);
    m.bounded.assign(n, false);
    m.on_node.assign(n, std::vector<uint64_t>(hw.numa_nodes.size(), 0));
    m.no_node.assign(n, 0);
    for (size_t r = 0; r < n; ++r) {
      const placement::PciRequest& q = req_.pci[r];
      auto matches = [&](const topology::PciDevice& d) {
        for (const placement::PciSpec& spec : q.specs)
          if (placement::SpecMatches(spec, d)) return true;
        return false;
      };
      for (const topology::PciDevice& d : hw.pci)
        if (matches(d)) {
          m.matching[r].push_back(&d);
          if (!d.is_accelerator()) m.exact[r] = false;  // a NIC: the masks only cover accelerators
        }
      for (size_t j = 0; j < info.accelerators.size() && j < 64; ++j) {
        if (!matches(*info.accelerators[j])) continue;
        const uint64_t bit = uint64_t{1} << j;
        m.match[r] |= bit;
        const int node = info.accelerator_node[j];
        (node < 0 ? m.no_node[r] : m.on_node[r][static_cast<size_t>(node)]) |= bit;
      }
      m.bounded[r] = !req_.cells.empty() && (q.numa_policy == placement::PciNumaPolicy::kRequired ||
                                             q.numa_policy == placement::PciNumaPolicy::kLegacy);
    }
    m.ready = true;
    return m;
  }

  const FleetView& view_;
  const placement::PlacementRequest& req_;
  int pinned_vcpus_ = 0;
  std::vector<Masks> per_hardware_;
  std::vector<int> best_;
};

// The working copy of the hosts this request has placed instances on; the view stays const.
struct Working {
  struct Changed {
    HostEntry entry;
    RankRow row;  ///< state = kNoState: engine answers are memoized by usage_key instead
  };
  std::unordered_map<size_t, Changed> changed;
  std::unordered_map<size_t, std::vector<int>> instances_on;  // host index -> instance numbers
  const HostEntry& Get(const FleetView& view, size_t i) const {
    if (changed.empty()) return view.hosts()[i];
    auto it = changed.find(i);
    return it == changed.end() ? view.hosts()[i] : it->second.entry;
  }
  const RankRow& Row(const FleetView& view, size_t i) const {
    if (changed.empty()) return view.rows()[i];
    auto it = changed.find(i);
    return it == changed.end() ? view.rows()[i] : it->second.row;
  }
};

struct WorkingLookup {
  const FleetView* view;
  const Working* work;
  static const HostEntry& Entry(const void* self, size_t i) {
    const WorkingLookup* l = static_cast<const WorkingLookup*>(self);
    return l->work->Get(*l->view, i);
  }
};

// The documented order (scheduler.h): the partition, strategy, fragmentation, then the tiebreak
// — 0 without a seed, so the view's index, which follows the host name, decides.
struct RankKey {
  int outside;       ///< 0 for a host of this replica's partition (or without one), 1 for others
  int accelerators;  ///< pack: free accelerators; spread: minus them
  int cpus;          ///< pack: free pinnable CPUs; spread: minus them
  int whole_nodes;   ///< 0 when a node's accelerators are partly used already
  int idle;          ///< 1 for an idle host (kept whole)
  uint64_t tiebreak;
  uint32_t index;    ///< in FleetView::hosts()
  bool operator<(const RankKey& o) const {
    return std::tie(outside, accelerators, cpus, whole_nodes, idle, tiebreak, index) <
           std::tie(o.outside, o.accelerators, o.cpus, o.whole_nodes, o.idle, o.tiebreak, o.index);
  }
};

// Hosts that did not take an instance, per cause; the example text is only built for the first
// host of a cause (most decisions never show it).
class CauseTally {
 public:
  template <typename Example>
  void Add(std::string_view cause, Example&& example) {
    auto it = causes_.find(cause);
    if (it == causes_.end()) it = causes_.emplace(std::string(cause), CauseCount{std::string(cause), 0, example()}).first;
    ++it->second.hosts;
  }
  std::vector<CauseCount> MostHostsFirst() const {
    std::vector<CauseCount> out;
    for (const auto& [cause, c] : causes_) out.push_back(c);
    std::stable_sort(out.begin(), out.end(), [](const CauseCount& a, const CauseCount& b) { return a.hosts > b.hosts; });
    return out;
  }

 private:
  std::map<std::string, CauseCount, std::less<>> causes_;
};

}  // namespace

int PartitionOf(uint64_t name_hash, int count) {
  if (count <= 1) return 0;
  return static_cast<int>(Mix64(name_hash) % static_cast<uint64_t>(count));
}

int PartitionOfHost(const std::string& host_name, int count) { return PartitionOf(Fnv1a(host_name), count); }

SchedulePartition ParsePartition(const std::string& text, const std::string& where) {
  const std::string hint = "INDEX/COUNT, 0-based: --replica 0/2 and --replica 1/2 for two replicas";
  const size_t slash = text.find('/');
  auto whole = [&](const std::string& part, const char* what) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(where, text, std::string(what) + " is not a whole number", hint);
    return part.size() > 6 ? 1000000 : std::stoi(part);  // out of range either way
  };
  if (slash == std::string::npos) throw InputError(where, text, "is not INDEX/COUNT", hint);
  SchedulePartition p;
  p.index = whole(text.substr(0, slash), "the index");
  p.count = whole(text.substr(slash + 1), "the count");
  if (p.count < 1 || p.count > 1024) throw InputError(where, text, "the count must be 1 to 1024", hint);
  if (p.index >= p.count)
    throw InputError(where, text, "the index must be below the count (replicas are numbered from 0)", hint);
  return p;
}

std::string FormatPartition(const SchedulePartition& partition) {
  return std::to_string(partition.index) + "/" + std::to_string(partition.count);
}

std::string NoFitReason(const placement::NoFit& no_fit) {
  return no_fit.reasons.empty() ? "does not fit" : no_fit.reasons.front();
}

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
  if (IsShareRequest(request)) return ScheduleShares(view, request, options);
  ScheduleResult result;
  const int64_t now = options.now_unix ? options.now_unix : view.taken_at();
  const size_t n = view.hosts().size();
  const int sign = options.strategy == FleetStrategy::kPack ? 1 : -1;
  const bool seeded = !options.tiebreak_seed.empty();
  const uint64_t seed_hash = seeded ? Fnv1a(options.tiebreak_seed) : 0;
  const SchedulePartition& part = options.partition;
  if (part.count < 1 || part.index < 0 || part.index >= part.count)
    throw InputError("schedule options", "partition", FormatPartition(part) + " is not INDEX/COUNT with 0 <= INDEX < COUNT");
  const bool partitioned = part.count > 1;
  CountCheck counts(view, request);
  Working work;
  const WorkingLookup lookup{&view, &work};

  // Engine answers per distinct host state, for this request: by state id for the view's
  // hosts, by usage_key for the working copies of hosts this request changed.
  std::deque<placement::PlaceResult> answers;
  std::vector<int32_t> by_state(view.state_id_bound(), -1);
  std::unordered_map<std::string, int32_t> by_key;
  auto place_on = [&](const HostEntry& e, const RankRow& row) -> const placement::PlaceResult& {
    int32_t* slot;
    if (row.state != kNoState) {
      slot = &by_state[row.state];
    } else {
      slot = &by_key.try_emplace(e.usage_key, -1).first->second;
    }
    if (*slot < 0) {
      ++result.engine_calls;
      answers.push_back(placement::Place(*e.hardware, e.usage, e.record.policy, request));
      *slot = static_cast<int32_t>(answers.size() - 1);
    }
    return answers[static_cast<size_t>(*slot)];
  };

  std::vector<char> skipped;
  if (!options.skip_hosts.empty()) {
    skipped.assign(n, 0);
    for (size_t i : options.skip_hosts)
      if (i < n) skipped[i] = 1;
  }
  std::vector<RankKey> ranked;
  ranked.reserve(n);
  std::vector<size_t> others;  // hosts of the other replicas' partitions, ranked only when needed
  for (int instance = 0; instance < options.count; ++instance) {
    CauseTally causes;
    ranked.clear();
    others.clear();
    // Filters and count checks; a host that passes joins `ranked` (outside: 1 for a host of
    // another replica's partition).
    auto consider = [&](size_t i, int outside) {
      const RankRow& row = work.Row(view, i);
      auto name = [&] { return view.hosts()[i].record.name; };
      if (!row.enabled) {
        causes.Add(HostAdminStateName(view.hosts()[i].record.state), name);
        return;
      }
      if (now > row.stale_after_unix) {
        causes.Add("stale (no heartbeat from its agent)", name);
        return;
      }
      if (!options.where.empty() && !MatchesAll(options.where, view.hosts()[i].record.labels)) {
        causes.Add("labels do not match --where", name);
        return;
      }
      if (!skipped.empty() && skipped[i]) {
        causes.Add("claim in flight on this scheduler", name);
        return;
      }
      if (options.different_hosts && work.instances_on.count(i)) {
        causes.Add("holds an earlier instance (--different-hosts)", name);
        return;
      }
      if (const Shortfall why = counts.Check(row, &WorkingLookup::Entry, &lookup, i); why != Shortfall::kNone) {
        causes.Add(why == Shortfall::kCpus ? "CPUs" : "PCI devices",
                   [&] { return name() + ": " + counts.Explain(why, row, work.Get(view, i)); });
        return;
      }
      ranked.push_back(RankKey{outside, sign * row.free_accelerators, sign * row.free_pinnable_cpus,
                               row.partly_used_node ? 0 : 1, row.idle ? 1 : 0,
                               seeded ? SeededTiebreak(seed_hash, row.name_hash) : 0, static_cast<uint32_t>(i)});
    };
    // The partition's own hosts rank before every other host, so the others are filtered and
    // ranked only when the own ones give fewer candidates than wanted: with R replicas a
    // decision usually filters and ranks 1/R of the fleet. The order, and so the answer, is the
    // same.
    for (size_t i = 0; i < n; ++i) {
      if (partitioned && PartitionOf(work.Row(view, i).name_hash, part.count) != part.index) others.push_back(i);
      else consider(i, 0);
    }

    // Best first; sort only as deep as needed (most decisions end in the first few dozen).
    const int subset = seeded ? std::max(1, options.subset_size) : 1;
    const int wanted = std::max(subset, 1 + std::max(0, options.alternates));
    std::vector<Candidate> found;
    size_t own_found = 0;  // the first own_found of `found` are of this replica's partition
    size_t sorted = 0;
    for (size_t pos = 0; static_cast<int>(found.size()) < wanted; ++pos) {
      if (pos == ranked.size()) {
        if (others.empty()) break;
        for (size_t i : others) consider(i, 1);  // ranked after every own host: sorted stays valid
        others.clear();
        if (pos == ranked.size()) break;
      }
      if (pos == sorted) {
        const size_t next = std::min(ranked.size(), std::max<size_t>(64, sorted * 4));
        std::partial_sort(ranked.begin() + static_cast<long>(sorted), ranked.begin() + static_cast<long>(next),
                          ranked.end());
        sorted = next;
      }
      const size_t i = ranked[pos].index;
      const HostEntry& e = work.Get(view, i);
      const placement::PlaceResult& fit = place_on(e, work.Row(view, i));
      if (!fit.fits()) {
        const std::string why = NoFitReason(fit.no_fit);
        causes.Add(CauseOf(why), [&] { return e.record.name + ": " + why; });
        continue;
      }
      Candidate c;
      c.host_index = i;
      c.host = e.record.name;
      c.generation = e.record.generation;
      c.placement = *fit.placement;
      c.placement.host = e.record.name;
      if (auto on = work.instances_on.find(i); on != work.instances_on.end()) c.assumed_instances = on->second;
      if (ranked[pos].outside == 0) ++own_found;
      found.push_back(std::move(c));
    }
    result.hosts_ranked = static_cast<int>(ranked.size());
    if (found.empty()) {
      result.why_not = causes.MostHostsFirst();
      return result;
    }
    // Nova's host_subset_size, seeded: the first of the best `subset` hosts in the seed's order —
    // among the partition's own while it has a fit, so the choice never leaves it needlessly.
    const size_t choose_among = own_found > 0 ? std::min<size_t>(own_found, static_cast<size_t>(subset))
                                              : static_cast<size_t>(subset);
    size_t pick = 0;
    for (size_t k = 1; k < found.size() && k < choose_among; ++k)
      if (SeededTiebreak(seed_hash, view.rows()[found[k].host_index].name_hash) <
          SeededTiebreak(seed_hash, view.rows()[found[pick].host_index].name_hash))
        pick = k;
    std::rotate(found.begin(), found.begin() + static_cast<long>(pick), found.begin() + static_cast<long>(pick) + 1);
    found.resize(std::min(found.size(), static_cast<size_t>(1 + std::max(0, options.alternates))));
    InstanceDecision d;
    d.chosen = std::move(found.front());
    d.alternates.assign(std::make_move_iterator(found.begin() + 1), std::make_move_iterator(found.end()));
    // Apply to the working copy: the next instance sees this one. (The last instance has no
    // next one: a one-instance decision, the common one, copies no host.)
    if (instance + 1 < options.count) {
      const size_t i = d.chosen.host_index;
      auto [it, inserted] = work.changed.try_emplace(i, Working::Changed{view.hosts()[i], RankRow{}});
      HostEntry& copy = it->second.entry;
      copy.usage.Apply(d.chosen.placement);
      ++copy.record.generation;
      Summarize(&copy);
      it->second.row = view.RowOf(copy);
      work.instances_on[i].push_back(instance);
    }
    result.instances.push_back(std::move(d));
  }
  result.all_placed = true;
  return result;
}

}  // namespace accel::fleet
