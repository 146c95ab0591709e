// dra_bench: what issue 15's "Measure" asks of the DRA driver (docs/benchmarks.md, "DRA").
//
//   dra_bench [--only prepare|publish|rss] [--iterations 1000] [--publishes 200]
//             [--accel build/accel] [--dir /tmp]
//
// All three parts by default; --dir is where the temp dirs go (it must be a real disk when the
// fsync cost matters: /tmp here is ext4 on the VM's disk, not tmpfs).
//
// 1. prepare: NodePrepareResources end to end through the real gRPC path, in this process:
//    FakeDraKubelet (the kubelet's DRA client) → DraPluginServer (unix socket) → ClaimPreparer →
//    KubeClient GET of the claim from FakeApiServer (HTTP on loopback, bearer token) → CDI spec
//    written atomically (fsync + directory fsync) → checkpoint written (the same). The inventory
//    is the fake HGX H100 (8 whole H100s of the fake NVML's example at the fixture's addresses,
//    its RDMA ports made from the PCI tree, tests/dra/inventory_fixtures.h), with a fake sysfs
//    root giving each RDMA device a uverbs node. Each iteration seeds a claim with a fresh uid on
//    the API server (not timed), times Prepare (v1), then times Unprepare separately. Cases:
//      8 GPUs + their 8 rail NICs (a fresh claim each time: no checkpoint hit);
//      the same 8+8 claim again (checkpoint hit: no API read, no write);
//      1 GPU + its rail NIC (fresh each time).
//    Beside them: the ClaimPreparer's own wall time (on_prepare; without gRPC), a bare
//    KubeClient GET of the claim, and a bare WriteFileAtomically of the 8+8 CDI spec's size in the
//    CDI directory after each 8+8 iteration (the fsync cost alone, on the same disk at the same
//    moment; a Prepare does two such writes, the spec and the checkpoint, an Unprepare one).
//    `--dir /dev/shm` (tmpfs: fsync is free) shows what is left without the disk.
// 2. publish: SlicePublisher::Publish against FakeApiServer after one GPU leaves the inventory
//    (the agent withdraws an unhealthy GPU, and its MIG devices, at a new pool generation), then
//    after it comes back, alternating over the GPUs; and a Publish with nothing changed (the
//    agent's resync). For the HGX H100 (whole GPUs + 12 NICs) and a large synthetic node
//    (BigHgx: 8 GPUs × 7 MIG + 12 NICs + 8 × 16 VFs). In the agent the health change is noticed
//    by its 1 s poll (kHealthPoll), so end to end a change reaches the API server within
//    poll + Publish.
// 3. rss: `accel serve` as a child process on the fake NVML (8 H100s), topology
//    fixtures/hosts/hgx-h100.json, exporter on 127.0.0.1:0 (collectInterval 1s), device plugin
//    and labels off; (a) dra off, (b) dra on against a FakeApiServer kubeconfig, with temp dirs:
//    after it has published, a FakeDraKubelet registered and prepared 4 claims, VmRSS / VmHWM /
//    RssAnon of /proc/<pid>/status at 10 s after start (both runs sampled at the same age).
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "dra/claim_preparer.h"
#include "dra/inventory.h"
#include "dra/inventory_fixtures.h"
#include "dra/plugin_server.h"
#include "dra/resource_slices.h"
#include "dra/slice_publisher.h"
#include "kubeapi/client.h"
#include "kubeapi/kube_config.h"
#include "support/child_process.h"
#include "support/fake_apiserver.h"
#include "support/fake_dra_kubelet.h"
#include "support/fake_nvml_config.h"
#include "support/fake_sysfs.h"

