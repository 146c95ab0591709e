// Random fleets and demands for the MIG planner tests: seeded, so every run sees the same cases.
#pragma once

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sharing/mig_planner.h"
#include "sharing/mig_test_util.h"

namespace accel::sharing::test {

class PlanGen {
 public:
  explicit PlanGen(uint32_t seed) : rng_(seed) {}

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  /// A GPU of `model` whose layout uses only `profiles` (empty = all): MIG on with a random
  /// layout and random busy flags, or (sometimes) MIG off, possibly busy.
  FleetGpu Gpu(const GpuModel& model, const std::vector<std::string>& profiles, int index) {
    FleetGpu gpu;
    gpu.node = "n" + std::to_string(index / 4);
    gpu.index = index % 4;
    gpu.model = &model;
    gpu.mig_enabled = !Chance(0.12);
    if (!gpu.mig_enabled) {
      gpu.busy = Chance(0.3);
      return gpu;
    }
    const std::vector<MigLayout>& all = Layouts(model, profiles);
    // Empty GPUs are common in practice; give them extra weight.
    if (Chance(0.15)) return gpu;
    for (const MigPlacement& at : all[static_cast<size_t>(Uniform(0, static_cast<int>(all.size()) - 1))]) {
      gpu.instances.push_back({at, Chance(0.35)});
    }
    return gpu;
  }

  /// Counts 0..max_each for a random non-empty subset of `names`.
  Demand RandomDemand(const std::vector<std::string>& names, int max_each) {
    Demand d;
    for (const std::string& n : names) {
      if (Chance(0.7)) d.emplace_back(n, Uniform(0, max_each));
    }
    if (d.empty()) d.emplace_back(names[0], Uniform(1, max_each));
    return d;
  }

 private:
  const std::vector<MigLayout>& Layouts(const GpuModel& model, const std::vector<std::string>& profiles) {
    auto key = std::make_pair(&model, profiles);
    auto it = layouts_.find(key);
    if (it != layouts_.end()) return it->second;
    EnumerateOptions options;
    options.profiles = profiles.empty() ? std::vector<int>{} : Profiles(model, profiles);
    options.include_empty = true;
    return layouts_[key] = EnumerateLayouts(model, options);
  }

  std::mt19937 rng_;
  std::map<std::pair<const GpuModel*, std::vector<std::string>>, std::vector<MigLayout>> layouts_;
};

/// The objective as a tuple: bigger is better.
inline std::tuple<int, int, int> Objective(const Plan& p) {
  return {p.satisfied_total, -p.gpus_changed, p.free_score};
}

}  // namespace accel::sharing::test
