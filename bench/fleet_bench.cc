// fleet_bench: what issue 13's "Measure" asks of the fleet layer, in one run (docs/benchmarks.md,
// "Fleet").
//
//   fleet_bench [--hosts 10000] [--decisions 2000] [--seed 1] [--churn 0] [--json FILE]
//               [--no-nova] [--nova-candidates 1000] [--nova-rounds 3] [--capacity-runs 3] [--partition]
//   fleet_bench --claims [--hosts 2000] [--claimers 16] [--claims-each 60] [--refresh-ms 500]
//               [--strategy pack|spread] [--scrambled-names] [--subset-size N] [--refresh-every K] [--hold N]
//               [--kills N | --restart [--seconds 20] [--outage 3]] [--replicas R [--replica-claimers N,N..]]
//               [--http [--concurrency N]] [--partition] [--share-milli M] [--json FILE]
//
// Default mode, all in this process, no database (a service holds the same view in memory):
//   1. A fleet of --hosts hosts of 8 SKUs: the repository's host fixtures (HGX H100, HGX H200,
//      EPYC NPS4 + MI300X, Gaudi2, a devbox) and three real hwloc exports from ../shared/fixtures/
//      hwloc (NVIDIA DGX-2, a 2-node box with GPUs, a 24-node box without). Half the hosts,
//      chosen with --seed, carry 1-3 claims of small flavors, each placed with the placement
//      engine on the host's usage so far (placement::Place + HostUsage::Apply); with --churn N,
//      N more claims are placed among them and released again (holes, as in a fleet in service).
//      The FleetSnapshot is built in memory and turned into a FleetView (FromSnapshot).
//   2. RSS: VmRSS/VmHWM of this process before the fleet, holding snapshot + view, and holding the
//      view alone (snapshot freed, malloc_trim).
//   3. fleet::Capacity for 20 flavors over the whole fleet: wall time of one call, best of
//      --capacity-runs, and engine_fills.
//   4. --decisions placement decisions (fleet::Schedule, count 1) of the 4-GPU, 2-cell flavor
//      (examples/flavors/gpu-4-2cell.yaml) with its PCI alias widened to every accelerator SKU of
//      the fleet (`gpu`: H100, H200, MI300X, V100, Gaudi2, numa_policy required), each timed
//      alone (wall and thread CPU time). After each decision its placement is applied to the view
//      (FleetView::Apply), as a service does for its own claims, so every decision sees a
//      different fleet: the chosen host has 4 fewer GPUs and the next decision ranks and runs the
//      engine again. (Schedule's engine memo lives inside one call; nothing is cached across
//      decisions.) Pack (the default) and spread, each from the same starting view. With
//      --partition the decisions are replica 0 of 2 (ScheduleOptions::partition {0, 2}).
//   5. Nova's anchor: bench/fleet_nova_anchor.py (run with /usr/bin/python3, Debian's
//      python3-nova) times nova.virt.hardware.numa_fit_instance_to_host with PCI stats on
//      --nova-candidates hosts sampled from this fleet — the same SKUs, the same claims replayed
//      through Nova — i.e. what NUMATopologyFilter + PciPassthroughFilter cost per request over
//      Placement's max_placement_results candidates. Reported beside accel's p99, with the ratio.
//
// --claims: claimer processes on one private PostgreSQL (fsync on), see RunClaims below. With
// --replicas and --share-milli M, each claim is a pod-shaped request for M thousandths of one GPU
// (POST /api/v1/place {"pod": ...}): share claims, held by the database's share rows.
#include <malloc.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "fleet/capacity.h"
#include "fleet/change_feed.h"
#include "fleet/claimer.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/host_record.h"
#include "fleet/scheduler.h"
#include "fleet/service.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "placement/pci_fit.h"
#include "topology/sources.h"

#ifdef ACCEL_BENCH_HAVE_POSTGRES_HARNESS
#include <httplib.h>

#include "support/claim_units_schema3.h"
#include "support/fleet_service.h"
#include "support/postgres_server.h"
#endif

namespace {

using accel::fleet::Claim;
using accel::fleet::FleetSnapshot;
using accel::fleet::FleetView;
using accel::fleet::HostRecord;
using accel::placement::PlacementRequest;
using Clock = std::chrono::steady_clock;
namespace placement = accel::placement;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// A "Vm..." line of /proc/self/status, in KiB.
long StatusKib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string CommandLine(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// ---- the fleet -------------------------------------------------------------------------------

/// The PCI alias every flavor here uses: one name, one spec per accelerator SKU of the fleet
/// (Nova's multi-spec alias), so a 4-GPU flavor has candidates on every GPU/HPU host.
constexpr const char* kGpuAlias = R"([
  {"name": "gpu", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "gpu", "vendor_id": "10de", "product_id": "2335", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "gpu", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "gpu", "vendor_id": "10de", "product_id": "1db8", "device_type": "type-PCI", "numa_policy": "required"},
  {"name": "gpu", "vendor_id": "1da3", "product_id": "1020", "device_type": "type-PCI", "numa_policy": "required"}
])";

struct Sku {
  std::string name;   ///< short name, prefix of its host names
  std::string path;   ///< fixture it was read from
  double share = 0;   ///< fraction of the fleet
  int hosts = 0;      ///< how many hosts of this SKU
  std::shared_ptr<const accel::topology::HostTopology> hardware;  ///< anonymized, shared
  std::string topology_id;
  accel::placement::HostPolicy policy;
};

/// The operator policy of every host: the first core of each NUMA node is cpu_shared_set (host
/// OS, emulator threads, floating guests), every other CPU cpu_dedicated_set — what
/// nova_fit_demo.build_host(shared_cores=1) models on the Nova side.
accel::placement::HostPolicy PolicyFor(const accel::topology::HostTopology& hw) {
  accel::placement::HostPolicy p;
  accel::CpuSet shared;
  for (const auto& node : hw.numa_nodes)
    if (!node.cores.empty())
      for (int cpu : node.cores.front().ToVector()) shared.Add(cpu);
  p.cpu_shared_set = shared;
  p.cpu_dedicated_set = hw.AllCpus().Minus(shared);
  return p;
}

std::vector<Sku> LoadSkus(const std::string& source_dir, const std::string& shared_dir, int hosts) {
  struct Def {
    const char* name;
    std::string path;
    double share;
  };
  const std::string fx = source_dir + "/fixtures/hosts/";
  const std::string hw = shared_dir + "/fixtures/hwloc/";
  const std::vector<Def> defs = {
      {"h100", fx + "hgx-h100.json", 0.30},
      {"h200", fx + "hgx-h200.json", 0.30},
      {"mi300x", fx + "epyc-nps4-mi300x.json", 0.20},
      {"gaudi2", fx + "gaudi2-8hpu.json", 0.10},
      {"devbox", fx + "devbox.json", 0.04},
      {"dgx2", hw + "nvidiaDGX2.xml", 0.03},
      {"gpu2n", hw + "32em64t-2n8c2t-pci-wholeio.xml", 0.015},
      {"cpu24n", hw + "192em64t-24n8c2t.xml", 0.015},
  };
  std::vector<Sku> skus;
  int assigned = 0;
  for (const Def& d : defs) {
    Sku s;
    s.name = d.name;
    s.path = d.path;
    s.share = d.share;
    s.hosts = static_cast<int>(d.share * hosts);
    assigned += s.hosts;
    accel::topology::HostTopology t = accel::topology::LoadTopology(d.path);
    s.policy = PolicyFor(t);
    s.topology_id = accel::fleet::TopologyId(t);
    s.hardware = std::make_shared<const accel::topology::HostTopology>(accel::fleet::Anonymized(t));
    skus.push_back(std::move(s));
  }
  skus[0].hosts += hosts - assigned;
  return skus;
}

struct FlavorDef {
  std::string name;
  int vcpus;
  uint64_t ram_mib;
  std::vector<std::pair<std::string, std::string>> extra;
};

PlacementRequest Build(const FlavorDef& f, const accel::placement::PciAliasTable& aliases) {
  accel::placement::Flavor flavor{f.name, f.vcpus, f.ram_mib, f.extra};
  std::sort(flavor.extra_specs.begin(), flavor.extra_specs.end());
  return accel::placement::BuildRequest(flavor, aliases, "fleet_bench (flavor " + f.name + ")");
}

std::vector<std::pair<std::string, std::string>> Dedicated1G(std::vector<std::pair<std::string, std::string>> more) {
  more.push_back({"hw:cpu_policy", "dedicated"});
  if (std::none_of(more.begin(), more.end(), [](const auto& kv) { return kv.first == "hw:mem_page_size"; }))
    more.push_back({"hw:mem_page_size", "1GB"});
  return more;
}

