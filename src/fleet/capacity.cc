#include "fleet/capacity.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "fleet/scheduler.h"
#include "placement/engine.h"
#include "placement/gpu_fit.h"
#include "placement/pci_fit.h"
#include "placement/host_state.h"

namespace accel::fleet {

namespace {

// One host filled with one flavor until it stops.
struct Fill {
  int64_t count = 0;
  std::string stop_reason;               ///< the engine's first reason at the stop
  std::string cause;                     ///< CauseOf(stop_reason), once per fill, not per host
  std::set<std::string> free_left;       ///< accelerator addresses still free at the stop
  std::vector<int> free_milli_left;       ///< free thousandths of each accelerator at the stop (PCI order)
};

// Fills `state` (a copy the caller gives away) with `req` until the engine says no.
Fill FillHost(placement::HostState state, const placement::PlacementRequest& req, int max_per_host) {
  Fill f;
  for (;;) {
    if (f.count >= max_per_host) {
      f.stop_reason = "stopped after " + std::to_string(max_per_host) + " instances (--max-per-host)";
      break;
    }
    placement::PlaceResult r = placement::Place(state, req);
    if (!r.fits()) {
      f.stop_reason = NoFitReason(r.no_fit);
      break;
    }
    if (!state.Apply(*r.placement).empty()) break;  // never: the engine places on free units
    ++f.count;
  }
  for (const topology::PciDevice& d : state.host().pci)
    if (d.is_accelerator() && !state.usage().devices.count(d.address)) f.free_left.insert(d.address);
  for (const placement::GpuSlot& g : placement::GpuSlotsOf(placement::AcceleratorsOf(state.host()), state.usage()))
    f.free_milli_left.push_back(g.free_milli);
  f.cause = CauseOf(f.stop_reason);
  return f;
}

int ThreadsFor(const CapacityOptions& options, size_t states) {
  int threads = options.threads;
  if (threads <= 0) {
    const unsigned hw = std::thread::hardware_concurrency();
    threads = std::min<int>(hw == 0 ? 1 : static_cast<int>(hw), kMaxDefaultCapacityThreads);
  }
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(states, 1)));
}

