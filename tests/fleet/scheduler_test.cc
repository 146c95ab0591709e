// The fleet scheduler against brute force: on thousands of small random fleets (fixture SKUs,
// random policies, labels, states and engine-made claims) and random GPU flavors, every answer
// of Schedule is checked against running placement::Place on every host and ranking the hosts
// that fit by the order scheduler.h documents, computed here from the hardware and the claims
// (not from FleetView's summaries).
#include "fleet/scheduler.h"
#include "common/hash.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "fleet/fleet_test_util.h"
#include "placement/pci_alias.h"
#include "placement/placement_json.h"

namespace accel::fleet {
namespace scheduler_test {

using testing::AddEngineClaim;
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

// The ranking of scheduler.h step 3 without the tiebreak: (a) strategy, (b) fragmentation.
using Prefix = std::tuple<int, int, int, int>;

Prefix RankPrefix(const topology::HostTopology& hw, const placement::HostUsage& usage,
                  const placement::HostPolicy& policy, FleetStrategy strategy) {
  int free_acc = 0;
  std::map<int, std::pair<int, int>> per_node;  // node index -> (free, total) accelerators
  for (const topology::PciDevice& d : hw.pci) {
    if (!d.is_accelerator()) continue;
    const bool free = !usage.devices.count(d.address);
    free_acc += free ? 1 : 0;
    const int node = hw.NodeIndex(d.numa_node);
    if (node < 0) continue;
    per_node[node].first += free ? 1 : 0;
    per_node[node].second += 1;
  }
  bool partial = false;
  for (const auto& [node, ft] : per_node) partial |= ft.first > 0 && ft.first < ft.second;
  const CpuSet all = hw.AllCpus();
  const CpuSet dedicated = policy.cpu_dedicated_set ? policy.cpu_dedicated_set->Intersect(all) : all;
  CpuSet pinned;
  for (const auto& [id, n] : usage.nodes) pinned = pinned.Union(n.pinned_cpus);
  const int free_cpus = dedicated.Minus(pinned).Count();
  const bool idle = usage.nodes.empty() && usage.devices.empty() && usage.floating_vcpus == 0 &&
                    usage.floating_memory_mib == 0;
  const int sign = strategy == FleetStrategy::kPack ? 1 : -1;
  // Partly used accelerator node first (0), then a host that is not idle (0).
  return {sign * free_acc, sign * free_cpus, partial ? 0 : 1, idle ? 1 : 0};
}

struct Fit {
  Prefix prefix;
  std::string host;
  bool operator<(const Fit& o) const { return std::tie(prefix, host) < std::tie(o.prefix, o.host); }
};

// Every host of `fleet` that may take `req` now, by brute force, best first (name breaks ties).
std::vector<Fit> BruteForce(const TestFleet& fleet, const std::map<std::string, placement::HostUsage>& usage,
                            const placement::PlacementRequest& req, const ScheduleOptions& o,
                            const std::set<std::string>& excluded = {}) {
  std::vector<Fit> fits;
  const int64_t now = o.now_unix ? o.now_unix : fleet.snapshot.taken_at;
  for (const HostRecord& r : fleet.snapshot.hosts) {
    if (!Eligible(r, o.where, now) || excluded.count(r.name)) continue;
    const topology::HostTopology& hw = *fleet.sku.at(r.name)->hardware;
    if (!placement::Place(hw, usage.at(r.name), r.policy, req).fits()) continue;
    fits.push_back({RankPrefix(hw, usage.at(r.name), r.policy, o.strategy), r.name});
  }
  std::sort(fits.begin(), fits.end());
  return fits;
}

std::string Describe(const ScheduleResult& r) {
  std::string s = "placed=" + std::to_string(r.all_placed) + " calls=" + std::to_string(r.engine_calls) +
                  " ranked=" + std::to_string(r.hosts_ranked) + "\n";
  for (const InstanceDecision& d : r.instances) {
    s += "chosen " + d.chosen.host + "@" + std::to_string(d.chosen.generation) + "\n" +
         placement::WritePlacementJson(d.chosen.placement);
    for (const Candidate& c : d.alternates)
      s += "alt " + c.host + "@" + std::to_string(c.generation) + "\n" + placement::WritePlacementJson(c.placement);
  }
  for (const CauseCount& c : r.why_not) s += "why " + c.cause + " " + std::to_string(c.hosts) + " " + c.example + "\n";
  return s;
}

std::vector<LabelRequirement> RandomWhere(std::mt19937_64& rng) {
  static const std::vector<std::vector<std::string>> kWheres = {
      {}, {}, {}, {}, {}, {}, {"az=a"}, {"az!=b"}, {"az"}, {"!az"}, {"gpu=h100"}, {"gpu!=h200", "az"}};
  std::vector<LabelRequirement> where;
  for (const std::string& t : kWheres[Uniform(rng, 0, static_cast<int>(kWheres.size()) - 1)])
    where.push_back(ParseRequirement(t, "--where"));
  return where;
}

int CauseHosts(const ScheduleResult& r, const std::string& prefix) {
  int n = 0;
  for (const CauseCount& c : r.why_not)
    if (c.cause.rfind(prefix, 0) == 0) n += c.hosts;
  return n;
}

// The decision offers exactly the brute-force order: the chosen host first, then the next
// `alternates` fitting hosts.
void ExpectBestFitsOffered(const ScheduleResult& r, const InstanceDecision& d, const std::vector<Fit>& fits,
                           int alternates, const std::string& context) {
  std::vector<std::string> expected, got = {d.chosen.host};
  for (size_t k = 0; k < fits.size() && k <= static_cast<size_t>(alternates); ++k) expected.push_back(fits[k].host);
  for (const Candidate& c : d.alternates) got.push_back(c.host);
  EXPECT_EQ(got, expected) << context << Describe(r);
}

// When nothing fits, every host is explained: the filtered ones under their exact cause, in
// the filter order of scheduler.h (state, then staleness, then labels), and the sum is the fleet.
void ExpectWhyNotCoversFleet(const TestFleet& fleet, const ScheduleResult& r, const ScheduleOptions& o,
                             int earlier_instance_hosts, const std::string& context) {
  int disabled = 0, maintenance = 0, stale = 0, labels = 0, total = 0;
  const int64_t now = o.now_unix ? o.now_unix : fleet.snapshot.taken_at;
  for (const HostRecord& h : fleet.snapshot.hosts) {
    if (h.state == HostAdminState::kDisabled) ++disabled;
    else if (h.state == HostAdminState::kMaintenance) ++maintenance;
    else if (IsStale(h, now)) ++stale;
    else if (!MatchesAll(o.where, h.labels)) ++labels;
  }
  for (const CauseCount& c : r.why_not) {
    total += c.hosts;
    EXPECT_GT(c.hosts, 0) << context;
    EXPECT_FALSE(c.example.empty()) << context << c.cause;
  }
  EXPECT_EQ(total, static_cast<int>(fleet.snapshot.hosts.size())) << context << Describe(r);
  EXPECT_EQ(CauseHosts(r, "disabled"), disabled) << context << Describe(r);
  EXPECT_EQ(CauseHosts(r, "maintenance"), maintenance) << context << Describe(r);
  EXPECT_EQ(CauseHosts(r, "stale"), stale) << context << Describe(r);
  EXPECT_EQ(CauseHosts(r, "labels"), labels) << context << Describe(r);
  EXPECT_EQ(CauseHosts(r, "holds an earlier instance"), earlier_instance_hosts) << context << Describe(r);
  for (size_t i = 1; i < r.why_not.size(); ++i)
    EXPECT_GE(r.why_not[i - 1].hosts, r.why_not[i].hosts) << context << "why_not is most hosts first";
}

// Checks a candidate the scheduler returned: a real host that may take placements, whose
// placement the engine's validator accepts on that host's usage, at the view's generation.
void ExpectValidCandidate(const TestFleet& fleet, const FleetView& view,
                          const std::map<std::string, placement::HostUsage>& usage,
                          const placement::PlacementRequest& req, const ScheduleOptions& o, const Candidate& c,
                          const std::string& context) {
  ASSERT_LT(c.host_index, view.hosts().size()) << context;
  EXPECT_EQ(view.hosts()[c.host_index].record.name, c.host) << context;
  const HostRecord& r = RecordOf(fleet, c.host);
  EXPECT_TRUE(Eligible(r, o.where, o.now_unix ? o.now_unix : fleet.snapshot.taken_at))
      << context << c.host << " is disabled, stale or filtered out";
  EXPECT_EQ(c.placement.host, c.host) << context;
  EXPECT_EQ(c.generation, view.hosts()[c.host_index].record.generation) << context;
  EXPECT_EQ(placement::Validate(*fleet.sku.at(c.host)->hardware, usage.at(c.host), r.policy, req, c.placement), "")
      << context << c.host << "\n" << placement::WritePlacementJson(c.placement);
}

std::vector<Prefix> PrefixesOf(const ScheduleResult& r, const TestFleet& fleet,
                               const std::map<std::string, placement::HostUsage>& usage, FleetStrategy s) {
  std::vector<Prefix> out;
  auto add = [&](const Candidate& c) {
    out.push_back(RankPrefix(*fleet.sku.at(c.host)->hardware, usage.at(c.host), RecordOf(fleet, c.host).policy, s));
  };
  for (const InstanceDecision& d : r.instances) {
    add(d.chosen);
    for (const Candidate& c : d.alternates) add(c);
  }
  return out;
}

// One instance: fits iff some eligible host fits; the chosen host and its alternates are exactly
// the best fitting hosts in the documented order; seeds reorder only hosts of equal rank.
TEST(SchedulerBruteForce, OneInstanceIsTheBestFittingHost) {
  const auto start = std::chrono::steady_clock::now();
  int placed = 0, refused = 0, with_alternates = 0, trials = 0;
  for (uint64_t seed = 1; seed <= 4000; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 2, 8);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    const FlavorShape flavor = RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet));
    placement::PlacementRequest req;
    try {
      req = RequestOf(flavor);
    } catch (const InputError& e) {
      ADD_FAILURE() << "seed " << seed << ": generator made a flavor Nova refuses: " << e.what();
      continue;
    }
    ++trials;
    ScheduleOptions o;
    o.strategy = Chance(rng, 30) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    o.where = RandomWhere(rng);
    o.alternates = Uniform(rng, 0, 4);
    const std::string context = "seed " + std::to_string(seed) + " flavor " + req.flavor + ": ";