/// The 20 flavors of the capacity run; the first 8 are also the palette the partly used hosts'
/// claims are drawn from. An AI cloud's menu: GPU flavors of 1-8 accelerators in 1-8 guest
/// cells, a few policy variants, and CPU-only flavors.
std::vector<FlavorDef> CapacityFlavors(const accel::placement::Flavor& gpu_4_2cell) {
  std::vector<FlavorDef> f = {
      {"gpu-1", 8, 65536, Dedicated1G({{"pci_passthrough:alias", "gpu:1"}})},
      {"gpu-1-small", 4, 32768, Dedicated1G({{"pci_passthrough:alias", "gpu:1"}})},
      {"gpu-2", 16, 131072, Dedicated1G({{"pci_passthrough:alias", "gpu:2"}})},
      {"gpu-2-2cell", 16, 131072, Dedicated1G({{"pci_passthrough:alias", "gpu:2"}, {"hw:numa_nodes", "2"}})},
      {"cpu-8", 8, 32768, Dedicated1G({})},
      {"cpu-16-2cell", 16, 65536, Dedicated1G({{"hw:numa_nodes", "2"}})},
      {"gpu-1-require", 8, 65536, Dedicated1G({{"pci_passthrough:alias", "gpu:1"}, {"hw:cpu_thread_policy", "require"}})},
      {"gpu-1-2m", 8, 32768,
       Dedicated1G({{"pci_passthrough:alias", "gpu:1"}, {"hw:mem_page_size", "2MB"}})},
      // the rest of the menu
      {"gpu-4", 32, 262144, Dedicated1G({{"pci_passthrough:alias", "gpu:4"}})},
      {gpu_4_2cell.name, gpu_4_2cell.vcpus, gpu_4_2cell.ram_mib, {}},  // extra specs set below
      {"gpu-8-2cell", 64, 1048576, Dedicated1G({{"pci_passthrough:alias", "gpu:8"}, {"hw:numa_nodes", "2"}})},
      {"gpu-4-4cell", 32, 262144, Dedicated1G({{"pci_passthrough:alias", "gpu:4"}, {"hw:numa_nodes", "4"}})},
      {"gpu-8-8cell", 64, 524288, Dedicated1G({{"pci_passthrough:alias", "gpu:8"}, {"hw:numa_nodes", "8"}})},
      {"gpu-1-emu", 8, 65536,
       Dedicated1G({{"pci_passthrough:alias", "gpu:1"}, {"hw:emulator_threads_policy", "isolate"}})},
      {"gpu-2-preferred", 16, 131072,
       Dedicated1G({{"pci_passthrough:alias", "gpu:2"}, {"hw:pci_numa_affinity_policy", "preferred"}})},
      {"gpu-2-mixed", 16, 131072,
       {{"hw:cpu_policy", "mixed"}, {"hw:cpu_dedicated_mask", "^0-1"}, {"hw:mem_page_size", "1GB"},
        {"pci_passthrough:alias", "gpu:2"}}},
      // Shared vCPUs of a guest cell may not outnumber the host node's shared CPUs (Nova: no
      // self-overcommit); the policy gives each node one core (2 CPUs) for them.
      {"gpu-1-shared", 2, 16384,
       {{"hw:cpu_policy", "shared"}, {"hw:numa_nodes", "1"}, {"pci_passthrough:alias", "gpu:1"}}},
      {"cpu-32-2m", 32, 24576, Dedicated1G({{"hw:mem_page_size", "2MB"}})},
      {"cpu-64-2cell", 64, 262144, Dedicated1G({{"hw:numa_nodes", "2"}})},
      {"cpu-4-shared", 4, 8192, {{"hw:cpu_policy", "shared"}}},
  };
  // gpu-4-2cell: the example flavor's own extra specs, its alias (h100:4) renamed to gpu:4.
  for (auto kv : gpu_4_2cell.extra_specs) {
    if (kv.first == "pci_passthrough:alias") kv.second = "gpu:4";
    f[9].extra.push_back(kv);
  }
  return f;
}
constexpr size_t kPaletteSize = 8;

struct Fleet {
  std::vector<Sku> skus;
  FleetSnapshot snapshot;
  /// Per host (snapshot order): its SKU and the palette flavors of its claims, in order.
  std::vector<int> sku_of;
  std::vector<std::vector<int>> claim_flavors;
  int partly_used = 0;
  int claims_refused = 0;  ///< palette draws that did not fit the host any more
};

Fleet BuildFleet(const std::vector<Sku>& skus, const std::vector<PlacementRequest>& palette, uint64_t seed,
                 int churn) {
  Fleet fleet;
  fleet.skus = skus;
  struct Pending {
    std::string name;
    int sku;
  };
  std::vector<Pending> hosts;
  for (size_t s = 0; s < skus.size(); ++s)
    for (int i = 0; i < skus[s].hosts; ++i) {
      char name[64];
      std::snprintf(name, sizeof name, "%s-%05d", skus[s].name.c_str(), i);
      hosts.push_back({name, static_cast<int>(s)});
    }
  std::sort(hosts.begin(), hosts.end(), [](const Pending& a, const Pending& b) { return a.name < b.name; });
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(hosts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> used(hosts.size(), false);
  for (size_t k = 0; k < hosts.size() / 2; ++k) used[order[k]] = true;

  for (const Sku& s : skus) fleet.snapshot.topologies[s.topology_id] = s.hardware;
  fleet.snapshot.taken_at = 1700000000;
  uint64_t claim_number = 0;
  for (size_t h = 0; h < hosts.size(); ++h) {
    const Sku& sku = skus[hosts[h].sku];
    HostRecord r;
    r.name = hosts[h].name;
    r.topology_id = sku.topology_id;
    r.policy = sku.policy;
    r.labels = {{"az", "rack-" + std::to_string(h % 40)}, {"sku", sku.name}};
    r.updated_at = "2024-01-01T00:00:00Z";
    std::vector<int> flavors;
    if (used[h]) {
      ++fleet.partly_used;
      accel::placement::HostUsage usage;
      const int keep = std::uniform_int_distribution<int>(1, 3)(rng);
      std::vector<std::pair<int, accel::placement::Placement>> placed;
      for (int c = 0; c < keep + churn; ++c) {
        const int f = std::uniform_int_distribution<int>(0, static_cast<int>(palette.size()) - 1)(rng);
        accel::placement::PlaceResult pr = accel::placement::Place(*sku.hardware, usage, sku.policy, palette[f]);
        if (!pr.fits()) {
          ++fleet.claims_refused;
          continue;
        }
        pr.placement->host = r.name;
        if (!usage.Apply(*pr.placement).empty()) throw std::logic_error("the engine double-booked");
        placed.emplace_back(f, std::move(*pr.placement));
        ++r.generation;
      }
      // --churn: claims released again (at random), leaving holes where they were, as a fleet
      // in service has; the others stay.
      while (static_cast<int>(placed.size()) > keep) {
        const size_t gone = std::uniform_int_distribution<size_t>(0, placed.size() - 1)(rng);
        usage.Release(placed[gone].second);
        placed.erase(placed.begin() + static_cast<long>(gone));
        ++r.generation;
      }
      for (auto& [f, p] : placed) {
        char id[32];
        std::snprintf(id, sizeof id, "c-%012llx", static_cast<unsigned long long>(++claim_number));
        fleet.snapshot.claims.push_back(Claim{id, r.name, palette[f].flavor, "2024-01-01T00:00:00Z", std::move(p)});
        flavors.push_back(f);
      }
    }
    fleet.snapshot.hosts.push_back(std::move(r));
    fleet.sku_of.push_back(hosts[h].sku);
    fleet.claim_flavors.push_back(std::move(flavors));
  }
  return fleet;
}


// ---- decisions -------------------------------------------------------------------------------

struct DecisionStats {
  std::string strategy;
  int decisions = 0, placed = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
  double engine_calls_mean = 0, engine_calls_max = 0, hosts_ranked_mean = 0;
  std::map<std::string, int> chosen_sku;
  double cpu_p50 = 0, cpu_p99 = 0;          ///< CPU time of the deciding thread (no preemption)
};

DecisionStats RunDecisions(FleetView view, const PlacementRequest& req, accel::fleet::FleetStrategy strategy,
                           int decisions, const Fleet& fleet, accel::fleet::SchedulePartition partition) {
  accel::fleet::ScheduleOptions opt;
  opt.strategy = strategy;
  opt.count = 1;
  opt.partition = partition;
  DecisionStats st;
  st.strategy = strategy == accel::fleet::FleetStrategy::kPack ? "pack" : "spread";
  std::vector<double> ms, cpu_ms;
  double engine = 0, ranked = 0;
  for (int d = 0; d < decisions; ++d) {
    auto t0 = Clock::now();
    const double cpu0 = ThreadCpuMs();
    accel::fleet::ScheduleResult r = accel::fleet::Schedule(view, req, opt);
    ms.push_back(MsSince(t0));
    cpu_ms.push_back(ThreadCpuMs() - cpu0);
    engine += r.engine_calls;
    ranked += r.hosts_ranked;
    st.engine_calls_max = std::max<double>(st.engine_calls_max, r.engine_calls);
    if (!r.all_placed) continue;
    ++st.placed;
    const accel::fleet::Candidate& c = r.instances[0].chosen;
    ++st.chosen_sku[fleet.skus[fleet.sku_of[c.host_index]].name];
    if (std::string err = view.Apply(c.host_index, c.placement); !err.empty())
      throw std::logic_error("a decision double-books its host: " + err);
  }
  st.cpu_p50 = Percentile(cpu_ms, 0.50);
  st.cpu_p99 = Percentile(cpu_ms, 0.99);
  st.decisions = decisions;
  st.p50 = Percentile(ms, 0.50);
  st.p90 = Percentile(ms, 0.90);
  st.p99 = Percentile(ms, 0.99);
  st.max = Percentile(ms, 1.0);
  double sum = 0;
  for (double m : ms) sum += m;
  st.mean = sum / decisions;
  st.engine_calls_mean = engine / decisions;
  st.hosts_ranked_mean = ranked / decisions;
  return st;
}

// ---- Nova ------------------------------------------------------------------------------------

/// The Nova side's description of the SKUs and of the candidate hosts, for fleet_nova_anchor.py.
nlohmann::json NovaSpec(const Fleet& fleet, const std::vector<FlavorDef>& palette_defs, const FlavorDef& flavor,
                        const accel::placement::PciAliasTable& aliases, int candidates, uint64_t seed) {
  nlohmann::json spec;
  const accel::placement::PciAlias* gpu = aliases.Find("gpu");
  auto matches = [&](const accel::topology::PciDevice& d) {
    for (const accel::placement::PciSpec& s : gpu->specs)
      if (s.vendor_id == d.vendor_id && s.product_id == d.device_id) return true;
    return false;
  };
  std::vector<bool> sku_is_candidate;
  for (const Sku& s : fleet.skus) {
    const accel::topology::HostTopology& hw = *s.hardware;
    const auto& n0 = hw.numa_nodes.front();
    nlohmann::json j;
    j["name"] = s.name;
    j["cells"] = hw.numa_nodes.size();
    j["cores"] = n0.cores.size();
    j["threads"] = n0.cores.empty() ? 1 : n0.cores.front().Count();
    j["mem_gib"] = n0.memory_kib / (1024 * 1024);
    uint64_t hp2m = 0, hp1g = 0;
    for (const auto& p : n0.pages) {
      if (p.size_kib == 2048) hp2m = p.total;
      if (p.size_kib == 1048576) hp1g = p.total;
    }
    j["hp_2m_gib"] = hp2m * 2 / 1024;
    j["hp_1g_gib"] = hp1g;
    nlohmann::json pools = nlohmann::json::array();
    std::map<std::pair<int, std::string>, int> per_cell;
    int total = 0;
    for (const auto& d : hw.pci)
      if (d.is_accelerator() && matches(d)) {
        char ids[16];
        std::snprintf(ids, sizeof ids, "%04x:%04x", d.vendor_id, d.device_id);
        ++per_cell[{std::max(0, hw.NodeIndex(d.numa_node)), ids}];
        ++total;
      }
    for (const auto& [key, count] : per_cell)
      pools.push_back({{"cell", key.first}, {"vendor_id", key.second.substr(0, 4)},
                       {"product_id", key.second.substr(5)}, {"count", count}});
    j["gpu_pools"] = pools;
    j["hosts"] = s.hosts;
    spec["skus"].push_back(j);
    // Placement (max_placement_results) returns hosts with the PCPU and MEMORY_MB the flavor
    // needs; an operator keeps GPU flavors on GPU hosts with an aggregate or trait, so the
    // candidates are the SKUs with at least 4 matching accelerators and the CPUs and memory.
    const int pinnable = s.policy.cpu_dedicated_set->Count();
    uint64_t mem_kib = 0;
    for (const auto& n : hw.numa_nodes) mem_kib += n.memory_kib;
    sku_is_candidate.push_back(total >= 4 && pinnable >= flavor.vcpus && mem_kib / 1024 >= flavor.ram_mib);
  }
  auto extra_of = [](const FlavorDef& f) {
    nlohmann::json e = nlohmann::json::object();
    int gpus = 0;
    for (const auto& [k, v] : f.extra) {
      if (k == "pci_passthrough:alias") gpus = std::stoi(v.substr(v.find(':') + 1));
      else e[k] = v;
    }
    return nlohmann::json{{"name", f.name}, {"vcpus", f.vcpus}, {"memory_mb", f.ram_mib}, {"extra", e}, {"gpus", gpus}};
  };
  for (const FlavorDef& f : palette_defs) spec["palette"].push_back(extra_of(f));
  spec["flavor"] = extra_of(flavor);
  // The candidates: hosts of candidate SKUs, sampled with the seed, each with its claims.
  std::vector<size_t> eligible;
  for (size_t h = 0; h < fleet.sku_of.size(); ++h)
    if (sku_is_candidate[fleet.sku_of[h]]) eligible.push_back(h);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  std::shuffle(eligible.begin(), eligible.end(), rng);
  eligible.resize(std::min<size_t>(eligible.size(), static_cast<size_t>(candidates)));
  std::sort(eligible.begin(), eligible.end());
  for (size_t h : eligible)
    spec["candidates"].push_back({{"host", fleet.snapshot.hosts[h].name},
                                  {"sku", fleet.skus[fleet.sku_of[h]].name},
                                  {"claims", fleet.claim_flavors[h]}});
  spec["candidate_hosts"] = eligible.size();
  return spec;
}

/// Runs the Nova anchor; returns its JSON result, or {"error": ...} saying what is missing.
nlohmann::json RunNova(const std::string& source_dir, const std::string& shared_dir, const nlohmann::json& spec,
                       int rounds) {
  char dir_template[] = "/tmp/fleet-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return {{"error", "mkdtemp failed"}};
  const std::string spec_path = std::string(dir) + "/spec.json", out_path = std::string(dir) + "/nova.json";
  { std::ofstream(spec_path) << spec.dump(); }
  const std::string cmd = "/usr/bin/python3 " + source_dir + "/bench/fleet_nova_anchor.py --demo " + shared_dir +
                          "/reference/nova_fit_demo.py --spec " + spec_path + " --json " + out_path +
                          " --rounds " + std::to_string(rounds) + " 2>&1";
  std::cerr << "nova: " << cmd << "\n";
  FILE* p = popen(cmd.c_str(), "r");
  std::string output;
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) {
    output += buf;
    std::cerr << "  | " << buf;
  }
  const int status = p ? pclose(p) : -1;
  nlohmann::json result;
  std::ifstream in(out_path);
  if (status == 0 && in) {
    result = nlohmann::json::parse(in);
  } else {
    result = {{"error", "fleet_nova_anchor.py exited with status " + std::to_string(status)},
              {"output", output.substr(output.size() > 2000 ? output.size() - 2000 : 0)}};
  }
  std::filesystem::remove_all(dir);
  return result;
}

