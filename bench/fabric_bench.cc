// fabric_bench: GPU↔NIC pairing cost, which every rank of a job pays at start-up.
//
//   BM_PairHgx                 PairGpusWithNics on fixtures/hosts/hgx-h100.json (8 GPUs,
//                              12 RDMA ports of which 8 are compute NICs), no port files
//   BM_PairAndSettingsHgx      the same plus BuildTrainingSettings and the shell env text:
//                              what `accel fabric env` does after loading the topology
//   BM_PairSynthetic/16        16 GPUs × 16 NICs behind 16 Broadcom two-level switches on
//                              two sockets, plus 4 storage NICs on root ports
//   BM_PairSynthetic/32        the same with 32 × 32
//   BM_ClassifyMatrixHgx       the (8 + 12)² path matrix alone, one PathClassifier
//   BM_Assign/<n>              AssignWithCapacity on a random n × n cost matrix
// Each benchmark checks its answer once before timing.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fabric/matching.h"
#include "fabric/pairing.h"
#include "fabric/path.h"
#include "fabric/training_env.h"
#include "topology/sources.h"

namespace accel::bench {
namespace {

using topology::HostTopology;
using topology::PciDevice;
using topology::PciRole;

std::string SourceDir() {
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/bench/"));
}

const HostTopology& Hgx() {
  static const HostTopology host =
      topology::LoadTopology(SourceDir() + "/fixtures/hosts/hgx-h100.json");
  return host;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fabric_bench: check failed: %s\n", what);
    std::exit(1);
  }
}

PciDevice Dev(const std::string& address, const std::string& parent, PciRole role, int numa,
              uint16_t vendor = 0, uint16_t device = 0) {
  PciDevice d;
  d.address = address;
  d.parent = parent;
  d.role = role;
  d.numa_node = numa;
  d.vendor_id = vendor;
  d.device_id = device;
  d.link_gbps = 63.015;
  return d;
}

// n GPUs and n NICs, one of each behind every two-level Broadcom switch, half per socket.
HostTopology Synthetic(int n) {
  HostTopology h;
  h.source = "synthetic";
  for (int node = 0; node < 2; ++node) {
    topology::NumaNode nn;
    nn.id = node;
    h.numa_nodes.push_back(nn);
  }
  char buf[64];
  auto addr = [&](int bus, int dev) {
    std::snprintf(buf, sizeof buf, "0000:%02x:%02x.0", bus, dev);
    return std::string(buf);
  };
  int bus = 0;
  for (int s = 0; s < n; ++s) {
    int numa = s * 2 / n;
    std::snprintf(buf, sizeof buf, "pci0000:%02x", bus);
    std::string hb = buf;
    h.pci.push_back(Dev(hb, "", PciRole::kHostBridge, numa));
    std::string rp = addr(bus, 1), up = addr(bus + 1, 0);
    h.pci.push_back(Dev(rp, hb, PciRole::kBridge, numa, 0x8086, 0x352a));
    h.pci.push_back(Dev(up, rp, PciRole::kBridge, numa, 0x1000, 0xc030));
    for (int side = 0; side < 2; ++side) {
      std::string down = addr(bus + 2, side), sub = addr(bus + 3, side),
                  leaf = addr(bus + 4, side), end = addr(bus + 5 + side, 0);
      h.pci.push_back(Dev(down, up, PciRole::kBridge, numa, 0x1000, 0xc030));
      h.pci.push_back(Dev(sub, down, PciRole::kBridge, numa, 0x1000, 0xc030));
      h.pci.push_back(Dev(leaf, sub, PciRole::kBridge, numa, 0x1000, 0xc030));
      PciDevice d = Dev(end, leaf, side == 0 ? PciRole::kGpu : PciRole::kNic, numa,
                        side == 0 ? 0x10de : 0x15b3, side == 0 ? 0x2330 : 0x1021);
      if (side == 1) d.rdma_devices = {"mlx5_" + std::to_string(s)};
      h.pci.push_back(d);
    }
    bus += 7;
  }
  for (int k = 0; k < 4; ++k) {  // storage NICs on their own root ports
    int numa = k / 2;
    std::snprintf(buf, sizeof buf, "pci0000:%02x", bus);
    std::string hb = buf;
    h.pci.push_back(Dev(hb, "", PciRole::kHostBridge, numa));
    h.pci.push_back(Dev(addr(bus, 1), hb, PciRole::kBridge, numa, 0x8086, 0x352a));
    PciDevice d = Dev(addr(bus + 1, 0), addr(bus, 1), PciRole::kNic, numa, 0x15b3, 0x1021);
    d.rdma_devices = {"mlx5_s" + std::to_string(k)};
    h.pci.push_back(d);
    bus += 2;
  }
  return h;
}

void BM_PairHgx(benchmark::State& state) {
  const HostTopology& host = Hgx();
  fabric::Fabric f = fabric::PairGpusWithNics(host, {});
  Check(f.UsedNics().size() == 8 && f.nics[f.pairs[0].nic].rdma_device == "mlx5_0",
        "hgx pairing");
  for (auto _ : state) {
    fabric::Fabric out = fabric::PairGpusWithNics(host, {});
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_PairHgx)->Unit(benchmark::kMicrosecond);

void BM_PairAndSettingsHgx(benchmark::State& state) {
  const HostTopology& host = Hgx();
  fabric::TrainingOptions options;
  for (auto _ : state) {
    fabric::Fabric f = fabric::PairGpusWithNics(host, {});
    fabric::TrainingSettings settings = fabric::BuildTrainingSettings(f, options);
    std::string env = fabric::RenderEnvShell(settings);
    benchmark::DoNotOptimize(env);
  }
}
BENCHMARK(BM_PairAndSettingsHgx)->Unit(benchmark::kMicrosecond);

void BM_PairSynthetic(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  HostTopology host = Synthetic(n);
  fabric::Fabric f = fabric::PairGpusWithNics(host, {});
  Check(static_cast<int>(f.UsedNics().size()) == n, "synthetic: every compute NIC used");
  for (const fabric::GpuNicPair& p : f.pairs) {
    Check(p.path.type == fabric::PathType::kPix, "synthetic: flattened Broadcom switch is PIX");
  }
  for (auto _ : state) {
    fabric::Fabric out = fabric::PairGpusWithNics(host, {});
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_PairSynthetic)->Arg(16)->Arg(32)->Unit(benchmark::kMicrosecond);

void BM_ClassifyMatrixHgx(benchmark::State& state) {
  const HostTopology& host = Hgx();
  std::vector<int> ends;
  fabric::PathClassifier paths(host);
  for (size_t i = 0; i < host.pci.size(); ++i) {
    if (host.pci[i].is_accelerator() || host.pci[i].is_rdma()) ends.push_back(static_cast<int>(i));
  }
  for (auto _ : state) {
    fabric::PathClassifier fresh(host);
    for (int a : ends) {
      for (int b : ends) benchmark::DoNotOptimize(fresh.Classify(a, b));
    }
  }
}
BENCHMARK(BM_ClassifyMatrixHgx)->Unit(benchmark::kMicrosecond);

void BM_Assign(benchmark::State& state) {
  size_t n = static_cast<size_t>(state.range(0));
  std::mt19937 rng(1);
  std::vector<fabric::PairCost> costs(n * n);
  for (size_t i = 0; i < n * n; ++i) {
    costs[i] = {4 + static_cast<int>(rng() % 6), 12.0 * (1 + rng() % 4),
                static_cast<int>(2 + rng() % 5), static_cast<int>(i % n)};
  }
  for (auto _ : state) benchmark::DoNotOptimize(fabric::AssignWithCapacity(n, n, costs));
}
BENCHMARK(BM_Assign)->Arg(8)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace accel::bench

BENCHMARK_MAIN();