    const ScheduleResult r = Schedule(view, req, o);
    const std::vector<Fit> fits = BruteForce(fleet, fleet.usage, req, o);
    ASSERT_EQ(r.all_placed, !fits.empty()) << context << Describe(r);
    EXPECT_EQ(Describe(Schedule(view, req, o)), Describe(r)) << context << "not deterministic";
    if (fits.empty()) {
      ++refused;
      EXPECT_TRUE(r.instances.empty()) << context;
      ExpectWhyNotCoversFleet(fleet, r, o, 0, context);
      continue;
    }
    ++placed;
    ASSERT_EQ(r.instances.size(), 1u) << context;
    EXPECT_TRUE(r.why_not.empty()) << context;
    const InstanceDecision& d = r.instances[0];
    // Exactly the brute-force order: chosen first, then the next `alternates` fitting hosts.
    ExpectBestFitsOffered(r, d, fits, o.alternates, context);
    std::vector<std::string> got = {d.chosen.host};
    for (const Candidate& c : d.alternates) got.push_back(c.host);
    if (!d.alternates.empty()) ++with_alternates;
    std::set<std::string> distinct(got.begin(), got.end());
    EXPECT_EQ(distinct.size(), got.size()) << context << "a host is offered twice";
    ExpectValidCandidate(fleet, view, fleet.usage, req, o, d.chosen, context);
    for (const Candidate& c : d.alternates) {
      ExpectValidCandidate(fleet, view, fleet.usage, req, o, c, context);
      EXPECT_TRUE(c.assumed_instances.empty()) << context;
    }