/// accel's engine on the same candidates, one by one, as Nova's filters do (not what Schedule
/// does, which skips by count and memoizes per host state): the per-host cost beside Nova's.
nlohmann::json AccelOnCandidates(const Fleet& fleet, const FleetView& view, const nlohmann::json& spec,
                                 const PlacementRequest& req) {
  std::vector<size_t> idx;
  for (const auto& c : spec["candidates"]) idx.push_back(static_cast<size_t>(view.IndexOf(c["host"])));
  int fits = 0;
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    fits = 0;
    const auto t0 = Clock::now();
    for (size_t i : idx) {
      const accel::fleet::HostEntry& e = view.hosts()[i];
      fits += accel::placement::Place(*e.hardware, e.usage, e.record.policy, req).fits() ? 1 : 0;
    }
    rounds.push_back(MsSince(t0));
  }
  (void)fleet;
  return {{"hosts", idx.size()}, {"fits", fits}, {"ms_per_request_median", Percentile(rounds, 0.5)}};
}

// ---- args ------------------------------------------------------------------------------------

struct Args {
  bool claims = false;
  int hosts = -1;  ///< -1: 10,000 (default mode) or 2,000 (--claims)
  int decisions = 2000;
  uint64_t seed = 1;
  std::string json;
  bool nova = true;
  int nova_candidates = 1000;
  int nova_rounds = 3;
  int capacity_runs = 3;
  int churn = 0;  ///< claims placed and released again per partly used host
  std::string source_dir = ACCEL_SOURCE_DIR;
  std::string shared_dir;
  // --claims
  int claimers = 16;
  double seconds = 20;      ///< --restart: run length; throughput run: time limit (default 600 s)
  bool seconds_given = false;
  int refresh_every = 0;
  int refresh_ms = 500;
  bool spread = false;     ///< --strategy spread (claims mode); default pack
  /// Claims mode: host names "h100-3fa9c21b" instead of "h100-00042". The scheduler's seeded
  /// tiebreak (FNV-1a of seed + name, no final mixing) orders names that differ only in their
  /// last characters alike for every seed; this shows what that costs in retries.
  bool scrambled_names = false;
  int subset_size = 1;     ///< --subset-size (claims mode): ScheduleOptions::subset_size
  /// --partition (claims mode): with --replicas R, replica r schedules as partition r/R (`accel
  /// fleet serve --replica r/R`); without, claimer process i as i/--claimers. Default mode: the
  /// decisions run as replica 0/2.
  bool partition = false;
  long claims_each = 60;   ///< throughput run: claims per claimer (16 x 60 fill a third of 2,000 hosts)
  int hold = -1;           ///< live claims a claimer keeps before releasing; -1 = 0, or 32 with --kills/--restart
  int kills = 0;
  bool restart = false;
  double outage = 3;       ///< --restart: seconds the server stays down
  /// Claims mode: 0 = every claimer a process with its own view; R > 0 = R scheduler replicas
  /// (processes, each one FleetService as `accel fleet serve` runs it) and the claimers threads
  /// sending place requests to them in turn (in process: Handle(), no HTTP).
  int replicas = 0;
  /// --http (with --replicas R): the replicas are R real `accel fleet serve` processes (the
  /// binary built beside this bench) on loopback ports, and the claimers are processes, each an
  /// HTTP client with one kept-alive connection to its replica: the issue's "HTTP clients
  /// against 2 service replicas", sockets, HTTP parsing and the server's threads included.
  bool http = false;
  int share_milli = 0;  ///< --share-milli M: claimers ask for a share of one GPU (a pod), not the flavor
  /// --concurrency (with --http): `accel fleet serve --concurrency` (HTTP workers and store
  /// connections per replica); 0 = the claimers each replica serves.
  int concurrency = 0;
  /// --replica-claimers N0,N1,...: claimers of each replica (uneven load: one replica's share
  /// runs dry first); empty = --claimers dealt out in turn.
  std::vector<int> replica_claimers;
  /// --pg-statements: load pg_stat_statements into the private server and print, after the
  /// claim phase, the statements PostgreSQL spent its time on during it (calls, ms each, rows).
  bool pg_statements = false;
  /// --schema3-units: put back what schema 4 removed from claim_units (the foreign key to claims
  /// and the claim_id index) after migrating, so one bench compares both in the same window.
  bool schema3_units = false;
};

