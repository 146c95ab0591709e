// accel fleet replay: a workload trace through the fleet's real scheduler, policy by policy,
// with the FGD paper's protocol (fleet/replay.h); the allocation table, JSON or assignments CSV.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/exit_code.h"
#include "cli/table.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "fleet/replay.h"

namespace accel::cli {

namespace {

struct ReplayCmdOptions {
  std::string nodes;
  std::string pods;
  std::string seeds = "42-51";
  double tune = 1.3;
  std::vector<std::string> strategies;
  bool departures = false;
  std::string output = "table";
  std::string assignments;
  int jobs = 0;
};

// "42-51", "42", "1,5,9" or a mix.
std::vector<uint64_t> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> out;
  std::stringstream in(text);
  std::string part;
  const std::string hint = "write seeds as 42-51, 42 or 1,5,9";
  auto number = [&](const std::string& s) -> uint64_t {
    if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("--seeds", text, "'" + s + "' is not a whole number", hint);
    return std::stoull(s);
  };
  while (std::getline(in, part, ',')) {
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
      continue;
    }
    const uint64_t lo = number(part.substr(0, dash)), hi = number(part.substr(dash + 1));
    if (hi < lo || hi - lo >= 10000) throw InputError("--seeds", text, "'" + part + "' is not a range of at most 10,000 seeds", hint);
    for (uint64_t s = lo; s <= hi; ++s) out.push_back(s);
  }
  if (out.empty()) throw InputError("--seeds", text, "names no seed", hint);
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double Round2(double v) { return std::round(v * 100.0) / 100.0; }

nlohmann::ordered_json ResultJson(const fleet::ReplayResult& r, const std::string& workload, double tune, bool departures) {
  nlohmann::ordered_json j;
  j["workload"] = workload;
  j["strategy"] = fleet::GpuPolicyName(r.policy);
  j["nodes"] = r.nodes;
  j["gpus"] = r.gpus;
  j["tune"] = tune;
  j["departures"] = departures;
  j["seconds"] = Round2(r.seconds);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  auto rounded = [](const std::vector<double>& v) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double x : v) a.push_back(Round2(x));
    return a;
  };
  for (const fleet::ReplayRun& run : r.runs) {
    nlohmann::ordered_json rj;
    rj["seed"] = run.seed;
    rj["pods"] = run.pods;
    rj["placed"] = run.placed;
    rj["allocated_pct"] = rounded(run.allocated_pct);
    if (!run.bound_pct.empty()) rj["bound_pct"] = rounded(run.bound_pct);
    runs.push_back(std::move(rj));
  }
  j["runs"] = std::move(runs);
  j["mean_allocated_pct"] = rounded(r.mean_allocated_pct);
  if (!r.mean_bound_pct.empty()) j["mean_bound_pct"] = rounded(r.mean_bound_pct);
  return j;
}

std::string AssignmentsCsv(const std::vector<fleet::ReplayResult>& results, const std::vector<fleet::TraceNode>& nodes,
                           const std::vector<fleet::TracePod>& pods) {
  std::string out;
  const bool several = results.size() > 1;
  out += several ? "strategy,seed,seq,pod,node,gpus,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                 : "seed,seq,pod,node,gpus,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
  for (const fleet::ReplayResult& r : results)
    for (const fleet::ReplayRun& run : r.runs)
      for (const fleet::ReplayAssignment& a : run.assignments) {
        const fleet::TracePod& p = pods[static_cast<size_t>(a.pod)];
        std::string gpus;
        for (const auto& [index, milli] : a.gpus)
          gpus += (gpus.empty() ? "" : ";") + std::to_string(index) + ":" + std::to_string(milli);
        if (several) out += std::string(fleet::GpuPolicyName(r.policy)) + ",";
        out += std::to_string(run.seed) + "," + std::to_string(a.seq) + "," + p.name + "," +
               (a.node >= 0 ? nodes[static_cast<size_t>(a.node)].name : "") + "," + gpus + "," +
               std::to_string(p.cpu_milli) + "," + std::to_string(p.memory_mib) + "," + std::to_string(p.num_gpu) + "," +
               std::to_string(p.num_gpu == 0 ? 0 : p.gpu_milli) + "," + p.gpu_spec + "\n";
      }
  return out;
}