    // A tiebreak seed changes the order only among hosts of equal rank: the ranks of what is
    // offered are the same, and so is every host ranked strictly better than the last offered.
    for (const std::string tiebreak : {"replica-1", "replica-2"}) {
      ScheduleOptions seeded = o;
      seeded.tiebreak_seed = tiebreak;
      const ScheduleResult s = Schedule(view, req, seeded);
      ASSERT_TRUE(s.all_placed) << context << tiebreak;
      EXPECT_EQ(PrefixesOf(s, fleet, fleet.usage, o.strategy), PrefixesOf(r, fleet, fleet.usage, o.strategy))
          << context << tiebreak << "\n" << Describe(s) << "vs\n" << Describe(r);
      const Prefix last = PrefixesOf(r, fleet, fleet.usage, o.strategy).back();
      std::set<std::string> better_r;
      for (const Fit& f : fits)
        if (f.prefix < last) better_r.insert(f.host);
      auto offered = [](const ScheduleResult& x) {
        std::set<std::string> hosts = {x.instances[0].chosen.host};
        for (const Candidate& c : x.instances[0].alternates) hosts.insert(c.host);
        return hosts;
      };
      for (const std::string& h : better_r) {
        EXPECT_TRUE(offered(s).count(h)) << context << tiebreak << ": " << h << " ranks strictly better";
        EXPECT_TRUE(offered(r).count(h)) << context << h << " ranks strictly better";
      }
      ExpectValidCandidate(fleet, view, fleet.usage, req, seeded, s.instances[0].chosen, context + tiebreak + ": ");
      EXPECT_EQ(Describe(Schedule(view, req, seeded)), Describe(s)) << context << tiebreak << " not deterministic";
    }
  }
  // The generator must exercise both answers and the alternates, or the test proves little.
  EXPECT_GT(placed, trials / 4);
  EXPECT_GT(refused, trials / 20);
  EXPECT_GT(with_alternates, placed / 4);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ measure  ] " << trials << " fleets: " << placed << " placed, " << refused << " refused, "
            << with_alternates << " with alternates, " << seconds << " s\n";
}

// N instances: each is the best fitting host of the fleet with the earlier instances applied
// (FleetView::Apply on a copy), with --different-hosts never on a host twice; when one does not
// fit, the earlier ones are returned, all_placed is false and why_not explains the whole fleet.
TEST(SchedulerBruteForce, CountInstancesAreSequentialBestFits) {
  int complete = 0, partial = 0, repeated_host = 0, trials = 0;
  for (uint64_t seed = 5001; seed <= 7000; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 3, 7);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    FlavorShape flavor = RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet));
    if (flavor.gpus > 4) flavor.gpus = Uniform(rng, 1, 4);  // several instances per host possible
    const placement::PlacementRequest req = RequestOf(flavor);
    ++trials;
    ScheduleOptions o;
    o.count = Uniform(rng, 2, 6);
    o.different_hosts = Chance(rng, 50);
    o.strategy = Chance(rng, 30) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    o.where = RandomWhere(rng);
    o.alternates = Uniform(rng, 0, 3);
    const std::string context = "seed " + std::to_string(seed) + " flavor " + req.flavor + " count " +
                                std::to_string(o.count) + (o.different_hosts ? " different-hosts" : "") + ": ";

    const ScheduleResult r = Schedule(view, req, o);
    EXPECT_EQ(Describe(Schedule(view, req, o)), Describe(r)) << context << "not deterministic";
    EXPECT_EQ(r.all_placed, static_cast<int>(r.instances.size()) == o.count) << context;
    FleetView copy = view;  // the scheduler must not change the view; we apply on a copy
    std::map<std::string, placement::HostUsage> usage = fleet.usage;
    std::map<std::string, std::vector<int>> on_host;
    std::set<std::string> used;
    for (size_t k = 0; k < r.instances.size(); ++k) {
      const InstanceDecision& d = r.instances[k];
      const std::string ctx = context + "instance " + std::to_string(k) + ": ";
      const std::vector<Fit> fits = BruteForce(fleet, usage, req, o, o.different_hosts ? used : std::set<std::string>{});
      ASSERT_FALSE(fits.empty()) << ctx << "placed where brute force finds no host";
      ExpectBestFitsOffered(r, d, fits, o.alternates, ctx);
      ExpectValidCandidate(fleet, copy, usage, req, o, d.chosen, ctx);
      for (const Candidate& c : d.alternates) ExpectValidCandidate(fleet, copy, usage, req, o, c, ctx);
      EXPECT_EQ(d.chosen.assumed_instances, on_host[d.chosen.host]) << ctx;
      for (const Candidate& c : d.alternates) EXPECT_EQ(c.assumed_instances, on_host[c.host]) << ctx;
      if (o.different_hosts) {
        EXPECT_FALSE(used.count(d.chosen.host)) << ctx << "--different-hosts repeated " << d.chosen.host;
        for (const Candidate& c : d.alternates) EXPECT_FALSE(used.count(c.host)) << ctx << "alternate repeats " << c.host;
      } else if (used.count(d.chosen.host)) {
        ++repeated_host;
      }
      used.insert(d.chosen.host);
      on_host[d.chosen.host].push_back(static_cast<int>(k));
      ASSERT_EQ(copy.Apply(d.chosen.host_index, d.chosen.placement), "") << ctx;
      ASSERT_EQ(usage[d.chosen.host].Apply(d.chosen.placement), "") << ctx;
    }
    if (r.all_placed) {
      ++complete;
      EXPECT_TRUE(r.why_not.empty()) << context;
    } else {
      ++partial;
      EXPECT_TRUE(BruteForce(fleet, usage, req, o, o.different_hosts ? used : std::set<std::string>{}).empty())
          << context << "stopped at instance " << r.instances.size() << " but brute force fits it";
      ExpectWhyNotCoversFleet(fleet, r, o, o.different_hosts ? static_cast<int>(used.size()) : 0, context);
    }
  }
  // Generator health: both outcomes, and several instances on one host, must come up often.
  EXPECT_GT(complete, trials / 8);
  EXPECT_GT(partial, trials / 10);
  EXPECT_GT(repeated_host, 10);
  std::cout << "[ measure  ] " << trials << " requests: " << complete << " all placed, " << partial
            << " partly, " << repeated_host << " instances on a host already holding one\n";
}

