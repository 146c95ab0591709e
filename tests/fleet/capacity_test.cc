// Fleet capacity against its definition (capacity.h, issue 13): count(flavor) is how many
// instances Schedule places when asked for one at a time until nothing fits, each applied to a
// copy of the view (FleetView::Apply). Stranded accelerators are checked by filling each host
// with each flavor here, with the engine, and seeing which free accelerators no fill uses.
#include "fleet/capacity.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "fleet/fleet_test_util.h"
#include "fleet/scheduler.h"
#include "placement/pci_fit.h"

namespace accel::fleet {
namespace capacity_test {

using testing::Chance;
using testing::Eligible;
using testing::FlavorShape;
using testing::FleetShape;
using testing::RandomFleet;
using testing::RandomGpuShape;
using testing::RecordOf;
using testing::RequestOf;
using testing::SkuNamed;
using testing::TestFleet;
using testing::Uniform;

struct ByDefinition {
  int64_t count = 0;
  std::map<std::string, int64_t> by_group;  // only groups that took an instance
};

// The definition, literally: schedule one, apply it to a copy, until nothing fits.
ByDefinition ScheduleUntilFull(const FleetView& view, const placement::PlacementRequest& req,
                               const CapacityOptions& co, const std::string& context) {
  ByDefinition out;
  FleetView copy = view;
  ScheduleOptions so;
  so.where = co.where;
  so.now_unix = co.now_unix;
  so.alternates = 0;
  for (;;) {
    const ScheduleResult r = Schedule(copy, req, so);
    if (!r.all_placed) break;
    const Candidate& c = r.instances[0].chosen;
    EXPECT_EQ(copy.Apply(c.host_index, c.placement), "") << context << "the scheduler double-booked " << c.host;
    ++out.count;
    if (!co.group_by.empty()) {
      const Labels& labels = copy.hosts()[c.host_index].record.labels;
      auto it = labels.find(co.group_by);
      ++out.by_group[it == labels.end() ? "(none)" : it->second];
    }
    if (out.count > 10000) {
      ADD_FAILURE() << context << "runaway";
      break;
    }
  }
  return out;
}

// Accelerators `req` uses when `host` is filled with it, one at a time, from `usage`.
std::set<std::string> UsedByFill(const topology::HostTopology& hw, placement::HostUsage usage,
                                 const placement::HostPolicy& policy, const placement::PlacementRequest& req) {
  std::set<std::string> used;
  for (int n = 0; n < 10000; ++n) {
    placement::PlaceResult r = placement::Place(hw, usage, policy, req);
    if (!r.fits()) break;
    for (const placement::DevicePlacement& d : r.placement->devices) used.insert(d.address);
    if (!usage.Apply(*r.placement).empty()) break;
  }
  return used;
}

// Small flavors too, so hosts take several instances and capacity is more than 0 or 1.
FlavorShape CapacityShape(std::mt19937_64& rng, const std::string& likely_alias) {
  FlavorShape s = RandomGpuShape(rng, likely_alias);
  if (s.alias.empty()) {  // CPU-only: at least 8 vCPUs a cell, so a host takes tens, not hundreds
    s.vcpus_per_cell = std::max(s.vcpus_per_cell, 8);
  } else if (Chance(rng, 50)) {
    s.gpus = 1;
  }
  return s;
}

TEST(CapacityBruteForce, CountIsSchedulingOneAtATimeUntilNothingFits) {
  const auto start = std::chrono::steady_clock::now();
  int64_t total_instances = 0;
  int stranded_hosts = 0, nonzero = 0, flavors_checked = 0;
  for (uint64_t seed = 100; seed < 2100; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 1, 5);
    shape.max_claims_per_host = 3;
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    std::vector<placement::PlacementRequest> reqs;
    const int flavors = Uniform(rng, 1, 3);
    for (int f = 0; f < flavors; ++f) reqs.push_back(RequestOf(CapacityShape(rng, testing::SomeHostsGpu(rng, fleet))));
    CapacityOptions co;
    static const std::vector<std::vector<std::string>> kWheres = {{}, {}, {"az=a"}, {"az!=c"}, {"!az"}};
    for (const std::string& t : kWheres[Uniform(rng, 0, static_cast<int>(kWheres.size()) - 1)])
      co.where.push_back(ParseRequirement(t, "--where"));
    if (Chance(rng, 60)) co.group_by = Chance(rng, 70) ? "az" : "gpu";
    const std::string context = "seed " + std::to_string(seed) + ": ";

    const CapacityReport report = Capacity(view, reqs, co);
    int eligible = 0;
    for (const HostRecord& r : fleet.snapshot.hosts) eligible += Eligible(r, co.where, fleet.snapshot.taken_at) ? 1 : 0;
    EXPECT_EQ(report.eligible_hosts, eligible) << context;
    ASSERT_EQ(report.flavors.size(), reqs.size()) << context;

    for (size_t f = 0; f < reqs.size(); ++f) {
      const std::string ctx = context + reqs[f].flavor + ": ";
      const FlavorCapacity& fc = report.flavors[f];
      ++flavors_checked;
      EXPECT_EQ(fc.flavor, reqs[f].flavor) << ctx;
      const ByDefinition expected = ScheduleUntilFull(view, reqs[f], co, ctx);
      EXPECT_EQ(fc.count, expected.count) << ctx;
      total_instances += fc.count;
      nonzero += fc.count > 0 ? 1 : 0;
      if (co.group_by.empty()) {
        EXPECT_TRUE(fc.by_group.empty()) << ctx;
      } else {
        int64_t sum = 0;
        std::map<std::string, int64_t> nonzero_groups;
        for (const auto& [g, n] : fc.by_group) {
          sum += n;
          if (n) nonzero_groups[g] = n;
        }
        EXPECT_EQ(sum, fc.count) << ctx << "by_group must sum to count";
        EXPECT_EQ(nonzero_groups, expected.by_group) << ctx;
      }
      int stops = 0;
      for (const auto& [cause, hosts] : fc.stops_on) {
        stops += hosts;
        EXPECT_LE(hosts, fc.stops_on.at(fc.runs_out_first)) << ctx << "runs_out_first is not the most common stop";
      }
      EXPECT_EQ(stops, eligible) << ctx << "every eligible host stops on something";
      EXPECT_EQ(fc.runs_out_first.empty(), eligible == 0) << ctx;
    }

    // Stranded: free now, of a kind some flavor asks for, and free after filling the host with
    // each flavor in turn. Unwanted: free, of a kind no flavor asks for.
    auto wanted = [&](const topology::PciDevice& d) {
      for (const placement::PlacementRequest& req : reqs)
        for (const placement::PciRequest& pr : req.pci)
          for (const placement::PciSpec& spec : pr.specs)
            if (placement::SpecMatches(spec, d)) return true;
      return false;
    };
    std::map<std::string, std::vector<std::string>> expected_stranded, expected_unwanted;
    for (const HostRecord& r : fleet.snapshot.hosts) {
      if (!Eligible(r, co.where, fleet.snapshot.taken_at)) continue;
      const topology::HostTopology& hw = *fleet.sku.at(r.name)->hardware;
      const placement::HostUsage& usage = fleet.usage.at(r.name);
      std::set<std::string> used;
      for (const placement::PlacementRequest& req : reqs) {
        std::set<std::string> by_this = UsedByFill(hw, usage, r.policy, req);
        used.insert(by_this.begin(), by_this.end());
      }
      for (const topology::PciDevice& d : hw.pci) {
        if (!d.is_accelerator() || usage.devices.count(d.address)) continue;
        if (!wanted(d)) expected_unwanted[r.name].push_back(d.address);
        else if (!used.count(d.address)) expected_stranded[r.name].push_back(d.address);
      }
    }
    std::map<std::string, std::vector<std::string>> got, got_unwanted;
    int sum = 0, sum_unwanted = 0;
    for (const StrandedHost& s : report.stranded) {
      std::vector<std::string> addresses = s.stranded;
      std::sort(addresses.begin(), addresses.end());
      if (!addresses.empty()) got[s.host] = addresses;
      addresses = s.unwanted;
      std::sort(addresses.begin(), addresses.end());
      if (!addresses.empty()) got_unwanted[s.host] = addresses;
      sum += static_cast<int>(s.stranded.size());
      sum_unwanted += static_cast<int>(s.unwanted.size());
      EXPECT_FALSE(s.reason.empty()) << context << s.host;
      EXPECT_FALSE(s.stranded.empty() && s.unwanted.empty()) << context << s.host;
      int free_now = 0;
      for (const topology::PciDevice& d : fleet.sku.at(s.host)->hardware->pci)
        free_now += d.is_accelerator() && !fleet.usage.at(s.host).devices.count(d.address) ? 1 : 0;
      EXPECT_EQ(s.free_accelerators, free_now) << context << s.host;
    }
    for (auto& [host, addresses] : expected_stranded) std::sort(addresses.begin(), addresses.end());
    for (auto& [host, addresses] : expected_unwanted) std::sort(addresses.begin(), addresses.end());
    EXPECT_EQ(got, expected_stranded) << context;
    EXPECT_EQ(got_unwanted, expected_unwanted) << context;
    EXPECT_EQ(report.stranded_accelerators, sum) << context;
    EXPECT_EQ(report.unwanted_accelerators, sum_unwanted) << context;
    stranded_hosts += static_cast<int>(report.stranded.size());
    for (size_t i = 1; i < report.stranded.size(); ++i)
      EXPECT_LT(report.stranded[i - 1].host, report.stranded[i].host) << context << "stranded hosts are by name";
  }
  EXPECT_GT(nonzero, flavors_checked / 3) << "the generator should mostly make flavors that fit";
  EXPECT_GT(stranded_hosts, 20);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ measure  ] " << flavors_checked << " flavors, " << total_instances << " instances placed one by one, "
            << stranded_hosts << " hosts with stranded accelerators, " << seconds << " s\n";
}

