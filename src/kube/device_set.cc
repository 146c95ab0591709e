// BestDeviceSet is a branch-and-bound over "take device c / leave it" decisions. The objective is
// compared as a tuple (set score, −degree sum, rank), where rank has bit 63−i set for each chosen
// local position i: among equal-size sets of ascending indices, the lexicographically smaller
// list has the larger rank, so every tie-break of the contract is part of one total order and
// the search may explore in any order and prune whenever a subtree cannot beat the incumbent.
//
// Score bound for a node with r devices still to add from the remaining candidates R:
//   2·(gain of the completion X) = Σ_{c∈X} (2·g(c) + Σ_{c'∈X\c} s(c,c'))
//                                ≤ top-r over c∈R of (2·g(c) + best r−1 scores from c into R)
// where g(c) is c's score to the devices already chosen. When the score bound only ties the
// incumbent, the degree and rank parts are bounded by the r smallest degrees and the r lowest
// positions left in R.
#include "kube/device_set.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>

namespace accel::kube {
namespace {

// Up to this many available devices the search runs to the end (exact).
constexpr int kExactLimit = 16;
// Above it, the search stops after this many nodes and local search polishes the result.
constexpr int64_t kHeuristicNodes = 20000;  // ~30 ms at 64 devices
constexpr int kMaxDevices = 64;

struct Key {
  int64_t score = 0;
  int64_t neg_degree = 0;
  uint64_t rank = 0;
  auto operator<=>(const Key&) const = default;
};

uint64_t Bit(int i) { return uint64_t{1} << i; }
uint64_t RankBit(int i) { return uint64_t{1} << (63 - i); }

// The request in local positions: available devices ascending, required as a mask.
struct Problem {
  int m = 0;
  int size = 0;
  std::vector<int> ids;             // local position → interconnect index, ascending
  std::vector<int> score;           // m×m pair scores
  std::vector<int64_t> degree;      // score of each device to all available devices
  std::vector<int> partners;        // row a: the other devices, best score to a first
  std::vector<int64_t> partner_score;  // row a: their scores to a, in that order
  uint64_t required = 0;
};

std::optional<Problem> Prepare(const devices::Interconnect& ic, const std::vector<int>& available,
                               const std::vector<int>& required, int size, bool matrices) {
  Problem p;
  p.size = size;
  int n = static_cast<int>(ic.size());
  for (int id : available)
    if (id >= 0 && id < n) p.ids.push_back(id);
  std::sort(p.ids.begin(), p.ids.end());
  p.ids.erase(std::unique(p.ids.begin(), p.ids.end()), p.ids.end());
  p.m = static_cast<int>(p.ids.size());
  std::vector<int> must(required);
  std::sort(must.begin(), must.end());
  must.erase(std::unique(must.begin(), must.end()), must.end());
  if (size <= 0 || p.m < size || static_cast<int>(must.size()) > size || p.m > kMaxDevices)
    return std::nullopt;
  for (int id : must) {
    auto it = std::lower_bound(p.ids.begin(), p.ids.end(), id);
    if (it == p.ids.end() || *it != id) return std::nullopt;
    p.required |= Bit(static_cast<int>(it - p.ids.begin()));
  }
  if (!matrices) return p;
  p.score.assign(p.m * p.m, 0);
  p.degree.assign(p.m, 0);
  p.partners.reserve(p.m * (p.m - 1));
  for (int a = 0; a < p.m; ++a) {
    for (int b = 0; b < p.m; ++b) {
      p.score[a * p.m + b] = ic.PairScore(p.ids[a], p.ids[b]);
      p.degree[a] += p.score[a * p.m + b];
    }
    auto row_begin = p.partners.end();
    for (int b = 0; b < p.m; ++b)
      if (b != a) p.partners.push_back(b);
    const int* row = &p.score[a * p.m];
    std::sort(row_begin, p.partners.end(),
              [row](int x, int y) { return row[x] != row[y] ? row[x] > row[y] : x < y; });
  }
  for (int at = 0; at < p.m * (p.m - 1); ++at)
    p.partner_score.push_back(p.score[(at / (p.m - 1)) * p.m + p.partners[at]]);
  return p;
}

Key Evaluate(const Problem& p, uint64_t mask) {
  Key key;
  for (int i = 0; i < p.m; ++i) {
    if (!(mask & Bit(i))) continue;
    for (int j = 0; j < i; ++j)
      if (mask & Bit(j)) key.score += p.score[i * p.m + j];
    key.neg_degree -= p.degree[i];
    key.rank |= RankBit(i);
  }
  return key;
}

// Greedy: from the required devices, add the device with the largest score to those chosen
// (then the smaller degree, then the lower position) until `size`.
uint64_t Greedy(const Problem& p) {
  uint64_t mask = p.required;
  std::vector<int64_t> gain(p.m, 0);
  for (int x = 0; x < p.m; ++x)
    for (int i = 0; i < p.m; ++i)
      if (mask & Bit(i)) gain[x] += p.score[x * p.m + i];
  while (std::popcount(mask) < p.size) {
    int pick = -1;
    for (int c = 0; c < p.m; ++c) {
      if (mask & Bit(c)) continue;
      if (pick < 0 || gain[c] > gain[pick] ||
          (gain[c] == gain[pick] && p.degree[c] < p.degree[pick]))
        pick = c;
    }
    mask |= Bit(pick);
    for (int x = 0; x < p.m; ++x) gain[x] += p.score[x * p.m + pick];
  }
  return mask;
}

// Batcher's odd-even merge sort for 16 inputs (63 comparators): the bound's top-r sums sort
// at most 16 values per node, without the unpredictable branches of a comparison sort.
struct SortingNetwork {
  int size = 0;
  int pairs[64][2] = {};
};
constexpr SortingNetwork Batcher16() {
  SortingNetwork net;
  constexpr int n = 16;
  for (int p = 1; p < n; p *= 2)
    for (int k = p; k >= 1; k /= 2)
      for (int j = k % p; j + k < n; j += 2 * k)
        for (int i = 0; i < k && i + j + k < n; ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) {
            net.pairs[net.size][0] = i + j;
            net.pairs[net.size][1] = i + j + k;
            ++net.size;
          }
  return net;
}
constexpr SortingNetwork kSort16 = Batcher16();
static_assert(kSort16.size == 63);

// Sum of the `r` largest of values[0..count); values is scratch of at least 16 entries.
int64_t SumOfLargest(int64_t* values, int count, int r) {
  if (count <= 16) {
    for (int i = count; i < 16; ++i) values[i] = std::numeric_limits<int64_t>::min();
    for (int c = 0; c < kSort16.size; ++c) {
      int64_t& a = values[kSort16.pairs[c][0]];
      int64_t& b = values[kSort16.pairs[c][1]];
      int64_t high = std::max(a, b), low = std::min(a, b);
      a = high, b = low;
    }
  } else {
    std::nth_element(values, values + (r - 1), values + count, std::greater<>());
  }
  int64_t sum = 0;
  for (int i = 0; i < r; ++i) sum += values[i];
  return sum;
}

class Search {
 public:
  Search(const Problem& p, int64_t node_budget)
      : p_(p), budget_(node_budget), gain_((p.size + 2) * p.m, 0),
        values_(std::max(p.m, 16)) {}