// Hosts that may not take placements are never chosen, offered as alternates or engine-ranked,
// and are named per cause; time for staleness is the option's, else the view's.
TEST(Scheduler, FilteredHostsAreNeverChosenAndAreCountedPerCause) {
  TestFleet fleet;
  fleet.snapshot.taken_at = testing::kSnapshotTime;
  const testing::Sku& h100 = SkuNamed("hgx-h100");
  auto add = [&](const std::string& name, HostAdminState state, const std::string& az, bool stale) {
    HostRecord r;
    r.name = name;
    r.topology_id = h100.id;
    r.state = state;
    r.labels = {{"gpu", "h100"}, {"az", az}};
    if (stale) {
      r.heartbeat_at = testing::kSnapshotTime - 1000;
      r.stale_after_s = 300;
    }
    fleet.snapshot.hosts.push_back(r);
    fleet.snapshot.topologies[h100.id] = h100.hardware;
    fleet.sku[name] = &h100;
    fleet.usage[name];
  };
  add("a-disabled", HostAdminState::kDisabled, "a", false);
  add("b-maintenance", HostAdminState::kMaintenance, "a", false);
  add("c-stale", HostAdminState::kEnabled, "a", true);
  add("d-other-az", HostAdminState::kEnabled, "b", false);
  add("e-ok", HostAdminState::kEnabled, "a", false);
  const FleetView view = FleetView::FromSnapshot(fleet.snapshot);

  FlavorShape one;
  one.alias = "h100";
  one.gpus = 1;
  ScheduleOptions o;
  o.where = {ParseRequirement("az=a", "--where")};
  ScheduleResult r = Schedule(view, RequestOf(one), o);
  ASSERT_TRUE(r.all_placed);
  EXPECT_EQ(r.instances[0].chosen.host, "e-ok");
  EXPECT_TRUE(r.instances[0].alternates.empty()) << Describe(r);
  EXPECT_EQ(r.hosts_ranked, 1);

  // Without --where the other-az host is the only alternate.
  r = Schedule(view, RequestOf(one), ScheduleOptions{});
  ASSERT_TRUE(r.all_placed);
  EXPECT_EQ(r.instances[0].chosen.host, "d-other-az");  // equal rank: by name
  ASSERT_EQ(r.instances[0].alternates.size(), 1u);
  EXPECT_EQ(r.instances[0].alternates[0].host, "e-ok");

  // A heartbeat 1000 s old is fresh 10 s after it.
  ScheduleOptions later = o;
  later.now_unix = testing::kSnapshotTime - 990;
  r = Schedule(view, RequestOf(one), later);
  ASSERT_TRUE(r.all_placed);
  EXPECT_EQ(r.instances[0].chosen.host, "c-stale");

  // Eight H100s on one cell cannot fit (four per node, numa_policy required): every host explained.
  FlavorShape eight = one;
  eight.gpus = 8;
  r = Schedule(view, RequestOf(eight), o);
  ASSERT_FALSE(r.all_placed);
  ExpectWhyNotCoversFleet(fleet, r, o, 0, "eight on one cell: ");
  std::map<std::string, int> causes;
  for (const CauseCount& c : r.why_not) causes[c.cause] = c.hosts;
  EXPECT_EQ(causes["disabled"], 1);
  EXPECT_EQ(causes["maintenance"], 1);
  EXPECT_EQ(causes["stale (no heartbeat from its agent)"], 1);
  EXPECT_EQ(causes["labels do not match --where"], 1);
  EXPECT_EQ(r.why_not.size(), 5u) << Describe(r);
  const std::vector<std::string> lines = DescribeCauses(r.why_not);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("1 host: "), std::string::npos) << lines[0];
}

// Twenty-four identical idle hosts: every one is an equally good answer. Without a seed the
// first by name; each seed picks one deterministically, and different replicas pick different
// hosts. The engine runs once for all of them (one distinct host state).
TEST(Scheduler, TiebreakSeedSpreadsReplicasOverEqualHosts) {
  std::mt19937_64 rng(77);
  FleetShape shape;
  shape.hosts = 24;
  shape.max_claims_per_host = 0;
  shape.disabled_percent = shape.maintenance_percent = shape.stale_percent = 0;
  shape.fixtures = {"hgx-h100"};
  TestFleet fleet = RandomFleet(rng, shape);
  for (HostRecord& r : fleet.snapshot.hosts) {  // same policy everywhere: equal keys
    r.policy = {};
    r.heartbeat_at.reset();
  }
  const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
  FlavorShape one;
  one.alias = "h100";
  one.gpus = 2;
  one.cells = 2;
  one.vcpus_per_cell = 8;
  const placement::PlacementRequest req = RequestOf(one);

  ScheduleResult plain = Schedule(view, req, ScheduleOptions{});
  ASSERT_TRUE(plain.all_placed);
  EXPECT_EQ(plain.instances[0].chosen.host, "h00");
  EXPECT_EQ(plain.engine_calls, 1);
  std::set<std::string> chosen;
  for (int replica = 0; replica < 12; ++replica) {
    ScheduleOptions o;
    o.tiebreak_seed = "scheduler-" + std::to_string(replica);
    ScheduleResult r = Schedule(view, req, o);
    ASSERT_TRUE(r.all_placed);
    EXPECT_EQ(Describe(Schedule(view, req, o)), Describe(r));
    EXPECT_EQ(r.engine_calls, 1);
    chosen.insert(r.instances[0].chosen.host);
    // Same placement on every equal host, only the name differs.
    placement::Placement p = r.instances[0].chosen.placement, q = plain.instances[0].chosen.placement;
    p.host = q.host = "";
    EXPECT_EQ(placement::WritePlacementJson(p), placement::WritePlacementJson(q));
  }
  EXPECT_GE(chosen.size(), 6u) << "12 replicas should spread over many of 24 equal hosts";
}

