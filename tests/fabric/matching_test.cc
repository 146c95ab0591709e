#include "fabric/matching.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>

namespace accel::fabric {
namespace matching_test {

// The objective, compared field by field (bandwidth sums are exact: multiples of 0.1875).
using Total = std::tuple<long long, double, long long, long long>;

Total Sum(const std::vector<int>& assignment, size_t nics, const std::vector<PairCost>& costs) {
  long long type = 0, hops = 0, rank = 0;
  double bw = 0;
  for (size_t g = 0; g < assignment.size(); ++g) {
    const PairCost& c = costs[g * nics + assignment[g]];
    type += c.type;
    bw -= c.bandwidth_gbs;
    hops += c.hops;
    rank += c.nic_rank;
  }
  return {type, bw, hops, rank};
}

// Every assignment of `gpus` GPUs to NICs with at most `capacity` each; the best total.
Total BruteForce(size_t gpus, size_t nics, size_t capacity, const std::vector<PairCost>& costs) {
  std::vector<int> a(gpus, 0), load(nics, 0);
  bool have = false;
  Total best{};
  auto rec = [&](auto&& self, size_t g) -> void {
    if (g == gpus) {
      Total t = Sum(a, nics, costs);
      if (!have || t < best) best = t;
      have = true;
      return;
    }
    for (size_t n = 0; n < nics; ++n) {
      if (load[n] >= static_cast<int>(capacity)) continue;
      ++load[n];
      a[g] = static_cast<int>(n);
      self(self, g + 1);
      --load[n];
    }
  };
  rec(rec, 0);
  return best;
}

std::vector<PairCost> RandomCosts(std::mt19937& rng, size_t gpus, size_t nics) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  static constexpr double kBw[] = {48, 24, 12, 6, 0.375, 0};
  std::vector<PairCost> costs(gpus * nics);
  for (size_t g = 0; g < gpus; ++g) {
    for (size_t n = 0; n < nics; ++n) {
      // Few distinct values, so ties and trade-offs between fields are common.
      costs[g * nics + n] = PairCost{4 + pick(0, 1) * pick(1, 5), kBw[pick(0, 5)], pick(2, 5),
                                     static_cast<int>(n)};
    }
  }
  return costs;
}

TEST(Matching, EmptyInputs) {
  EXPECT_EQ(AssignWithCapacity(3, 0, {}), std::vector<int>(3, -1));
  EXPECT_TRUE(AssignWithCapacity(0, 3, {}).empty());
  std::vector<PairCost> costs(4);
  EXPECT_EQ(AssignWithCapacity(4, 1, costs, 2), std::vector<int>(4, -1));  // 2 slots for 4
}

TEST(Matching, TypeBeatsBandwidthBeatsHopsBeatsAddress) {
  // One GPU, four NICs: each later field only decides when earlier ones tie.
  std::vector<PairCost> costs = {{5, 48, 2, 0}, {4, 12, 9, 1}, {4, 24, 9, 2}, {4, 24, 3, 3}};
  EXPECT_EQ(AssignWithCapacity(1, 4, costs), std::vector<int>{3});
  costs[3].hops = 9;
  EXPECT_EQ(AssignWithCapacity(1, 4, costs), std::vector<int>{2});
}

TEST(Matching, CapacityIsCeilGpusOverNics) {
  // Three GPUs all prefer NIC 0; with two NICs each may serve two.
  std::vector<PairCost> costs;
  for (int g = 0; g < 3; ++g) {
    costs.push_back({4, 48, 2, 0});
    costs.push_back({8, 48, 4, 1});
  }
  std::vector<int> a = AssignWithCapacity(3, 2, costs);
  EXPECT_EQ(std::count(a.begin(), a.end(), 0), 2);
  EXPECT_EQ(std::count(a.begin(), a.end(), 1), 1);
}

TEST(Matching, SumOfTypesIsMinimisedNotEachGreedily) {
  // GPU 0 likes both NICs equally well; GPU 1 only has a good path to NIC 0. Greedy GPU 0
  // first would take NIC 0 (lower address); the optimum gives it NIC 1.
  std::vector<PairCost> costs = {{4, 48, 2, 0}, {4, 48, 2, 1},   // GPU 0
                                 {4, 48, 2, 0}, {9, 48, 5, 1}};  // GPU 1
  EXPECT_EQ(AssignWithCapacity(2, 2, costs), (std::vector<int>{1, 0}));
}

TEST(Matching, EqualsBruteForceOnRandomInstances) {
  std::mt19937 rng(2024);
  for (int iter = 0; iter < 3000; ++iter) {
    size_t gpus = std::uniform_int_distribution<int>(1, 5)(rng);
    size_t nics = std::uniform_int_distribution<int>(1, 5)(rng);
    std::vector<PairCost> costs = RandomCosts(rng, gpus, nics);
    size_t cap = (gpus + nics - 1) / nics;
    if (iter % 4 == 0) cap += 1;  // an explicit, looser capacity
    std::vector<int> a = AssignWithCapacity(gpus, nics, costs, iter % 4 == 0 ? cap : 0);
    ASSERT_EQ(a.size(), gpus);
    std::vector<size_t> load(nics, 0);
    for (int n : a) {
      ASSERT_GE(n, 0);
      ASSERT_LT(n, static_cast<int>(nics));
      ASSERT_LE(++load[n], cap);
    }
    ASSERT_EQ(Sum(a, nics, costs), BruteForce(gpus, nics, cap, costs)) << "iteration " << iter;
    ASSERT_EQ(a, AssignWithCapacity(gpus, nics, costs, iter % 4 == 0 ? cap : 0));  // deterministic
  }
}

TEST(Matching, LargeInstanceStaysExact) {
  // 64 × 64 with wide fields: the 128-bit encoding must not carry between fields.
  std::mt19937 rng(5);
  std::vector<PairCost> costs = RandomCosts(rng, 64, 64);
  std::vector<int> a = AssignWithCapacity(64, 64, costs);
  std::vector<int> load(64, 0);
  for (int n : a) ASSERT_EQ(++load[n], 1);
  // A perfect matching on type 4 exists when the identity has it; check the optimum is at
  // least as good as the identity assignment.
  std::vector<int> identity(64);
  for (int i = 0; i < 64; ++i) identity[i] = i;
  EXPECT_LE(Sum(a, 64, costs), Sum(identity, 64, costs));
}

}  // namespace
}  // namespace accel::fabric
