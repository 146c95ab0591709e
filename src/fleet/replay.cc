#include "fleet/replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include "common/error.h"
#include "fleet/fleet_view.h"
#include "fleet/scheduler.h"

namespace accel::fleet {

namespace {

constexpr int kArrivalPoints = 131;  // 0 .. 130 % arrived
constexpr int kTimePoints = 101;     // 0 .. 100 % of the time span

// splitmix64: a fixed generator, so a seed gives the same list everywhere.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), without modulo bias (Lemire's rejection).
  uint64_t Below(uint64_t n) {
    while (true) {
      const unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
      const uint64_t low = static_cast<uint64_t>(m);
      if (low >= n || low >= (0 - n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }
};

// The view of the trace's nodes, and the host index of each node.
FleetView ViewOf(const std::vector<TraceNode>& nodes, std::vector<size_t>* host_of_node) {
  FleetView view = TraceFleetView(nodes);
  host_of_node->resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) (*host_of_node)[i] = static_cast<size_t>(view.IndexOf(nodes[i].name));
  return view;
}

}  // namespace

FleetView TraceFleetView(const std::vector<TraceNode>& nodes) {
  FleetSnapshot snap;
  std::map<std::tuple<int64_t, uint64_t, int, std::string>, std::string> ids;
  for (const TraceNode& n : nodes) {
    const auto shape = std::make_tuple(n.cpu_milli, n.memory_mib, n.gpus, n.model);
    auto it = ids.find(shape);
    if (it == ids.end()) {
      topology::HostTopology t = TraceHostTopology(n);
      t.hostname = kSharedHostname;
      const std::string id = TopologyId(t);
      snap.topologies.emplace(id, std::make_shared<const topology::HostTopology>(std::move(t)));
      it = ids.emplace(shape, id).first;
    }
    HostRecord r;
    r.name = n.name;
    r.topology_id = it->second;
    r.policy = TraceHostPolicy(n);
    snap.hosts.push_back(std::move(r));
  }
  return FleetView::FromSnapshot(snap);
}

namespace {

struct Job {
  size_t policy_index = 0;
  size_t seed_index = 0;
};

// Index of each GPU among its host's accelerators, by address.
int GpuIndex(const HostEntry& e, const std::string& address) {
  int k = 0;
  for (const topology::PciDevice& d : e.hardware->pci) {
    if (!d.is_accelerator()) continue;
    if (d.address == address) return k;
    ++k;
  }
  return -1;
}

struct RunContext {
  const std::vector<TraceNode>& nodes;
  const std::vector<TracePod>& pods;
  const std::vector<placement::PlacementRequest>& requests;
  const FleetView& base;
  const std::vector<size_t>& host_of_node;
  std::vector<int> node_of_host;
  std::shared_ptr<const WorkloadMix> mix;
  int64_t capacity_milli = 0;
  const ReplayOptions& options;
};

ScheduleOptions OptionsFor(const RunContext& ctx, GpuPolicy policy, uint64_t seed) {
  ScheduleOptions o;
  o.alternates = 0;
  o.scorer = std::make_shared<GpuScorer>(policy, ctx.mix, seed);
  o.tiebreak_seed = "replay-" + std::to_string(seed);
  o.now_unix = 1;
  return o;
}

// Places pod `p` on `view`; returns the host index or -1, filling *placed with the placement.
int PlaceOne(const RunContext& ctx, FleetView* view, const ScheduleOptions& o, int p, placement::Placement* placed) {
  const ScheduleResult r = Schedule(*view, ctx.requests[static_cast<size_t>(p)], o);
  if (!r.all_placed) return -1;
  const Candidate& c = r.instances.front().chosen;
  if (std::string err = view->Apply(c.host_index, c.placement); !err.empty())
    throw std::logic_error("replay: the scheduler's placement does not apply: " + err);
  *placed = c.placement;
  return static_cast<int>(c.host_index);
}

ReplayAssignment AssignmentOf(const RunContext& ctx, const FleetView& view, int seq, int pod, int host,
                              const placement::Placement& p) {
  ReplayAssignment a;
  a.seq = seq;
  a.pod = pod;
  if (host < 0) return a;
  a.node = ctx.node_of_host[static_cast<size_t>(host)];
  for (const placement::GpuPlacement& g : p.gpus)
    a.gpus.emplace_back(GpuIndex(view.hosts()[static_cast<size_t>(host)], g.address), g.milli);
  return a;
}

ReplayRun RunArrivals(const RunContext& ctx, GpuPolicy policy, uint64_t seed) {
  ReplayRun run;
  run.seed = seed;
  FleetView view = ctx.base;
  const ScheduleOptions o = OptionsFor(ctx, policy, seed);
  const std::vector<int> order = ArrivalOrder(ctx.pods, ctx.capacity_milli, ctx.options.tune, seed);
  run.pods = static_cast<int>(order.size());
  run.allocated_pct.assign(kArrivalPoints, 0);
  run.bound_pct.assign(kArrivalPoints, 0);
  int64_t arrived = 0, allocated = 0;
  int next_point = 1;
  const double cap = static_cast<double>(ctx.capacity_milli);
  placement::Placement placed;
  for (size_t seq = 0; seq < order.size(); ++seq) {
    const int p = order[seq];
    const int host = PlaceOne(ctx, &view, o, p, &placed);
    const int64_t demand = ctx.pods[static_cast<size_t>(p)].GpuMilli();
    arrived += demand;
    if (host >= 0) {
      allocated += demand;
      ++run.placed;
    }
    if (ctx.options.assignments) run.assignments.push_back(AssignmentOf(ctx, view, static_cast<int>(seq), p, host, placed));
    while (next_point < kArrivalPoints && static_cast<double>(arrived) >= cap * next_point / 100.0) {
      run.allocated_pct[static_cast<size_t>(next_point)] = 100.0 * static_cast<double>(allocated) / cap;
      run.bound_pct[static_cast<size_t>(next_point)] = 100.0 * std::min(static_cast<double>(arrived), cap) / cap;
      ++next_point;
    }
  }
  for (; next_point < kArrivalPoints; ++next_point) {
    run.allocated_pct[static_cast<size_t>(next_point)] = 100.0 * static_cast<double>(allocated) / cap;
    run.bound_pct[static_cast<size_t>(next_point)] = 100.0 * std::min(static_cast<double>(arrived), cap) / cap;
  }
  return run;
}

ReplayRun RunDepartures(const RunContext& ctx, GpuPolicy policy, uint64_t seed) {
  ReplayRun run;
  run.seed = seed;
  FleetView view = ctx.base;
  const ScheduleOptions o = OptionsFor(ctx, policy, seed);
  struct Event {
    int64_t time;
    int kind;  // 0 = leaves (first at equal times), 1 = arrives
    int pod;
  };
  std::vector<Event> events;
  int64_t t0 = 0, t1 = 0;
  bool any = false;
  for (size_t p = 0; p < ctx.pods.size(); ++p) {
    const TracePod& pod = ctx.pods[p];
    if (!pod.created) continue;
    events.push_back({*pod.created, 1, static_cast<int>(p)});
    if (pod.deleted) events.push_back({*pod.deleted, 0, static_cast<int>(p)});
    t0 = any ? std::min(t0, *pod.created) : *pod.created;
    t1 = std::max({any ? t1 : *pod.created, *pod.created, pod.deleted.value_or(*pod.created)});
    any = true;
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.kind, a.pod) < std::tie(b.time, b.kind, b.pod);
  });
  std::vector<int> host_of(ctx.pods.size(), -1);
  std::vector<placement::Placement> placement_of(ctx.pods.size());
  run.allocated_pct.assign(kTimePoints, 0);
  const double cap = static_cast<double>(ctx.capacity_milli);
  int64_t allocated = 0;
  int next_point = 0;
  const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1.0;