namespace {

namespace fs = std::filesystem;
using accel::test_support::ChildProcess;
using accel::test_support::FakeApiServer;
using accel::test_support::FakeDraKubelet;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char kClaims[] = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/";
const char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
const char kToken[] = "bench-token";

struct Args {
  std::string only;  ///< "" = every part
  int iterations = 1000;
  int publishes = 200;
  std::string accel = ACCEL_BINARY;
  std::string dir = fs::temp_directory_path().string();
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

/// CPU time of the calling thread, in ms: what the publisher itself costs (the fake API server
/// answers on its own threads).
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

void Report(const std::string& what, const std::vector<double>& ms) {
  std::printf("  %-58s n=%-5zu p50 %7.3f ms  p99 %7.3f ms  min %7.3f  max %7.3f\n", what.c_str(), ms.size(),
              Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(ms, 0.0), Percentile(ms, 1.0));
}

std::string Load() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string Filesystem(const std::string& path) {
  // The type of the filesystem holding `path` (fsync on tmpfs costs nothing).
  std::ifstream in("/proc/self/mounts");
  std::string best_type = "?";
  size_t best_len = 0;
  std::string dev, mnt, type, rest;
  const std::string real = fs::weakly_canonical(path).string();
  while (in >> dev >> mnt >> type && std::getline(in, rest)) {
    if (real.rfind(mnt, 0) == 0 && mnt.size() >= best_len) {
      best_len = mnt.size();
      best_type = type;
    }
  }
  return best_type;
}

/// A "Vm..."/"Rss..." line of /proc/<pid>/status, in KiB.
long StatusKib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

std::string Kubeconfig(const fs::path& dir, const FakeApiServer& api) {
  const fs::path p = dir / "kubeconfig";
  std::ofstream(p) << "apiVersion: v1\nkind: Config\n"
                   << "clusters: [{name: t, cluster: {server: '" << api.url() << "'}}]\n"
                   << "users: [{name: u, user: {token: " << kToken << "}}]\n"
                   << "contexts: [{name: c, context: {cluster: t, user: u}}]\n"
                   << "current-context: c\n";
  return p.string();
}

/// The fixture's sysfs with a uverbs node per RDMA device (the CDI spec hands
/// /dev/infiniband/uverbsN to the container), as tests/agent/dra_driver_test.cc writes it.
void WriteHostRoot(const accel::topology::HostTopology& host, const fs::path& root) {
  accel::testing::WriteFakeSysfs(host, root.string());
  int n = 0;
  for (const auto& d : host.pci)
    for (const auto& rdma : d.rdma_devices)
      accel::testing::WriteFakeFile(root.string(),
                                    "sys/class/infiniband_verbs/uverbs" + std::to_string(n++) + "/ibdev", rdma);
}

/// A claim allocated `devices` on pool node-a, seeded on the API server.
json SeedClaim(FakeApiServer& api, const std::string& name, const std::string& uid,
               const std::vector<std::string>& devices) {
  json results = json::array();
  for (const auto& d : devices)
    results.push_back({{"request", d.rfind("gpu", 0) == 0 ? "gpu" : "nic"},
                       {"driver", "accel.io"},
                       {"pool", "node-a"},
                       {"device", d}});
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}},
                {"spec", {{"devices", {{"requests", json::array()}}}}},
                {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
  return api.Put(kClaims + name, claim);
}

/// The inventory's whole GPUs and the NIC (a PF) on each one's rail.
std::vector<std::string> AlignedDevices(const accel::dra::Inventory& inv, size_t gpus) {
  std::vector<std::string> out;
  std::set<int> rails;
  for (const auto& d : inv.devices) {
    if (d.kind != accel::dra::DeviceKind::kGpu || out.size() >= gpus) continue;
    out.push_back(d.name);
    rails.insert(d.rail);
  }
  std::set<int> taken;
  for (const auto& d : inv.devices) {
    if (d.kind != accel::dra::DeviceKind::kNic || d.rail < 0 || !rails.count(d.rail) || taken.count(d.rail)) continue;
    const auto& nic = inv.fabric.nics[size_t(d.nic)];
    if (nic.is_vf) continue;
    taken.insert(d.rail);
    out.push_back(d.name);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// 1. NodePrepareResources

int RunPrepare(const Args& args) {
  const fs::path dir = fs::path(args.dir) / ("accel-dra-bench-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "reg");
  const accel::topology::HostTopology host = accel::kube::testing::Host("hgx-h100");
  WriteHostRoot(host, dir / "root");
  auto inventory = std::make_shared<const accel::dra::Inventory>(
      accel::dra::testing::Hgx("nvml/examples/h100x8-mig.json", /*whole_only=*/true));

  FakeApiServer api;
  api.RequireToken(kToken);
  accel::kubeapi::KubeClient client(accel::kubeapi::LoadKubeconfig(Kubeconfig(dir, api)));
  auto fetch = [&client](const accel::dra::ClaimRef& c) -> json {
    auto claim = client.Get(accel::kubeapi::ApiPath("resource.k8s.io/v1", "resourceclaims", c.namespace_, c.name));
    if (!claim) throw accel::SystemError("cannot read claim", c.namespace_ + "/" + c.name, "not found", "");
    return *claim;
  };
  std::vector<double> inner_ms;
  accel::dra::PreparerOptions po;
  po.cdi_dir = (dir / "cdi").string();
  po.state_dir = (dir / "state").string();
  po.device_nodes.host_root = (dir / "root").string();
  po.on_prepare = [&inner_ms](const accel::dra::ClaimRef&, std::chrono::nanoseconds t,
                              const accel::dra::PrepareResult&) {
    inner_ms.push_back(std::chrono::duration<double, std::milli>(t).count());
  };
  accel::dra::ClaimPreparer preparer(inventory, fetch, po);
  accel::dra::DraPluginOptions so;
  so.registry_dir = (dir / "reg").string();
  so.plugin_dir = (dir / "plugin").string();
  so.socket_check_interval = std::chrono::milliseconds(0);
  accel::dra::DraPluginServer server(so, &preparer);
  server.Start();
  FakeDraKubelet kubelet((dir / "reg").string());
  if (kubelet.Scan() != 1) {
    std::cerr << "registration failed: " << kubelet.last_error() << "\n";
    return 1;
  }

  const std::vector<std::string> big = AlignedDevices(*inventory, 8);
  const std::vector<std::string> small = AlignedDevices(*inventory, 1);
  if (big.size() != 16 || small.size() != 2) {
    std::cerr << "expected 8+8 and 1+1 aligned devices, got " << big.size() << " and " << small.size() << "\n";
    return 1;
  }
  std::printf("prepare: fake HGX H100, %zu devices in the inventory; claim 8+8 = {", inventory->devices.size());
  for (const auto& d : big) std::printf(" %s", d.c_str());
  std::printf(" }, 1+1 = { %s %s }\n  temp dir %s (%s); load %s\n", small[0].c_str(), small[1].c_str(),
              dir.c_str(), Filesystem(dir.string()).c_str(), Load().c_str());

  int failures = 0;
  auto prepare = [&](const accel::dra::ClaimRef& ref, size_t want) {
    std::map<std::string, accel::dra::PrepareResult> out;
    const auto t0 = Clock::now();
    grpc::Status st = kubelet.Prepare({ref}, accel::test_support::DraVersion::kV1, &out);
    const double ms = Ms(Clock::now() - t0);
    if (!st.ok() || out[ref.uid].error != "" || out[ref.uid].devices.size() != want) {
      if (++failures < 5)
        std::cerr << "prepare " << ref.uid << " failed: " << st.error_message() << " " << out[ref.uid].error << "\n";
    }
    return ms;
  };
  auto unprepare = [&](const accel::dra::ClaimRef& ref) {
    std::map<std::string, std::string> out;
    const auto t0 = Clock::now();
    grpc::Status st = kubelet.Unprepare({ref}, accel::test_support::DraVersion::kV1, &out);
    const double ms = Ms(Clock::now() - t0);
    if (!st.ok() || out[ref.uid] != "") ++failures;
    return ms;
  };

  // Warm-up: connections, first-time allocations.
  for (int i = 0; i < 20; ++i) {
    accel::dra::ClaimRef ref{"team-a", "warm-" + std::to_string(i), "warm-" + std::to_string(i)};
    SeedClaim(api, ref.name, ref.uid, big);
    prepare(ref, big.size());
    unprepare(ref);
  }

  std::vector<double> fresh, fresh_un, hit, small_fresh, small_un, get_ms, write_ms;
  inner_ms.clear();
  std::vector<double> inner_fresh, inner_hit;
  size_t spec_bytes = 0;
  for (int i = 0; i < args.iterations; ++i) {
    accel::dra::ClaimRef ref{"team-a", "uid-big-" + std::to_string(i), "big-" + std::to_string(i)};
    SeedClaim(api, ref.name, ref.uid, big);
    fresh.push_back(prepare(ref, big.size()));
    if (i == 0)
      for (const auto& e : fs::directory_iterator(dir / "cdi")) spec_bytes = fs::file_size(e.path());
    fresh_un.push_back(unprepare(ref));
    api.Remove(kClaims + ref.name);
    // The fsync cost alone, interleaved so that it meets the same disk as the Prepare beside it.
    const auto t0 = Clock::now();
    accel::WriteFileAtomically((dir / "cdi" / "bench-write.json").string(), std::string(spec_bytes, 'x'));
    write_ms.push_back(Ms(Clock::now() - t0));
    fs::remove(dir / "cdi" / "bench-write.json");
  }
  inner_fresh.swap(inner_ms);
  {
    accel::dra::ClaimRef ref{"team-a", "uid-hit", "hit"};
    SeedClaim(api, ref.name, ref.uid, big);
    prepare(ref, big.size());
    inner_ms.clear();
    for (int i = 0; i < args.iterations; ++i) hit.push_back(prepare(ref, big.size()));
    inner_hit.swap(inner_ms);
    unprepare(ref);
  }
  for (int i = 0; i < args.iterations; ++i) {
    accel::dra::ClaimRef ref{"team-a", "uid-small-" + std::to_string(i), "small-" + std::to_string(i)};
    SeedClaim(api, ref.name, ref.uid, small);
    small_fresh.push_back(prepare(ref, small.size()));
    small_un.push_back(unprepare(ref));
    api.Remove(kClaims + ref.name);
  }
  // The pieces alone: the API read, and an atomic write of the spec's size.
  SeedClaim(api, "get", "uid-get", big);
  for (int i = 0; i < args.iterations; ++i) {
    const auto t0 = Clock::now();
    fetch({"team-a", "uid-get", "get"});
    get_ms.push_back(Ms(Clock::now() - t0));
  }

  std::printf("  CDI spec of the 8+8 claim: %zu bytes\n", spec_bytes);
  Report("NodePrepareResources 8 GPU + 8 NIC, fresh uid (gRPC e2e)", fresh);
  Report("  ClaimPreparer::Prepare alone (on_prepare)", inner_fresh);
  Report("NodeUnprepareResources of it", fresh_un);
  Report("NodePrepareResources 8+8, checkpoint hit (gRPC e2e)", hit);
  Report("  ClaimPreparer::Prepare alone, checkpoint hit", inner_hit);
  Report("NodePrepareResources 1 GPU + 1 NIC, fresh uid (gRPC e2e)", small_fresh);
  Report("NodeUnprepareResources of it", small_un);
  Report("KubeClient GET of the claim alone (loopback HTTP)", get_ms);
  Report("WriteFileAtomically, spec size, between the 8+8 (fsync x2)", write_ms);
  std::printf("  failures: %d; load after %s\n", failures, Load().c_str());
  server.Stop();
  fs::remove_all(dir);
  return failures == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// 2. ResourceSlice publication

/// The inventory without GPU `gpu` (its index among whole GPUs) and its MIG devices.
accel::dra::Inventory Without(const accel::dra::Inventory& full, int gpu) {
  accel::dra::Inventory shown = full;
  shown.devices.clear();
  int seen = -1;
  std::string gone_pci;
  for (const auto& d : full.devices)
    if (d.kind == accel::dra::DeviceKind::kGpu && ++seen == gpu) gone_pci = d.pci_address;
  for (const auto& d : full.devices) {
    const bool gone = d.kind != accel::dra::DeviceKind::kNic && d.pci_address == gone_pci;
    if (!gone) shown.devices.push_back(d);
  }
  return shown;
}

void PublishCase(const std::string& label, const accel::dra::Inventory& full, int publishes) {
  FakeApiServer api;
  api.Put("/api/v1/nodes/node-a", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-a"}}}});
  accel::kubeapi::KubeClient client(api.Config());
  accel::dra::SlicePublisher publisher(&client, "accel.io", "node-a");
  const auto desired_full = accel::dra::BuildResourceSlices(full, 0);
  int gpus = 0;
  for (const auto& d : full.devices) gpus += d.kind == accel::dra::DeviceKind::kGpu;
  std::vector<std::vector<json>> without;
  for (int g = 0; g < gpus; ++g) without.push_back(accel::dra::BuildResourceSlices(Without(full, g), 0));
  size_t bytes = 0;
  for (const auto& s : desired_full) bytes += s.dump().size();

  auto first = publisher.Publish(desired_full);
  std::vector<double> leave, leave_cpu, back, same, build;
  accel::dra::PublishResult last;
  for (int i = 0; i < publishes; ++i) {
    const int g = i % gpus;
    auto t0 = Clock::now();
    auto slices = accel::dra::BuildResourceSlices(Without(full, g), 0);
    build.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    const double cpu0 = ThreadCpuMs();
    last = publisher.Publish(without[size_t(g)]);
    leave_cpu.push_back(ThreadCpuMs() - cpu0);
    leave.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    publisher.Publish(desired_full);
    back.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    publisher.Publish(desired_full);
    same.push_back(Ms(Clock::now() - t0));
  }
  std::printf("publish: %s: %zu devices in %zu slice(s) (%zu bytes of JSON); first publish created %d;"
              " a GPU leaving: %d updated, %d created, %d deleted; generation now %lld; load %s\n",
              label.c_str(), full.devices.size(), desired_full.size(), bytes, first.created, last.updated,
              last.created, last.deleted, api.List(kSlices).empty() ? 0LL : last.generation, Load().c_str());
  Report("Publish after a GPU left (new generation, slices rewritten)", leave);
  Report("  its CPU on the publishing thread (client side only)", leave_cpu);
  Report("Publish after it came back", back);
  Report("Publish with nothing changed (list only)", same);
  Report("BuildResourceSlices of that inventory (before Publish)", build);
}

int RunPublish(const Args& args) {
  PublishCase("HGX H100 (8 whole GPUs, 12 NICs)",
              accel::dra::testing::Hgx("nvml/examples/h100x8-mig.json", /*whole_only=*/true), args.publishes);
  PublishCase("large synthetic (8 GPUs x 7 MIG, 12 NICs + 8 x 16 VFs)", accel::dra::testing::BigHgx(16),
              args.publishes);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// 3. RSS of accel serve

struct Rss {
  long rss = -1, hwm = -1, anon = -1, file = -1;
  int prepared = 0;
  size_t slices = 0;
};

Rss RunServe(const Args& args, bool dra) {
  const fs::path dir = fs::path(args.dir) / ("accel-dra-rss-" + std::to_string(getpid()) + (dra ? "-on" : "-off"));
  fs::remove_all(dir);
  fs::create_directories(dir / "reg");
  const accel::topology::HostTopology host = accel::kube::testing::Host("hgx-h100");
  WriteHostRoot(host, dir / "root");
  json gpus = json::array();
  for (int i = 0; i < 8; ++i) gpus.push_back(accel::test_support::FakeH100(i, accel::test_support::kHgxH100Gpus[i]));
  std::ofstream(dir / "nvml.json") << accel::test_support::FakeNvmlConfig(gpus).dump();
  FakeApiServer api;
  api.RequireToken(kToken);
  api.Put("/api/v1/nodes/node-a", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-a"}}}});
  std::ostringstream y;
  y << "vendors: [nvidia]\n"
    << "libraries: {nvml: " << ACCEL_FAKE_NVML << "}\n"
    << "topology: " << ACCEL_SOURCE_DIR << "/fixtures/hosts/hgx-h100.json\n"
    << "exporter: {enabled: true, listen: '127.0.0.1:0', collectInterval: 1s, pods: never}\n"
    << "devicePlugin: {enabled: false}\n"
    << "labels: {enabled: false}\n";
  if (dra)
    y << "dra:\n  enabled: true\n  nodeName: node-a\n"
      << "  kubeconfig: " << Kubeconfig(dir, api) << "\n"
      << "  registryDir: " << (dir / "reg").string() << "\n"
      << "  pluginDir: " << (dir / "plugin").string() << "\n"
      << "  cdiDir: " << (dir / "cdi").string() << "\n"
      << "  stateDir: " << (dir / "state").string() << "\n"
      << "  hostRoot: " << (dir / "root").string() << "\n";
  std::ofstream(dir / "agent.yaml") << y.str();

  const auto started = Clock::now();
  ChildProcess agent({args.accel, "serve", "--config", (dir / "agent.yaml").string()},
                     {{"FAKE_NVML_CONFIG", (dir / "nvml.json").string()}, {"NODE_NAME", "node-a"}},
                     (dir / "serve.log").string());
  Rss out;
  if (dra) {
    bool up = accel::test_support::WaitUntil([&] { return !api.List(kSlices).empty() && fs::exists(dir / "reg" / "accel.io-reg.sock"); },
                                             std::chrono::seconds(20));
    if (!up) {
      std::cerr << "accel serve (dra on) did not publish:\n" << agent.Log();
      return out;
    }
    out.slices = api.List(kSlices).size();
    FakeDraKubelet kubelet((dir / "reg").string());
    if (kubelet.Scan() != 1) {
      std::cerr << "registration failed: " << kubelet.last_error() << "\n" << agent.Log();
      return out;
    }
    // The published devices: 4 claims of 2 GPUs + their rail NICs.
    std::map<int, std::vector<std::string>> by_rail;
    for (const json& slice : api.List(kSlices))
      for (const json& d : slice["spec"].value("devices", json::array())) {
        const json& a = d.at("attributes");
        if (!a.contains("rail")) continue;
        if (a.contains("sriovVf") && a["sriovVf"].value("bool", false)) continue;
        by_rail[a["rail"]["int"].get<int>()].push_back(d["name"]);
      }
    std::vector<std::vector<std::string>> per_rail;  // rail order: each rail's GPU and NIC
    for (const auto& entry : by_rail) per_rail.push_back(entry.second);
    for (int c = 0; c < 4; ++c) {
      std::vector<std::string> devices;
      for (int r = 2 * c; r < 2 * c + 2 && r < int(per_rail.size()); ++r)
        for (const auto& n : per_rail[size_t(r)]) devices.push_back(n);
      accel::dra::ClaimRef ref{"team-a", "uid-rss-" + std::to_string(c), "rss-" + std::to_string(c)};
      SeedClaim(api, ref.name, ref.uid, devices);
      std::map<std::string, accel::dra::PrepareResult> res;
      grpc::Status st = kubelet.Prepare({ref}, accel::test_support::DraVersion::kV1, &res);
      if (st.ok() && res[ref.uid].error.empty()) ++out.prepared;
      else std::cerr << "rss claim " << ref.uid << ": " << st.error_message() << " " << res[ref.uid].error << "\n";
    }
    std::this_thread::sleep_until(started + std::chrono::seconds(10));
    out.rss = StatusKib(agent.pid(), "VmRSS");
    out.hwm = StatusKib(agent.pid(), "VmHWM");
    out.anon = StatusKib(agent.pid(), "RssAnon");
    out.file = StatusKib(agent.pid(), "RssFile");
  } else {
    std::this_thread::sleep_until(started + std::chrono::seconds(10));
    if (!agent.Running()) {
      std::cerr << "accel serve (dra off) exited:\n" << agent.Log();
      return out;
    }
    out.rss = StatusKib(agent.pid(), "VmRSS");
    out.hwm = StatusKib(agent.pid(), "VmHWM");
    out.anon = StatusKib(agent.pid(), "RssAnon");
    out.file = StatusKib(agent.pid(), "RssFile");
  }
  agent.Stop(SIGTERM, std::chrono::seconds(10));
  fs::remove_all(dir);
  return out;
}

int RunRss(const Args& args) {
  std::printf("rss: accel serve on the fake NVML (8 H100), hgx-h100 topology, exporter 127.0.0.1:0 at 1 s;"
              " sampled 10 s after start; load %s\n", Load().c_str());
  Rss off = RunServe(args, false);
  Rss on = RunServe(args, true);
  std::printf("  dra off: VmRSS %ld KiB, VmHWM %ld KiB, RssAnon %ld KiB, RssFile %ld KiB\n", off.rss, off.hwm,
              off.anon, off.file);
  std::printf("  dra on:  VmRSS %ld KiB, VmHWM %ld KiB, RssAnon %ld KiB, RssFile %ld KiB (%zu slice(s), %d claims"
              " prepared)\n", on.rss, on.hwm, on.anon, on.file, on.slices, on.prepared);
  std::printf("  difference: VmRSS %+ld KiB, VmHWM %+ld KiB, RssAnon %+ld KiB; load after %s\n", on.rss - off.rss,
              on.hwm - off.hwm, on.anon - off.anon, Load().c_str());
  return off.rss > 0 && on.rss > 0 && on.prepared == 4 ? 0 : 1;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--only") a.only = v;
    else if (k == "--iterations") a.iterations = std::stoi(v);
    else if (k == "--publishes") a.publishes = std::stoi(v);
    else if (k == "--accel") a.accel = v;
    else if (k == "--dir") a.dir = v;
    else {
      std::cerr << "usage: dra_bench [--only prepare|publish|rss] [--iterations N] [--publishes N] "
                   "[--accel PATH] [--dir DIR]\n";
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  int rc = 0;
  try {
    if (args.only.empty() || args.only == "prepare") rc |= RunPrepare(args);
    if (args.only.empty() || args.only == "publish") rc |= RunPublish(args);
    if (args.only.empty() || args.only == "rss") rc |= RunRss(args);
  } catch (const std::exception& e) {
    std::cerr << "dra_bench: " << e.what() << "\n";
    return 1;
  }
  return rc;
}
