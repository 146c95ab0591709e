#include "placement/flavor_cpu_topology.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace accel::placement {

namespace {

constexpr int kUnlimited = 65536;  // Nova's default for an unset hw:cpu_max_*

int Score(const GuestCpuTopology& t, const GuestCpuTopology& want) {
  return (want.sockets && t.sockets == want.sockets) + (want.cores && t.cores == want.cores) +
         (want.threads && t.threads == want.threads);
}

}  // namespace

std::optional<GuestCpuTopology> BestGuestCpuTopology(int vcpus, GuestCpuTopology preferred,
                                                     const GuestCpuTopology& maximum) {
  if (vcpus < 1) return std::nullopt;
  int max_sockets = maximum.sockets > 0 ? maximum.sockets : kUnlimited;
  int max_cores = maximum.cores > 0 ? maximum.cores : kUnlimited;
  int max_threads = maximum.threads > 0 ? maximum.threads : kUnlimited;
  if (preferred.sockets > max_sockets || preferred.cores > max_cores || preferred.threads > max_threads) {
    preferred = {};
  }
  // Nova loops over every (s, c, t) up to vcpus each; walking divisors finds the same set.
  std::vector<GuestCpuTopology> possible;
  for (int s = 1; s <= std::min(vcpus, max_sockets); ++s) {
    if (vcpus % s) continue;
    for (int c = 1; c <= std::min(vcpus / s, max_cores); ++c) {
      if ((vcpus / s) % c) continue;
      int t = vcpus / s / c;
      if (t <= max_threads) possible.push_back({s, c, t});
    }
  }
  if (possible.empty()) return std::nullopt;
  std::sort(possible.begin(), possible.end(), [](const GuestCpuTopology& a, const GuestCpuTopology& b) {
    return std::make_tuple(a.sockets * a.cores, a.sockets, a.threads) >
           std::make_tuple(b.sockets * b.cores, b.sockets, b.threads);
  });
  const GuestCpuTopology* best = &possible.front();
  int best_score = Score(*best, preferred);
  for (const GuestCpuTopology& t : possible) {
    int score = Score(t, preferred);
    if (score > best_score) {
      best = &t;
      best_score = score;
    }
  }
  return *best;
}

}  // namespace accel::placement
