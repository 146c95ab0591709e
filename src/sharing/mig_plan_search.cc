// Greedy construction, local improvement and branch and bound over option classes. Supply is
// kept as running totals so that a move is scored in O(rows).
#include "sharing/mig_plan_search.h"

#include <algorithm>
#include <utility>

namespace accel::sharing::plan_internal {
namespace {

Score Plus(const Score& a, const Score& b) {
  return {a.satisfied + b.satisfied, a.changed + b.changed, a.free + b.free, a.created + b.created};
}

// An assignment with its supply totals and score, updated move by move.
class State {
 public:
  State(const Problem& problem, Assignment assignment)
      : p_(problem), a_(std::move(assignment)), rows_(static_cast<int>(problem.want.size())),
        supply_(problem.want.size(), 0) {
    for (size_t c = 0; c < a_.size(); ++c) {
      for (int o = 0; o < p_.classes[c].options; ++o) AddSupply(static_cast<int>(c), o, a_[c][o]);
    }
  }

  // Score change if one GPU of class c moves from option `from` to `to`.
  Score Delta(int c, int from, int to) const {
    const OptionClass& k = p_.classes[static_cast<size_t>(c)];
    const int* sa = k.Supply(from, rows_);
    const int* sb = k.Supply(to, rows_);
    Score d;
    for (int r = 0; r < rows_; ++r) {
      if (sa[r] == sb[r]) continue;
      const int s = supply_[r], w = p_.want[r];
      d.satisfied += std::min(w, s - sa[r] + sb[r]) - std::min(w, s);
    }
    d.changed = (to != 0) - (from != 0);
    d.free = k.free[to] - k.free[from];
    d.created = k.created[to] - k.created[from];
    return d;
  }

  // Weighted satisfied-demand change of the same move (the greedy's ranking).
  int64_t WeightedGain(int c, int from, int to, const std::vector<int>& weight) const {
    const OptionClass& k = p_.classes[static_cast<size_t>(c)];
    const int* sa = k.Supply(from, rows_);
    const int* sb = k.Supply(to, rows_);
    int64_t gain = 0;
    for (int r = 0; r < rows_; ++r) {
      if (sa[r] == sb[r]) continue;
      const int s = supply_[r], w = p_.want[r];
      gain += int64_t{weight[r]} * (std::min(w, s - sa[r] + sb[r]) - std::min(w, s));
    }
    return gain;
  }

  // Instances still wanted: no single move can satisfy more.
  int Missing() const {
    int missing = 0;
    for (int r = 0; r < rows_; ++r) missing += std::max(0, p_.want[r] - supply_[r]);
    return missing;
  }

  void Move(int c, int from, int to) {
    Add(c, from, -1);
    Add(c, to, 1);
  }

  int Count(int c, int o) const { return a_[static_cast<size_t>(c)][static_cast<size_t>(o)]; }
  const Assignment& assignment() const { return a_; }

 private:
  void Add(int c, int o, int n) {
    AddSupply(c, o, n);
    a_[c][o] += n;
  }

  void AddSupply(int c, int o, int n) {
    const int* s = p_.classes[static_cast<size_t>(c)].Supply(o, rows_);
    for (int r = 0; r < rows_; ++r) supply_[r] += n * s[r];
  }