// A GPU whose node has no dedicated CPU left is stranded, and the reason says so.
TEST(Capacity, GpuNextToFullNodeIsStrandedWithReason) {
  TestFleet fleet;
  fleet.snapshot.taken_at = testing::kSnapshotTime;
  const testing::Sku& mi300x = SkuNamed("epyc-nps4-mi300x");
  HostRecord r;
  r.name = "mi-1";
  r.topology_id = mi300x.id;
  fleet.snapshot.hosts.push_back(r);
  fleet.snapshot.topologies[mi300x.id] = mi300x.hardware;
  fleet.sku[r.name] = &mi300x;
  fleet.usage[r.name];
  // Take every CPU of node 0 (48 threads) with CPU-only guests; its GPU stays free.
  FlavorShape cpus;
  cpus.vcpus_per_cell = 48;
  cpus.gib_per_cell = 4;
  ASSERT_TRUE(testing::AddEngineClaim(&fleet, "mi-1", cpus));
  ASSERT_EQ(fleet.snapshot.claims[0].placement.cells.at(0).host_node, 0);
  const FleetView view = FleetView::FromSnapshot(fleet.snapshot);

  FlavorShape gpu;
  gpu.alias = "mi300x";
  gpu.gpus = 1;
  gpu.vcpus_per_cell = 8;
  const CapacityReport report = Capacity(view, {RequestOf(gpu)}, CapacityOptions{});
  ASSERT_EQ(report.flavors.size(), 1u);
  EXPECT_EQ(report.flavors[0].count, 7);  // one per node with CPUs left
  ASSERT_EQ(report.stranded.size(), 1u);
  EXPECT_EQ(report.stranded[0].host, "mi-1");
  EXPECT_EQ(report.stranded[0].stranded, std::vector<std::string>{"0000:04:00.0"});
  EXPECT_EQ(report.stranded[0].free_accelerators, 8);
  EXPECT_EQ(report.stranded_accelerators, 1);
  EXPECT_NE(report.stranded[0].reason.find(RequestOf(gpu).flavor), std::string::npos) << report.stranded[0].reason;

  // The fragmentation figure: of 8 free GPUs, the one the flavor cannot reach.
  EXPECT_EQ(report.free_gpu_milli, 8000);
  EXPECT_DOUBLE_EQ(report.fragmented_gpu_milli, 1000);
  EXPECT_EQ(report.unwanted_gpu_milli, 0);

  // With only CPU flavors, no free GPU is stranded by fragmentation: all 8 are not wanted by
  // the mix, counted apart, and the reason says no flavor asks for them.
  FlavorShape cpu_only;
  cpu_only.vcpus_per_cell = 8;
  const CapacityReport cpu_report = Capacity(view, {RequestOf(cpu_only)}, CapacityOptions{});
  ASSERT_EQ(cpu_report.stranded.size(), 1u);
  EXPECT_TRUE(cpu_report.stranded[0].stranded.empty());
  EXPECT_EQ(cpu_report.stranded[0].unwanted.size(), 8u);
  EXPECT_EQ(cpu_report.stranded_accelerators, 0);
  EXPECT_EQ(cpu_report.unwanted_accelerators, 8);
  EXPECT_EQ(cpu_report.unwanted_gpu_milli, 8000);
  EXPECT_DOUBLE_EQ(cpu_report.fragmented_gpu_milli, 0);
  EXPECT_NE(cpu_report.stranded[0].reason.find("no given flavor asks for these accelerators"), std::string::npos)
      << cpu_report.stranded[0].reason;
}

