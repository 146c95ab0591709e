// replay_bench: what issue 25's "Measure" asks of the fleet-efficiency work, in one run
// (docs/benchmarks.md, "Fleet efficiency").
//
//   replay_bench [--data DIR] [--seeds 42-51] [--policies accel,fgd] [--jobs N] [--json FILE]
//
//   1. Decision latency at the openb cluster's size (1,213 nodes, 6,212 GPUs): one arrival run
//      of openb_pod_list_default.csv (seed 42, tune 1.3) through fleet::Schedule on the trace's
//      FleetView, each decision timed alone (wall), the placement applied to the view after it
//      as the replay does; p50/p99/max per policy. The run is the replay protocol itself, so
//      the fleet fills up to saturation and decisions late in the run see a full cluster.
//   2. The whole study: the three pod lists x --seeds with `accel fleet replay`'s code
//      (fleet::Replay, --jobs threads), wall time for each policy; the budget is 3
//      minutes for accel's 30 runs on the 2-core machine (the paper: ~10 minutes per run).
//   3. Mean allocated GPU capacity at 100 % and 130 % arrived per list and policy, beside the
//      paper's FGD figures, as a ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/fleet_view.h"
#include "fleet/replay.h"
#include "fleet/scheduler.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace accel::fleet;

struct Args {
  std::string data = std::string(ACCEL_SHARED_DIR) + "/data/openb";
  std::vector<uint64_t> seeds;
  std::vector<GpuPolicy> policies = {GpuPolicy::kAccel, GpuPolicy::kFgd};
  int jobs = 0;
  std::string json;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())))];
}


}  // namespace


int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << k << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--data") a.data = next();
    else if (k == "--seeds") {
      const std::string s = next();
      const size_t dash = s.find('-');
      const uint64_t lo = std::stoull(s.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoull(s.substr(dash + 1));
      for (uint64_t x = lo; x <= hi; ++x) a.seeds.push_back(x);
    } else if (k == "--policies") {
      a.policies.clear();
      std::string s = next(), name;
      for (size_t p = 0; p <= s.size(); ++p)
        if (p == s.size() || s[p] == ',') a.policies.push_back(ParseGpuPolicy(name, "--policies")), name.clear();
        else name += s[p];
    } else if (k == "--jobs") a.jobs = std::stoi(next());
    else if (k == "--json") a.json = next();
    else {
      std::cerr << "usage: replay_bench [--data DIR] [--seeds 42-51] [--policies accel,fgd] [--jobs N] [--json FILE]\n";
      return 2;
    }
  }
  if (a.seeds.empty())
    for (uint64_t s = 42; s <= 51; ++s) a.seeds.push_back(s);
  nlohmann::ordered_json out;
  const std::vector<TraceNode> nodes = ReadTraceNodes(a.data + "/openb_node_list_gpu_node.csv");
  int64_t capacity = 0;
  for (const TraceNode& n : nodes) capacity += int64_t{n.gpus} * 1000;
  out["nodes"] = nodes.size();
  out["gpus"] = capacity / 1000;

  // 1. Decision latency.
  {
    const std::vector<TracePod> pods = ReadTracePods(a.data + "/openb_pod_list_default.csv");
    const std::vector<int> order = ArrivalOrder(pods, capacity, 1.3, 42);
    auto mix = std::make_shared<const WorkloadMix>(TypicalPodsMix(pods));
    std::vector<accel::placement::PlacementRequest> requests;
    for (const TracePod& p : pods) requests.push_back(TracePodRequest(p));
    for (GpuPolicy policy : a.policies) {
      FleetView view = TraceFleetView(nodes);
      ScheduleOptions o;
      o.alternates = 0;
      o.scorer = std::make_shared<GpuScorer>(policy, mix, 42);
      o.tiebreak_seed = "replay-42";
      o.now_unix = 1;
      std::vector<double> us;
      us.reserve(order.size());
      for (int p : order) {
        const auto t0 = Clock::now();
        const ScheduleResult r = Schedule(view, requests[static_cast<size_t>(p)], o);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (r.all_placed) view.Apply(r.instances[0].chosen.host_index, r.instances[0].chosen.placement);
      }
      nlohmann::ordered_json j;
      j["decisions"] = us.size();
      j["p50_us"] = Percentile(us, 50);
      j["p99_us"] = Percentile(us, 99);
      j["max_us"] = *std::max_element(us.begin(), us.end());
      std::printf("decision at %zu nodes, %s: %zu decisions, p50 %.0f us, p99 %.0f us, max %.0f us\n", nodes.size(),
                  GpuPolicyName(policy), us.size(), Percentile(us, 50), Percentile(us, 99), j["max_us"].get<double>());
      out["decision"][GpuPolicyName(policy)] = j;
    }
  }

  // 2 and 3. The study.
  const std::map<std::string, std::pair<double, double>> paper_fgd = {
      {"default", {95.23, 95.39}}, {"multigpu50", {97.09, 97.18}}, {"gpushare40", {93.96, 94.15}}};
  std::map<std::string, double> seconds;
  for (const char* list : {"default", "multigpu50", "gpushare40"}) {
    const std::vector<TracePod> pods = ReadTracePods(a.data + "/openb_pod_list_" + list + ".csv");
    for (GpuPolicy policy : a.policies) {
      ReplayOptions ro;
      ro.policies = {policy};
      ro.seeds = a.seeds;
      ro.threads = a.jobs;
      const auto t0 = Clock::now();
      const std::vector<ReplayResult> r = Replay(nodes, pods, ro);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      seconds[GpuPolicyName(policy)] += s;
      const double at100 = r[0].mean_allocated_pct[100], at130 = r[0].mean_allocated_pct[130];
      const auto& fgd = paper_fgd.at(list);
      std::printf("%-11s %-11s %zu seeds in %6.1f s: allocated %.2f %% at 100 %%, %.2f %% at 130 %% (paper's FGD %.2f / %.2f: x%.4f / x%.4f)\n",
                  list, GpuPolicyName(policy), a.seeds.size(), s, at100, at130, fgd.first, fgd.second, at100 / fgd.first,
                  at130 / fgd.second);
      nlohmann::ordered_json j;
      j["seconds"] = s;
      j["allocated_pct_100"] = at100;
      j["allocated_pct_130"] = at130;
      j["ratio_to_paper_fgd_100"] = at100 / fgd.first;
      j["ratio_to_paper_fgd_130"] = at130 / fgd.second;
      out["study"][list][GpuPolicyName(policy)] = j;
    }
  }
  for (const auto& [policy, s] : seconds) {
    std::printf("all three lists x %zu seeds, %s: %.1f s (budget 180 s)\n", a.seeds.size(), policy.c_str(), s);
    out["study_seconds"][policy] = s;
  }
  if (!a.json.empty()) std::ofstream(a.json) << out.dump(2) << "\n";
  return 0;
}