  const Problem& p_;
  Assignment a_;
  int rows_;
  std::vector<int> supply_;
};

int64_t CountMoves(const Problem& problem, const State& st) {
  int64_t moves = 0;
  for (size_t c = 0; c < problem.classes.size(); ++c) {
    const int options = problem.classes[c].options;
    for (int a = 0; a < options; ++a) {
      if (st.Count(static_cast<int>(c), a) > 0) moves += options - 1;
    }
  }
  return moves;
}

}  // namespace

Assignment KeepAll(const Problem& problem) {
  Assignment a;
  for (const OptionClass& k : problem.classes) {
    a.emplace_back(static_cast<size_t>(k.options), 0);
    a.back()[0] = k.gpus;
  }
  return a;
}

Score Evaluate(const Problem& problem, const Assignment& assignment) {
  const size_t rows = problem.want.size();
  std::vector<int> supply(rows, 0);
  Score s;
  for (size_t c = 0; c < problem.classes.size(); ++c) {
    const OptionClass& k = problem.classes[c];
    for (int o = 0; o < k.options; ++o) {
      const int n = assignment[c][static_cast<size_t>(o)];
      const int* sup = k.Supply(o, static_cast<int>(rows));
      for (size_t r = 0; r < rows; ++r) supply[r] += n * sup[r];
      if (o != 0) s.changed += n;
      s.free += n * k.free[static_cast<size_t>(o)];
      s.created += n * k.created[static_cast<size_t>(o)];
    }
  }
  for (size_t r = 0; r < rows; ++r) s.satisfied += std::min(supply[r], problem.want[r]);
  return s;
}

Assignment Greedy(const Problem& problem, const std::vector<int>& row_weight) {
  State st(problem, KeepAll(problem));
  const int classes = static_cast<int>(problem.classes.size());
  while (true) {
    int best_c = -1, best_o = -1;
    std::pair<int, int> best_tie{0, 0};  // (free score change, -instances created)
    int64_t best_gain = 0;
    for (int c = 0; c < classes; ++c) {
      if (st.Count(c, 0) == 0) continue;
      for (int o = 1; o < problem.classes[static_cast<size_t>(c)].options; ++o) {
        const int64_t gain = st.WeightedGain(c, 0, o, row_weight);
        if (gain < best_gain || gain <= 0) continue;
        const Score d = st.Delta(c, 0, o);
        if (d.satisfied <= 0) continue;
        const std::pair<int, int> tie{d.free, -d.created};
        if (gain > best_gain || best_c < 0 || tie > best_tie) {
          best_c = c, best_o = o, best_gain = gain, best_tie = tie;
        }
      }
    }
    if (best_c < 0) break;
    st.Move(best_c, 0, best_o);
  }
  return st.assignment();
}

Assignment Improve(const Problem& problem, Assignment start, int rounds, int64_t pair_limit) {
  State st(problem, std::move(start));
  const int classes = static_cast<int>(problem.classes.size());
  const Score zero;
  for (int round = 0; round < rounds; ++round) {
    const bool pairs = CountMoves(problem, st) <= pair_limit;
    bool improved = false;
    for (int c = 0; c < classes; ++c) {
      const int options = problem.classes[static_cast<size_t>(c)].options;
      for (int a = 0; a < options; ++a) {
        for (int b = 0; b < options; ++b) {
          if (a == b || st.Count(c, a) == 0) continue;
          const Score d1 = st.Delta(c, a, b);
          Score best = d1;
          int c2 = -1, a2 = -1, b2 = -1;
          if (pairs) {
            st.Move(c, a, b);
            // A second move gains at most what is missing; skip first moves it cannot repay.
            if (d1.satisfied + st.Missing() < 0) {
              st.Move(c, b, a);
              continue;
            }
            for (int x = 0; x < classes; ++x) {
              const int xo = problem.classes[static_cast<size_t>(x)].options;
              for (int xa = 0; xa < xo; ++xa) {
                if (st.Count(x, xa) == 0) continue;
                for (int xb = 0; xb < xo; ++xb) {
                  if (xb == xa || (x == c && xa == b && xb == a)) continue;
                  const Score total = Plus(d1, st.Delta(x, xa, xb));
                  if (total > best) best = total, c2 = x, a2 = xa, b2 = xb;
                }
              }
            }
            st.Move(c, b, a);
          }
          if (!(best > zero)) continue;
          st.Move(c, a, b);
          if (c2 >= 0) st.Move(c2, a2, b2);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return st.assignment();
}

}  // namespace accel::sharing::plan_internal