// Hosts of one SKU and one state are filled once; counts add up per host.
TEST(Capacity, IdenticalHostsAreFilledOnce) {
  std::mt19937_64 rng(3);
  FleetShape shape;
  shape.hosts = 30;
  shape.max_claims_per_host = 0;
  shape.disabled_percent = shape.maintenance_percent = shape.stale_percent = 0;
  shape.fixtures = {"hgx-h200"};
  TestFleet fleet = RandomFleet(rng, shape);
  for (HostRecord& h : fleet.snapshot.hosts) {
    h.policy = {};
    h.heartbeat_at.reset();
  }
  fleet.snapshot.hosts[0].state = HostAdminState::kDisabled;
  const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
  FlavorShape two;
  two.alias = "h200";
  two.gpus = 2;
  two.vcpus_per_cell = 16;
  CapacityOptions co;
  co.group_by = "gpu";
  const CapacityReport report = Capacity(view, {RequestOf(two)}, co);
  EXPECT_EQ(report.engine_fills, 1);
  EXPECT_EQ(report.eligible_hosts, 29);
  EXPECT_EQ(report.flavors[0].count, 29 * 4);  // two pairs per node, two nodes
  EXPECT_EQ(report.flavors[0].by_group, (std::map<std::string, int64_t>{{"h200", 29 * 4}}));
  EXPECT_EQ(report.flavors[0].runs_out_first, "PCI devices");
  EXPECT_TRUE(report.stranded.empty());

  co.max_per_host = 3;
  EXPECT_EQ(Capacity(view, {RequestOf(two)}, co).flavors[0].count, 29 * 3);
}

