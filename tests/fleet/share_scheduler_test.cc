// The share scheduler (pod-shaped requests: CPU thousandths, memory, GPU shares and whole GPUs of
// a model list) against brute force on small random fleets of trace hosts, and its invariants
// over thousands of random requests: the view never holds more than a GPU, a host's CPU or its
// memory, every placement validates with the engine, and "no fit" happens exactly when brute
// force finds no (host, GPUs) that can take the request.
#include "fleet/share_scheduler.h"

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "fleet/replay.h"
#include "fleet/trace.h"
#include "placement/engine.h"

namespace accel::fleet {
namespace share_scheduler_test {

int Uniform(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

struct Fleet {
  std::vector<TraceNode> nodes;
  FleetView view;
};

FleetView ViewOfNodes(const std::vector<TraceNode>& nodes) { return TraceFleetView(nodes); }

Fleet RandomFleet(std::mt19937_64& rng, int hosts) {
  Fleet f;
  const char* models[] = {"T4", "V100M16", "G2"};
  for (int h = 0; h < hosts; ++h) {
    TraceNode n;
    n.name = "n" + std::to_string(h);
    n.cpu_milli = 1000 * Uniform(rng, 4, 32);
    n.memory_mib = 1024 * static_cast<uint64_t>(Uniform(rng, 8, 64));
    n.gpus = Uniform(rng, 1, 4);
    n.model = models[Uniform(rng, 0, 2)];
    f.nodes.push_back(n);
  }
  f.view = ViewOfNodes(f.nodes);
  return f;
}

placement::PlacementRequest RandomPod(std::mt19937_64& rng, int n) {
  const int kind = Uniform(rng, 0, 9);
  int count = 0, milli = 0;
  if (kind <= 4) count = 1, milli = 10 * Uniform(rng, 5, 99);
  else if (kind <= 7) count = 1, milli = 1000;
  else if (kind == 8) count = Uniform(rng, 2, 4), milli = 1000;
  std::vector<std::string> models;
  if (Uniform(rng, 0, 4) == 0) models = {Uniform(rng, 0, 1) ? "T4" : "G2"};
  return PodRequest("pod-" + std::to_string(n), 250 * Uniform(rng, 1, 24), 512 * static_cast<uint64_t>(Uniform(rng, 1, 24)),
                    count, milli, models);
}

// What each GPU, the CPU and the memory of a host hold, from its placements (not the view).
struct Held {
  std::map<std::string, int> gpu_milli;  // address -> thousandths
  int64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
};

// Brute force: the (host, choice) pairs that can take `req`, by the host's free resources
// computed from `held` and the node's shape.
bool BruteForceFits(const TraceNode& node, const Held& held, const placement::PlacementRequest& req) {
  if (held.cpu_milli + req.cpu_milli > node.cpu_milli) return false;
  if (held.memory_mib + req.memory_mib > node.memory_mib) return false;
  if (!req.gpu) return true;
  if (!req.gpu->models.empty() && req.gpu->models.front() != node.model) return false;
  int whole_free = 0;
  bool share_fits = false;
  const topology::HostTopology t = TraceHostTopology(node);
  for (const topology::PciDevice& d : t.pci) {
    auto it = held.gpu_milli.find(d.address);
    const int used = it == held.gpu_milli.end() ? 0 : it->second;
    if (used == 0) ++whole_free;
    if (used < 1000 && 1000 - used >= req.gpu->milli) share_fits = true;
  }
  if (req.gpu->count == 1 && req.gpu->milli < 1000) return share_fits;
  return whole_free >= req.gpu->count;
}

TEST(ShareScheduler, NoFitExactlyWhenBruteForceFindsNoHostAndNothingOverbooks) {
  std::mt19937_64 rng(20261208);
  int placed = 0, refused = 0;
  for (int round = 0; round < 60; ++round) {
    Fleet f = RandomFleet(rng, Uniform(rng, 1, 6));
    std::map<std::string, Held> held;
    std::map<std::string, const TraceNode*> node_of;
    for (const TraceNode& n : f.nodes) node_of[n.name] = &n;
    const GpuPolicy policy = AllGpuPolicies()[static_cast<size_t>(Uniform(rng, 0, static_cast<int>(AllGpuPolicies().size()) - 1))];
    ScheduleOptions o;
    o.gpu_policy = policy;
    o.alternates = 0;
    o.random_seed = static_cast<uint64_t>(round);
    for (int p = 0; p < 60; ++p) {
      const placement::PlacementRequest req = RandomPod(rng, p);
      bool any = false;
      for (const TraceNode& n : f.nodes) any = any || BruteForceFits(n, held[n.name], req);
      const ScheduleResult r = Schedule(f.view, req, o);
      const std::string ctx = "round " + std::to_string(round) + " pod " + std::to_string(p) + " policy " + GpuPolicyName(policy);
      ASSERT_EQ(r.all_placed, any) << ctx;
      if (!r.all_placed) {
        ++refused;
        EXPECT_FALSE(r.why_not.empty()) << ctx;
        continue;
      }
      ++placed;
      const Candidate& c = r.instances.front().chosen;
      const HostEntry& e = f.view.hosts()[c.host_index];
      ASSERT_TRUE(BruteForceFits(*node_of.at(c.host), held[c.host], req)) << ctx << ": chose a host that cannot take it";
      ASSERT_EQ(placement::Validate(*e.hardware, e.usage, e.record.policy, req, c.placement), "") << ctx;
      ASSERT_EQ(f.view.Apply(c.host_index, c.placement), "") << ctx;
      Held& h = held[c.host];
      h.cpu_milli += req.cpu_milli;
      h.memory_mib += req.memory_mib;
      for (const placement::GpuPlacement& g : c.placement.gpus) {
        h.gpu_milli[g.address] += g.milli;
        ASSERT_LE(h.gpu_milli[g.address], 1000) << ctx;
        if (g.milli == 1000) {
          ASSERT_EQ(h.gpu_milli[g.address], 1000) << ctx << ": a whole GPU shared";
        }
      }
      ASSERT_LE(h.cpu_milli, node_of.at(c.host)->cpu_milli) << ctx;
      ASSERT_LE(h.memory_mib, node_of.at(c.host)->memory_mib) << ctx;
    }
  }
  EXPECT_GT(placed, 700);
  EXPECT_GT(refused, 100);
}

// The chosen (host, GPUs) is the best of every (host, choice) pair by the documented order:
// (cost, GPU preference, seeded tiebreak, host), costs from a fresh scorer.
TEST(ShareScheduler, ChoosesTheBestHostAndGpusOfAllPairsByBruteForce) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    Fleet f = RandomFleet(rng, Uniform(rng, 2, 5));
    // Some load first, with best-fit.
    ScheduleOptions load;
    load.gpu_policy = GpuPolicy::kBestFit;
    load.alternates = 0;
    for (int p = 0; p < Uniform(rng, 0, 12); ++p) {
      const ScheduleResult r = Schedule(f.view, RandomPod(rng, p), load);
      if (r.all_placed) {
        ASSERT_EQ(f.view.Apply(r.instances[0].chosen.host_index, r.instances[0].chosen.placement), "");
      }
    }
    const placement::PlacementRequest req = RandomPod(rng, 1000);
    for (GpuPolicy policy : {GpuPolicy::kAccel, GpuPolicy::kFgd, GpuPolicy::kBestFit, GpuPolicy::kDotProduct, GpuPolicy::kPacking}) {
      ScheduleOptions o;
      o.gpu_policy = policy;
      o.alternates = 0;
      o.tiebreak_seed = "r" + std::to_string(round);
      const ScheduleResult r = Schedule(f.view, req, o);
      // Brute force over every host and every choice, with the scorer the scheduler would build.
      GpuScorer scorer(policy, nullptr, 0);
      const MixEntry ask = MixEntryOf(req);
      scorer.UseAskAsMix(ask);
      using Key = std::tuple<double, double, uint64_t, size_t>;
      std::optional<std::pair<Key, std::pair<size_t, std::vector<int>>>> best;
      for (size_t i = 0; i < f.view.hosts().size(); ++i) {
        const HostEntry& e = f.view.hosts()[i];
        const std::vector<const topology::PciDevice*> acc = placement::AcceleratorsOf(*e.hardware);
        ShareHostState before = e.summary.share;
        if (before.free_cpu_milli < req.cpu_milli || before.free_memory_mib < req.memory_mib) continue;
        before.allowed = &scorer.AllowedMasks(e.hardware.get(), acc);
        before.gpu_shapes = &e.gpu_shapes;
        before.hardware = f.view.rows()[i].hardware;
        std::vector<placement::GpuChoice> choices = req.gpu ? placement::GpuChoices(acc, before.gpus, *req.gpu, nullptr)
                                                            : std::vector<placement::GpuChoice>{placement::GpuChoice{}};
        for (const placement::GpuChoice& c : choices) {
          ShareHostState after = before;
          after.free_cpu_milli -= req.cpu_milli;
          after.free_memory_mib -= req.memory_mib;
          for (int g : c.gpus) {
            placement::GpuSlot& s = after.gpus[static_cast<size_t>(g)];
            if (req.gpu->count == 1 && req.gpu->milli < 1000) s.free_milli -= req.gpu->milli;
            else s.free_milli = 0, s.whole_held = true;
          }
          const ChoiceCost cost = scorer.Cost(ask, before, after, c);
          uint64_t h = Fnv1a(e.record.name);
          const uint64_t seed_hash = Fnv1a(o.tiebreak_seed);
          h ^= seed_hash * 0x9e3779b97f4a7c15ULL;
          h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
          h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
          h ^= h >> 31;
          const Key key{cost.cost, cost.within, h, i};
          if (!best || key < best->first) best = std::make_pair(key, std::make_pair(i, c.gpus));
        }
      }
      const std::string ctx = "round " + std::to_string(round) + " " + GpuPolicyName(policy);
      ASSERT_EQ(r.all_placed, best.has_value()) << ctx;
      if (!best) continue;
      const Candidate& c = r.instances.front().chosen;
      EXPECT_EQ(c.host_index, best->second.first) << ctx;
      std::vector<int> got;
      const std::vector<const topology::PciDevice*> acc = placement::AcceleratorsOf(*f.view.hosts()[c.host_index].hardware);
      for (const placement::GpuPlacement& g : c.placement.gpus)
        for (size_t k = 0; k < acc.size(); ++k)
          if (acc[k]->address == g.address) got.push_back(static_cast<int>(k));
      EXPECT_EQ(got, best->second.second) << ctx;
    }
  }
}

TEST(ShareScheduler, JudgeHostsScoresFittingHostsBestHundred) {
  std::vector<TraceNode> nodes = {{"a", 8000, 32768, 2, "T4"}, {"b", 8000, 32768, 2, "T4"}, {"c", 1000, 1024, 1, "T4"}};
  FleetView view = ViewOfNodes(nodes);
  // Half of a's first GPU taken: a 500 share fits a's GPU exactly (no fragment left).
  ScheduleOptions o;
  o.gpu_policy = GpuPolicy::kBestFit;
  const placement::PlacementRequest half = PodRequest("half", 2000, 1024, 1, 500, {});
  ScheduleResult r = Schedule(view, half, o);
  ASSERT_TRUE(r.all_placed);
  ASSERT_EQ(view.Apply(r.instances[0].chosen.host_index, r.instances[0].chosen.placement), "");
  const std::string first = r.instances[0].chosen.host;
  const std::vector<HostVerdict> v = JudgeHosts(view, PodRequest("p", 2000, 2048, 1, 500, {}), o, {0, 1, 2, 7});
  ASSERT_EQ(v.size(), 4u);
  ASSERT_NE(first, "c");
  const size_t used = first == "a" ? 0 : 1;
  EXPECT_TRUE(v[used].fits);
  EXPECT_EQ(v[used].score, 100) << "the half-used GPU is the best place for the other half";
  EXPECT_TRUE(v[1 - used].fits);
  EXPECT_LT(v[1 - used].score, 100);
  EXPECT_FALSE(v[2].fits);
  EXPECT_NE(v[2].reason.find("CPU"), std::string::npos) << v[2].reason;
  EXPECT_FALSE(v[3].fits);
  EXPECT_EQ(v[3].reason, "not in the fleet");
  EXPECT_THROW(JudgeHosts(view, placement::PlacementRequest{}, o, {0}), InputError);
}

TEST(ShareScheduler, ModelListAndWholeGpusAndCountsOfInstances) {
  std::vector<TraceNode> nodes = {{"t4", 64000, 262144, 2, "T4"}, {"g2", 64000, 262144, 8, "G2"}};
  FleetView view = ViewOfNodes(nodes);
  ScheduleOptions o;
  o.count = 3;
  o.different_hosts = false;
  ScheduleResult r = Schedule(view, PodRequest("m", 1000, 1024, 2, 1000, {"G2"}), o);
  ASSERT_TRUE(r.all_placed);
  for (const InstanceDecision& d : r.instances) {
    EXPECT_EQ(d.chosen.host, "g2");
    EXPECT_EQ(d.chosen.placement.gpus.size(), 2u);
  }
  // A fourth and fifth need 8 whole G2 GPUs after 6 are taken: no.
  for (const InstanceDecision& d : r.instances) ASSERT_EQ(view.Apply(d.chosen.host_index, d.chosen.placement), "");
  o.count = 2;
  r = Schedule(view, PodRequest("m", 1000, 1024, 2, 1000, {"G2"}), o);
  EXPECT_FALSE(r.all_placed);
  ASSERT_FALSE(r.why_not.empty());
  EXPECT_EQ(r.why_not.front().cause, "GPUs") << r.why_not.front().example;
  o.count = 1;
  r = Schedule(view, PodRequest("any", 1000, 1024, 1, 300, {"V100M32"}), o);
  EXPECT_FALSE(r.all_placed) << "no V100M32 in the fleet";
}

}  // namespace share_scheduler_test
}  // namespace accel::fleet
