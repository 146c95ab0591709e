// device_set_bench: BestDeviceSet (topology-aware GetPreferredAllocation) on 8- and 16-GPU
// interconnects, all devices available, no must-include devices.
//
//   BM_BestDeviceSet/<machine>/size:<k>   the branch and bound, as the plugin calls it; the
//                                         counter "vs_exhaustive" is how many times faster it is
//                                         than the exhaustive search on the same input
//   BM_Exhaustive/<machine>/size:<k>      BestDeviceSetExhaustive, the anchor
//   BM_BestDeviceSetAllSizes/<machine>    sizes 1..n in one iteration (time / n = mean per call)
//   BM_BestDeviceSetRandom16/size:<k>     64 random 16-GPU score matrices in turn
//
// Machines (built here, the same shapes as tests/kube/device_set_test.cc):
//   hgx8     HGX H100: 18 NVSwitch links everywhere, sockets of 4 (ties everywhere)
//   dgx1v8   DGX-1 Volta hybrid cube-mesh (go-gpuallocator's fixture)
//   islands16 two NVSwitch islands of 8 across both sockets, PCIe pairs and quads
//   dgx2_16  DGX-2: 6 NVSwitch links everywhere, PLX pairs, quads, host bridges, sockets
// Each benchmark checks before timing that the fast answer equals the exhaustive one.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kube/device_set.h"

namespace accel::bench {
namespace {

using devices::Interconnect;
using devices::PcieLink;

Interconnect Blank(int n) {
  Interconnect ic;
  for (int i = 0; i < n; ++i) ic.devices.push_back("gpu" + std::to_string(i));
  ic.pcie.assign(n * n, PcieLink::kCrossSocket);
  ic.links.assign(n * n, 0);
  return ic;
}
void Set(Interconnect& ic, int i, int j, int links, PcieLink level) {
  size_t n = ic.size();
  ic.links[i * n + j] = ic.links[j * n + i] = links;
  ic.pcie[i * n + j] = ic.pcie[j * n + i] = level;
}

Interconnect Hgx8() {
  Interconnect ic = Blank(8);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j)
      Set(ic, i, j, 18, i / 4 == j / 4 ? PcieLink::kSameNuma : PcieLink::kCrossSocket);
  ic.nvswitch = true;
  return ic;
}

Interconnect Dgx1Volta() {
  Interconnect ic = Blank(8);
  int edges[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                    {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                    {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) {
      PcieLink level = i / 2 == j / 2   ? PcieLink::kSingleSwitch
                       : i / 4 == j / 4 ? PcieLink::kHostBridge
                                        : PcieLink::kCrossSocket;
      Set(ic, i, j, 0, level);
    }
  for (auto& e : edges) ic.links[e[0] * 8 + e[1]] = ic.links[e[1] * 8 + e[0]] = e[2];
  return ic;
}

// Sixteen GPUs with PCIe pairs {2k,2k+1}, quads, halves per socket; `links(i, j)` NVLinks.
template <typename Links>
Interconnect Sixteen(Links links) {
  Interconnect ic = Blank(16);
  for (int i = 0; i < 16; ++i)
    for (int j = i + 1; j < 16; ++j) {
      PcieLink level = i / 2 == j / 2   ? PcieLink::kSingleSwitch
                       : i / 4 == j / 4 ? PcieLink::kMultiSwitch
                       : i / 8 == j / 8 ? PcieLink::kSameNuma
                                        : PcieLink::kCrossSocket;
      Set(ic, i, j, links(i, j), level);
    }
  return ic;
}
Interconnect Islands16() {
  return Sixteen([](int i, int j) { return (i / 4) % 2 == (j / 4) % 2 ? 12 : 0; });
}
Interconnect Dgx2() { return Sixteen([](int, int) { return 6; }); }

std::vector<int> All(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

double SecondsPerCall(const Interconnect& ic, int size, bool exhaustive) {
  std::vector<int> all = All(static_cast<int>(ic.size()));
  auto start = std::chrono::steady_clock::now();
  int calls = 0;
  do {
    auto got = exhaustive ? kube::BestDeviceSetExhaustive(ic, all, {}, size)
                          : kube::BestDeviceSet(ic, all, {}, size);
    benchmark::DoNotOptimize(got);
    ++calls;
  } while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(50));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
}

void BestDeviceSet(benchmark::State& state, Interconnect ic, int size) {
  std::vector<int> all = All(static_cast<int>(ic.size()));
  if (kube::BestDeviceSet(ic, all, {}, size) != kube::BestDeviceSetExhaustive(ic, all, {}, size)) {
    state.SkipWithError("BestDeviceSet differs from the exhaustive search");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(kube::BestDeviceSet(ic, all, {}, size));
  state.counters["vs_exhaustive"] =
      SecondsPerCall(ic, size, true) / SecondsPerCall(ic, size, false);
}

void Exhaustive(benchmark::State& state, Interconnect ic, int size) {
  std::vector<int> all = All(static_cast<int>(ic.size()));
  for (auto _ : state) benchmark::DoNotOptimize(kube::BestDeviceSetExhaustive(ic, all, {}, size));
}

void AllSizes(benchmark::State& state, Interconnect ic) {
  std::vector<int> all = All(static_cast<int>(ic.size()));
  for (auto _ : state)
    for (int size = 1; size <= static_cast<int>(ic.size()); ++size)
      benchmark::DoNotOptimize(kube::BestDeviceSet(ic, all, {}, size));
}

void Random16(benchmark::State& state, int size) {
  std::mt19937 rng(16);
  std::vector<Interconnect> machines;
  for (int m = 0; m < 64; ++m) {
    machines.push_back(Sixteen([&](int, int) {
      return std::bernoulli_distribution(0.5)(rng) ? std::uniform_int_distribution<int>(1, 18)(rng)
                                                   : 0;
    }));
  }
  std::vector<int> all = All(16);
  size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(kube::BestDeviceSet(machines[next], all, {}, size));
    next = (next + 1) % machines.size();
  }
}

void RegisterAll() {
  struct Machine {
    const char* name;
    Interconnect ic;
    std::vector<int> sizes;
  };
  std::vector<Machine> machines = {{"hgx8", Hgx8(), {1, 2, 4, 8}},
                                   {"dgx1v8", Dgx1Volta(), {1, 2, 4, 8}},
                                   {"islands16", Islands16(), {1, 2, 4, 8, 12}},
                                   {"dgx2_16", Dgx2(), {1, 2, 4, 8, 12}}};
  for (const Machine& m : machines) {
    for (int size : m.sizes) {
      std::string tail = std::string(m.name) + "/size:" + std::to_string(size);
      benchmark::RegisterBenchmark(("BM_BestDeviceSet/" + tail).c_str(), BestDeviceSet, m.ic, size)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_Exhaustive/" + tail).c_str(), Exhaustive, m.ic, size)
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark((std::string("BM_BestDeviceSetAllSizes/") + m.name).c_str(),
                                 AllSizes, m.ic)
        ->Unit(benchmark::kMicrosecond);
  }
  for (int size : {2, 4, 8, 12})
    benchmark::RegisterBenchmark(("BM_BestDeviceSetRandom16/size:" + std::to_string(size)).c_str(),
                                 Random16, size)
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace accel::bench

int main(int argc, char** argv) {
  accel::bench::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