  // Starts from a known set, so pruning starts at once.
  void Seed(uint64_t mask) { Offer(mask, Evaluate(p_, mask)); }

  // Returns the best mask found (optimal when the budget was not exhausted).
  uint64_t Run() {
    uint64_t chosen = p_.required;
    int64_t score = 0, degree = 0;
    uint64_t rank = 0;
    int k = 0;
    for (int i = 0; i < p_.m; ++i) {
      if (!(chosen & Bit(i))) continue;
      for (int j = 0; j < i; ++j)
        if (chosen & Bit(j)) score += S(i, j);
      degree += p_.degree[i];
      rank |= RankBit(i);
      ++k;
    }
    int64_t* gain = &gain_[k * p_.m];
    for (int c = 0; c < p_.m; ++c)
      for (int i = 0; i < p_.m; ++i)
        if (chosen & Bit(i)) gain[c] += S(c, i);
    uint64_t all = p_.m == 64 ? ~uint64_t{0} : Bit(p_.m) - 1;
    Visit(chosen, all & ~chosen, score, degree, rank, k);
    return best_mask_;
  }

 private:
  int64_t S(int a, int b) const { return p_.score[a * p_.m + b]; }

  void Offer(uint64_t mask, const Key& key) {
    if (!found_ || best_ < key) {
      found_ = true;
      best_ = key;
      best_mask_ = mask;
    }
  }