// Every field of a report as text, so two reports compare whole and a difference prints.
std::string ReportText(const CapacityReport& r) {
  std::string s = "eligible " + std::to_string(r.eligible_hosts) + " fills " + std::to_string(r.engine_fills) +
                  " stranded " + std::to_string(r.stranded_accelerators) + "\n";
  for (const FlavorCapacity& f : r.flavors) {
    s += f.flavor + ": " + std::to_string(f.count) + " runs out first: " + f.runs_out_first + "\n";
    for (const auto& [g, n] : f.by_group) s += "  group " + g + " " + std::to_string(n) + "\n";
    for (const auto& [cause, hosts] : f.stops_on) s += "  stops on " + cause + " " + std::to_string(hosts) + "\n";
  }
  for (const StrandedHost& h : r.stranded) {
    s += h.host + " free " + std::to_string(h.free_accelerators) + " stranded";
    for (const std::string& a : h.stranded) s += " " + a;
    s += " because " + h.reason + "\n";
  }
  return s;
}

// The fills run on threads, but the report is the serial one, whatever the thread count.
TEST(Capacity, ThreadsGiveTheSerialReport) {
  int fills = 0;
  for (uint64_t seed = 7000; seed < 7040; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 20, 80);
    shape.max_claims_per_host = 3;
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    std::vector<placement::PlacementRequest> reqs;
    const int flavors = Uniform(rng, 1, 5);
    for (int f = 0; f < flavors; ++f) reqs.push_back(RequestOf(CapacityShape(rng, testing::SomeHostsGpu(rng, fleet))));
    CapacityOptions co;
    co.group_by = Chance(rng, 50) ? "az" : "";
    if (Chance(rng, 30)) co.max_per_host = Uniform(rng, 1, 4);
    co.threads = 1;
    const CapacityReport serial = Capacity(view, reqs, co);
    fills += serial.engine_fills;
    const std::string expected = ReportText(serial);
    for (int threads : {4, 0, 3}) {
      co.threads = threads;
      EXPECT_EQ(ReportText(Capacity(view, reqs, co)), expected) << "seed " << seed << ", " << threads << " threads";
    }
  }
  EXPECT_GT(fills, 500) << "the fleets should have many distinct states for the threads to share";
}

}  // namespace
}  // namespace accel::fleet
