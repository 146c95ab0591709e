// place_bench: times accel::placement::Place() on the scenarios of Nova's timing table
// (shared/reference/nova-numa.md §3.1 and §6), on the hosts nova_fit_demo.py builds.
//
// Every case has two benchmarks:
//   BM_Fit/<case>/cells:<host NUMA nodes>: Place(state, request) on a HostState built once before
//     the timed loop, as Nova's benchmark builds its host objects (and a scheduler keeps its host
//     state) outside the timed call. bench/nova_compare.py runs the same <case> through Nova and
//     matches the two by this name, so keep the two case lists in step.
//   BM_FitStateless/<case>/cells:<n>: the one-shot Place(host, usage, policy, request), which
//     builds the state inside every call.
//   BM_PlacementJson/write|read: one placement document (28 pinned vCPUs, 2 cells, 4 GPUs)
//     written and read, as the fleet's claim store does for every claim.
// Requests go through accel's flavor parser from the same extra specs the demo gives Nova's
// numa_get_constraints; parsing happens in setup, outside the timed loop (as in the demo).
// Each benchmark checks once, before timing, that the case fits (or does not) as intended and
// that both paths give the same answer, and reports the outcome as the counter "fits" (1 or 0)
// and the label "nodes:<host node per cell>".
#include <benchmark/benchmark.h>

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/host_state.h"
#include "placement/pci_alias.h"
#include "placement/placement_json.h"
#include "place_bench_host.h"