  int seq = 0;
  for (const Event& ev : events) {
    // Sample every point strictly before this event's time with the state before it.
    while (next_point < kTimePoints && t0 + span * next_point / 100.0 < static_cast<double>(ev.time)) {
      run.allocated_pct[static_cast<size_t>(next_point)] = 100.0 * static_cast<double>(allocated) / cap;
      ++next_point;
    }
    const size_t p = static_cast<size_t>(ev.pod);
    if (ev.kind == 0) {
      if (host_of[p] >= 0) {
        view.Release(static_cast<size_t>(host_of[p]), placement_of[p]);
        allocated -= ctx.pods[p].GpuMilli();
        host_of[p] = -1;
      }
      continue;
    }
    ++run.pods;
    const int host = PlaceOne(ctx, &view, o, ev.pod, &placement_of[p]);
    if (host >= 0) {
      host_of[p] = host;
      allocated += ctx.pods[p].GpuMilli();
      ++run.placed;
    }
    if (ctx.options.assignments) run.assignments.push_back(AssignmentOf(ctx, view, seq, ev.pod, host, placement_of[p]));
    ++seq;
  }
  for (; next_point < kTimePoints; ++next_point)
    run.allocated_pct[static_cast<size_t>(next_point)] = 100.0 * static_cast<double>(allocated) / cap;
  return run;
}

}  // namespace

