// telemetry_bench: the two costs the exporter pays on every scrape or pod refresh that unit tests
// used to bound with a clock (see docs/benchmarks.md, "Scrape copy and pod attribution"):
//
//   - serving a published exposition: MetricsServer hands out the last body, so a scrape is a
//     copy (identity) or the one cached compression (gzip) over loopback, httplib client
//     included. Target: p99 well under 20 ms for a 200 KiB body (the old test's bound).
//   - AttributePods on a full node: 64 pods (56 on MIG instances in every ID form, 8
//     time-slicing replicas) over 8 GPUs x 7 MIG instances. Target: under 1 ms per call.
//
//   build/bench/telemetry_bench [--benchmark_filter=Attribute]
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kube/pod_resources.h"
#include "telemetry/http_server.h"
#include "telemetry/listen_address.h"
#include "telemetry/pod_attribution.h"
#include "telemetry/snapshot.h"

namespace {

using accel::devices::Vendor;
using accel::kube::ContainerDevices;
using accel::telemetry::DeviceState;
using accel::telemetry::MigState;

/// About `bytes` of realistic exposition text (dcgm-exporter's label set).
std::string Exposition(size_t bytes) {
  std::string out = "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
                    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n";
  for (int i = 0; out.size() < bytes; ++i) {
    out += "DCGM_FI_DEV_GPU_TEMP{gpu=\"" + std::to_string(i % 8) +
           "\",UUID=\"GPU-3b9c4a1e-52f0-4d1b-9a4c-" + std::to_string(100000000000 + i) +
           "\",pci_bus_id=\"00000000:1B:00.0\",device=\"nvidia" + std::to_string(i % 8) +
           "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-17\"} " +
           std::to_string(30 + i % 50) + "\n";
  }
  return out;
}

/// GET /metrics of a 200 KiB body; range(0) = 1 asks for gzip.
void BM_ScrapeCopy(benchmark::State& state) {
  const bool gzip = state.range(0) != 0;
  auto body = std::make_shared<const std::string>(Exposition(200 * 1024));
  accel::telemetry::MetricsServer server(
      {}, [body] { return body; }, [] { return true; });
  server.Start(accel::telemetry::ParseListenAddress("127.0.0.1:0"));
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(true);
  client.set_decompress(false);
  client.set_tcp_nodelay(true);
  const httplib::Headers headers = {{"Accept-Encoding", gzip ? "gzip" : "identity"}};
  if (!client.Get("/metrics", headers)) state.SkipWithError("no answer from the server");
  size_t bytes = 0;
  for (auto _ : state) {
    auto res = client.Get("/metrics", headers);
    if (!res || res->status != 200) {
      state.SkipWithError("a scrape failed");
      break;
    }
    bytes = res->body.size();
  }
  state.counters["body_bytes"] = double(bytes);
  server.Stop();
}
BENCHMARK(BM_ScrapeCopy)->ArgName("gzip")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

DeviceState Gpu(unsigned index) {
  DeviceState d;
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%08x-0000-0000-0000-000000000000", index);
  d.identity.vendor = Vendor::kNvidia;
  d.identity.index = index;
  d.identity.uuid = text;
  std::snprintf(text, sizeof text, "0000:%02x:00.0", 0x10 + index);
  d.identity.pci_address = text;
  d.identity.serial = "serial" + std::to_string(index);
  d.mig_enabled = true;
  for (unsigned gi = 0; gi < 7; ++gi) {
    MigState m;
    std::snprintf(text, sizeof text, "MIG-%08x-%04x-0000-0000-000000000000", index, gi);
    m.instance.uuid = text;
    m.instance.gpu_instance_id = gi + 7;
    m.instance.compute_instance_id = 0;
    m.instance.profile = "1g.10gb";
    d.mig.push_back(std::move(m));
  }
  return d;
}

void BM_AttributePods(benchmark::State& state) {
  std::vector<DeviceState> node;
  for (unsigned i = 0; i < 8; ++i) node.push_back(Gpu(i));
  // 56 pods on one MIG instance each (MIG UUID, legacy MIG-GPU-.../gi/ci and GKE forms), and 8
  // time-slicing replicas.
  std::vector<ContainerDevices> pods;
  for (unsigned p = 0; p < 64; ++p) {
    unsigned gpu = p % 8, slot = p / 8;
    const DeviceState& d = node[gpu];
    std::string id;
    if (slot == 7) {
      id = d.identity.uuid + "::" + std::to_string(p);
    } else if (p % 3 == 0) {
      id = d.mig[slot].instance.uuid;
    } else if (p % 3 == 1) {
      id = "MIG-" + d.identity.uuid + "/" + std::to_string(slot + 7) + "/0";
    } else {
      id = "nvidia" + std::to_string(gpu) + "/gi" + std::to_string(slot + 7);
    }
    pods.push_back({"ns", "pod-" + std::to_string(p), "main", "nvidia.com/mig-1g.10gb", {id}});
  }
  accel::telemetry::AttributionStats stats;
  for (auto _ : state) stats = accel::telemetry::AttributePods(pods, &node);
  state.counters["matched"] = double(stats.matched);
  state.counters["unmatched"] = double(stats.unmatched);
}
BENCHMARK(BM_AttributePods)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
