// Trace reading and the replay protocol: the arrival list is the pod list plus seeded draws up
// to tune x capacity, shuffled; allocation curves are monotone and bounded; results do not depend
// on the thread count; departures release what they held.
#include "fleet/replay.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel::fleet {
namespace replay_test {

std::string ErrorOf(void (*f)(const std::string&), const std::string& text) {
  try {
    f(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "n0,32000,131072,4,T4\n"
    "n1,16000,65536,2,V100M16\n"
    "n2,96000,393216,8,G2\n"
    "n3,8000,32768,1,T4\n";

const char* kPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p0,4000,8192,1,1000,,LS,Running,0,100,0\n"
    "p1,2000,4096,1,470,,LS,Running,10,50,10\n"
    "p2,2000,4096,1,470,,LS,Running,20,200,20\n"
    "p3,8000,16384,2,1000,T4|G2,LS,Running,30,90,30\n"
    "p4,6000,8192,0,0,,LS,Running,40,300,40\n"
    "p5,3000,4096,1,810,,LS,Running,50,60,50\n"
    "p6,1000,2048,1,160,nan,LS,Running,60,70,60\n"
    "p7,12000,32768,8,1000,,LS,Running,70,400,70\n";

TEST(Trace, ReadsNodesAndPodsAndNamesBadCells) {
  const std::vector<TraceNode> nodes = ParseTraceNodes(kNodes, "nodes.csv");
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[2].gpus, 8);
  EXPECT_EQ(nodes[2].model, "G2");
  const std::vector<TracePod> pods = ParseTracePods(kPods, "pods.csv");
  ASSERT_EQ(pods.size(), 8u);
  EXPECT_EQ(pods[1].gpu_milli, 470);
  EXPECT_EQ(pods[3].gpu_milli, 1000);
  EXPECT_EQ(pods[3].models, (std::vector<std::string>{"T4", "G2"}));
  EXPECT_TRUE(pods[6].models.empty()) << "nan is no constraint";
  EXPECT_EQ(pods[4].GpuMilli(), 0);
  EXPECT_EQ(pods[7].GpuMilli(), 8000);
  EXPECT_EQ(*pods[5].deleted, 60);
  // The multigpu lists have five columns and no times.
  const std::vector<TracePod> short_pods = ParseTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,5\n", "s.csv");
  EXPECT_FALSE(short_pods[0].created.has_value());

  auto nodes_error = [](const std::string& t) { return ErrorOf([](const std::string& s) { ParseTraceNodes(s, "nodes.csv"); }, t); };
  auto pods_error = [](const std::string& t) { return ErrorOf([](const std::string& s) { ParseTracePods(s, "pods.csv"); }, t); };
  EXPECT_NE(nodes_error("sn,cpu_milli,memory_mib,gpu,model\nx,12a,1,1,T4\n").find("nodes.csv:2:3"), std::string::npos);
  EXPECT_NE(nodes_error("sn,cpu_milli,memory_mib,gpu,model\nx,1,1,1,T4\nx,1,1,1,T4\n").find("twice"), std::string::npos);
  EXPECT_NE(nodes_error("sn,cpu_milli,memory_mib,gpu,model\nx,1,1,2,\n").find("model"), std::string::npos);
  EXPECT_NE(nodes_error("sn,cpu_milli,memory_mib,gpu\nx,1,1,2\n").find("model"), std::string::npos);
  EXPECT_NE(pods_error("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,1001\n").find("pods.csv:2:9"), std::string::npos);
  EXPECT_NE(pods_error("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,0\n").find("gpu_milli"), std::string::npos);
  EXPECT_NE(pods_error("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\na,1,1,1,5,T4||G2\n").find("empty model"),
            std::string::npos);
  EXPECT_NE(pods_error("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\na,1,1,1,5,9,3\n")
                .find("before creation_time"),
            std::string::npos);
}

TEST(Trace, NodeHostsHaveTheirCpusMemoryAndGpus) {
  const TraceNode n{"x", 7500, 4096, 3, "T4"};
  const topology::HostTopology t = TraceHostTopology(n);
  EXPECT_EQ(t.AllCpus().Count(), 8);
  int gpus = 0;
  for (const topology::PciDevice& d : t.pci) gpus += d.is_accelerator() && d.name == "T4";
  EXPECT_EQ(gpus, 3);
  const placement::HostPolicy p = TraceHostPolicy(n);
  EXPECT_DOUBLE_EQ(p.cpu_allocation_ratio * 8000, 7500);
}

TEST(Replay, ArrivalOrderIsThePodListPlusDrawsToTuneTimesCapacityShuffled) {
  const std::vector<TracePod> pods = ParseTracePods(kPods, "pods.csv");
  const int64_t capacity = 15000;
  for (uint64_t seed : {42, 43, 44}) {
    const std::vector<int> order = ArrivalOrder(pods, capacity, 1.3, seed);
    EXPECT_EQ(order, ArrivalOrder(pods, capacity, 1.3, seed)) << "one seed, one order";
    std::map<int, int> seen;
    int64_t total = 0;
    for (int p : order) ++seen[p], total += pods[static_cast<size_t>(p)].GpuMilli();
    for (int p = 0; p < static_cast<int>(pods.size()); ++p) EXPECT_GE(seen[p], 1) << "every listed pod arrives";
    EXPECT_GE(total, static_cast<int64_t>(1.3 * capacity));
    // Without its last draw the list would be below the target (draws stop when it is reached).
    EXPECT_GT(order.size(), pods.size());
  }
  EXPECT_NE(ArrivalOrder(pods, capacity, 1.3, 42), ArrivalOrder(pods, capacity, 1.3, 43));
  // At tune 0 nothing is drawn: a permutation of the list.
  std::vector<int> perm = ArrivalOrder(pods, capacity, 0, 5);
  std::sort(perm.begin(), perm.end());
  std::vector<int> all(pods.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(perm, all);
}

TEST(Replay, TypicalPodsCoverNinetyFivePercentMostCommonFirst) {
  std::vector<TracePod> pods;
  for (int i = 0; i < 90; ++i) pods.push_back({"a", 1000, 1, 1, 1000, {}, "", {}, {}});
  for (int i = 0; i < 6; ++i) pods.push_back({"b", 2000, 1, 1, 500, {}, "", {}, {}});
  for (int i = 0; i < 4; ++i) pods.push_back({"c", 500, 1, 0, 0, {}, "", {}, {}});
  const WorkloadMix mix = TypicalPodsMix(pods);
  ASSERT_EQ(mix.entries.size(), 2u) << "a (90) and b (6) cover 96 of 100";
  EXPECT_EQ(mix.entries[0].gpu_milli, 1000);
  EXPECT_NEAR(mix.entries[0].weight, 90.0 / 96, 1e-12);
  EXPECT_NEAR(mix.entries[1].weight, 6.0 / 96, 1e-12);
}

TEST(Replay, CurvesAreMonotoneBoundedAndIndependentOfThreads) {
  const std::vector<TraceNode> nodes = ParseTraceNodes(kNodes, "nodes.csv");
  const std::vector<TracePod> pods = ParseTracePods(kPods, "pods.csv");
  ReplayOptions o;
  o.policies = AllGpuPolicies();
  o.seeds = {1, 2, 3};
  o.assignments = true;
  o.threads = 1;
  const std::vector<ReplayResult> one = Replay(nodes, pods, o);
  o.threads = 4;
  const std::vector<ReplayResult> four = Replay(nodes, pods, o);
  ASSERT_EQ(one.size(), AllGpuPolicies().size());
  for (size_t p = 0; p < one.size(); ++p) {
    EXPECT_EQ(one[p].gpus, 15);
    EXPECT_EQ(one[p].mean_allocated_pct, four[p].mean_allocated_pct) << GpuPolicyName(one[p].policy);
    for (size_t s = 0; s < one[p].runs.size(); ++s) {
      const ReplayRun& run = one[p].runs[s];
      ASSERT_EQ(run.allocated_pct.size(), 131u);
      for (size_t k = 1; k < 131; ++k) {
        EXPECT_GE(run.allocated_pct[k], run.allocated_pct[k - 1]) << "no departures: allocation never falls";
        EXPECT_LE(run.allocated_pct[k], run.bound_pct[k] + 1e-9);
        EXPECT_LE(run.allocated_pct[k], 100.0 + 1e-9);
      }
      ASSERT_EQ(static_cast<int>(run.assignments.size()), run.pods);
      // Replaying the assignments never holds more than a GPU, a node's CPU or its memory.
      std::map<std::pair<int, int>, int> gpu;
      std::map<int, int64_t> cpu;
      std::map<int, uint64_t> mem;
      int placed = 0;
      for (const ReplayAssignment& a : run.assignments) {
        if (a.node < 0) continue;
        ++placed;
        const TracePod& pod = pods[static_cast<size_t>(a.pod)];
        EXPECT_EQ(static_cast<int>(a.gpus.size()), pod.num_gpu);
        for (const auto& [index, milli] : a.gpus) {
          const std::pair<int, int> key(a.node, index);
          EXPECT_LE(gpu[key] += milli, 1000);
        }
        EXPECT_LE(cpu[a.node] += pod.cpu_milli, nodes[static_cast<size_t>(a.node)].cpu_milli);
        EXPECT_LE(mem[a.node] += pod.memory_mib, nodes[static_cast<size_t>(a.node)].memory_mib);
        if (!pod.models.empty()) {
          EXPECT_NE(std::find(pod.models.begin(), pod.models.end(), nodes[static_cast<size_t>(a.node)].model), pod.models.end());
        }
      }
      EXPECT_EQ(placed, run.placed);
    }
  }
}

TEST(Replay, DeparturesReleaseWhatTheyHeld) {
  const std::vector<TraceNode> nodes = ParseTraceNodes(kNodes, "nodes.csv");
  const std::vector<TracePod> pods = ParseTracePods(kPods, "pods.csv");
  ReplayOptions o;
  o.departures = true;
  o.policies = {GpuPolicy::kAccel, GpuPolicy::kFgd};
  const std::vector<ReplayResult> r = Replay(nodes, pods, o);
  for (const ReplayResult& res : r) {
    const ReplayRun& run = res.runs.front();
    ASSERT_EQ(run.allocated_pct.size(), 101u);
    EXPECT_EQ(run.pods, 8);
    EXPECT_EQ(run.allocated_pct.back(), 0) << "everyone has left by the end of the span";
    EXPECT_GT(*std::max_element(run.allocated_pct.begin(), run.allocated_pct.end()), 0);
  }
  std::vector<TracePod> timeless = ParseTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,5\n", "s.csv");
  EXPECT_THROW(Replay(nodes, timeless, o), InputError);
  EXPECT_THROW(Replay({{"c", 1000, 1024, 0, ""}}, pods, ReplayOptions{}), InputError);
}

}  // namespace replay_test
}  // namespace accel::fleet