/// Prints the usage; exits 0 for --help (`error` empty), else 2 after the error.
[[noreturn]] void Usage(const std::string& error) {
  if (!error.empty()) std::cerr << "fleet_bench: " << error << "\n";
  (error.empty() ? std::cout : std::cerr)
            << "usage: fleet_bench [--hosts N] [--decisions N] [--seed S] [--json FILE] [--no-nova]\n"
               "                   [--nova-candidates N] [--nova-rounds N] [--capacity-runs N] [--churn N]\n"
               "                   [--source-dir DIR] [--shared-dir DIR] [--partition]\n"
               "       fleet_bench --claims [--hosts N] [--claimers N] [--claims-each N] [--refresh-ms MS]\n"
               "                   [--strategy pack|spread] [--scrambled-names] [--subset-size N]\n"
               "                   [--refresh-every K] [--hold N] [--kills N | --restart [--seconds S] [--outage S]]\n"
               "                   [--replicas R [--replica-claimers N,N..] [--http [--concurrency N]]]\n"
               "                   [--partition] [--pg-statements] [--schema3-units] [--json FILE]\n";
  std::exit(error.empty() ? 0 : 2);
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(k + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> double {
      const std::string v = value();
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end) Usage(k + ": not a number: " + v);
      return d;
    };
    if (k == "--claims") a.claims = true;
    else if (k == "--hosts") a.hosts = static_cast<int>(number());
    else if (k == "--decisions") a.decisions = static_cast<int>(number());
    else if (k == "--seed") a.seed = static_cast<uint64_t>(number());
    else if (k == "--json") a.json = value();
    else if (k == "--no-nova") a.nova = false;
    else if (k == "--nova-candidates") a.nova_candidates = static_cast<int>(number());
    else if (k == "--nova-rounds") a.nova_rounds = static_cast<int>(number());
    else if (k == "--capacity-runs") a.capacity_runs = static_cast<int>(number());
    else if (k == "--churn") a.churn = static_cast<int>(number());
    else if (k == "--source-dir") a.source_dir = value();
    else if (k == "--shared-dir") a.shared_dir = value();
    else if (k == "--claimers") a.claimers = static_cast<int>(number());
    else if (k == "--seconds") {
      a.seconds = number();
      a.seconds_given = true;
    }
    else if (k == "--refresh-every") a.refresh_every = static_cast<int>(number());
    else if (k == "--refresh-ms") a.refresh_ms = static_cast<int>(number());
    else if (k == "--scrambled-names") a.scrambled_names = true;
    else if (k == "--subset-size") a.subset_size = static_cast<int>(number());
    else if (k == "--partition") a.partition = true;
    else if (k == "--strategy") {
      const std::string v = value();
      if (v != "pack" && v != "spread") Usage("--strategy: pack or spread");
      a.spread = v == "spread";
    }
    else if (k == "--kills") a.kills = static_cast<int>(number());
    else if (k == "--restart") a.restart = true;
    else if (k == "--claims-each") a.claims_each = static_cast<long>(number());
    else if (k == "--hold") a.hold = static_cast<int>(number());
    else if (k == "--outage") a.outage = number();
    else if (k == "--replicas") a.replicas = static_cast<int>(number());
    else if (k == "--http") a.http = true;
    else if (k == "--share-milli") a.share_milli = static_cast<int>(number());
    else if (k == "--concurrency") a.concurrency = static_cast<int>(number());
    else if (k == "--pg-statements") a.pg_statements = true;
    else if (k == "--schema3-units") a.schema3_units = true;
    else if (k == "--replica-claimers") {
      std::stringstream list(value());
      for (std::string n; std::getline(list, n, ',');) {
        char* end = nullptr;
        const long v = std::strtol(n.c_str(), &end, 10);
        if (n.empty() || *end || v < 1) Usage("--replica-claimers: positive counts separated by commas");
        a.replica_claimers.push_back(static_cast<int>(v));
      }
    }
    else if (k == "-h" || k == "--help") Usage("");
    else Usage("unknown argument " + k);
  }
  if (a.hosts < 0) a.hosts = a.claims ? 2000 : 10000;
  if (a.shared_dir.empty()) a.shared_dir = a.source_dir + "/../shared";
  if (a.hosts < 100) Usage("--hosts must be at least 100");
  if (a.replicas < 0 || (a.replicas > 0 && (a.kills > 0 || a.restart)))
    Usage("--replicas: a positive count, for the throughput run only (not with --kills or --restart)");
  if (!a.replica_claimers.empty()) {
    int sum = 0;
    for (int c : a.replica_claimers) sum += c;
    if (static_cast<int>(a.replica_claimers.size()) != a.replicas || sum > 64)
      Usage("--replica-claimers: one count per replica (--replicas), at most 64 in all");
    a.claimers = sum;
  }
  if (a.http && a.replicas < 1) Usage("--http needs --replicas R (the accel fleet serve processes)");
  if (a.http && !a.replica_claimers.empty()) Usage("--http deals the claimers out in turn: no --replica-claimers");
  if (a.concurrency < 0 || a.concurrency > 256) Usage("--concurrency: 1-256 (0, the default: the claimers of each replica)");
  return a;
}

struct Requests {
  accel::placement::PciAliasTable aliases;
  std::vector<FlavorDef> defs;          ///< the 20 capacity flavors
  std::vector<PlacementRequest> all;    ///< built from defs
  std::vector<PlacementRequest> palette;
  PlacementRequest flavor;              ///< gpu-4-2cell
  FlavorDef flavor_def;
};

Requests LoadRequests(const Args& a) {
  Requests r;
  r.aliases = accel::placement::ParsePciAliasText(kGpuAlias, "fleet_bench's alias gpu");
  const accel::placement::Flavor example =
      accel::placement::LoadFlavor(a.source_dir + "/examples/flavors/gpu-4-2cell.yaml");
  r.defs = CapacityFlavors(example);
  for (const FlavorDef& d : r.defs) r.all.push_back(Build(d, r.aliases));
  r.palette.assign(r.all.begin(), r.all.begin() + kPaletteSize);
  r.flavor = r.all[9];
  r.flavor_def = r.defs[9];
  return r;
}

// ---- default mode ----------------------------------------------------------------------------

int RunInProcess(const Args& a, int argc, char** argv) {
  nlohmann::ordered_json out;
  out["command"] = CommandLine(argc, argv);
  out["load_at_start"] = LoadAverage();
  const long rss_start = StatusKib("VmRSS");

  Requests rq = LoadRequests(a);
  std::vector<Sku> skus = LoadSkus(a.source_dir, a.shared_dir, a.hosts);
  auto t0 = Clock::now();
  Fleet fleet = BuildFleet(skus, rq.palette, a.seed, a.churn);
  const double generate_ms = MsSince(t0);
  const long rss_snapshot = StatusKib("VmRSS");
  t0 = Clock::now();
  FleetView view = FleetView::FromSnapshot(fleet.snapshot);
  const double view_ms = MsSince(t0);
  const long rss_both = StatusKib("VmRSS");
  std::set<std::string> keys;
  for (const auto& e : view.hosts()) keys.insert(e.usage_key);

  nlohmann::ordered_json f;
  f["hosts"] = view.hosts().size();
  for (const Sku& s : fleet.skus) f["skus"][s.name] = {{"hosts", s.hosts}, {"fixture", s.path}};
  f["partly_used_hosts"] = fleet.partly_used;
  f["churn"] = a.churn;
  f["claims"] = fleet.snapshot.claims.size();
  f["palette_draws_that_no_longer_fit"] = fleet.claims_refused;
  f["distinct_host_states"] = keys.size();
  f["generate_ms"] = generate_ms;
  f["from_snapshot_ms"] = view_ms;
  out["fleet"] = f;
  std::printf("fleet: %zu hosts of %zu SKUs, %d partly used (%zu claims), %zu distinct (hardware, policy, usage)\n",
              view.hosts().size(), fleet.skus.size(), fleet.partly_used, fleet.snapshot.claims.size(), keys.size());
  std::printf("       generated in %.0f ms, FleetView::FromSnapshot %.0f ms\n", generate_ms, view_ms);

  // RSS of the view alone: a copy of the snapshot's parts the later steps need is kept (host
  // names, SKUs, claims per host are in `fleet` apart from the snapshot's claims and records).
  nlohmann::json nova_spec;
  if (a.nova) nova_spec = NovaSpec(fleet, std::vector<FlavorDef>(rq.defs.begin(), rq.defs.begin() + kPaletteSize),
                                   rq.flavor_def, rq.aliases, a.nova_candidates, a.seed);
  {
    FleetSnapshot empty;
    std::swap(empty, fleet.snapshot);
  }
  malloc_trim(0);
  const long rss_view = StatusKib("VmRSS"), hwm = StatusKib("VmHWM");
  out["rss_kib"] = {{"start", rss_start}, {"with_snapshot", rss_snapshot}, {"snapshot_and_view", rss_both},
                    {"view_only", rss_view}, {"hwm", hwm}};
  std::printf("RSS:   %.1f MiB at start, %.1f MiB holding the snapshot, %.1f MiB snapshot + view, "
              "%.1f MiB view alone (VmHWM %.1f MiB); target < 256 MiB\n",
              rss_start / 1024.0, rss_snapshot / 1024.0, rss_both / 1024.0, rss_view / 1024.0, hwm / 1024.0);

  // Capacity before the decisions change the view: the fleet as generated.
  std::vector<double> cap_ms;
  accel::fleet::CapacityReport cap;
  for (int r = 0; r < a.capacity_runs; ++r) {
    t0 = Clock::now();
    cap = accel::fleet::Capacity(view, rq.all, {});
    cap_ms.push_back(MsSince(t0));
  }
  const double cap_best = cap_ms.empty() ? 0 : *std::min_element(cap_ms.begin(), cap_ms.end());
  nlohmann::ordered_json capj;
  capj["flavors"] = rq.all.size();
  capj["runs_ms"] = cap_ms;
  capj["best_ms"] = cap_best;
  capj["engine_fills"] = cap.engine_fills;
  capj["eligible_hosts"] = cap.eligible_hosts;
  capj["stranded_accelerators"] = cap.stranded_accelerators;
  for (const auto& fc : cap.flavors) capj["count"][fc.flavor] = {fc.count, fc.runs_out_first};
  out["capacity"] = capj;
  std::printf("capacity: %zu flavors, best of %d %.0f ms (runs:", rq.all.size(), a.capacity_runs, cap_best);
  for (double m : cap_ms) std::printf(" %.0f", m);
  std::printf("), engine_fills %d, %d stranded accelerators; target < 1000 ms\n", cap.engine_fills,
              cap.stranded_accelerators);

  // Decisions.
  out["load_before_decisions"] = LoadAverage();
  for (auto strategy : {accel::fleet::FleetStrategy::kPack, accel::fleet::FleetStrategy::kSpread}) {
    DecisionStats st = RunDecisions(view, rq.flavor, strategy, a.decisions, fleet,
                                    a.partition ? accel::fleet::SchedulePartition{0, 2} : accel::fleet::SchedulePartition{});
    nlohmann::ordered_json j = {{"decisions", st.decisions},   {"placed", st.placed},
                                {"p50_ms", st.p50},           {"p90_ms", st.p90},
                                {"p99_ms", st.p99},           {"max_ms", st.max},
                                {"mean_ms", st.mean},         {"cpu_p50_ms", st.cpu_p50},
                                {"cpu_p99_ms", st.cpu_p99},         {"engine_calls_mean", st.engine_calls_mean},
                                {"engine_calls_max", st.engine_calls_max},
                                {"hosts_ranked_mean", st.hosts_ranked_mean}, {"chosen_sku", st.chosen_sku},
                               };
    out["decisions"][st.strategy] = j;
    std::printf("decide %s (%s, count 1, %d decisions, each applied): p50 %.3f ms, p90 %.3f, p99 %.3f, max %.3f; "
                "thread CPU p50 %.3f, p99 %.3f; engine runs/decision %.1f (max %.0f), hosts ranked %.0f; placed %d; "
                "target p99 <= 5 ms\n",
                rq.flavor.flavor.c_str(), st.strategy.c_str(), st.decisions, st.p50, st.p90, st.p99, st.max, st.cpu_p50,
                st.cpu_p99,
                st.engine_calls_mean, st.engine_calls_max, st.hosts_ranked_mean, st.placed);
  }

  if (a.nova) {
    out["accel_engine_on_nova_candidates"] = AccelOnCandidates(fleet, view, nova_spec, rq.flavor);
    out["load_before_nova"] = LoadAverage();
    nlohmann::json nova = RunNova(a.source_dir, a.shared_dir, nova_spec, a.nova_rounds);
    out["nova"] = nova;
    if (nova.contains("error")) {
      std::printf("nova: not measured: %s\n", nova["error"].get<std::string>().c_str());
    } else {
      const double nova_ms = nova["ms_per_request_median"].get<double>();
      const double p99 = out["decisions"]["pack"]["p99_ms"].get<double>();
      std::printf("nova: %d candidate hosts, %.1f ms per request (median of %d rounds; %.3f ms per host), %d fit; "
                  "accel p99 / Nova = %.4f (Nova takes %.0fx accel's p99)\n",
                  nova["candidates"].get<int>(), nova_ms, nova["rounds"].get<int>(),
                  nova["ms_per_host_median"].get<double>(), nova["fits"].get<int>(), p99 / nova_ms, nova_ms / p99);
      out["ratio_accel_p99_over_nova"] = p99 / nova_ms;
      const auto& ac = out["accel_engine_on_nova_candidates"];
      std::printf("      accel's engine on the same %d candidates one by one (no skipping, no memo): %.2f ms, %d fit\n",
                  ac["hosts"].get<int>(), ac["ms_per_request_median"].get<double>(), ac["fits"].get<int>());
    }
  }
  out["load_at_end"] = LoadAverage();
  std::printf("load average: start %s, end %s\n", out["load_at_start"].get<std::string>().c_str(),
              out["load_at_end"].get<std::string>().c_str());
  if (!a.json.empty()) std::ofstream(a.json) << out.dump(1) << "\n";
  return 0;
}