std::vector<int> ArrivalOrder(const std::vector<TracePod>& pods, int64_t capacity_milli, double tune, uint64_t seed) {
  std::vector<int> order;
  order.reserve(pods.size() * 2);
  int64_t total = 0;
  for (size_t p = 0; p < pods.size(); ++p) {
    order.push_back(static_cast<int>(p));
    total += pods[p].GpuMilli();
  }
  Rng rng{seed};
  const auto target = static_cast<int64_t>(tune * static_cast<double>(capacity_milli));
  bool any_gpu = false;
  for (const TracePod& p : pods) any_gpu = any_gpu || p.GpuMilli() > 0;
  while (any_gpu && total < target) {
    const int p = static_cast<int>(rng.Below(pods.size()));
    order.push_back(p);
    total += pods[static_cast<size_t>(p)].GpuMilli();
  }
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  return order;
}

WorkloadMix TypicalPodsMix(const std::vector<TracePod>& pods) {
  std::map<std::tuple<int64_t, int, int, std::string>, std::pair<int, size_t>> counts;  // shape -> (pods, first)
  std::map<std::tuple<int64_t, int, int, std::string>, double> memory;  // shape -> memory of its pods
  for (size_t i = 0; i < pods.size(); ++i) {
    const TracePod& p = pods[i];
    const auto shape = std::make_tuple(p.cpu_milli, p.gpu_milli, p.num_gpu, p.gpu_spec);
    auto [it, inserted] = counts.try_emplace(shape, std::make_pair(0, i));
    ++it->second.first;
    memory[shape] += static_cast<double>(p.memory_mib);
  }
  std::vector<std::pair<std::tuple<int64_t, int, int, std::string>, std::pair<int, size_t>>> sorted(counts.begin(),
                                                                                                    counts.end());
  // Most pods first; equal counts: the larger shape first (FGD's order).
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.second.first != b.second.first) return a.second.first > b.second.first;
    return a.first > b.first;
  });
  WorkloadMix mix;
  const double total = static_cast<double>(pods.size());
  double covered = 0;
  for (const auto& [shape, count] : sorted) {
    if (covered >= 0.95 * total) break;
    const TracePod& p = pods[count.second];
    TracePod shape_pod = p;
    // FGD's shapes ignore memory; the entry carries its pods' mean for policies that weigh it.
    shape_pod.memory_mib = static_cast<uint64_t>(memory[shape] / count.first);
    MixEntry e = MixEntryOf(TracePodRequest(shape_pod));
    e.name = std::to_string(p.num_gpu) + "x" + std::to_string(p.gpu_milli) + "m cpu " + std::to_string(p.cpu_milli) + "m" +
             (p.gpu_spec.empty() ? "" : " " + p.gpu_spec);
    e.weight = count.first;
    covered += count.first;
    mix.entries.push_back(std::move(e));
  }
  mix.Normalize();
  return mix;
}

