// Random small fleets for the scheduler and capacity property tests: hosts of the fixture SKUs
// (fixtures/hosts/*.json), random policies, labels and admin states, claims made by the placement
// engine itself (placement::Place + HostUsage::Apply), and random GPU flavors over the aliases of
// examples/flavors/aliases.json. Everything is seeded: a failing case names its seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/host_record.h"
#include "fleet/labels.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "topology/sources.h"

namespace accel::fleet::testing {

/// One fixture machine, stored as the fleet store keeps hardware (anonymized, by TopologyId).
struct Sku {
  std::string fixture;  ///< e.g. "hgx-h100"
  std::string gpu;      ///< the label value operators would give it: "h100", "mi300x", ...
  std::string id;       ///< TopologyId
  std::shared_ptr<const topology::HostTopology> hardware;
};

inline std::string SourcePath(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

/// The five fixture SKUs, loaded once.
inline const std::vector<Sku>& Skus() {
  static const std::vector<Sku> skus = [] {
    std::vector<Sku> out;
    const std::vector<std::pair<std::string, std::string>> fixtures = {
        {"hgx-h100", "h100"}, {"hgx-h200", "h200"}, {"epyc-nps4-mi300x", "mi300x"},
        {"gaudi2-8hpu", "gaudi2"}, {"devbox", "rtx4090"}};
    for (const auto& [fixture, gpu] : fixtures) {
      topology::HostTopology hw = topology::LoadTopology(SourcePath("fixtures/hosts/" + fixture + ".json"));
      out.push_back({fixture, gpu, TopologyId(hw), std::make_shared<const topology::HostTopology>(Anonymized(hw))});
    }
    return out;
  }();
  return skus;
}

inline const Sku& SkuNamed(const std::string& fixture) {
  for (const Sku& s : Skus())
    if (s.fixture == fixture) return s;
  throw std::runtime_error("no fixture " + fixture);
}

inline const placement::PciAliasTable& Aliases() {
  static const placement::PciAliasTable table = placement::LoadPciAliases(SourcePath("examples/flavors/aliases.json"));
  return table;
}

/// Portable draws (std::uniform_int_distribution differs between standard libraries).
inline int Uniform(std::mt19937_64& rng, int lo, int hi) {
  return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
}
inline bool Chance(std::mt19937_64& rng, int percent) { return Uniform(rng, 1, 100) <= percent; }

/// A dedicated-CPU flavor: `gpus` devices of `alias` ("" = none) over `cells` guest cells.
struct FlavorShape {
  std::string alias;      ///< "h100", "h200", "mi300x", "gaudi2", "rtx4090" or "" (no GPU)
  int gpus = 0;
  int cells = 1;
  int vcpus_per_cell = 4;
  int gib_per_cell = 8;
  bool pages_1g = false;  ///< hw:mem_page_size 1GB, else base pages
  bool isolate_threads = false;
  bool isolate_emulator = false;
  bool shared_cpus = false;  ///< no hw:cpu_policy (a floating guest when cells == 1 and no pages)
};

inline std::string ShapeName(const FlavorShape& s) {
  std::string n = (s.alias.empty() ? "cpu" : s.alias) + "x" + std::to_string(s.gpus) + "-c" +
                  std::to_string(s.cells) + "-v" + std::to_string(s.vcpus_per_cell * s.cells) + "-m" +
                  std::to_string(s.gib_per_cell * s.cells);
  if (s.pages_1g) n += "-1g";
  if (s.isolate_threads) n += "-iso";
  if (s.isolate_emulator) n += "-emu";
  if (s.shared_cpus) n += "-shared";
  return n;
}

/// Builds the request as `accel place` would from a flavor file. Throws InputError when the
/// flavor is one Nova would refuse (the generators below never make one).
inline placement::PlacementRequest RequestOf(const FlavorShape& s) {
  placement::Flavor f;
  f.name = ShapeName(s);
  f.vcpus = s.vcpus_per_cell * s.cells;
  f.ram_mib = static_cast<uint64_t>(s.gib_per_cell) * 1024 * s.cells;
  if (!s.shared_cpus) f.extra_specs.push_back({"hw:cpu_policy", "dedicated"});
  if (s.cells > 1) f.extra_specs.push_back({"hw:numa_nodes", std::to_string(s.cells)});
  if (s.pages_1g) f.extra_specs.push_back({"hw:mem_page_size", "1GB"});
  if (s.isolate_threads) f.extra_specs.push_back({"hw:cpu_thread_policy", "isolate"});
  if (s.isolate_emulator) f.extra_specs.push_back({"hw:emulator_threads_policy", "isolate"});
  if (!s.alias.empty()) f.extra_specs.push_back({"pci_passthrough:alias", s.alias + ":" + std::to_string(s.gpus)});
  return placement::BuildRequest(f, Aliases(), "test flavor " + f.name);
}

/// The flavors the scheduler tests ask for: 1-8 GPUs of h100/h200/mi300x, 1-2 cells, dedicated
/// CPUs, sometimes 1 GiB pages and isolate policies; one in ten asks for no GPU at all.
/// `likely_alias`, when one of those three, is asked for two times in three (pass the SKU of a
/// host of the fleet, so that the answer is not always "no host has that GPU").
inline FlavorShape RandomGpuShape(std::mt19937_64& rng, const std::string& likely_alias = "") {
  static const char* const kAliases[] = {"h100", "h200", "mi300x"};
  FlavorShape s;
  s.cells = Chance(rng, 35) ? 2 : 1;
  if (!Chance(rng, 10)) {
    const bool known = likely_alias == "h100" || likely_alias == "h200" || likely_alias == "mi300x";
    s.alias = known && Chance(rng, 67) ? likely_alias : kAliases[Uniform(rng, 0, 2)];
    // Mostly counts one host could hold under numa_policy required (an HGX has four GPUs per
    // node, the MI300X box one), sometimes any count of 1-8.
    const int per_cell = s.alias == "mi300x" ? 1 : 4;
    s.gpus = Chance(rng, 75) ? Uniform(rng, 1, per_cell * s.cells) : Uniform(rng, 1, 8);
  }
  // Mostly small, sometimes a node's worth (so CPUs and memory run out too).
  s.vcpus_per_cell = Chance(rng, 15) ? Uniform(rng, 24, 60) : Uniform(rng, 1, 16);
  s.gib_per_cell = Chance(rng, 15) ? Uniform(rng, 100, 400) : Uniform(rng, 1, 64);
  s.pages_1g = Chance(rng, 40);
  s.isolate_threads = Chance(rng, 15);
  s.isolate_emulator = Chance(rng, 15);
  return s;
}

/// What the random claims are made of: small guests of any kind, GPUs of the host's own SKU.
inline FlavorShape RandomFillerShape(std::mt19937_64& rng, const Sku& sku) {
  FlavorShape s;
  if (Chance(rng, 10)) {  // a floating guest: shared CPUs, no NUMA topology
    s.shared_cpus = true;
    s.vcpus_per_cell = Uniform(rng, 1, 8);
    s.gib_per_cell = Uniform(rng, 1, 16);
    return s;
  }
  if (Chance(rng, 70)) {
    s.alias = sku.gpu;
    s.gpus = Uniform(rng, 1, 2);
  }
  s.cells = 1;
  s.vcpus_per_cell = Uniform(rng, 1, 24);
  s.gib_per_cell = Uniform(rng, 1, 96);
  s.pages_1g = sku.fixture != "devbox" && Chance(rng, 50);
  s.isolate_threads = Chance(rng, 10);
  s.isolate_emulator = Chance(rng, 10);
  return s;
}

/// A fleet made for a test: the snapshot the store would return, plus what the test knows
/// independently of FleetView (each host's usage, summed from its claims here).
struct TestFleet {
  FleetSnapshot snapshot;
  std::map<std::string, placement::HostUsage> usage;  ///< host -> sum of its claims
  std::map<std::string, const Sku*> sku;              ///< host -> its hardware
};

struct FleetShape {
  int hosts = 6;
  int max_claims_per_host = 4;
  int disabled_percent = 8;
  int maintenance_percent = 6;
  int stale_percent = 8;
  /// Restrict SKUs to these fixtures (empty: all five, GPU SKUs more often).
  std::vector<std::string> fixtures;
};

inline constexpr int64_t kSnapshotTime = 1'700'000'000;

/// Makes a claim id as the store would ("c-" + 12 hex digits), numbered.
inline std::string TestClaimId(int n) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "c-%012x", n);
  return buf;
}