// ---- --claims: many schedulers on one PostgreSQL -------------------------------------------
//
// A private PostgreSQL 15 (tests/support/postgres_server.h: initdb in /tmp, unix socket, fsync
// on), a store migrated and filled with --hosts hosts of the same SKU mix via FleetStore::AddHost,
// then --claimers forked claimer processes, each with its own FleetStore connection and its own
// FleetView, looping:
//   Schedule(view, gpu-4-2cell, pack, count 1, tiebreak seed "<--seed>-<slot>")
//   ClaimDecision(store, decision)   one transaction: the chosen host, else its ranked alternates
//   on success: FleetView::Apply of its own claim (its view stays current for its own claims);
//   every --refresh-ms, and at once when a candidate was refused (retries > 0) or none could be
//   claimed: a poll of the store's change feed, as FleetService::RefreshChanged does
//   (FleetStore::ChangedSince(mark): the hosts written since, and the claims of those whose
//   generation differs from the view's -> MakeHostEntry -> FleetView::Upsert; removals); and
//   every --refresh-every own claims the whole view is read again (FleetStore::Snapshot).
// With --hold N a claimer releases its oldest claim once it holds more than N (the next poll
// brings that host back), so a run of any length never fills the fleet.
//
// Modes: the throughput run (each claimer makes --claims-each claims; claims/s = all claims /
// wall time from the first claimer's start to the last one's end); --kills N (claimers run with
// --hold; the parent SIGKILLs a random claimer while it is inside ClaimDecision, N times, and
// starts a new one in its slot); --restart (the parent stops PostgreSQL a third into --seconds,
// keeps it down --outage seconds, starts it again). --partition gives each scheduler its share
// of the hosts (ScheduleOptions::partition): replica r of --replicas R runs as `accel fleet serve
// --replica r/R`, or without --replicas claimer i as i/--claimers; the run reports how many
// claims landed outside their scheduler's share, and every run how many hosts hold the claims
// (how tightly they are packed). --replica-claimers N0,N1,.. gives replica r N_r claimer threads
// instead of an even deal, so one replica's share runs dry first and it falls back to the
// others' hosts while they place there. Every mode ends with FleetStore::Audit() and
// a check that every claim has exactly the claim_units rows its placement holds (no half claim).

#ifdef ACCEL_BENCH_HAVE_POSTGRES_HARNESS

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

int64_t CpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/// utime + stime (+ cutime + cstime with `children`) of `pid`, in seconds; 0 when gone.
double ProcCpuSeconds(pid_t pid, bool children) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) return 0;
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; fields >> f && i <= 17; ++i)
    if (i == 14 || i == 15 || (children && (i == 16 || i == 17))) ticks += std::stod(f);
  return ticks / double(sysconf(_SC_CLK_TCK));
}

/// CPU seconds the PostgreSQL server has used: the postmaster with its reaped children (backends
/// that ended) plus its live children.
double PostgresCpuSeconds(pid_t postmaster) {
  double total = ProcCpuSeconds(postmaster, true);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string state, ppid;
    fields >> state >> ppid;
    if (ppid == std::to_string(postmaster)) total += ProcCpuSeconds(std::stoi(name), false);
  }
  return total;
}

/// Counters of one claimer slot, in shared memory so they survive a SIGKILL.
struct SlotStats {
  std::atomic<long> claims{0};          ///< committed claims
  std::atomic<long> retries{0};         ///< candidates refused before a claim (ClaimOutcome::retries)
  std::atomic<long> not_committed{0};   ///< decisions whose every candidate was taken
  std::atomic<long> no_fit{0};          ///< Schedule found nothing
  std::atomic<long> errors{0};          ///< SystemError (store unreachable, connection lost)
  std::atomic<long> releases{0};
  std::atomic<long> outside_partition{0};  ///< claims on a host outside its scheduler's partition
  std::atomic<long> snapshots{0}, polls{0}, host_rereads{0};
  std::atomic<long> schedule_ns{0}, claim_ns{0}, refresh_ns{0}, release_ns{0};
  /// CPU time of this process in each phase (CLOCK_PROCESS_CPUTIME_ID; the claimer is one thread).
  std::atomic<long> schedule_cpu_ns{0}, claim_cpu_ns{0}, refresh_cpu_ns{0}, release_cpu_ns{0};
  std::atomic<int> in_claim{0};         ///< 1 while inside ClaimDecision
  std::atomic<int> done{0};             ///< finished its --claims-each
  std::atomic<int64_t> start_ns{0}, end_ns{0};
  std::atomic<int64_t> last_success_ns{0}, first_error_ns{0}, first_success_after_error_ns{0};
  char first_error[600] = {};
  char last_error[600] = {};
};

struct SharedState {
  std::atomic<int> stop{0};
  SlotStats slots[64];
};

struct ClaimerConfig {
  std::string url;
  int slot = 0;
  std::string seed;
  long claims_each = 0;  ///< stop after this many; 0 = until stop
  int refresh_every = 0;  ///< full snapshot every this many own claims; 0 = only at start
  accel::fleet::FleetStrategy strategy = accel::fleet::FleetStrategy::kPack;
  int refresh_ms = 500;   ///< poll of changed hosts, as `accel fleet serve --refresh`; 0 = never
  int hold = 0;
  int subset_size = 1;    ///< ScheduleOptions::subset_size (Nova's host_subset_size)
  /// ScheduleOptions::partition: {slot, claimers} with --partition (process mode); replicas
  /// carry theirs in the place request instead.
  accel::fleet::SchedulePartition partition;
};

/// One poll of the change feed into `view`, as FleetService::RefreshChanged does it
/// (fleet/change_feed.h). Returns the number of hosts whose claims were read.
long PollChanges(accel::fleet::FleetStore& store, FleetView& view, int64_t* mark) {
  accel::fleet::ChangeBatch batch = accel::fleet::ReadChanges(store, *mark, [&](const std::string& host) -> int64_t {
    const accel::fleet::HostEntry* e = view.Find(host);
    return e ? e->record.generation : -1;
  });
  *mark = batch.mark;
  const long reread = static_cast<long>(batch.fresh.size());
  accel::fleet::ApplyChanges(std::move(batch), &view, view.taken_at());
  return reread;
}

[[noreturn]] void ClaimerMain(const ClaimerConfig& cfg, const PlacementRequest& req, SharedState* shared) {
  SlotStats& st = shared->slots[cfg.slot];
  st.start_ns = NowNs();
  std::unique_ptr<accel::fleet::FleetStore> store;
  FleetView view;
  int64_t mark = 0;  // the change feed's mark of `view`
  bool need_snapshot = true;
  int since_snapshot = 0;
  int64_t last_poll = 0;
  std::vector<std::string> held;  // own live claims, oldest first
  accel::fleet::ScheduleOptions opt;
  opt.count = 1;
  opt.strategy = cfg.strategy;
  opt.tiebreak_seed = cfg.seed;
  opt.subset_size = cfg.subset_size;
  opt.partition = cfg.partition;
  bool in_error = false;
  auto note_error = [&](const std::string& what) {
    ++st.errors;
    if (!st.first_error_ns.load()) {
      st.first_error_ns = NowNs();
      std::snprintf(st.first_error, sizeof st.first_error, "%s", what.c_str());
    }
    std::snprintf(st.last_error, sizeof st.last_error, "%s", what.c_str());
    in_error = true;
    need_snapshot = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  while (!shared->stop.load()) {
    if (cfg.claims_each && st.claims.load() >= cfg.claims_each) break;
    try {
      if (!store) store = accel::fleet::FleetStore::Open(cfg.url);
      if (need_snapshot || (cfg.refresh_every > 0 && since_snapshot >= cfg.refresh_every)) {
        const int64_t t = NowNs(), c = CpuNs();
        const FleetSnapshot snap = store->Snapshot();
        mark = snap.change;
        view = FleetView::FromSnapshot(snap);
        st.refresh_ns += NowNs() - t;
        st.refresh_cpu_ns += CpuNs() - c;
        ++st.snapshots;
        need_snapshot = false;
        since_snapshot = 0;
        last_poll = NowNs();
      } else if (cfg.refresh_ms > 0 && NowNs() - last_poll >= cfg.refresh_ms * 1000000LL) {
        // What `accel fleet serve` does every --refresh interval (FleetService::RefreshNow).
        const int64_t t = NowNs(), c = CpuNs();
        st.host_rereads += PollChanges(*store, view, &mark);
        st.refresh_ns += NowNs() - t;
        st.refresh_cpu_ns += CpuNs() - c;
        ++st.polls;
        last_poll = NowNs();
      }
      int64_t t = NowNs(), c = CpuNs();
      accel::fleet::ScheduleResult decision = accel::fleet::Schedule(view, req, opt);
      st.schedule_ns += NowNs() - t;
      st.schedule_cpu_ns += CpuNs() - c;
      if (!decision.all_placed) {
        ++st.no_fit;
        need_snapshot = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      t = NowNs();
      c = CpuNs();
      st.in_claim = 1;
      accel::fleet::ClaimOutcome out = accel::fleet::ClaimDecision(*store, decision);
      st.in_claim = 0;
      st.claim_ns += NowNs() - t;
      st.claim_cpu_ns += CpuNs() - c;
      st.retries += out.retries;
      // FLEET_BENCH_DEBUG=1: every refused candidate and why, on stderr (where retries come from).
      if (getenv("FLEET_BENCH_DEBUG"))
        for (const std::string& c : out.conflicts) std::fprintf(stderr, "[%d] conflict: %s\n", cfg.slot, c.c_str());
      if (out.committed) {
        const accel::fleet::ClaimedInstance& c = out.instances[0];
        if (cfg.partition.count > 1 &&
            accel::fleet::PartitionOfHost(c.where.host, cfg.partition.count) != cfg.partition.index)
          ++st.outside_partition;
        view.Apply(c.where.host_index, c.where.placement);
        ++st.claims;
        ++since_snapshot;
        st.last_success_ns = NowNs();
        if (in_error) {
          if (!st.first_success_after_error_ns.load()) st.first_success_after_error_ns = NowNs();
          in_error = false;
        }
        held.push_back(c.claim_id);
      } else {
        ++st.not_committed;
      }
      if (out.retries > 0 || !out.committed) {
        // Others claimed what this view thought free: catch up now (the service's next round
        // does the same, FleetService::Place).
        t = NowNs();
        c = CpuNs();
        st.host_rereads += PollChanges(*store, view, &mark);
        st.refresh_ns += NowNs() - t;
        st.refresh_cpu_ns += CpuNs() - c;
        ++st.polls;
        last_poll = NowNs();
      }
      if (cfg.hold > 0 && static_cast<int>(held.size()) > cfg.hold) {
        t = NowNs();
        c = CpuNs();
        store->Release(held.front());
        st.release_ns += NowNs() - t;
        st.release_cpu_ns += CpuNs() - c;
        ++st.releases;
        held.erase(held.begin());
      }
    } catch (const accel::SystemError& e) {
      st.in_claim = 0;
      note_error(e.what());
    } catch (const std::exception& e) {
      st.in_claim = 0;
      note_error(std::string("unexpected: ") + e.what());
    }
  }
  st.end_ns = NowNs();
  st.done = 1;
  _exit(0);  // no exit handlers, no stdio flush: they belong to the parent
}

pid_t StartClaimer(const ClaimerConfig& cfg, const PlacementRequest& req, SharedState* shared) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    try {
      ClaimerMain(cfg, req, shared);
    } catch (...) {
    }
    _exit(3);
  }
  return pid;
}