// Used hosts rank before idle ones under pack and after under spread; a host whose GPU node is
// partly used ranks before a host with the same free counts whose nodes are whole.
TEST(Scheduler, PackKeepsWholeHostsAndNodesFree) {
  TestFleet fleet;
  fleet.snapshot.taken_at = testing::kSnapshotTime;
  const testing::Sku& h100 = SkuNamed("hgx-h100");
  for (const char* name : {"a-idle", "b-one-gpu-used", "c-cpus-used"}) {
    HostRecord r;
    r.name = name;
    r.topology_id = h100.id;
    fleet.snapshot.hosts.push_back(r);
    fleet.snapshot.topologies[h100.id] = h100.hardware;
    fleet.sku[name] = &h100;
    fleet.usage[name];
  }
  FlavorShape gpu;
  gpu.alias = "h100";
  gpu.gpus = 1;
  gpu.vcpus_per_cell = 4;
  ASSERT_TRUE(AddEngineClaim(&fleet, "b-one-gpu-used", gpu));
  FlavorShape cpus;
  cpus.vcpus_per_cell = 4;
  ASSERT_TRUE(AddEngineClaim(&fleet, "c-cpus-used", cpus));
  const FleetView view = FleetView::FromSnapshot(fleet.snapshot);

  ScheduleOptions pack;
  pack.alternates = 2;
  ScheduleResult r = Schedule(view, RequestOf(gpu), pack);
  ASSERT_TRUE(r.all_placed);
  // Fewest free GPUs first; then c (4 CPUs used) before the idle a.
  EXPECT_EQ(r.instances[0].chosen.host, "b-one-gpu-used");
  ASSERT_EQ(r.instances[0].alternates.size(), 2u);
  EXPECT_EQ(r.instances[0].alternates[0].host, "c-cpus-used");
  EXPECT_EQ(r.instances[0].alternates[1].host, "a-idle");

  ScheduleOptions spread = pack;
  spread.strategy = FleetStrategy::kSpread;
  r = Schedule(view, RequestOf(gpu), spread);
  ASSERT_TRUE(r.all_placed);
  EXPECT_EQ(r.instances[0].chosen.host, "a-idle") << Describe(r);
}

// The count checks run on FleetView's rows (accelerator bitmasks) and fall back to the host's
// usage for devices the masks do not cover (NICs); the node bound applies to numa_policy required
// and legacy. Requests mixing NICs (ConnectX-7 PFs, some already claimed) with GPUs under each
// policy, one and two cells, must still pick exactly the brute-force best hosts.
TEST(SchedulerBruteForce, NicAndLegacyRequestsMatchBruteForce) {
  const placement::PciAliasTable aliases = placement::ParsePciAliases(nlohmann::json::parse(R"([
    {"name": "cx7", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-PF"},
    {"name": "cx7-req", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-PF", "numa_policy": "required"},
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "required"},
    {"name": "h100-legacy", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI"},
    {"name": "h100-preferred", "vendor_id": "10de", "product_id": "2330", "device_type": "type-PCI", "numa_policy": "preferred"},
    {"name": "rtx4090", "vendor_id": "10de", "product_id": "2684", "device_type": "type-PCI"}
  ])"), "test aliases");
  auto request = [&](const std::string& name, int cells, int vcpus, const std::string& pci) {
    placement::Flavor f;
    f.name = name;
    f.vcpus = vcpus;
    f.ram_mib = 4096;
    f.extra_specs.push_back({"hw:cpu_policy", "dedicated"});
    if (cells > 1) f.extra_specs.push_back({"hw:numa_nodes", std::to_string(cells)});
    f.extra_specs.push_back({"pci_passthrough:alias", pci});
    return placement::BuildRequest(f, aliases, "test flavor " + name);
  };
  int placed = 0, refused = 0, trials = 0;
  for (uint64_t seed = 9001; seed <= 10500; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 2, 7);
    shape.fixtures = {"hgx-h100", "hgx-h100", "devbox", "gaudi2-8hpu"};
    TestFleet fleet = RandomFleet(rng, shape);
    // Some hosts' NICs are claimed already.
    for (const HostRecord& r : std::vector<HostRecord>(fleet.snapshot.hosts)) {
      if (fleet.sku[r.name]->fixture != "hgx-h100" || !Chance(rng, 50)) continue;
      const placement::PlacementRequest nic = request("nic-claim", 1, 2, "cx7:" + std::to_string(Uniform(rng, 1, 6)));
      placement::PlaceResult fit = placement::Place(*fleet.sku[r.name]->hardware, fleet.usage[r.name], r.policy, nic);
      if (!fit.fits()) continue;
      placement::Placement p = *fit.placement;
      p.host = r.name;
      ASSERT_EQ(fleet.usage[r.name].Apply(p), "");
      fleet.snapshot.claims.push_back({testing::TestClaimId(static_cast<int>(fleet.snapshot.claims.size())), r.name,
                                       nic.flavor, "2024-01-01T00:00:00Z", p});
    }
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    static const char* const kGpu[] = {"h100", "h100-legacy", "h100-preferred", "rtx4090"};
    const int cells = Chance(rng, 40) ? 2 : 1;
    std::string pci;
    if (Chance(rng, 70)) pci = std::string(Chance(rng, 50) ? "cx7" : "cx7-req") + ":" + std::to_string(Uniform(rng, 1, 12));
    if (pci.empty() || Chance(rng, 60)) {
      const std::string gpu = kGpu[Uniform(rng, 0, 3)];
      pci += (pci.empty() ? "" : ",") + gpu + ":" + std::to_string(Uniform(rng, 1, gpu == "rtx4090" ? 1 : 8));
    }
    placement::PlacementRequest req;
    try {
      req = request("mixed", cells, 2 * cells * Uniform(rng, 1, 8), pci);
    } catch (const InputError&) {
      continue;
    }
    ++trials;
    ScheduleOptions o;
    o.strategy = Chance(rng, 30) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    o.alternates = Uniform(rng, 0, 3);
    const std::string context = "seed " + std::to_string(seed) + " pci " + pci + " cells " + std::to_string(cells) + ": ";
    const ScheduleResult r = Schedule(view, req, o);
    const std::vector<Fit> fits = BruteForce(fleet, fleet.usage, req, o);
    ASSERT_EQ(r.all_placed, !fits.empty()) << context << Describe(r);
    if (fits.empty()) {
      ++refused;
      ExpectWhyNotCoversFleet(fleet, r, o, 0, context);
      continue;
    }
    ++placed;
    ExpectBestFitsOffered(r, r.instances[0], fits, o.alternates, context);
  }
  EXPECT_GT(placed, trials / 5);
  EXPECT_GT(refused, trials / 10);
  std::cout << "[ measure  ] " << trials << " NIC/legacy requests: " << placed << " placed, " << refused << " refused\n";
}

// subset_size (Nova's host_subset_size, seeded): the chosen host is one of the best subset_size
// fitting hosts — fewer than subset_size fits rank strictly better — and every offered host is
// a fit; without a seed it changes nothing. Replicas with their own seeds spread over the subset.
TEST(SchedulerBruteForce, SubsetSizeChoosesAmongTheBestFits) {
  int spread_out = 0, trials = 0;
  for (uint64_t seed = 12001; seed <= 13000; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 4, 12);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    const placement::PlacementRequest req = RequestOf(RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet)));
    ScheduleOptions o;
    o.strategy = Chance(rng, 30) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    o.alternates = Uniform(rng, 0, 4);
    o.subset_size = Uniform(rng, 2, 6);
    const std::vector<Fit> fits = BruteForce(fleet, fleet.usage, req, o);
    if (fits.size() < 2) continue;
    ++trials;
    const std::string context = "seed " + std::to_string(seed) + " subset " + std::to_string(o.subset_size) + ": ";
    EXPECT_EQ(Describe(Schedule(view, req, o)), [&] {
      ScheduleOptions plain = o;
      plain.subset_size = 1;
      return Describe(Schedule(view, req, plain));
    }()) << context << "without a seed subset_size must change nothing";
    std::set<std::string> chosen;
    for (int replica = 0; replica < 8; ++replica) {
      ScheduleOptions seeded = o;
      seeded.tiebreak_seed = "replica-" + std::to_string(replica);
      const ScheduleResult r = Schedule(view, req, seeded);
      ASSERT_TRUE(r.all_placed) << context;
      const InstanceDecision& d = r.instances[0];
      std::map<std::string, Prefix> prefix;
      for (const Fit& f : fits) prefix[f.host] = f.prefix;
      ASSERT_TRUE(prefix.count(d.chosen.host)) << context << d.chosen.host << " does not fit";
      int better = 0;
      for (const Fit& f : fits) better += f.prefix < prefix[d.chosen.host] ? 1 : 0;
      EXPECT_LT(better, o.subset_size) << context << seeded.tiebreak_seed << " chose " << d.chosen.host << "\n"
                                       << Describe(r);
      EXPECT_LE(d.alternates.size(), static_cast<size_t>(o.alternates)) << context;
      std::set<std::string> offered = {d.chosen.host};
      for (size_t k = 0; k < d.alternates.size(); ++k) {
        ASSERT_TRUE(prefix.count(d.alternates[k].host)) << context << d.alternates[k].host << " does not fit";
        if (k > 0) {
          EXPECT_LE(prefix[d.alternates[k - 1].host], prefix[d.alternates[k].host]) << context;
        }
        EXPECT_TRUE(offered.insert(d.alternates[k].host).second) << context << "offered twice";
      }
      EXPECT_EQ(Describe(Schedule(view, req, seeded)), Describe(r)) << context << "not deterministic";
      chosen.insert(d.chosen.host);
    }
    if (chosen.size() > 1) ++spread_out;
  }
  EXPECT_GT(spread_out, trials / 3) << "replicas should often choose different hosts";
  std::cout << "[ measure  ] " << trials << " fleets: replicas chose different hosts in " << spread_out << "\n";
}