std::vector<ReplayResult> Replay(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const ReplayOptions& options) {
  int64_t capacity_milli = 0;
  for (const TraceNode& n : nodes) capacity_milli += int64_t{n.gpus} * 1000;
  if (capacity_milli == 0) throw InputError("nodes", "gpu", "no node has a GPU", "replay a cluster with GPU nodes");
  if (pods.empty()) throw InputError("pods", "", "the pod list is empty", "give a pod list with at least one pod");
  if (options.departures) {
    bool any = false;
    for (const TracePod& p : pods) any = any || p.created.has_value();
    if (!any)
      throw InputError("pods", "creation_time", "no pod has a creation time, so departures cannot be replayed",
                       "replay without --departures, or give a pod list with creation_time and deletion_time");
  }
  std::vector<size_t> host_of_node;
  const FleetView base = ViewOf(nodes, &host_of_node);
  std::vector<placement::PlacementRequest> requests;
  requests.reserve(pods.size());
  for (const TracePod& p : pods) requests.push_back(TracePodRequest(p));
  RunContext ctx{nodes, pods, requests, base, host_of_node, {}, std::make_shared<const WorkloadMix>(TypicalPodsMix(pods)),
                 capacity_milli, options};
  ctx.node_of_host.assign(base.hosts().size(), -1);
  for (size_t i = 0; i < host_of_node.size(); ++i) ctx.node_of_host[host_of_node[i]] = static_cast<int>(i);

  std::vector<ReplayResult> results(options.policies.size());
  std::vector<Job> jobs;
  for (size_t p = 0; p < options.policies.size(); ++p) {
    results[p].policy = options.policies[p];
    results[p].nodes = static_cast<int>(nodes.size());
    results[p].gpus = capacity_milli / 1000;
    results[p].runs.resize(options.seeds.size());
    for (size_t s = 0; s < options.seeds.size(); ++s) jobs.push_back({p, s});
  }
  std::vector<double> job_seconds(jobs.size(), 0);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu;
  auto worker = [&] {
    while (true) {
      const size_t j = next.fetch_add(1);
      if (j >= jobs.size()) return;
      try {
        const auto start = std::chrono::steady_clock::now();
        const GpuPolicy policy = options.policies[jobs[j].policy_index];
        const uint64_t seed = options.seeds[jobs[j].seed_index];
        results[jobs[j].policy_index].runs[jobs[j].seed_index] =
            options.departures ? RunDepartures(ctx, policy, seed) : RunArrivals(ctx, policy, seed);
        job_seconds[j] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (!failure) failure = std::current_exception();
        next = jobs.size();
      }
    }
  };
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(jobs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  for (size_t j = 0; j < jobs.size(); ++j) results[jobs[j].policy_index].seconds += job_seconds[j];
  for (ReplayResult& r : results) {
    const size_t points = r.runs.empty() ? 0 : r.runs.front().allocated_pct.size();
    r.mean_allocated_pct.assign(points, 0);
    r.mean_bound_pct.assign(r.runs.empty() ? 0 : r.runs.front().bound_pct.size(), 0);
    for (const ReplayRun& run : r.runs) {
      for (size_t k = 0; k < points; ++k) r.mean_allocated_pct[k] += run.allocated_pct[k] / static_cast<double>(r.runs.size());
      for (size_t k = 0; k < run.bound_pct.size() && k < r.mean_bound_pct.size(); ++k)
        r.mean_bound_pct[k] += run.bound_pct[k] / static_cast<double>(r.runs.size());
    }
  }
  return results;
}

}  // namespace accel::fleet