/// Counts a 200 answer of the place route in `st`: a claim (and whether its host lies outside
/// `partition`), or a decision whose every candidate was taken; the retries it reports.
void CountPlaceAnswer(const std::string& body, accel::fleet::SchedulePartition partition, SlotStats& st) {
  const nlohmann::json doc = nlohmann::json::parse(body);
  st.retries += doc.value("retries", 0);
  if (doc.value("placed", false)) {
    ++st.claims;
    if (partition.count > 1 &&
        accel::fleet::PartitionOfHost(doc["instances"][0]["host"].get<std::string>(), partition.count) !=
            partition.index)
      ++st.outside_partition;
    st.last_success_ns = NowNs();
  } else if (doc.value("retries", 0) == 0) {
    ++st.no_fit;  // nothing fits the whole fleet: no candidate was even tried
  } else {
    ++st.not_committed;
  }
}

/// --replicas: one scheduler replica, a FleetService (refresh every --refresh-ms, as `accel fleet
/// serve`), and the claimer threads of slots `slots`, each sending `body` (with its own seed) to
/// the service's place route until it has made its claims. A request that placed nothing
/// because every candidate was taken counts as not committed and is sent again. `partition`:
/// the replica's (ServiceOptions::partition, as `accel fleet serve --replica`).
[[noreturn]] void ReplicaMain(const std::string& url, int refresh_ms, accel::fleet::SchedulePartition partition,
                              const std::vector<ClaimerConfig>& slots, const nlohmann::json& body,
                              SharedState* shared) {
  try {
    accel::fleet::ServiceOptions o;
    o.store_url = url;
    o.partition = partition;
    o.refresh = std::chrono::milliseconds(refresh_ms > 0 ? refresh_ms : 3600000);
    o.connections = static_cast<int>(slots.size()) + 1;
    const int64_t c0 = CpuNs();
    accel::fleet::FleetService service(o);
    for (const ClaimerConfig& cfg : slots) shared->slots[cfg.slot].refresh_cpu_ns += (CpuNs() - c0) / long(slots.size());
    service.Start();
    std::vector<std::thread> threads;
    for (const ClaimerConfig& cfg : slots) {
      threads.emplace_back([&, cfg] {
        SlotStats& st = shared->slots[cfg.slot];
        st.start_ns = NowNs();
        accel::fleet::ServiceRequest req{"POST", "/api/v1/place", "", ""};
        nlohmann::json b = body;
        b["seed"] = cfg.seed;
        req.body = b.dump();
        while (!shared->stop.load() && st.claims.load() < cfg.claims_each) {
          timespec t0{}, t1{};
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
          const int64_t w = NowNs();
          accel::fleet::ServiceReply r = service.Handle(req);
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
          st.claim_ns += NowNs() - w;
          st.claim_cpu_ns += (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
          if (r.status != 200) {
            ++st.errors;
            std::snprintf(st.last_error, sizeof st.last_error, "%s", r.body.c_str());
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
          }
          CountPlaceAnswer(r.body, partition, st);
          if (st.no_fit.load() > 0) break;  // the fleet is full for this flavor
        }
        st.end_ns = NowNs();
        st.done = 1;
      });
    }
    for (std::thread& t : threads) t.join();
    service.Stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replica: %s\n", e.what());
    _exit(3);
  }
  _exit(0);
}

/// --http: one claimer process, an HTTP client with one kept-alive connection to the replica on
/// `port`, sending `body` (its own seed) until it has made its claims. A request that placed
/// nothing because every candidate was taken counts as not committed and is sent again; an
/// error (no answer, not 200) is counted, waited on for 100 ms and retried.
[[noreturn]] void HttpClaimerMain(const ClaimerConfig& cfg, int port, const nlohmann::json& body,
                                  accel::fleet::SchedulePartition partition, SharedState* shared) {
  SlotStats& st = shared->slots[cfg.slot];
  st.start_ns = NowNs();
  nlohmann::json b = body;
  b["seed"] = cfg.seed;
  const std::string request = b.dump();
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_read_timeout(60, 0);
  // httplib writes the head and the body apart: without TCP_NODELAY the body waits for the
  // server's delayed ACK (40 ms). Clients of the field set it (urllib3, Go's net/http do).
  client.set_tcp_nodelay(true);
  while (!shared->stop.load() && st.claims.load() < cfg.claims_each) {
    const int64_t w = NowNs();
    const int64_t c = CpuNs();
    auto res = client.Post("/api/v1/place", request, "application/json");
    st.claim_ns += NowNs() - w;
    st.claim_cpu_ns += CpuNs() - c;
    if (!res || res->status != 200) {
      ++st.errors;
      const std::string why = res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error());
      std::snprintf(st.last_error, sizeof st.last_error, "%s", why.c_str());
      if (!st.first_error[0]) std::snprintf(st.first_error, sizeof st.first_error, "%s", why.c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    CountPlaceAnswer(res->body, partition, st);
    // The fleet is full for this flavor: more requests would only ask again (--claims-each
    // larger than the hosts' slots); the run reports the no-fits.
    if (st.no_fit.load() > 0) break;
  }
  st.end_ns = NowNs();
  st.done = 1;
  _exit(0);
}

/// The checks every mode ends with: Audit, and every claim holding exactly its units.
nlohmann::ordered_json CheckStore(const accel::test_support::PostgresServer& pg, const std::string& url) {
  nlohmann::ordered_json j;
  auto store = accel::fleet::FleetStore::Open(url);
  const std::vector<std::string> audit = store->Audit();
  j["audit_findings"] = audit.size();
  if (!audit.empty()) j["audit_first"] = audit.front();
  const std::vector<Claim> claims = store->ListClaims();
  std::map<std::string, long> units;
  std::istringstream rows(pg.Query("SELECT claim_id, count(*) FROM claim_units GROUP BY claim_id", "fleet"));
  for (std::string line; std::getline(rows, line);)
    if (auto bar = line.find('|'); bar != std::string::npos) units[line.substr(0, bar)] = std::stol(line.substr(bar + 1));
  long half = 0, orphan_units = 0;
  for (const Claim& c : claims) {
    auto it = units.find(c.id);
    const long want = static_cast<long>(accel::fleet::UnitsOf(c.placement).size());
    if (it == units.end() ? want != 0 : it->second != want) ++half;  // a share claim has no unit of its own
    if (it != units.end()) units.erase(it);
  }
  // A GPU held in part has one share row, claim_id '*shares' or '*mig' (fleet_store.h): not an
  // orphan; the audit above checks those rows against the claims.
  for (const auto& [id, n] : units)
    if (id.empty() || id[0] != '*') orphan_units += n;
  std::set<std::string> hosts_with_claims;
  for (const Claim& c : claims) hosts_with_claims.insert(c.host);
  j["claims"] = claims.size();
  // How tightly the claims are packed: pack puts two 4-GPU claims on an 8-GPU host, so about
  // claims / 2 hosts is the ideal; a partition or a subset may open more.
  j["hosts_with_claims"] = hosts_with_claims.size();
  j["half_claims"] = half;            // claims whose unit rows are missing or incomplete
  j["orphan_unit_rows"] = orphan_units;  // unit rows of no claim
  j["double_booked"] = audit.size();
  return j;
}

int RunClaims(const Args& a, int argc, char** argv) {
  using accel::test_support::PostgresServer;
  if (!PostgresServer::Available()) {
    std::cerr << "fleet_bench --claims: PostgreSQL is not installed (" << accel::test_support::PostgresBinary("initdb")
              << "); Debian: apt-get install postgresql\n";
    return 2;
  }
  nlohmann::ordered_json out;
  out["command"] = CommandLine(argc, argv);
  out["load_at_start"] = LoadAverage();
  Requests rq = LoadRequests(a);
  std::vector<Sku> skus = LoadSkus(a.source_dir, a.shared_dir, a.hosts);

  std::vector<std::string> settings = {"shared_buffers = '256MB'"};
  if (a.pg_statements) settings.push_back("shared_preload_libraries = 'pg_stat_statements'");
  PostgresServer pg(settings);
  pg.CreateDatabase("fleet");
  if (a.pg_statements) pg.Query("CREATE EXTENSION pg_stat_statements", "fleet");
  const std::string url = pg.Url("fleet");
  std::printf("postgresql: %s (fsync on)\n", pg.directory().c_str());
  {
    auto admin = accel::fleet::FleetStore::OpenForMigration(url);
    admin->Migrate();
  }
  if (a.schema3_units) {
    for (const char* sql : accel::test_support::kSchema3ClaimUnitsSql) pg.Query(sql, "fleet");
    std::printf("claim_units: schema 3's foreign key and claim_id index put back (--schema3-units)\n");
  }
  auto t0 = Clock::now();
  {
    auto store = accel::fleet::FleetStore::Open(url);
    int n = 0;
    for (const Sku& s : skus) {
      accel::topology::HostTopology hw = *s.hardware;
      for (int i = 0; i < s.hosts; ++i) {
        accel::fleet::HostSpec spec;
        char name[64];
        if (a.scrambled_names)  // same hosts, names whose every character varies (see --scrambled-names)
          std::snprintf(name, sizeof name, "%s-%08llx", s.name.c_str(),
                        static_cast<unsigned long long>(std::hash<std::string>{}(s.name + std::to_string(i)) & 0xffffffffULL));
        else
          std::snprintf(name, sizeof name, "%s-%05d", s.name.c_str(), i);
        spec.name = name;
        hw.hostname = name;
        spec.topology = hw;
        spec.policy = s.policy;
        spec.set_labels = {{"az", "rack-" + std::to_string(n++ % 40)}, {"sku", s.name}};
        store->AddHost(spec);
      }
    }
  }
  const double populate_s = MsSince(t0) / 1000;
  std::printf("store: %d hosts added in %.1f s\n", a.hosts, populate_s);
  out["hosts"] = a.hosts;
  out["populate_s"] = populate_s;

  void* mem = mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
  auto* shared = new (mem) SharedState();
  const int n = std::min(a.claimers, 64);
  const bool kills = a.kills > 0;
  const int hold = a.hold >= 0 ? a.hold : (kills || a.restart ? 32 : 0);
  std::vector<ClaimerConfig> cfgs(n);
  for (int i = 0; i < n; ++i) {
    cfgs[i].url = url;
    cfgs[i].slot = i;
    cfgs[i].seed = std::to_string(a.seed) + "-" + std::to_string(i);
    cfgs[i].claims_each = kills || a.restart ? 0 : a.claims_each;
    cfgs[i].refresh_every = a.refresh_every;
    cfgs[i].refresh_ms = a.refresh_ms;
    cfgs[i].strategy = a.spread ? accel::fleet::FleetStrategy::kSpread : accel::fleet::FleetStrategy::kPack;
    cfgs[i].hold = hold;
    cfgs[i].subset_size = a.subset_size;
    if (a.partition && a.replicas == 0) cfgs[i].partition = {i, n};
  }
  out["claimers"] = n;
  out["refresh_every"] = a.refresh_every;
  out["refresh_ms"] = a.refresh_ms;
  out["strategy"] = a.spread ? "spread" : "pack";
  out["scrambled_names"] = a.scrambled_names;
  out["subset_size"] = a.subset_size;
  out["partition"] = a.partition;
  out["hold"] = hold;
  out["load_before_claims"] = LoadAverage();

  std::vector<pid_t> pids(n);
  // --http: the replicas are `accel fleet serve` processes, loaded and listening before the clock
  // starts (a service runs for days; its start is not a claim's cost).
  std::vector<std::unique_ptr<accel::test_support::FleetServe>> serves;
  auto serves_cpu = [&serves] {
    double cpu = 0;
    for (const auto& serve : serves) cpu += ProcCpuSeconds(serve->pid(), false);
    return cpu;
  };
  if (a.http) {
    const int per_replica = (n + a.replicas - 1) / a.replicas;
    const int concurrency = a.concurrency > 0 ? a.concurrency : per_replica;
    for (int r = 0; r < a.replicas; ++r) {
      std::vector<std::string> args = {"--store", url, "--refresh-ms",
                                       std::to_string(a.refresh_ms > 0 ? a.refresh_ms : 600000), "--concurrency",
                                       std::to_string(concurrency)};
      if (a.partition) args.insert(args.end(), {"--replica", std::to_string(r) + "/" + std::to_string(a.replicas)});
      std::fflush(nullptr);
      serves.push_back(std::make_unique<accel::test_support::FleetServe>(
          ACCEL_BINARY, args, pg.directory() + "/fleet-serve-" + std::to_string(r) + ".log"));
    }
    out["http"] = {{"binary", ACCEL_BINARY}, {"concurrency", concurrency}};
    std::printf("replicas: %d accel fleet serve processes on 127.0.0.1 ports", a.replicas);
    for (const auto& serve : serves) std::printf(" %d", serve->port());
    std::printf(", --concurrency %d%s\n", concurrency, a.partition ? ", --replica r/R" : "");
  }
  const double serve_cpu_before = serves_cpu();
  const pid_t postmaster = pg.postmaster_pid();
  if (a.pg_statements) pg.Query("SELECT pg_stat_statements_reset()", "fleet");
  const double pg_cpu_before = PostgresCpuSeconds(postmaster);
  rusage ru_before{};
  getrusage(RUSAGE_CHILDREN, &ru_before);
  std::fflush(nullptr);  // children must not inherit unflushed output
  const int64_t run_start = NowNs();
  std::vector<pid_t> replica_pids;
  if (a.replicas > 0) {
    // The place request of the same flavor (gpu-4-2cell widened to every GPU SKU), as a client
    // of `accel fleet serve` sends it.
    nlohmann::json body;
    body["flavor"] = {{"name", rq.flavor_def.name}, {"vcpus", rq.flavor_def.vcpus}, {"ram", rq.flavor_def.ram_mib},
                      {"extra_specs", nlohmann::json::object()}};
    for (const auto& [k, v] : rq.flavor_def.extra) body["flavor"]["extra_specs"][k] = v;
    body["aliases"] = nlohmann::json::parse(kGpuAlias);
    if (a.share_milli > 0) {
      // A pod-shaped request instead: one share of any GPU, a CPU and 1 GiB beside it.
      body.erase("flavor");
      body.erase("aliases");
      body["pod"] = {{"name", "share-" + std::to_string(a.share_milli)}, {"cpu_milli", 1000}, {"memory_mib", 1024},
                     {"gpu", {{"count", 1}, {"milli", a.share_milli}}}};
    }
    body["claim"] = true;
    body["strategy"] = a.spread ? "spread" : "pack";
    if (a.subset_size > 1) body["subset_size"] = a.subset_size;
    int next_slot = 0;
    if (a.http) {
      for (int i = 0; i < n; ++i) {
        const int r = i % a.replicas;
        std::fflush(nullptr);
        pids[i] = fork();
        if (pids[i] < 0) throw std::runtime_error("fork failed");
        if (pids[i] == 0) HttpClaimerMain(cfgs[i], serves[static_cast<size_t>(r)]->port(), body,
                                          a.partition ? accel::fleet::SchedulePartition{r, a.replicas}
                                                      : accel::fleet::SchedulePartition{},
                                          shared);
      }
    }
    for (int r = 0; r < a.replicas && !a.http; ++r) {
      std::vector<ClaimerConfig> mine;
      if (a.replica_claimers.empty()) {
        for (int i = r; i < n; i += a.replicas) mine.push_back(cfgs[i]);
      } else {
        for (int k = 0; k < a.replica_claimers[static_cast<size_t>(r)]; ++k) mine.push_back(cfgs[next_slot++]);
      }
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      const accel::fleet::SchedulePartition part = a.partition ? accel::fleet::SchedulePartition{r, a.replicas}
                                                               : accel::fleet::SchedulePartition{};
      if (pid == 0) ReplicaMain(url, a.refresh_ms, part, mine, body, shared);
      replica_pids.push_back(pid);
    }
    out["replicas"] = a.replicas;
    if (!a.replica_claimers.empty()) out["replica_claimers"] = a.replica_claimers;
  } else {
    for (int i = 0; i < n; ++i) pids[i] = StartClaimer(cfgs[i], rq.flavor, shared);
  }
  std::mt19937_64 rng(a.seed);
  int kills_done = 0, kills_mid_claim = 0, restarts_of_claimers = 0;
  nlohmann::ordered_json restart_info;
  if (kills) {
    while (kills_done < a.kills) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 150)(rng)));
      const int victim = std::uniform_int_distribution<int>(0, n - 1)(rng);
      // Wait (up to 200 ms) for it to be inside a claim's transaction, then kill it there.
      bool mid = false;
      for (int w = 0; w < 4000 && !(mid = shared->slots[victim].in_claim.load() == 1); ++w)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      kill(pids[victim], SIGKILL);
      waitpid(pids[victim], nullptr, 0);
      ++kills_done;
      kills_mid_claim += mid ? 1 : 0;
      shared->slots[victim].in_claim = 0;
      pids[victim] = StartClaimer(cfgs[victim], rq.flavor, shared);
      ++restarts_of_claimers;
    }
    shared->stop = 1;
  } else if (a.restart) {
    std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds / 3));
    long before = 0;
    for (int i = 0; i < n; ++i) before += shared->slots[i].claims.load();
    const int64_t down_at = NowNs();
    pg.Stop();
    const int64_t stopped_at = NowNs();
    long at_stop = 0;
    for (int i = 0; i < n; ++i) at_stop += shared->slots[i].claims.load();
    std::this_thread::sleep_for(std::chrono::duration<double>(a.outage));
    long during = 0;
    for (int i = 0; i < n; ++i) during += shared->slots[i].claims.load();
    const int64_t start_at = NowNs();
    pg.Start();
    const int64_t up_at = NowNs();
    std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds * 2 / 3));
    shared->stop = 1;
    restart_info["claims_before_stop"] = before;
    restart_info["claims_while_stopping"] = at_stop - before;  // committed before the server went
    restart_info["claims_while_down"] = during - at_stop;
    restart_info["stop_s"] = double(stopped_at - down_at) / 1e9;
    restart_info["down_s"] = double(up_at - stopped_at) / 1e9;
    restart_info["start_s"] = double(up_at - start_at) / 1e9;
    restart_info["up_at_ns"] = up_at;
    restart_info["down_at_ns"] = down_at;
  } else {
    const int64_t deadline = run_start + static_cast<int64_t>(a.seconds_given ? a.seconds * 1e9 : 600e9);
    for (;;) {
      int done = 0;
      for (int i = 0; i < n; ++i) done += shared->slots[i].done.load();
      if (done == n) break;
      if (NowNs() > deadline) {
        shared->stop = 1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (a.replicas > 0 && !a.http)
    for (pid_t pid : replica_pids) waitpid(pid, nullptr, 0);
  else
    for (int i = 0; i < n; ++i) waitpid(pids[i], nullptr, 0);
  const int64_t run_end = NowNs();
  rusage ru_after{};
  getrusage(RUSAGE_CHILDREN, &ru_after);  // the claimers only: the replicas are not reaped yet
  const double serve_cpu = serves_cpu() - serve_cpu_before;
  for (auto& serve : serves) serve->Stop();
  auto seconds = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
  const double claimers_cpu = seconds(ru_after.ru_utime) + seconds(ru_after.ru_stime) - seconds(ru_before.ru_utime) -
                              seconds(ru_before.ru_stime);
  // The backends of the claimers end when their connections close; let the postmaster reap them.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double pg_cpu = a.restart ? -1 : PostgresCpuSeconds(postmaster) - pg_cpu_before;

  long claims = 0, retries = 0, not_committed = 0, no_fit = 0, errors = 0, releases = 0, snapshots = 0,
       polls = 0, rereads = 0, outside_partition = 0;
  double schedule_s = 0, claim_s = 0, refresh_s = 0, release_s = 0;
  double schedule_cpu = 0, claim_cpu = 0, refresh_cpu = 0, release_cpu = 0;
  int64_t first = INT64_MAX, last = 0;
  for (int i = 0; i < n; ++i) {
    SlotStats& s = shared->slots[i];
    claims += s.claims;
    retries += s.retries;
    not_committed += s.not_committed;
    no_fit += s.no_fit;
    errors += s.errors;
    releases += s.releases;
    outside_partition += s.outside_partition;
    snapshots += s.snapshots;
    polls += s.polls;
    rereads += s.host_rereads;
    schedule_s += s.schedule_ns / 1e9;
    claim_s += s.claim_ns / 1e9;
    refresh_s += s.refresh_ns / 1e9;
    release_s += s.release_ns / 1e9;
    schedule_cpu += s.schedule_cpu_ns / 1e9;
    claim_cpu += s.claim_cpu_ns / 1e9;
    refresh_cpu += s.refresh_cpu_ns / 1e9;
    release_cpu += s.release_cpu_ns / 1e9;
    first = std::min<int64_t>(first, s.start_ns);
    last = std::max<int64_t>(last, s.end_ns);
  }
  const double wall = double(run_end - run_start) / 1e9;
  nlohmann::ordered_json r;
  r["wall_s"] = wall;
  r["claims"] = claims;
  r["claims_per_s"] = double(claims) / wall;
  r["retries"] = retries;
  r["retry_rate"] = claims ? double(retries) / double(claims) : 0.0;
  r["decisions_not_committed"] = not_committed;
  r["no_fit"] = no_fit;
  r["errors"] = errors;
  r["releases"] = releases;
  r["outside_partition"] = outside_partition;
  r["snapshots"] = snapshots;
  r["polls"] = polls;
  r["host_rereads"] = rereads;
  r["claimer_seconds"] = {{"schedule", schedule_s}, {"claim", claim_s}, {"refresh", refresh_s}, {"release", release_s}};
  r["claimer_cpu_seconds"] = {{"total", claimers_cpu}, {"schedule", schedule_cpu}, {"claim", claim_cpu},
                              {"refresh", refresh_cpu}, {"release", release_cpu}};
  r["postgres_cpu_seconds"] = pg_cpu;
  const double per = claims ? 1000.0 / double(claims) : 0;
  r["cpu_ms_per_claim"] = {{"claimers", claimers_cpu * per}, {"schedule", schedule_cpu * per},
                           {"claim_client", claim_cpu * per}, {"refresh", refresh_cpu * per},
                           {"postgres", pg_cpu * per}};
  if (a.http) {
    r["replicas_cpu_seconds"] = serve_cpu;
    r["cpu_ms_per_claim"]["replicas"] = serve_cpu * per;
  }
  out["run"] = r;
  std::printf("claims: %d claimers, %ld claims in %.2f s = %.0f claims/s; retries %ld (%.2f%% of claims), "
              "%ld decisions lost every candidate, %ld no fit, %ld errors, %ld releases\n",
              n, claims, wall, double(claims) / wall, retries, 100.0 * (claims ? double(retries) / double(claims) : 0),
              not_committed, no_fit, errors, releases);
  if (a.partition)
    std::printf("        partitions: %ld claims (%.2f%%) on a host outside their scheduler's partition\n",
                outside_partition, 100.0 * (claims ? double(outside_partition) / double(claims) : 0));
  std::printf("        claimer time: schedule %.1f s, claim transactions %.1f s, view refresh %.1f s (%ld snapshots, "
              "%ld polls, %ld host re-reads), releases %.1f s\n",
              schedule_s, claim_s, refresh_s, snapshots, polls, rereads, release_s);
  std::printf("        CPU per claim: claimers %.2f ms (schedule %.2f, claim client side %.2f, refresh %.2f, "
              "release %.2f), PostgreSQL %s; %d cores\n",
              claimers_cpu * per, schedule_cpu * per, claim_cpu * per, refresh_cpu * per, release_cpu * per,
              pg_cpu < 0 ? "not measured (restarted)" : (std::to_string(pg_cpu * per).substr(0, 5) + " ms").c_str(),
              static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  if (a.http)
    std::printf("        HTTP: claimers are HTTP clients (%.2f ms CPU per claim above); the accel fleet serve replicas "
                "%.2f ms per claim (schedule, claim transaction, HTTP, refresh)\n",
                claimers_cpu * per, serve_cpu * per);
  if (a.pg_statements) {
    // What the server ran during the claim phase, costliest first (planning is not tracked).
    std::printf("        PostgreSQL statements (pg_stat_statements; calls, ms each, rows each, share of exec time):\n");
    std::istringstream rows(pg.Query(
        "SELECT calls, round((total_exec_time / calls)::numeric, 3), round(rows::numeric / calls, 1), "
        "round((100 * total_exec_time / sum(total_exec_time) OVER ())::numeric, 1), "
        "left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements "
        "WHERE calls > 0 ORDER BY total_exec_time DESC LIMIT 12",
        "fleet"));
    for (std::string line; std::getline(rows, line);) std::printf("          %s\n", line.c_str());
  }
  if (kills) {
    out["kills"] = {{"kills", kills_done}, {"mid_claim", kills_mid_claim}, {"claimers_restarted", restarts_of_claimers}};
    std::printf("kills: %d SIGKILLs (%d inside ClaimDecision), each claimer restarted\n", kills_done, kills_mid_claim);
  }
  if (a.restart) {
    // Per claimer: the first error's text, and how long after the server was back its first claim came.
    std::vector<double> back_after;
    std::string example;
    std::set<std::string> kinds;  // the distinct errors (their text up to the store URL)
    int failed = 0;
    for (int i = 0; i < n; ++i) {
      SlotStats& s = shared->slots[i];
      if (s.first_error_ns) ++failed;
      if (example.empty() && s.first_error[0]) example = s.first_error;
      for (const char* e : {s.first_error, s.last_error})
        if (e[0]) kinds.insert(e);
      if (s.first_success_after_error_ns)
        back_after.push_back(double(s.first_success_after_error_ns - restart_info["up_at_ns"].get<int64_t>()) / 1e9);
    }
    restart_info["claimers_that_saw_errors"] = failed;
    restart_info["claimers_that_claimed_again"] = back_after.size();
    restart_info["first_claim_after_restart_s_max"] = back_after.empty() ? -1 : Percentile(back_after, 1.0);
    restart_info["first_claim_after_restart_s_median"] = back_after.empty() ? -1 : Percentile(back_after, 0.5);
    restart_info["example_error"] = example;
    restart_info["errors_seen"] = std::vector<std::string>(kinds.begin(), kinds.end());
    out["restart"] = restart_info;
    std::printf("restart: server stopped after %.1f s (stop took %.2f s), down %.1f s; %ld claims while down; "
                "%d/%d claimers got errors, %zu claimed again, the last %.2f s after the server was up\n",
                a.seconds / 3, restart_info["stop_s"].get<double>(), restart_info["down_s"].get<double>(),
                restart_info["claims_while_down"].get<long>(), failed, n, back_after.size(),
                restart_info["first_claim_after_restart_s_max"].get<double>());
    for (const std::string& k : kinds) std::printf("         error seen: %s\n", k.c_str());
  } else if (errors) {
    for (int i = 0; i < n; ++i)
      if (shared->slots[i].first_error[0]) {
        std::printf("        first error: %s\n", shared->slots[i].first_error);
        break;
      }
  }
  nlohmann::ordered_json check = CheckStore(pg, url);
  out["check"] = check;
  std::printf("audit: %ld claims in the store on %zu hosts, %zu audit findings (double-booked), %ld half claims, "
              "%ld orphan unit rows\n",
              check["claims"].get<long>(), check["hosts_with_claims"].get<size_t>(), check["audit_findings"].get<size_t>(), check["half_claims"].get<long>(),
              check["orphan_unit_rows"].get<long>());
  out["load_at_end"] = LoadAverage();
  std::printf("load average: start %s, before claims %s, end %s\n", out["load_at_start"].get<std::string>().c_str(),
              out["load_before_claims"].get<std::string>().c_str(), out["load_at_end"].get<std::string>().c_str());
  if (!a.json.empty()) std::ofstream(a.json) << out.dump(1) << "\n";
  munmap(mem, sizeof(SharedState));
  const bool clean = check["audit_findings"].get<size_t>() == 0 && check["half_claims"].get<long>() == 0 &&
                     check["orphan_unit_rows"].get<long>() == 0;
  return clean ? 0 : 1;
}

#else

int RunClaims(const Args&, int, char**) {
  std::cerr << "fleet_bench --claims: built without the tests' PostgreSQL harness (configure with "
               "-DACCEL_TESTS=ON)\n";
  return 2;
}

#endif

}  // namespace

int main(int argc, char** argv) {
  Args a = ParseArgs(argc, argv);
  try {
    return a.claims ? RunClaims(a, argc, argv) : RunInProcess(a, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fleet_bench: " << e.what() << "\n";
    return 3;
  }
}