/// Places `shape` on `host` of `fleet` with the engine and records the claim; returns whether it fit.
inline bool AddEngineClaim(TestFleet* fleet, const std::string& host, const FlavorShape& shape) {
  const Sku& sku = *fleet->sku.at(host);
  const HostRecord* record = nullptr;
  for (const HostRecord& r : fleet->snapshot.hosts)
    if (r.name == host) record = &r;
  placement::PlacementRequest req;
  try {
    req = RequestOf(shape);
  } catch (const InputError&) {
    return false;
  }
  placement::HostUsage& usage = fleet->usage[host];
  placement::PlaceResult r = placement::Place(*sku.hardware, usage, record->policy, req);
  if (!r.fits()) return false;
  placement::Placement p = *r.placement;
  p.host = host;
  if (!usage.Apply(p).empty()) return false;  // never: the engine places on free units
  const int n = static_cast<int>(fleet->snapshot.claims.size());
  fleet->snapshot.claims.push_back({TestClaimId(n), host, req.flavor, "2024-01-01T00:00:00Z", p});
  return true;
}

/// A random fleet: hosts "h00".."hNN" (by name), labels gpu=<sku> and (mostly) az=a|b|c, a few
/// with a dedicated set or reserved memory, some disabled, in maintenance or stale, and random
/// claims made by the engine.
inline TestFleet RandomFleet(std::mt19937_64& rng, const FleetShape& shape) {
  TestFleet fleet;
  fleet.snapshot.taken_at = kSnapshotTime;
  std::vector<const Sku*> pool;
  if (shape.fixtures.empty()) {
    // GPU SKUs of the aliases the flavors ask for come up more often.
    for (const char* f : {"hgx-h100", "hgx-h100", "hgx-h200", "hgx-h200", "epyc-nps4-mi300x",
                          "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox"})
      pool.push_back(&SkuNamed(f));
  } else {
    for (const std::string& f : shape.fixtures) pool.push_back(&SkuNamed(f));
  }
  for (int i = 0; i < shape.hosts; ++i) {
    const Sku* sku = pool[Uniform(rng, 0, static_cast<int>(pool.size()) - 1)];
    HostRecord r;
    char name[16];
    std::snprintf(name, sizeof name, "h%02d", i);
    r.name = name;
    r.topology_id = sku->id;
    r.labels["gpu"] = sku->gpu;
    if (!Chance(rng, 15)) r.labels["az"] = std::string(1, static_cast<char>('a' + Uniform(rng, 0, 2)));
    if (Chance(rng, 20)) {
      // Keep the first two CPUs of every node for the host, as operators do.
      CpuSet dedicated = sku->hardware->AllCpus();
      for (const topology::NumaNode& n : sku->hardware->numa_nodes) {
        std::vector<int> cpus = n.cpus.ToVector();
        for (size_t k = 0; k < 2 && k < cpus.size(); ++k) dedicated.Remove(cpus[k]);
      }
      r.policy.cpu_dedicated_set = dedicated;
    }
    if (Chance(rng, 15)) r.policy.reserved_host_memory_mib_per_node = 4096;
    if (Chance(rng, 10)) r.policy.strategy = placement::Strategy::kSpread;
    const int state = Uniform(rng, 1, 100);
    if (state <= shape.disabled_percent) r.state = HostAdminState::kDisabled;
    else if (state <= shape.disabled_percent + shape.maintenance_percent) r.state = HostAdminState::kMaintenance;
    if (Chance(rng, 30)) {  // an agent host: heartbeating, or gone quiet
      r.stale_after_s = 300;
      r.heartbeat_at = Chance(rng, shape.stale_percent * 100 / 30) ? kSnapshotTime - 1000 : kSnapshotTime - 10;
    }
    r.generation = Uniform(rng, 0, 50);
    fleet.snapshot.hosts.push_back(r);
    fleet.snapshot.topologies[sku->id] = sku->hardware;
    fleet.sku[r.name] = sku;
    fleet.usage[r.name];
  }
  for (const HostRecord& r : std::vector<HostRecord>(fleet.snapshot.hosts)) {
    const int claims = Uniform(rng, 0, shape.max_claims_per_host);
    for (int k = 0; k < claims; ++k) AddEngineClaim(&fleet, r.name, RandomFillerShape(rng, *fleet.sku[r.name]));
  }
  return fleet;
}

/// The gpu label of a random host of `fleet`.
inline std::string SomeHostsGpu(std::mt19937_64& rng, const TestFleet& fleet) {
  const auto& hosts = fleet.snapshot.hosts;
  return hosts[Uniform(rng, 0, static_cast<int>(hosts.size()) - 1)].labels.at("gpu");
}

inline const HostRecord& RecordOf(const TestFleet& fleet, const std::string& host) {
  for (const HostRecord& r : fleet.snapshot.hosts)
    if (r.name == host) return r;
  throw std::runtime_error("no host " + host);
}

/// Whether the scheduler may consider `r` at all (the filters of scheduler.h, step 1).
inline bool Eligible(const HostRecord& r, const std::vector<LabelRequirement>& where, int64_t now) {
  return r.state == HostAdminState::kEnabled && !IsStale(r, now) && MatchesAll(where, r.labels);
}

}  // namespace accel::fleet::testing