namespace accel::bench {
namespace {

using placement::PlaceResult;
using Specs = std::vector<std::pair<std::string, std::string>>;

/// One scenario: a demo host (with optional usage) and a flavor, and whether it must fit.
struct Case {
  std::string name;      ///< <case> in BM_Fit/<case>/cells:N; nova_compare.py uses the same key
  DemoHostShape shape;   ///< the host
  int vcpus = 4;         ///< flavor vCPUs
  uint64_t ram_mib = 8192;  ///< flavor RAM
  Specs extra;           ///< extra specs on top of the demo's base specs (same key replaces)
  int gpus = 1;          ///< GPUs wanted through alias h100 (0: no pci_passthrough:alias)
  int nearly_full = 0;   ///< first nodes made nearly full (nova_fit_demo.partially_used)
  bool fits = true;      ///< the intended outcome
};

// The demo's build_request(): dedicated CPUs, 1G pages, PCI affinity "required", then `extra`.
placement::Flavor DemoFlavor(const Case& c) {
  Specs specs = {{"hw:cpu_policy", "dedicated"},
                 {"hw:mem_page_size", "1GB"},
                 {"hw:pci_numa_affinity_policy", "required"}};
  for (const auto& [key, value] : c.extra) {
    bool replaced = false;
    for (auto& s : specs)
      if (s.first == key) {
        s.second = value;
        replaced = true;
      }
    if (!replaced) specs.emplace_back(key, value);
  }
  if (c.gpus > 0) specs.emplace_back("pci_passthrough:alias", "h100:" + std::to_string(c.gpus));
  return {"bench." + c.name, c.vcpus, c.ram_mib, specs};
}

// The alias the demo's InstancePCIRequest stands for; the flavor's policy overrides its own.
placement::PciAliasTable H100Alias() {
  placement::PciAlias a;
  a.name = "h100";
  a.specs.push_back({"h100", 0x10de, 0x2330, "type-PCI"});
  return placement::PciAliasTable({a}, "place_bench");
}

DemoHostShape Shape(int cells, int threads = 2, int shared_cores = 1) {
  DemoHostShape s;
  s.cells = cells;
  s.threads = threads;
  s.shared_cores = shared_cores;
  return s;
}

DemoHostShape GpusPerCell(int cells, int per_cell) {
  DemoHostShape s = Shape(cells);
  for (int n = 0; n < cells; ++n) s.gpus[n] = per_cell;
  return s;
}

Case Scenario(std::string name, DemoHostShape shape, int vcpus = 4, uint64_t ram_mib = 8192,
              Specs extra = {}, int gpus = 1) {
  Case c;
  c.name = std::move(name);
  c.shape = std::move(shape);
  c.vcpus = vcpus;
  c.ram_mib = ram_mib;
  c.extra = std::move(extra);
  c.gpus = gpus;
  return c;
}

Case NoFit(Case c) {
  c.fits = false;
  return c;
}

// The scenarios of Nova's timing tables, in their order; 16-node rows are accel's extension.
std::vector<Case> Cases() {
  std::vector<Case> v;
  const Specs numa2 = {{"hw:numa_nodes", "2"}}, numa4 = {{"hw:numa_nodes", "4"}};
  for (int n : {2, 4, 8, 16}) v.push_back(Scenario("gpu_1g_required", Shape(n)));
  for (int n : {2, 4, 8, 16}) v.push_back(Scenario("no_pci", Shape(n), 4, 8192, {}, 0));
  // isolate needs a host without SMT when cpu_dedicated_set is used (Nova bug 1889633 guard)
  for (int n : {2, 4, 8})
    v.push_back(Scenario("isolate_nosmt_gpu", Shape(n, 1), 4, 8192, {{"hw:cpu_thread_policy", "isolate"}}));
  for (int n : {2, 8})
    v.push_back(Scenario("require_gpu", Shape(n), 4, 8192, {{"hw:cpu_thread_policy", "require"}}));
  // 4 shared cores per node: a shared guest cell may not overcommit its own node's shared CPUs
  for (int n : {2, 8})
    v.push_back(Scenario("shared_2m", Shape(n, 2, 4), 4, 8192,
                         {{"hw:cpu_policy", "shared"}, {"hw:mem_page_size", "2MB"},
                          {"hw:pci_numa_affinity_policy", "legacy"}}, 0));
  for (int n : {2, 4, 8})
    v.push_back(Scenario("emulator_isolate_gpu", Shape(n), 4, 8192, {{"hw:emulator_threads_policy", "isolate"}}));
  for (int n : {4, 8}) v.push_back(Scenario("numa2_gpu", Shape(n), 8, 16384, numa2));
  for (int n : {8, 16}) v.push_back(Scenario("numa4_gpu", Shape(n), 16, 32768, numa4));
  for (int n : {8, 16}) v.push_back(Scenario("numa4_no_pci", Shape(n), 16, 32768, numa4, 0));
  v.push_back(NoFit(Scenario("nofit_cpu_numa4", Shape(8), 64, 32768, numa4, 0)));
  Case nearly_full = Scenario("nearly_full_gpu", Shape(8));
  nearly_full.nearly_full = 6;
  v.push_back(nearly_full);
  v.push_back(NoFit(Scenario("nofit_3gpu", GpusPerCell(8, 2), 4, 8192, {}, 3)));
  for (int n : {8, 16})
    v.push_back(NoFit(Scenario("nofit_5gpu_numa4", GpusPerCell(n, 1), 16, 32768, numa4, 5)));
  // Nova's permutation table: each guest cell needs 16 pCPUs, host cells have 14.
  for (auto [n, k] : {std::pair{8, 4}, {10, 5}, {12, 6}, {12, 8}, {16, 8}}) {
    const std::string guest = std::to_string(k);
    v.push_back(NoFit(Scenario("nofit_perm_guest" + guest, Shape(n), 16 * k, 1024ull * k,
                               {{"hw:numa_nodes", guest}}, 0)));
  }
  return v;
}

// "nodes:7" or "nodes:0,3" (host node of each guest cell); "" for no fit or a floating guest.
std::string NodesLabel(const PlaceResult& r) {
  if (!r.fits() || r.placement->cells.empty()) return "";
  std::string s;
  for (const placement::CellPlacement& c : r.placement->cells) {
    s += s.empty() ? "nodes:" : ",";
    s += std::to_string(c.host_node);
  }
  return s;
}

// The whole answer as text, to check that both paths agree.
std::string Answer(const PlaceResult& r) {
  return r.fits() ? placement::WritePlacementJson(*r.placement) : placement::NoFitToJson(r.no_fit).dump();
}

// Times one case; `prepared` picks Place(HostState, request) over the one-shot Place().
void BM_Fit(benchmark::State& state, const Case& c, bool prepared) {
  const DemoHost d = MakeDemoHost(c.shape);
  if (std::string bad = topology::CheckInvariants(d.host); !bad.empty()) {
    state.SkipWithError(("host: " + bad).c_str());
    return;
  }
  const placement::HostUsage usage = NearlyFull(d, c.nearly_full);
  placement::PlacementRequest request;
  try {
    request = placement::BuildRequest(DemoFlavor(c), H100Alias(), "place_bench " + c.name);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const placement::HostState host_state(d.host, usage, d.policy);
  const PlaceResult first = placement::Place(d.host, usage, d.policy, request);
  if (Answer(first) != Answer(placement::Place(host_state, request))) {
    state.SkipWithError("Place(state) and Place(host, usage, policy) disagree");
    return;
  }
  if (first.fits() != c.fits) {
    state.SkipWithError(c.fits ? ("expected a fit: " + first.no_fit.reasons.front()).c_str()
                               : "expected no fit, but it fits");
    return;
  }
  if (first.fits())
    if (std::string bad = placement::Validate(d.host, usage, d.policy, request, *first.placement); !bad.empty()) {
      state.SkipWithError(("invalid placement: " + bad).c_str());
      return;
    }
  if (prepared) {
    for (auto _ : state) {
      PlaceResult r = placement::Place(host_state, request);
      benchmark::DoNotOptimize(r);
    }
  } else {
    for (auto _ : state) {
      PlaceResult r = placement::Place(d.host, usage, d.policy, request);
      benchmark::DoNotOptimize(r);
    }
  }
  state.counters["fits"] = first.fits() ? 1 : 0;
  state.SetLabel(NodesLabel(first));
}

// A claim store's placement document: a 28-vCPU, 2-cell, 4-GPU guest (about the fleet benchmark's
// flavor) placed on a 4-node demo host with 2 GPUs per node. BM_PlacementJson/write is what a
// scheduler does for every claim it writes (and again for its answer); /read what every replica
// does for every claim another one made (the change feed) and a snapshot for every claim.
void BM_PlacementJson(benchmark::State& state, bool write) {
  Case c = Scenario("json", GpusPerCell(4, 2), 28, 65536, {{"hw:numa_nodes", "2"}}, 4);
  const DemoHost d = MakeDemoHost(c.shape);
  const PlaceResult r =
      placement::Place(d.host, placement::HostUsage{}, d.policy,
                       placement::BuildRequest(DemoFlavor(c), H100Alias(), "place_bench json"));
  if (!r.fits()) {
    state.SkipWithError(("expected a fit: " + r.no_fit.reasons.front()).c_str());
    return;
  }
  const std::string text = placement::WritePlacementJson(*r.placement);
  if (placement::WritePlacementJson(placement::ReadPlacementJson(text, "place_bench")) != text) {
    state.SkipWithError("the placement does not read back as written");
    return;
  }
  if (write) {
    for (auto _ : state) benchmark::DoNotOptimize(placement::WritePlacementJson(*r.placement));
  } else {
    for (auto _ : state) benchmark::DoNotOptimize(placement::ReadPlacementJson(text, "place_bench"));
  }
  state.counters["bytes"] = static_cast<double>(text.size());
}

}  // namespace
}  // namespace accel::bench

int main(int argc, char** argv) {
  for (bool prepared : {true, false})
    for (const accel::bench::Case& c : accel::bench::Cases()) {
      const std::string name = std::string(prepared ? "BM_Fit/" : "BM_FitStateless/") + c.name +
                               "/cells:" + std::to_string(c.shape.cells);
      benchmark::RegisterBenchmark(name.c_str(), accel::bench::BM_Fit, c, prepared)
          ->Unit(benchmark::kMicrosecond);
    }
  benchmark::RegisterBenchmark("BM_PlacementJson/write", accel::bench::BM_PlacementJson, true)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_PlacementJson/read", accel::bench::BM_PlacementJson, false)
      ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