void PrintTable(const std::vector<fleet::ReplayResult>& results, const std::string& workload, double tune, bool departures,
                size_t seeds) {
  std::vector<std::vector<std::string>> rows;
  if (departures) {
    rows.push_back({"POLICY", "25% TIME", "50%", "75%", "100%", "MEAN", "PLACED", "SECONDS"});
    for (const fleet::ReplayResult& r : results) {
      double mean = 0;
      for (double v : r.mean_allocated_pct) mean += v / static_cast<double>(r.mean_allocated_pct.size());
      int64_t placed = 0, pods = 0;
      for (const fleet::ReplayRun& run : r.runs) placed += run.placed, pods += run.pods;
      const auto& m = r.mean_allocated_pct;
      rows.push_back({fleet::GpuPolicyName(r.policy), Fixed(m[25], 2), Fixed(m[50], 2), Fixed(m[75], 2), Fixed(m[100], 2),
                      Fixed(mean, 2), std::to_string(placed) + "/" + std::to_string(pods), Fixed(r.seconds, 1)});
    }
    std::cout << "allocated GPU capacity (% of " << results.front().gpus << " GPUs) over the trace's time, "
              << workload << ", with departures, mean of " << seeds << " seed" << (seeds == 1 ? "" : "s") << "\n";
  } else {
    rows.push_back({"POLICY", "90% ARRIVED", "100%", "110%", "130%", "UNALLOCATED@130%", "SECONDS"});
    for (const fleet::ReplayResult& r : results) {
      const auto& m = r.mean_allocated_pct;
      const double unallocated = static_cast<double>(r.gpus) * (100.0 - m[130]) / 100.0;
      rows.push_back({fleet::GpuPolicyName(r.policy), Fixed(m[90], 2), Fixed(m[100], 2), Fixed(m[110], 2), Fixed(m[130], 2),
                      Fixed(unallocated, 0), Fixed(r.seconds, 1)});
    }
    const auto& b = results.front().mean_bound_pct;
    if (!b.empty())
      rows.push_back({"(bound)", Fixed(b[90], 2), Fixed(b[100], 2), Fixed(b[110], 2), Fixed(b[130], 2),
                      Fixed(static_cast<double>(results.front().gpus) * (100.0 - b[130]) / 100.0, 0), ""});
    std::cout << "allocated GPU capacity (% of " << results.front().gpus << " GPUs) after X % of it arrived, " << workload
              << ", tune " << tune << ", mean of " << seeds << " seed" << (seeds == 1 ? "" : "s") << "\n";
  }
  std::cout << FormatTable(rows);
}

