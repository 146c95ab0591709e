// telemetry_bench: the two costs the exporter pays on every scrape or pod refresh that unit tests
// used to bound with a clock (see docs/benchmarks.md, "Scrape copy and pod attribution"):
//
//   - serving a published exposition: HttpServer hands out the last body, so a scrape is a
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
#include "http/server.h"
#include "http/listen_address.h"
#include "telemetry/pod_attribution.h"
#include "telemetry/snapshot.h"
#include "support/telemetry_workloads.h"

namespace {

using accel::devices::Vendor;
using accel::kube::ContainerDevices;
using accel::telemetry::DeviceState;

/// GET /metrics of a 200 KiB body; range(0) = 1 asks for gzip.
void BM_ScrapeCopy(benchmark::State& state) {
  const bool gzip = state.range(0) != 0;
  auto body = std::make_shared<const std::string>(accel::test_support::SampleExposition(200 * 1024));
  accel::http::HttpServer server(
      {}, [body] { return body; }, [] { return true; });
  server.Start(accel::http::ParseListenAddress("127.0.0.1:0"));
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

void BM_AttributePods(benchmark::State& state) {
  std::vector<DeviceState> node = accel::test_support::FullMigNode();
  const std::vector<ContainerDevices> pods = accel::test_support::SixtyFourPods(node);
  accel::telemetry::AttributionStats stats;
  for (auto _ : state) stats = accel::telemetry::AttributePods(pods, &node);
  state.counters["matched"] = double(stats.matched);
  state.counters["unmatched"] = double(stats.unmatched);
}
BENCHMARK(BM_AttributePods)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