// fills[s * flavors.size() + f]: state `s` (its first host stands for all) filled with flavor f.
// One HostState is built per state and copied per flavor (a copy costs less than a build).
// States are handed to `threads` workers one at a time; each fill lands in its own slot, so the
// result does not depend on the threads or their timing.
std::vector<Fill> FillStates(const std::vector<const HostEntry*>& states,
                             const std::vector<placement::PlacementRequest>& flavors, int max_per_host,
                             int threads) {
  std::vector<Fill> fills(states.size() * flavors.size());
  if (flavors.empty()) return fills;
  auto fill_state = [&](size_t s) {
    const HostEntry& e = *states[s];
    placement::HostState base(*e.hardware, e.usage, e.record.policy);
    for (size_t f = 0; f + 1 < flavors.size(); ++f)
      fills[s * flavors.size() + f] = FillHost(base, flavors[f], max_per_host);
    fills[s * flavors.size() + flavors.size() - 1] = FillHost(std::move(base), flavors.back(), max_per_host);
  };
  if (threads <= 1) {
    for (size_t s = 0; s < states.size(); ++s) fill_state(s);
    return fills;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (size_t s; !failed && (s = next.fetch_add(1)) < states.size();) {
      try {
        fill_state(s);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had (limits): the ones started and this one do the rest
    }
  }
  work();  // the calling thread is one of the workers
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return fills;
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
  // Distinct states in order of first appearance; state_of[i] is eligible[i]'s.
  std::vector<const HostEntry*> states;
  std::vector<size_t> state_of(eligible.size());
  {
    std::unordered_map<std::string_view, size_t> index;  // usage_key -> state (keys live in `view`)
    for (size_t i = 0; i < eligible.size(); ++i) {
      auto [it, inserted] = index.try_emplace(eligible[i]->usage_key, states.size());
      if (inserted) states.push_back(eligible[i]);
      state_of[i] = it->second;
    }
  }
  const std::vector<Fill> fills =
      FillStates(states, flavors, options.max_per_host, ThreadsFor(options, states.size()));
  report.engine_fills = static_cast<int>(fills.size());
  auto fill_of = [&](size_t host, size_t f) -> const Fill& { return fills[state_of[host] * flavors.size() + f]; };

  for (size_t f = 0; f < flavors.size(); ++f) {
    FlavorCapacity fc;
    fc.flavor = flavors[f].flavor;
    for (size_t i = 0; i < eligible.size(); ++i) {
      const HostEntry* e = eligible[i];
      const Fill& fill = fill_of(i, f);
      fc.count += fill.count;
      if (!options.group_by.empty()) {
        auto label = e->record.labels.find(options.group_by);
        fc.by_group[label == e->record.labels.end() ? "(none)" : label->second] += fill.count;
      }
      ++fc.stops_on[fill.cause];
    }
    int most = 0;
    for (const auto& [cause, hosts] : fc.stops_on)
      if (hosts > most) {
        most = hosts;
        fc.runs_out_first = cause;
      }
    report.flavors.push_back(std::move(fc));
  }
  // Which accelerators each flavor asks for, per hardware (a PCI alias's specs, or a GPU
  // request's models): the rest are not wanted by the mix.
  std::unordered_map<const topology::HostTopology*, std::vector<std::vector<char>>> wants_cache;
  auto wants_of = [&](const HostEntry& e) -> const std::vector<std::vector<char>>& {
    auto it = wants_cache.find(e.hardware.get());
    if (it != wants_cache.end()) return it->second;
    const std::vector<const topology::PciDevice*> accelerators = placement::AcceleratorsOf(*e.hardware);
    std::vector<std::vector<char>> wants(flavors.size(), std::vector<char>(accelerators.size(), 0));
    for (size_t f = 0; f < flavors.size(); ++f)
      for (size_t a = 0; a < accelerators.size(); ++a) {
        const topology::PciDevice& d = *accelerators[a];
        bool w = false;
        for (const placement::PciRequest& r : flavors[f].pci)
          for (const placement::PciSpec& spec : r.specs) w = w || placement::SpecMatches(spec, d);
        if (flavors[f].gpu)
          w = w || placement::GpuModelMatches(placement::GpuModelOf(d), d.vendor_id, d.device_id, flavors[f].gpu->models);
        wants[f][a] = w ? 1 : 0;
      }
    return wants_cache.emplace(e.hardware.get(), std::move(wants)).first->second;
  };
  // Stranded: free now, of a kind some flavor asks for, and still free after filling the host
  // with each flavor in turn. Unwanted: free, of a kind no flavor asks for.
  for (size_t i = 0; i < eligible.size(); ++i) {
    const HostEntry* e = eligible[i];
    const std::vector<std::vector<char>>& wants = wants_of(*e);
    const std::vector<placement::GpuSlot>& slots = e->summary.share.gpus;
    const std::vector<const topology::PciDevice*> accelerators = placement::AcceleratorsOf(*e->hardware);
    // Fragmentation (F) of the host for the flavors, equal weights, from the exact fills.
    HostFragmentationLine line;
    line.host = e->record.name;
    for (size_t a = 0; a < slots.size(); ++a) {
      line.free_milli += slots[a].free_milli;
      bool wanted = false;
      for (size_t f = 0; f < flavors.size(); ++f) wanted = wanted || wants[f][a];
      if (!wanted) line.unwanted_milli += slots[a].free_milli;
    }
    if (!flavors.empty()) {
      for (size_t f = 0; f < flavors.size(); ++f) {
        const Fill& fill = fill_of(i, f);
        int64_t lost = 0;
        for (size_t a = 0; a < fill.free_milli_left.size() && a < wants[f].size(); ++a)
          if (wants[f][a]) lost += fill.free_milli_left[a];
        line.fragmented_milli += static_cast<double>(lost) / static_cast<double>(flavors.size());
      }
    }
    if (line.free_milli > 0) {
      report.free_gpu_milli += line.free_milli;
      report.fragmented_gpu_milli += line.fragmented_milli;
      report.unwanted_gpu_milli += line.unwanted_milli;
      report.fragmentation.push_back(line);
    }

    if (e->summary.free_accelerators == 0) continue;
    std::set<std::string> stranded, unwanted;
    for (size_t a = 0; a < accelerators.size(); ++a) {
      const topology::PciDevice& d = *accelerators[a];
      if (e->usage.devices.count(d.address)) continue;
      bool wanted = false;
      for (size_t f = 0; f < flavors.size(); ++f) wanted = wanted || wants[f][a];
      (wanted ? stranded : unwanted).insert(d.address);
    }
    std::string reason;
    for (size_t f = 0; f < flavors.size() && !stranded.empty(); ++f) {
      const Fill& fill = fill_of(i, f);
      std::set<std::string> still;
      std::set_intersection(stranded.begin(), stranded.end(), fill.free_left.begin(), fill.free_left.end(),
                            std::inserter(still, still.end()));
      stranded = std::move(still);
      const bool asks = !flavors[f].pci.empty() || flavors[f].gpu.has_value();
      if (asks && reason.empty()) reason = flavors[f].flavor + ": " + fill.stop_reason;
    }
    if ((stranded.empty() && unwanted.empty()) || flavors.empty()) continue;
    if (stranded.empty()) reason = "no given flavor asks for these accelerators";
    StrandedHost s{e->record.name, e->summary.free_accelerators,
                   std::vector<std::string>(stranded.begin(), stranded.end()),
                   std::vector<std::string>(unwanted.begin(), unwanted.end()), reason};
    report.stranded_accelerators += static_cast<int>(s.stranded.size());
    report.unwanted_accelerators += static_cast<int>(s.unwanted.size());
    report.stranded.push_back(std::move(s));
  }
  return report;
}

}  // namespace accel::fleet