int ReplayCmd(const ReplayCmdOptions& o) {
  fleet::ReplayOptions ro;
  ro.seeds = ParseSeeds(o.seeds);
  ro.tune = o.tune;
  ro.departures = o.departures;
  ro.threads = o.jobs;
  ro.assignments = !o.assignments.empty();
  ro.policies.clear();
  for (const std::string& s : o.strategies) {
    std::stringstream in(s);
    std::string name;
    while (std::getline(in, name, ',')) {
      if (name == "all") {
        ro.policies = fleet::AllGpuPolicies();
        continue;
      }
      ro.policies.push_back(fleet::ParseGpuPolicy(name, "--strategy"));
    }
  }
  if (ro.policies.empty()) ro.policies.push_back(fleet::GpuPolicy::kAccel);
  const std::vector<fleet::TraceNode> nodes = fleet::ReadTraceNodes(o.nodes);
  const std::vector<fleet::TracePod> pods = fleet::ReadTracePods(o.pods);
  std::string workload = o.pods;
  if (const size_t slash = workload.find_last_of('/'); slash != std::string::npos) workload = workload.substr(slash + 1);
  const std::vector<fleet::ReplayResult> results = fleet::Replay(nodes, pods, ro);
  if (!o.assignments.empty()) WriteFileAtomically(o.assignments, AssignmentsCsv(results, nodes, pods));
  if (o.output == "json") {
    if (results.size() == 1) {
      std::cout << ResultJson(results.front(), workload, ro.tune, ro.departures).dump(2) << "\n";
    } else {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const fleet::ReplayResult& r : results) all.push_back(ResultJson(r, workload, ro.tune, ro.departures));
      std::cout << all.dump(2) << "\n";
    }
    return kExitOk;
  }
  PrintTable(results, workload, ro.tune, ro.departures, ro.seeds.size());
  return kExitOk;
}

}  // namespace

void RegisterFleetReplay(CLI::App* fleet_cmd, int* exit_code) {
  auto o = std::make_shared<ReplayCmdOptions>();
  CLI::App* c = fleet_cmd->add_subcommand(
      "replay",
      "Replay a workload trace through the fleet's scheduler and measure the GPU capacity each\n"
      "placement policy keeps allocated (docs/fleet-efficiency.md).\n\n"
      "The protocol is the FGD paper's (USENIX ATC'23; ../shared/data/openb/README.md): the pod\n"
      "list plus random draws from it until --tune x the cluster's GPUs, shuffled, one seed fixing\n"
      "both; pods are placed on arrival or never; allocation is recorded after each 1 % of capacity\n"
      "arrived. With --departures: the trace's own pods in time order, each leaving at its\n"
      "deletion time, allocation sampled over the trace's time span.\n\n"
      "Policies (--strategy, comma-separated or 'all', side by side in one run):\n"
      "  accel (default), fgd, best-fit, packing, clustering, dot-product, random\n\n"
      "Examples:\n"
      "  accel fleet replay --nodes openb_node_list_gpu_node.csv --pods openb_pod_list_default.csv\n"
      "  accel fleet replay --nodes nodes.csv --pods pods.csv --strategy all --seeds 42-51 -o json\n"
      "  accel fleet replay --nodes nodes.csv --pods pods.csv --seeds 42 --assignments out.csv\n"
      "  accel fleet replay --nodes nodes.csv --pods pods.csv --departures --strategy accel,fgd\n\n"
      "Exit status: 0 replayed; 2 bad input (file, line and column named).");
  c->add_option("--nodes", o->nodes, "nodes CSV: sn,cpu_milli,memory_mib,gpu,model")->required();
  c->add_option("--pods", o->pods,
                "pods CSV: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...,creation_time,deletion_time]")
      ->required();
  c->add_option("--seeds", o->seeds, "seeds: 42-51, 42, or 1,5,9 (one run per seed and policy)")->capture_default_str();
  c->add_option("--tune", o->tune, "arrivals until this x the cluster's GPU capacity")
      ->check(CLI::Range(0.01, 100.0))->capture_default_str();
  c->add_option("--strategy", o->strategies, "placement policy or policies (comma-separated, or all); default accel");
  c->add_flag("--departures", o->departures, "honour creation and deletion times (the trace's pods only, no draws)");
  c->add_option("-o,--output", o->output, "table (default) or json")->check(CLI::IsMember({"table", "json"}));
  c->add_option("--assignments", o->assignments,
                "write every arriving pod's node and GPUs to this CSV\n"
                "(seed,seq,pod,node,gpus,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec)");
  c->add_option("--jobs", o->jobs, "runs at once (default: the machine's hardware threads)")->check(CLI::Range(0, 256));
  c->callback([o, exit_code] { *exit_code = ReplayCmd(*o); });
}

}  // namespace accel::cli