// skip_hosts (a replica's claims in flight): those hosts are never chosen nor offered, the
// rest keep their order, and when nothing else fits they are counted under their own cause.
TEST(SchedulerBruteForce, SkippedHostsAreNeverOffered) {
  int trials = 0;
  for (uint64_t seed = 14001; seed <= 14600; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 3, 9);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    const placement::PlacementRequest req = RequestOf(RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet)));
    ScheduleOptions o;
    o.alternates = Uniform(rng, 0, 3);
    std::set<std::string> skip;
    for (size_t i = 0; i < view.hosts().size(); ++i)
      if (Chance(rng, 40)) {
        o.skip_hosts.push_back(i);
        skip.insert(view.hosts()[i].record.name);
      }
    ++trials;
    const std::string context = "seed " + std::to_string(seed) + ": ";
    const ScheduleResult r = Schedule(view, req, o);
    const std::vector<Fit> fits = BruteForce(fleet, fleet.usage, req, o, skip);
    ASSERT_EQ(r.all_placed, !fits.empty()) << context << Describe(r);
    if (fits.empty()) {
      int skipped_eligible = 0;
      for (const HostRecord& h : fleet.snapshot.hosts)
        if (skip.count(h.name) && Eligible(h, o.where, fleet.snapshot.taken_at)) ++skipped_eligible;
      EXPECT_EQ(CauseHosts(r, "claim in flight"), skipped_eligible) << context << Describe(r);
      continue;
    }
    ExpectBestFitsOffered(r, r.instances[0], fits, o.alternates, context);
  }
  EXPECT_EQ(trials, 600);
}

// ---- Partitions: replica i of n prefers its share of the hosts ---------------------------------

// Brute force in the partition's order: the replica's own hosts (PartitionOfHost == index) first,
// each group in the documented order.
std::vector<Fit> PartitionOrder(std::vector<Fit> fits, const SchedulePartition& part) {
  std::stable_sort(fits.begin(), fits.end(), [&](const Fit& a, const Fit& b) {
    const bool a_out = PartitionOfHost(a.host, part.count) != part.index;
    const bool b_out = PartitionOfHost(b.host, part.count) != part.index;
    return !a_out && b_out;
  });
  return fits;
}

bool InShare(const std::string& host, const SchedulePartition& part) {
  return PartitionOfHost(host, part.count) == part.index;
}

