// BestDeviceSet is a branch and bound over "take device c / leave it" decisions. The objective is
// compared as a tuple (set score, −degree sum, rank), where rank has bit 63−i set for each chosen
// local position i: among equal-size sets of ascending indices, the lexicographically smaller
// list has the larger rank, so every tie-break of the contract is part of one total order and
// the search may explore in any order and prune whenever a subtree cannot beat the incumbent.
//
// Score bound for a node with r devices still to add from the remaining candidates R:
//   2·(gain of the completion X) = Σ_{c∈X} (2·g(c) + Σ_{c'∈X\c} s(c,c'))
//                                ≤ top-r over c∈R of v(c) = 2·g(c) + best r−1 scores from c into R
// where g(c) is c's score to the devices already chosen. When the score bound only ties the
// incumbent, the degree and rank parts are bounded by the r smallest degrees and the r lowest
// positions left in R. A candidate outside the top r can only replace the r-th, so those whose
// v(c) cannot make up the difference are dropped from R (which tightens the others' v: repeat).
// With one device left to add, the best candidate is taken directly. The first dive takes the
// best v each time, a greedy set that makes pruning effective from the start.
#include "kube/device_set.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
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
  int m = p.m;
  p.score.assign(m * m, 0);
  p.degree.assign(m, 0);
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b)
      p.score[a * m + b] = p.score[b * m + a] = ic.PairScore(p.ids[a], p.ids[b]);
  // Row a of partners: the others by score to a, descending, ties by position. Placed by
  // counting who precedes whom: branch-free, where a comparison sort mispredicts throughout.
  p.partners.assign(m * (m - 1), 0);
  p.partner_score.assign(m * (m - 1), 0);
  for (int a = 0; a < m; ++a) {
    const int* row = &p.score[a * m];
    for (int b = 0; b < m; ++b) {
      p.degree[a] += row[b];
      if (b == a) continue;
      int before = 0;
      for (int x = 0; x < m; ++x)
        before += (x != a) & ((row[x] > row[b]) | ((row[x] == row[b]) & (x < b)));
      p.partners[a * (m - 1) + before] = b;
      p.partner_score[a * (m - 1) + before] = row[b];
    }
  }
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

class Search {
 public:
  Search(const Problem& p, int64_t node_budget)
      : p_(p), budget_(node_budget), gain_((p.size + 2) * p.m, 0),
        values_(p.m), value_of_(p.m) {}

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
    if (r == 1) return TakeBestOne(chosen, rest, score, degree, rank, gain);

    // Per-candidate values (see the file comment); dropping candidates tightens the others'
    // values, so repeat until none is dropped.
    for (;;) {
      int count = 0;
      for (uint64_t bits = rest; bits; bits &= bits - 1) {
        int c = std::countr_zero(bits);
        value_of_[c] = values_[count++] = Value(c, gain[c], rest, r);
      }
      if (!found_) break;
      std::nth_element(values_.begin(), values_.begin() + (r - 1), values_.begin() + count,
                       std::greater<>());
      int64_t top = 0;
      for (int i = 0; i < r; ++i) top += values_[i];
      if (!MayBeat(rest, score, degree, rank, r, 2 * score + top)) return;
      // A candidate outside the top r enters a completion only in place of one of them, at
      // best of the r-th: drop those that cannot then beat the incumbent's score.
      int64_t need = 2 * best_.score - 2 * score - top + values_[r - 1];
      uint64_t kept = rest;
      for (uint64_t bits = rest; bits; bits &= bits - 1)
        if (value_of_[std::countr_zero(bits)] < need) kept &= ~Bit(std::countr_zero(bits));
      if (kept == rest) break;
      rest = kept;
      if (std::popcount(rest) == r) return TakeAll(chosen, rest, score, degree, rank, gain);
    }
    int pick = -1;
    for (uint64_t bits = rest; bits; bits &= bits - 1) {
      int c = std::countr_zero(bits);
      if (pick < 0 || value_of_[c] > value_of_[pick]) pick = c;
    }

    int64_t* next = &gain_[(k + 1) * p_.m];
    for (int c = 0; c < p_.m; ++c) next[c] = gain[c] + S(c, pick);
    Visit(chosen | Bit(pick), rest & ~Bit(pick), score + gain[pick], degree + p_.degree[pick],
          rank | RankBit(pick), k + 1);
    Visit(chosen, rest & ~Bit(pick), score, degree, rank, k);
  }

  // 2·gain of c plus its r−1 best scores into rest (c excluded); rest holds ≥ r besides c.
  int64_t Value(int c, int64_t gain, uint64_t rest, int r) const {
    int64_t value = 2 * gain;
    // Branch-free: which partners are left is unpredictable.
    const int* partner = &p_.partners[c * (p_.m - 1)];
    const int64_t* partner_score = &p_.partner_score[c * (p_.m - 1)];
    for (int taken = 0, i = 0; taken < r - 1; ++i) {
      int64_t left_too = (rest >> partner[i]) & 1;
      value += partner_score[i] * left_too;
      taken += static_cast<int>(left_too);
    }
    return value;
  }

  // Whether a completion of the node may beat the incumbent, given twice its score bound.
  bool MayBeat(uint64_t rest, int64_t score, int64_t degree, uint64_t rank, int r,
               int64_t bound2) {
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

  // One device to add: each candidate's key is exact, so the best of them is the answer here.
  void TakeBestOne(uint64_t chosen, uint64_t rest, int64_t score, int64_t degree, uint64_t rank,
                   const int64_t* gain) {
    int pick = std::countr_zero(rest);
    for (uint64_t bits = rest & (rest - 1); bits; bits &= bits - 1) {
      int c = std::countr_zero(bits);  // higher position: wins only on score, then degree
      if (gain[c] > gain[pick] || (gain[c] == gain[pick] && p_.degree[c] < p_.degree[pick]))
        pick = c;
    }
    Offer(chosen | Bit(pick),
          {score + gain[pick], -(degree + p_.degree[pick]), rank | RankBit(pick)});
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
  std::vector<int64_t> values_;    // scratch for the bound: the node's values, reordered
  std::vector<int64_t> value_of_;  // scratch: the node's value per device
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
  uint64_t mask = Search(*p, exact ? 0 : kHeuristicNodes).Run();
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

}  // namespace accel::kube