  void Visit(uint64_t chosen, uint64_t rest, int64_t score, int64_t degree, uint64_t rank, int k) {
    if (budget_ > 0 && ++nodes_ > budget_ && found_) return;
    int r = p_.size - k;
    if (r == 0) return Offer(chosen, {score, -degree, rank});
    int left = std::popcount(rest);
    if (left < r) return;
    const int64_t* gain = &gain_[k * p_.m];
    if (left == r) return TakeAll(chosen, rest, score, degree, rank, gain);

    // Per-candidate value (see the file comment) and the candidate to branch on.
    int count = 0, pick = -1;
    int64_t pick_value = 0;
    for (uint64_t bits = rest; bits; bits &= bits - 1) {
      int c = std::countr_zero(bits);
      int64_t value = 2 * gain[c];
      // Branch-free: which partners are left is unpredictable. rest holds ≥ r besides c.
      const int* partner = &p_.partners[c * (p_.m - 1)];
      const int64_t* partner_score = &p_.partner_score[c * (p_.m - 1)];
      for (int taken = 0, i = 0; taken < r - 1; ++i) {
        int64_t left_too = (rest >> partner[i]) & 1;
        value += partner_score[i] * left_too;
        taken += static_cast<int>(left_too);
      }
      values_[count++] = value;
      if (pick < 0 || value > pick_value) pick = c, pick_value = value;
    }
    if (found_ && !MayBeat(rest, score, degree, rank, r, count)) return;

    int64_t* next = &gain_[(k + 1) * p_.m];
    for (int c = 0; c < p_.m; ++c) next[c] = gain[c] + S(c, pick);
    Visit(chosen | Bit(pick), rest & ~Bit(pick), score + gain[pick], degree + p_.degree[pick],
          rank | RankBit(pick), k + 1);
    Visit(chosen, rest & ~Bit(pick), score, degree, rank, k);
  }

  // values_[0..count) hold the per-candidate values of the node.
  bool MayBeat(uint64_t rest, int64_t score, int64_t degree, uint64_t rank, int r, int count) {
    int64_t bound2 = 2 * score + SumOfLargest(values_.data(), count, r);
    if (bound2 != 2 * best_.score) return bound2 > 2 * best_.score;
    int64_t smallest[kMaxDevices];
    int left = 0;
    uint64_t best_rank = rank;
    for (uint64_t bits = rest; bits; bits &= bits - 1) {
      int c = std::countr_zero(bits);
      smallest[left++] = p_.degree[c];
      if (left <= r) best_rank |= RankBit(c);  // the r lowest positions left
    }
    std::nth_element(smallest, smallest + (r - 1), smallest + left);
    int64_t least_degree = degree;
    for (int i = 0; i < r; ++i) least_degree += smallest[i];
    return best_ < Key{best_.score, -least_degree, best_rank};
  }

  void TakeAll(uint64_t chosen, uint64_t rest, int64_t score, int64_t degree, uint64_t rank,
               const int64_t* gain) {
    for (uint64_t bits = rest; bits; bits &= bits - 1) {
      int c = std::countr_zero(bits);
      score += gain[c];
      for (uint64_t later = bits & (bits - 1); later; later &= later - 1)
        score += S(c, std::countr_zero(later));
      degree += p_.degree[c];
      rank |= RankBit(c);
    }
    Offer(chosen | rest, {score, -degree, rank});
  }