// One instance with a partition: it fits iff some eligible host fits anywhere (a partition never
// loses capacity); the chosen host and alternates are exactly the brute-force order with the
// replica's own hosts first, so the chosen host is one of its own whenever one of its own fits;
// every candidate is a valid fit. With a seed and subset_size the choice stays among its own
// best fits. Partition {0, 1} changes nothing.
TEST(SchedulerBruteForce, PartitionPrefersItsOwnHostsAndLosesNoCapacity) {
  int placed = 0, refused = 0, own = 0, fell_back = 0, trials = 0;
  for (uint64_t seed = 15001; seed <= 17000; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 2, 12);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    const placement::PlacementRequest req = RequestOf(RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet)));
    ScheduleOptions o;
    o.strategy = Chance(rng, 30) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    o.where = RandomWhere(rng);
    o.alternates = Uniform(rng, 0, 4);
    o.partition.count = Uniform(rng, 2, 4);
    o.partition.index = Uniform(rng, 0, o.partition.count - 1);
    std::set<std::string> skip;
    if (Chance(rng, 20))
      for (size_t i = 0; i < view.hosts().size(); ++i)
        if (Chance(rng, 25)) {
          o.skip_hosts.push_back(i);
          skip.insert(view.hosts()[i].record.name);
        }
    ++trials;
    const std::string context = "seed " + std::to_string(seed) + " partition " + FormatPartition(o.partition) + ": ";
    const ScheduleResult r = Schedule(view, req, o);
    EXPECT_EQ(Describe(Schedule(view, req, o)), Describe(r)) << context << "not deterministic";
    const std::vector<Fit> fits = PartitionOrder(BruteForce(fleet, fleet.usage, req, o, skip), o.partition);
    ASSERT_EQ(r.all_placed, !fits.empty()) << context << "a partition must not lose capacity\n" << Describe(r);
    if (fits.empty()) {
      ++refused;
      if (skip.empty()) ExpectWhyNotCoversFleet(fleet, r, o, 0, context);
      continue;
    }
    ++placed;
    const InstanceDecision& d = r.instances[0];
    ExpectBestFitsOffered(r, d, fits, o.alternates, context);
    ExpectValidCandidate(fleet, view, fleet.usage, req, o, d.chosen, context);
    for (const Candidate& c : d.alternates) ExpectValidCandidate(fleet, view, fleet.usage, req, o, c, context);
    const bool own_fits = InShare(fits.front().host, o.partition);
    EXPECT_EQ(InShare(d.chosen.host, o.partition), own_fits) << context << Describe(r);
    (own_fits ? own : fell_back)++;

    // Seeded, with a subset: still one of its own best fits while it has one.
    ScheduleOptions seeded = o;
    seeded.tiebreak_seed = "replica-" + std::to_string(o.partition.index);
    seeded.subset_size = Uniform(rng, 2, 5);
    const ScheduleResult s = Schedule(view, req, seeded);
    ASSERT_TRUE(s.all_placed) << context;
    ExpectValidCandidate(fleet, view, fleet.usage, req, seeded, s.instances[0].chosen, context + "seeded: ");
    if (own_fits) {
      EXPECT_TRUE(InShare(s.instances[0].chosen.host, o.partition)) << context << "seeded subset left the share\n"
                                                                     << Describe(s);
      int own_better = 0;  // own fits ranked strictly better than the chosen one
      const Prefix chosen = RankPrefix(*fleet.sku.at(s.instances[0].chosen.host)->hardware,
                                       fleet.usage.at(s.instances[0].chosen.host),
                                       RecordOf(fleet, s.instances[0].chosen.host).policy, o.strategy);
      for (const Fit& f : fits) own_better += InShare(f.host, o.partition) && f.prefix < chosen ? 1 : 0;
      EXPECT_LT(own_better, seeded.subset_size) << context << Describe(s);
    }

    // Partition {0, 1} is no partition.
    ScheduleOptions whole = o, none = o;
    whole.partition = {0, 1};
    none.partition = {};
    EXPECT_EQ(Describe(Schedule(view, req, whole)), Describe(Schedule(view, req, none))) << context;
  }
  // Generator health: both answers, and both kinds of placement, must come up often.
  EXPECT_GT(placed, trials / 4);
  EXPECT_GT(refused, trials / 20);
  EXPECT_GT(own, placed / 4);
  EXPECT_GT(fell_back, placed / 20);
  std::cout << "[ measure  ] " << trials << " fleets: " << placed << " placed (" << own << " in the share, "
            << fell_back << " fell back), " << refused << " refused\n";
}

// Replicas 0..n-1 of n on the same view, each with its own seed (and sometimes a subset): two
// replicas whose shares both have a fitting host never choose the same host; each chooses in its
// share then. This is what keeps replicas from racing: they meet only when a share runs dry.
TEST(SchedulerBruteForce, ReplicasWithFitsInTheirSharesChooseDisjointHosts) {
  int pairs_with_fits = 0, trials = 0;
  for (uint64_t seed = 17001; seed <= 18500; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 2, 14);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    const placement::PlacementRequest req = RequestOf(RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet)));
    const int n = Chance(rng, 60) ? 2 : Uniform(rng, 3, 4);
    ScheduleOptions base;
    base.strategy = Chance(rng, 40) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    base.where = RandomWhere(rng);
    base.alternates = Uniform(rng, 0, 4);
    const int subset = Chance(rng, 30) ? Uniform(rng, 2, 6) : 1;
    const std::vector<Fit> fits = BruteForce(fleet, fleet.usage, req, base);
    ++trials;
    const std::string context = "seed " + std::to_string(seed) + " replicas " + std::to_string(n) + ": ";
    std::vector<std::string> chosen(static_cast<size_t>(n));
    std::vector<bool> has_fit(static_cast<size_t>(n), false);
    for (int i = 0; i < n; ++i) {
      ScheduleOptions o = base;
      o.partition = {i, n};
      o.tiebreak_seed = "replica-" + std::to_string(i);
      o.subset_size = subset;
      for (const Fit& f : fits) has_fit[static_cast<size_t>(i)] = has_fit[static_cast<size_t>(i)] || InShare(f.host, o.partition);
      const ScheduleResult r = Schedule(view, req, o);
      ASSERT_EQ(r.all_placed, !fits.empty()) << context << "replica " << i << "\n" << Describe(r);
      if (!r.all_placed) continue;
      chosen[static_cast<size_t>(i)] = r.instances[0].chosen.host;
      ExpectValidCandidate(fleet, view, fleet.usage, req, o, r.instances[0].chosen, context);
      if (has_fit[static_cast<size_t>(i)]) {
        EXPECT_TRUE(InShare(r.instances[0].chosen.host, o.partition)) << context << "replica " << i << Describe(r);
      }
    }
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) {
        if (!has_fit[static_cast<size_t>(i)] || !has_fit[static_cast<size_t>(j)]) continue;
        ++pairs_with_fits;
        EXPECT_NE(chosen[static_cast<size_t>(i)], chosen[static_cast<size_t>(j)])
            << context << "replicas " << i << " and " << j << " both have fits in their shares";
      }
  }
  EXPECT_GT(pairs_with_fits, trials / 5) << "the generator should often give both shares a fit";
  std::cout << "[ measure  ] " << trials << " fleets, " << pairs_with_fits << " replica pairs with fits in both shares\n";
}

