#include "placement/cell_fit.h"

#include <algorithm>

#include "common/small_vector.h"

namespace accel::placement {

namespace {

std::string NodeName(const NodeView& node) { return "node " + std::to_string(node.id); }

using CoreList = SmallVector<const CoreView*, 64>;

// Free threads in the order a pinning takes them: from cores already partly held first (so
// whole cores stay free), then from whole free cores, each core's threads ascending.
struct ThreadOrder {
  CoreList partial, whole;
};

// `keep`: CPUs the cell's own shared vCPUs need (shared CPUs nobody pinned), when its pinning
// could take them (dedicated and shared sets overlap); cores holding fewer of them come first, so
// the pinning leaves as many as possible. Empty keep = plain order.
ThreadOrder OrderCores(const std::vector<CoreView>& cores, const CpuSet& keep) {
  ThreadOrder o;
  for (const CoreView& c : cores) {
    if (c.free_count == 0) continue;
    (c.whole ? o.whole : o.partial).push_back(&c);
  }
  if (!keep.Empty())
    for (auto* list : {&o.partial, &o.whole})
      std::stable_sort(list->begin(), list->end(), [&](const CoreView* a, const CoreView* b) {
        return a->threads.CountIntersect(keep) < b->threads.CountIntersect(keep);
      });
  return o;
}

using CpuList = SmallVector<int, 64>;

// Picks `count` free threads, partial cores first; threads outside `keep` before those in it.
CpuList TakeThreads(const ThreadOrder& order, int count, const CpuSet& keep) {
  CpuList out;
  for (bool in_keep : {false, true}) {
    for (const auto* list : {&order.partial, &order.whole})
      for (const CoreView* c : *list)
        for (int cpu = c->free.First(); cpu >= 0; cpu = c->free.Next(cpu)) {
          if (static_cast<int>(out.size()) == count) return out;
          if (keep.Contains(cpu) == in_keep) out.push_back(cpu);
        }
    if (keep.Empty()) break;
  }
  return out;
}

// Whole free cores with min_threads threads or more, ascending.
CoreList WholeCores(const ThreadOrder& order, int min_threads) {
  CoreList out;
  for (const CoreView* c : order.whole)
    if (c->thread_count >= min_threads) out.push_back(c);
  return out;
}

// The emulator CPU under prefer/require: a free thread of a core already partly held (the
// pinning's own leftover siblings included), else the first thread of a whole free core.
int PickEmulatorThread(const std::vector<CoreView>& cores, const CpuSet& consumed, const CpuSet& keep) {
  for (const CpuSet& avoid : {keep, CpuSet()}) {
    int fallback = -1;
    for (const CoreView& c : cores) {
      CpuSet left = c.free.Minus(consumed).Minus(avoid);
      if (left.Empty()) continue;
      if (left != c.threads) return left.First();
      if (fallback < 0) fallback = left.First();
    }
    if (fallback >= 0) return fallback;
  }
  return -1;
}

// Pins vCPUs vcpus[i] (ascending) to cpus[i].
void Pin(const CpuSet& vcpus, const CpuList& cpus, CellFit* fit) {
  size_t i = 0;
  for (int v = vcpus.First(); v >= 0; v = vcpus.Next(v)) fit->pinning.emplace_hint(fit->pinning.end(), v, cpus[i++]);
}

bool PinDedicated(const NodeView& node, const std::vector<CoreView>& cores, const GuestCell& cell,
                  const PlacementRequest& req, bool reserve_emulator, CellFit* fit) {
  const int n = cell.dedicated_vcpus.Count();
  const int r = reserve_emulator ? 1 : 0;
  if (n == 0 && r == 0) return true;
  const CpuSet keep = !cell.shared_vcpus.Empty() && !node.dedicated_in_shared
                          ? node.shared_cpus.Minus(node.pinned_cpus)
                          : CpuSet();
  const ThreadOrder order = OrderCores(cores, keep);
  CpuList cpus;
  // Thread policies shape the pinning only; a cell without dedicated vCPUs has none to shape.
  const ThreadPolicy policy = n > 0 ? req.thread_policy : ThreadPolicy::kPrefer;
  switch (policy) {
    case ThreadPolicy::kPrefer: {
      int free = node.free_threads;
      if (free < n + r) {
        fit->reason = NodeName(node) + ": " + std::to_string(free) + " free dedicated CPUs, needs " +
                      std::to_string(n + r) + (r ? " (incl. 1 emulator CPU)" : "");
        return false;
      }
      cpus = TakeThreads(order, n, keep);
      for (int c : cpus) fit->consumed.Add(c);
      break;
    }
    case ThreadPolicy::kRequire: {
      if (node.threads_per_core < 2) {
        fit->reason = NodeName(node) + ": cores have no SMT siblings, thread policy require needs them";
        return false;
      }
      const CoreList whole = WholeCores(order, 2);
      int capacity = 0;
      for (const CoreView* c : whole) {
        if (capacity >= n) break;
        // Threads outside `keep` first, so a partly filled last core leaves shared CPUs.
        for (const CpuSet& part : {c->threads.Minus(keep), c->threads.Intersect(keep)})
          for (int cpu = part.First(); cpu >= 0; cpu = part.Next(cpu))
            if (static_cast<int>(cpus.size()) < n) cpus.push_back(cpu);
        capacity += c->thread_count;
      }
      if (static_cast<int>(cpus.size()) < n) {
        fit->reason = NodeName(node) + ": " + std::to_string(whole.size()) +
                      " free whole cores, thread policy require needs " +
                      std::to_string((n + node.threads_per_core - 1) / node.threads_per_core);
        return false;
      }
      for (int c : cpus) fit->consumed.Add(c);
      if (r && node.free_threads < n + r) {
        fit->reason = NodeName(node) + ": no free CPU left for the emulator threads";
        return false;
      }
      break;
    }
    case ThreadPolicy::kIsolate: {
      const CoreList whole = WholeCores(order, 1);
      if (static_cast<int>(whole.size()) < n + r) {
        fit->reason = NodeName(node) + ": " + std::to_string(whole.size()) +
                      " free whole cores, thread policy isolate needs " + std::to_string(n + r) +
                      (r ? " (incl. 1 for the emulator)" : "");
        return false;
      }
      for (int i = 0; i < n; ++i) {
        cpus.push_back(whole[i]->threads.First());
        fit->consumed = fit->consumed.Union(whole[i]->threads);
      }
      if (r) {
        fit->emulator_cpus.Add(whole[n]->threads.First());
        fit->emulator_consumed = whole[n]->threads;
      }
      break;
    }
  }
  Pin(cell.dedicated_vcpus, cpus, fit);
  if (r && fit->emulator_cpus.Empty() && req.thread_policy == ThreadPolicy::kIsolate) {
    const CoreList whole = WholeCores(order, 1);
    if (whole.empty()) {
      fit->reason = NodeName(node) + ": no free whole core for the emulator threads (thread policy isolate)";
      return false;
    }
    fit->emulator_cpus.Add(whole[0]->threads.First());
    fit->emulator_consumed = whole[0]->threads;
  }
  if (r && fit->emulator_cpus.Empty()) {
    int emu = PickEmulatorThread(cores, fit->consumed, keep);
    if (emu < 0) {
      fit->reason = NodeName(node) + ": no free CPU left for the emulator threads";
      return false;
    }
    fit->emulator_cpus.Add(emu);
    fit->emulator_consumed = fit->emulator_cpus;
  }
  return true;
}

bool FitShared(const NodeView& node, const GuestCell& cell, CellFit* fit) {
  const int s = cell.shared_vcpus.Count();
  if (s == 0) return true;
  fit->shared_cpus = node.shared_cpus.Minus(node.pinned_cpus)
                         .Minus(fit->consumed)
                         .Minus(fit->emulator_consumed);
  if (fit->shared_cpus.Count() < s) {
    fit->reason = NodeName(node) + ": " + std::to_string(fit->shared_cpus.Count()) +
                  " shared CPUs, a cell with " + std::to_string(s) +
                  " shared vCPUs needs as many (no self-overcommit)";
    return false;
  }
  if (node.shared_vcpus_used + s > node.shared_capacity) {
    fit->reason = NodeName(node) + ": " + std::to_string(node.shared_vcpus_used) +
                  " shared vCPUs already on " + std::to_string(node.shared_cpus.Count()) +
                  " shared CPUs; adding " + std::to_string(s) + " exceeds the allocation ratio";
    return false;
  }
  return true;
}

// The pools a request may use on a node, in the order they are tried: `count` pools from
// `first`, walking by `step` (-1: largest first, for large/any).
struct PoolRange {
  const PoolView* first = nullptr;
  int count = 0;
  int step = 1;
  const PoolView& operator[](int i) const { return first[i * step]; }
};

inline PoolRange CandidatePools(const NodeView& node, const PageSizeRequest& request) {
  const std::vector<PoolView>& pools = node.pools;
  if (pools.empty()) return {};
  const int n = static_cast<int>(pools.size());
  switch (request.kind) {
    case PageSizeRequest::kNone:
    case PageSizeRequest::kSmall:
      return {&pools.front(), 1, 1};
    case PageSizeRequest::kExplicit: {
      const PoolView* p = node.Pool(request.size_kib);
      return {p, p ? 1 : 0, 1};
    }
    case PageSizeRequest::kLarge:
      return {&pools.back(), n - 1, -1};
    case PageSizeRequest::kAny:
      return {&pools.back(), n, -1};
  }
  return {};
}

// The page size for `kib` KiB on `node`: the first candidate pool that divides it and has the
// pages free. Returns false when none does. No strings: every (cell, node) pair asks this.
inline bool FindPages(const NodeView& node, uint64_t kib, const PageSizeRequest& request,
                      uint64_t* size_kib, uint64_t* pages) {
  const PoolRange pools = CandidatePools(node, request);
  for (int i = 0; i < pools.count; ++i) {
    const PoolView& pool = pools[i];
    if (kib % pool.size_kib != 0 || pool.free < kib / pool.size_kib) continue;
    *size_kib = pool.size_kib;
    *pages = kib / pool.size_kib;
    return true;
  }
  return false;
}

// Why FindPages found no pool: no candidate at all, or what the last size tried lacks (a
// person reads the list top down).
std::string PagesReason(const NodeView& node, uint64_t memory_mib, const PageSizeRequest& request) {
  const PoolRange pools = CandidatePools(node, request);
  if (pools.count == 0)
    return NodeName(node) + ": no " +
           (request.kind == PageSizeRequest::kExplicit ? PageSizeName(request.size_kib) + " page pool"
                                                       : std::string("hugepage pool"));
  const PoolView& last = pools[pools.count - 1];
  const uint64_t size = last.size_kib, kib = memory_mib * 1024;
  if (kib % size != 0)
    return NodeName(node) + ": " + std::to_string(memory_mib) + " MiB is not a multiple of " +
           PageSizeName(size) + " pages";
  return NodeName(node) + ": " + PageSizeName(size) + " pages: " + std::to_string(last.free) +
         " free, needs " + std::to_string(kib / size);
}

// FindPages, with the reason in *why (when not null) if no pool has the pages.
inline bool ChoosePages(const NodeView& node, uint64_t memory_mib, const PageSizeRequest& request,
                        uint64_t* size_kib, uint64_t* pages, std::string* why) {
  if (FindPages(node, memory_mib * 1024, request, size_kib, pages)) return true;
  if (why) *why = PagesReason(node, memory_mib, request);
  return false;
}

int WholeCoresTouched(const std::vector<CoreView>& cores, const CpuSet& cpus) {
  if (cpus.Empty()) return 0;
  int n = 0;
  for (const CoreView& c : cores)
    if (c.whole && c.threads.Intersects(cpus)) ++n;
  return n;
}

// Pinned CPUs from counts: whether the cell's dedicated vCPUs and the emulator fit, with the
// same answers PinDedicated gives, and estimates of whole cores broken and CPUs consumed.
// Reasons are written only when `why` is not null.
bool CountDedicated(const NodeView& node, const CellDemand& d, const PlacementRequest& req,
                    CellCount* fit, int* consumed, std::string* why) {
  const int n = d.dedicated;
  const int r = d.emulator ? 1 : 0;
  const int t = node.threads_per_core;
  *consumed = 0;
  if (n == 0 && r == 0) return true;
  const bool isolate_emulator = r && req.thread_policy == ThreadPolicy::kIsolate;
  const ThreadPolicy policy = n > 0 ? req.thread_policy : ThreadPolicy::kPrefer;
  switch (policy) {
    case ThreadPolicy::kPrefer: {
      if (node.free_threads < n + r) {
        if (why)
          *why = NodeName(node) + ": " + std::to_string(node.free_threads) + " free dedicated CPUs, needs " +
                 std::to_string(n + r) + (r ? " (incl. 1 emulator CPU)" : "");
        return false;
      }
      if (isolate_emulator) {  // n == 0 here: the emulator alone takes a whole core
        if (node.whole_free_cores < 1) {
          if (why) *why = NodeName(node) + ": no free whole core for the emulator threads (thread policy isolate)";
          return false;
        }
        fit->whole_cores_broken = 1;
        *consumed = t;
        return true;
      }
      const int beyond_partial = n + r - node.partial_free_threads;
      fit->whole_cores_broken = beyond_partial > 0 ? (beyond_partial + t - 1) / t : 0;
      *consumed = n + r;
      return true;
    }
    case ThreadPolicy::kRequire: {
      if (t < 2) {
        if (why) *why = NodeName(node) + ": cores have no SMT siblings, thread policy require needs them";
        return false;
      }
      if (node.whole_free_smt_threads < n) {
        if (why)
          *why = NodeName(node) + ": " + std::to_string(node.whole_free_smt_threads / t) +
                 " free whole cores, thread policy require needs " + std::to_string((n + t - 1) / t);
        return false;
      }
      if (r && node.free_threads < n + r) {
        if (why) *why = NodeName(node) + ": no free CPU left for the emulator threads";
        return false;
      }
      fit->whole_cores_broken = (n + t - 1) / t + (r && n % t == 0 && node.partial_free_threads == 0 ? 1 : 0);
      *consumed = n + r;
      return true;
    }
    case ThreadPolicy::kIsolate: {
      if (node.whole_free_cores < n + r) {
        if (why)
          *why = NodeName(node) + ": " + std::to_string(node.whole_free_cores) +
                 " free whole cores, thread policy isolate needs " + std::to_string(n + r) +
                 (r ? " (incl. 1 for the emulator)" : "");
        return false;
      }
      fit->whole_cores_broken = n + r;
      *consumed = (n + r) * t;
      return true;
    }
  }
  return false;
}

}  // namespace

CellDemand DemandOf(const GuestCell& cell, bool reserve_emulator) {
  return {cell.dedicated_vcpus.Count(), cell.shared_vcpus.Count(), cell.memory_mib, reserve_emulator};
}

CellCount CountCell(const NodeView& node, const CellDemand& d, const PlacementRequest& request,
                    std::string* why) {
  CellCount fit;
  int consumed = 0;
  if (!CountDedicated(node, d, request, &fit, &consumed, why)) return fit;
  const int s = d.shared;
  if (s > 0) {
    // A lower bound on the shared CPUs the pinning takes: each pinned CPU is one when the
    // dedicated set lies inside the shared set, none can be counted for sure otherwise.
    const int taken = node.dedicated_in_shared ? d.dedicated + (d.emulator ? 1 : 0) : 0;
    if (node.shared_free - taken < s) {
      if (why)
        *why = NodeName(node) + ": " + std::to_string(std::max(0, node.shared_free - taken)) +
               " shared CPUs, a cell with " + std::to_string(s) +
               " shared vCPUs needs as many (no self-overcommit)";
      return fit;
    }
    if (node.shared_vcpus_used + s > node.shared_capacity) {
      if (why)
        *why = NodeName(node) + ": " + std::to_string(node.shared_vcpus_used) + " shared vCPUs already on " +
               std::to_string(node.shared_cpus.Count()) + " shared CPUs; adding " + std::to_string(s) +
               " exceeds the allocation ratio";
      return fit;
    }
  }
  if (!ChoosePages(node, d.memory_mib, request.page_size, &fit.page_size_kib, &fit.pages, why)) return fit;
  fit.free_threads_after = node.free_threads - consumed;
  fit.ok = true;
  return fit;
}

CellFit CheckCell(const NodeView& node, const GuestCell& cell, const PlacementRequest& request,
                  bool reserve_emulator) {
  CellFit fit;
  const CellCount c = CountCell(node, DemandOf(cell, reserve_emulator), request, &fit.reason);
  fit.ok = c.ok;
  fit.page_size_kib = c.page_size_kib;
  fit.pages = c.pages;
  fit.whole_cores_broken = c.whole_cores_broken;
  fit.free_threads_after = c.free_threads_after;
  return fit;
}

std::string PageSizeName(uint64_t size_kib) {
  if (size_kib >= 1048576 && size_kib % 1048576 == 0) return std::to_string(size_kib / 1048576) + "G";
  if (size_kib >= 1024 && size_kib % 1024 == 0) return std::to_string(size_kib / 1024) + "M";
  return std::to_string(size_kib) + "K";
}

std::vector<uint64_t> CandidatePageSizes(const NodeView& node, const PageSizeRequest& request) {
  const PoolRange pools = CandidatePools(node, request);
  std::vector<uint64_t> sizes;
  for (int i = 0; i < pools.count; ++i) sizes.push_back(pools[i].size_kib);
  return sizes;
}

CellFit FitCell(const NodeView& node, const GuestCell& cell, const PlacementRequest& request,
                bool reserve_emulator) {
  CellFit fit;
  std::vector<CoreView> scratch;
  const std::vector<CoreView>& cores = node.CoresIn(&scratch);
  if (!PinDedicated(node, cores, cell, request, reserve_emulator, &fit)) return fit;
  if (!FitShared(node, cell, &fit)) return fit;
  if (!ChoosePages(node, cell.memory_mib, request.page_size, &fit.page_size_kib, &fit.pages, &fit.reason))
    return fit;
  const CpuSet taken = fit.consumed.Union(fit.emulator_consumed);
  fit.whole_cores_broken = WholeCoresTouched(cores, taken);
  fit.free_threads_after = node.free_threads - taken.Count();
  fit.ok = true;
  return fit;
}

}  // namespace accel::placement