  const Problem& p_;
  int64_t budget_;
  int64_t nodes_ = 0;
  std::vector<int64_t> gain_;    // per number of chosen devices: each device's score to them
  std::vector<int64_t> values_;  // scratch for the bound
  bool found_ = false;
  Key best_;
  uint64_t best_mask_ = 0;
};

// Best-improvement single swaps (one chosen, not required device for one left out) until none
// improves; for the budgeted search on large nodes. O(m) per swap tried, via each device's
// score to the chosen set.
uint64_t Polish(const Problem& p, uint64_t mask) {
  Key current = Evaluate(p, mask);
  std::vector<int64_t> gain(p.m, 0);
  for (int x = 0; x < p.m; ++x)
    for (int i = 0; i < p.m; ++i)
      if (mask & Bit(i)) gain[x] += p.score[x * p.m + i];
  for (int pass = 0; pass < 4 * kMaxDevices; ++pass) {
    int best_out = -1, best_in = -1;
    Key best = current;
    for (int out = 0; out < p.m; ++out) {
      if (!(mask & Bit(out)) || (p.required & Bit(out))) continue;
      for (int in = 0; in < p.m; ++in) {
        if (mask & Bit(in)) continue;
        Key key{current.score + gain[in] - p.score[in * p.m + out] - gain[out],
                current.neg_degree + p.degree[out] - p.degree[in],
                current.rank ^ RankBit(out) ^ RankBit(in)};
        if (best < key) best = key, best_out = out, best_in = in;
      }
    }
    if (best_out < 0) break;
    mask = (mask & ~Bit(best_out)) | Bit(best_in);
    for (int x = 0; x < p.m; ++x)
      gain[x] += p.score[x * p.m + best_in] - p.score[x * p.m + best_out];
    current = best;
  }
  return mask;
}

std::vector<int> Indices(const Problem& p, uint64_t mask) {
  std::vector<int> out;
  for (int i = 0; i < p.m; ++i)
    if (mask & Bit(i)) out.push_back(p.ids[i]);
  return out;
}

}  // namespace

std::vector<int> BestDeviceSet(const devices::Interconnect& interconnect,
                               const std::vector<int>& available, const std::vector<int>& required,
                               int size) {
  std::optional<Problem> p = Prepare(interconnect, available, required, size, true);
  if (!p) return {};
  if (std::popcount(p->required) == size) return Indices(*p, p->required);
  bool exact = p->m <= kExactLimit;
  Search search(*p, exact ? 0 : kHeuristicNodes);
  search.Seed(Polish(*p, Greedy(*p)));
  uint64_t mask = search.Run();
  if (!exact) mask = Polish(*p, mask);
  return Indices(*p, mask);
}

std::vector<int> BestDeviceSetExhaustive(const devices::Interconnect& interconnect,
                                         const std::vector<int>& available,
                                         const std::vector<int>& required, int size) {
  std::optional<Problem> p = Prepare(interconnect, available, required, size, false);
  if (!p) return {};
  auto degree = [&](int id) {
    int64_t sum = 0;
    for (int other : p->ids) sum += interconnect.PairScore(id, other);
    return sum;
  };
  std::vector<int> best;
  int64_t best_score = 0, best_degree = 0;
  // Every subset of the available positions with `size` members, the required ones included.
  std::function<void(int, std::vector<int>&)> walk = [&](int at, std::vector<int>& set) {
    if (static_cast<int>(set.size()) == size) {
      for (int i = at; i < p->m; ++i)
        if (p->required & Bit(i)) return;  // a required device left out
      int64_t score = 0, deg = 0;
      for (size_t a = 0; a < set.size(); ++a) {
        deg += degree(set[a]);
        for (size_t b = a + 1; b < set.size(); ++b) score += interconnect.PairScore(set[a], set[b]);
      }
      bool better = best.empty() || score > best_score ||
                    (score == best_score && (deg < best_degree ||
                                             (deg == best_degree && set < best)));
      if (better) best = set, best_score = score, best_degree = deg;
      return;
    }
    if (at == p->m) return;
    set.push_back(p->ids[at]);
    walk(at + 1, set);
    set.pop_back();
    if (!(p->required & Bit(at))) walk(at + 1, set);
  };
  std::vector<int> set;
  walk(0, set);
  return best;
}

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