// N instances with a partition: each is the best fit in the partition's order with the earlier
// instances applied (own hosts first, then all); all are placed whenever brute force places all.
TEST(SchedulerBruteForce, PartitionCountInstancesAreSequentialBestFits) {
  int complete = 0, trials = 0;
  for (uint64_t seed = 18501; seed <= 19500; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 3, 8);
    TestFleet fleet = RandomFleet(rng, shape);
    const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    FlavorShape flavor = RandomGpuShape(rng, testing::SomeHostsGpu(rng, fleet));
    if (flavor.gpus > 4) flavor.gpus = Uniform(rng, 1, 4);
    const placement::PlacementRequest req = RequestOf(flavor);
    ++trials;
    ScheduleOptions o;
    o.count = Uniform(rng, 2, 5);
    o.different_hosts = Chance(rng, 50);
    o.strategy = Chance(rng, 30) ? FleetStrategy::kSpread : FleetStrategy::kPack;
    o.alternates = Uniform(rng, 0, 3);
    o.partition.count = Uniform(rng, 2, 3);
    o.partition.index = Uniform(rng, 0, o.partition.count - 1);
    const std::string context = "seed " + std::to_string(seed) + " count " + std::to_string(o.count) + ": ";
    const ScheduleResult r = Schedule(view, req, o);
    std::map<std::string, placement::HostUsage> usage = fleet.usage;
    FleetView copy = view;
    std::set<std::string> used;
    for (size_t k = 0; k < r.instances.size(); ++k) {
      const InstanceDecision& d = r.instances[k];
      const std::string ctx = context + "instance " + std::to_string(k) + ": ";
      const std::vector<Fit> fits =
          PartitionOrder(BruteForce(fleet, usage, req, o, o.different_hosts ? used : std::set<std::string>{}), o.partition);
      ASSERT_FALSE(fits.empty()) << ctx;
      ExpectBestFitsOffered(r, d, fits, o.alternates, ctx);
      ExpectValidCandidate(fleet, copy, usage, req, o, d.chosen, ctx);
      used.insert(d.chosen.host);
      ASSERT_EQ(copy.Apply(d.chosen.host_index, d.chosen.placement), "") << ctx;
      ASSERT_EQ(usage[d.chosen.host].Apply(d.chosen.placement), "") << ctx;
    }
    if (r.all_placed) {
      ++complete;
    } else {
      EXPECT_TRUE(BruteForce(fleet, usage, req, o, o.different_hosts ? used : std::set<std::string>{}).empty())
          << context << "stopped at instance " << r.instances.size() << " but brute force fits it";
    }
  }
  EXPECT_GT(complete, trials / 8);
}

// The shares are even: names as fleets name hosts, split 2, 3, 4 and 8 ways, give every replica
// its share within 15 % (FNV-1a unmixed would split power-of-two counts by the names' digits).
TEST(Scheduler, PartitionsSplitHostNamesEvenly) {
  for (const char* pattern : {"gpu-%04d", "h100-%05d", "compute-%d.rack3.example.com", "nova-%03d"}) {
    for (int count : {2, 3, 4, 8}) {
      std::vector<int> per(static_cast<size_t>(count), 0);
      const int hosts = 2000;
      for (int i = 0; i < hosts; ++i) {
        char name[64];
        std::snprintf(name, sizeof name, pattern, i);
        const int p = PartitionOfHost(name, count);
        ASSERT_GE(p, 0);
        ASSERT_LT(p, count);
        EXPECT_EQ(p, PartitionOf(Fnv1a(name), count));
        ++per[static_cast<size_t>(p)];
      }
      for (int k = 0; k < count; ++k)
        EXPECT_NEAR(per[static_cast<size_t>(k)], hosts / count, 0.15 * hosts / count)
            << pattern << " split " << count << " ways, share " << k;
    }
  }
  EXPECT_EQ(PartitionOfHost("any", 1), 0);
  EXPECT_EQ(PartitionOfHost("any", 0), 0);
}

TEST(Scheduler, ParsePartitionReadsIndexSlashCount) {
  EXPECT_EQ(FormatPartition(ParsePartition("0/2", "--replica")), "0/2");
  EXPECT_EQ(ParsePartition("1/2", "--replica").index, 1);
  EXPECT_EQ(ParsePartition("1/2", "--replica").count, 2);
  EXPECT_EQ(FormatPartition(ParsePartition("0/1", "--replica")), "0/1");
  EXPECT_EQ(FormatPartition(ParsePartition("1023/1024", "--replica")), "1023/1024");
  for (const char* bad : {"", "2", "2/2", "3/2", "-1/2", "a/2", "0/", "/2", "0/0", "0/1025", "1/2/3", " 0/2", "0/99999999999"}) {
    try {
      ParsePartition(bad, "--replica");
      ADD_FAILURE() << "'" << bad << "' should be refused";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--replica"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("INDEX/COUNT"), std::string::npos) << e.what();
    }
  }
  // Schedule refuses a partition it cannot read rather than preferring nothing.
  TestFleet fleet;
  fleet.snapshot.taken_at = testing::kSnapshotTime;
  const FleetView view = FleetView::FromSnapshot(fleet.snapshot);
  ScheduleOptions o;
  o.partition = {2, 2};
  FlavorShape one;
  one.alias = "h100";
  one.gpus = 1;
  EXPECT_THROW(Schedule(view, RequestOf(one), o), InputError);
}

TEST(Scheduler, CauseOfNamesTheResource) {
  EXPECT_EQ(CauseOf("PCI alias 'h100': 2 free matching devices on the host, needs 4"), "PCI devices");
  EXPECT_EQ(CauseOf("host: 3 free pinnable CPUs, needs 8"), "CPUs");
  EXPECT_EQ(CauseOf("node 0: 10 free pages of 1048576 KiB, needs 128"), "memory");
  EXPECT_EQ(CauseOf("something else"), "other");
  EXPECT_EQ(DescribeCauses({{"PCI devices", 4812, "gpu-0042: x"}}),
            std::vector<std::string>{"4,812 hosts: PCI devices (e.g. gpu-0042: x)"});
}

}  // namespace
}  // namespace accel::fleet
