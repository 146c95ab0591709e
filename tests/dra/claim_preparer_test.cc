// ClaimPreparer on a hand-built HGX-like inventory (8 H100s, 8 compute NICs paired by rail,
// and a storage NIC): CDI specs, NCCL wired at allocation, the checkpoint across restarts,
// and the errors that stay with their claim.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "common/error.h"
#include "dra/claim_preparer.h"

namespace accel::dra {
namespace claim_preparer_test {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using Json = nlohmann::json;

// GPU k at bus 0x18 + 0x10k; NIC k's PCI order differs from its rail: GPU k is paired with
// NIC kPairOf[k] through one PCIe switch (PIX), except GPU 7 whose NIC is PXB away.
constexpr int kPairOf[8] = {0, 1, 3, 2, 4, 5, 7, 6};

std::shared_ptr<Inventory> Hgx() {
  auto inv = std::make_shared<Inventory>();
  inv->driver = "accel.io";
  inv->node_name = "node-1";
  fabric::Fabric& f = inv->fabric;
  for (int k = 0; k < 8; ++k) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "0000:%02x:00.0", 0x18 + 0x10 * k);
    kube::NodeDevice d;
    d.id = d.physical_id = "GPU-" + std::to_string(k);
    d.index = static_cast<unsigned>(k);
    d.minor = k;
    d.pci_address = addr;
    d.numa_node = k / 4;
    d.model = "NVIDIA H100 80GB HBM3";
    inv->node_devices.push_back(d);
    f.gpus.push_back(addr);
  }
  for (int n = 0; n < 9; ++n) {
    fabric::FabricNic nic;
    char addr[32];
    std::snprintf(addr, sizeof addr, "0000:%02x:00.0", 0x19 + 0x10 * n);
    nic.pci_address = addr;
    nic.rdma_device = "mlx5_" + std::to_string(n);
    nic.link_layer = "InfiniBand";
    nic.state = "ACTIVE";
    if (n == 8) nic.excluded = "storage/management NIC";
    f.nics.push_back(nic);
  }
  size_t e = f.gpus.size() + f.nics.size();
  f.matrix.assign(e * e, fabric::PathInfo{});
  for (int k = 0; k < 8; ++k) {
    for (int n = 0; n < 9; ++n) {
      fabric::PathInfo p;
      p.type = (n / 4 == k / 4) ? fabric::PathType::kPhb : fabric::PathType::kSys;
      if (n == kPairOf[k]) p.type = k == 7 ? fabric::PathType::kPxb : fabric::PathType::kPix;
      f.matrix[k * e + 8 + n] = p;
    }
    fabric::GpuNicPair pair;
    pair.gpu_address = f.gpus[k];
    pair.gpu_index = k;
    pair.numa_node = k / 4;
    pair.nic = kPairOf[k];
    pair.path = f.matrix[k * e + 8 + kPairOf[k]];
    f.pairs.push_back(pair);
  }
  for (int k = 0; k < 8; ++k) {
    DraDevice d;
    d.name = "gpu-" + std::to_string(k);
    d.kind = DeviceKind::kGpu;
    d.pci_address = f.gpus[k];
    d.node_device = k;
    d.rail = kPairOf[k];
    inv->devices.push_back(d);
  }
  for (int n = 0; n < 9; ++n) {
    DraDevice d;
    d.name = "nic-" + std::to_string(n);
    d.kind = DeviceKind::kNic;
    d.pci_address = f.nics[n].pci_address;
    d.nic = n;
    d.rail = n < 8 ? n : -1;
    inv->devices.push_back(d);
  }
  return inv;
}

Json ClaimJson(const std::string& uid, const std::vector<std::pair<std::string, std::string>>& devs,
               const std::string& pool = "node-1") {
  Json results = Json::array();
  for (const auto& [request, device] : devs)
    results.push_back({{"request", request}, {"driver", "accel.io"}, {"pool", pool},
                       {"device", device}});
  return {{"metadata", {{"namespace", "team-a"}, {"name", "claim-" + uid}, {"uid", uid}}},
          {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

ClaimRef Ref(const std::string& uid) { return {"team-a", uid, "claim-" + uid}; }

// 8 GPUs and their 8 NICs, requested as "gpus" and "nics".
std::vector<std::pair<std::string, std::string>> EightPairs() {
  std::vector<std::pair<std::string, std::string>> out;
  for (int k = 0; k < 8; ++k) out.push_back({"gpus", "gpu-" + std::to_string(k)});
  for (int n = 0; n < 8; ++n) out.push_back({"nics", "nic-" + std::to_string(n)});
  return out;
}

class PreparerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accel-preparer-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    for (int n = 0; n < 9; ++n)
      fs::create_directories(dir_ / "host/sys/class/infiniband" / ("mlx5_" + std::to_string(n)) /
                             "device/infiniband_verbs" / ("uverbs" + std::to_string(n)));
    options_.cdi_dir = (dir_ / "cdi").string();
    options_.state_dir = (dir_ / "state").string();
    options_.device_nodes.host_root = (dir_ / "host").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  ClaimPreparer::FetchClaim Fetch() {
    return [this](const ClaimRef& ref) -> Json {
      ++fetches_;
      auto it = claims_.find(ref.uid);
      if (it == claims_.end()) throw std::runtime_error("resourceclaims \"" + ref.name + "\" not found (404)");
      return it->second;
    };
  }
  std::unique_ptr<ClaimPreparer> Make(std::shared_ptr<Inventory> inv = Hgx()) {
    return std::make_unique<ClaimPreparer>(inv, Fetch(), options_,
                                           [this](const std::string& l) { logs_.push_back(l); });
  }
  Json Spec(const std::string& uid) {
    std::ifstream in(dir_ / "cdi" / ("k8s.accel.io-claim_" + uid + ".json"));
    if (!in) return nullptr;
    return Json::parse(in);
  }
  // The spec's claim-wide env as a map.
  static std::map<std::string, std::string> Env(const Json& spec) {
    std::map<std::string, std::string> out;
    if (!spec.contains("containerEdits") || !spec["containerEdits"].contains("env")) return out;
    for (const Json& kv : spec["containerEdits"]["env"]) {
      std::string s = kv.get<std::string>();
      out[s.substr(0, s.find('='))] = s.substr(s.find('=') + 1);
    }
    return out;
  }
  size_t FilesIn(const fs::path& d) {
    std::error_code ec;
    if (!fs::exists(d, ec)) return 0;
    return static_cast<size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
  }

  fs::path dir_;
  PreparerOptions options_;
  std::map<std::string, Json> claims_;
  std::atomic<int> fetches_{0};
  std::vector<std::string> logs_;
};

TEST_F(PreparerTest, EightGpusEightNicsGetNcclWired) {
  claims_["u8"] = ClaimJson("u8", EightPairs());
  auto p = Make();
  PrepareResult r = p->Prepare(Ref("u8"));
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 16u);
  EXPECT_THAT(r.devices[0].request_names, ElementsAre("gpus"));
  EXPECT_EQ(r.devices[0].pool_name, "node-1");
  EXPECT_EQ(r.devices[0].device_name, "gpu-0");
  EXPECT_THAT(r.devices[0].cdi_device_ids, ElementsAre("k8s.accel.io/claim=u8-gpu-0"));
  EXPECT_THAT(r.devices[15].cdi_device_ids, ElementsAre("k8s.accel.io/claim=u8-nic-7"));

  Json spec = Spec("u8");
  ASSERT_FALSE(spec.is_null());
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "k8s.accel.io/claim");
  ASSERT_EQ(spec["devices"].size(), 16u);
  EXPECT_EQ(spec["devices"][2]["name"], "u8-gpu-2");
  EXPECT_EQ(spec["devices"][2]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia2");
  EXPECT_EQ(spec["devices"][11]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/infiniband/uverbs3");
  auto env = Env(spec);
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "GPU-0,GPU-1,GPU-2,GPU-3,GPU-4,GPU-5,GPU-6,GPU-7");
  // The NICs the pairs use, PCI order, with ports; the storage NIC mlx5_8 stays out.
  EXPECT_EQ(env["NCCL_IB_HCA"],
            "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "=eth0");
  EXPECT_EQ(env["NCCL_NET_GDR_LEVEL"], "PXB");  // GPU 7's NIC is two switches away
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["UCX_TLS"], "rc,sm,self,cuda_copy,cuda_ipc");
  for (int k = 0; k < 8; ++k)
    EXPECT_EQ(env["ACCEL_UCX_NET_DEVICES_" + std::to_string(k)],
              "mlx5_" + std::to_string(kPairOf[k]) + ":1");
  EXPECT_FALSE(env.count("NCCL_TOPO_FILE"));
  EXPECT_FALSE(spec["containerEdits"].contains("mounts"));
}

TEST_F(PreparerTest, OneGpuAndItsNic) {
  claims_["u1"] = ClaimJson("u1", {{"pair/gpu", "gpu-2"}, {"pair/nic", "nic-3"}});
  PrepareResult r = Make()->Prepare(Ref("u1"));
  ASSERT_EQ(r.error, "");
  auto env = Env(Spec("u1"));
  EXPECT_EQ(env["NCCL_IB_HCA"], "=mlx5_3:1");
  EXPECT_EQ(env["NCCL_NET_GDR_LEVEL"], "PIX");
  EXPECT_EQ(env["ACCEL_UCX_NET_DEVICES_0"], "mlx5_3:1");
  EXPECT_FALSE(env.count("ACCEL_UCX_NET_DEVICES_1"));
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "GPU-2");
}

TEST_F(PreparerTest, GpusOnlyOrNicsOnlyGetNoNcclEnv) {
  claims_["g"] = ClaimJson("g", {{"gpu", "gpu-0"}, {"gpu", "gpu-1"}});
  claims_["n"] = ClaimJson("n", {{"nic", "nic-0"}});
  auto p = Make();
  ASSERT_EQ(p->Prepare(Ref("g")).error, "");
  ASSERT_EQ(p->Prepare(Ref("n")).error, "");
  auto g = Env(Spec("g"));
  EXPECT_EQ(g["NVIDIA_VISIBLE_DEVICES"], "GPU-0,GPU-1");
  EXPECT_FALSE(g.count("NCCL_IB_HCA"));
  EXPECT_FALSE(g.count("NCCL_SOCKET_IFNAME"));
  EXPECT_THAT(Env(Spec("n")), IsEmpty());
  // The NIC-only claim has no NVIDIA nodes.
  Json n = Spec("n");
  EXPECT_EQ(n["devices"][0]["containerEdits"]["deviceNodes"].size(), 2u);
}

TEST_F(PreparerTest, GpuWithAnotherNicIsRepairedWithinTheClaim) {
  // GPU 0 (NUMA 0) with NICs 5 (NUMA 1: SYS) and 1 (NUMA 0: PHB): neither is its own pair.
  claims_["x"] = ClaimJson("x", {{"gpu", "gpu-0"}, {"nic", "nic-5"}, {"nic", "nic-1"}});
  ASSERT_EQ(Make()->Prepare(Ref("x")).error, "");
  auto env = Env(Spec("x"));
  EXPECT_EQ(env["ACCEL_UCX_NET_DEVICES_0"], "mlx5_1:1");
  EXPECT_EQ(env["NCCL_IB_HCA"], "=mlx5_1:1,mlx5_5:1");  // the paired one, then the other
  EXPECT_EQ(env["NCCL_NET_GDR_LEVEL"], "PXB");          // PHB pair: capped at NCCL's ceiling
}

TEST_F(PreparerTest, ClaimSeenAsOneDeviceForTwoRequestsAndOptions) {
  options_.nccl.topo_file = (dir_ / "topo.xml").string();
  options_.nccl.socket_ifname = "bond0";
  options_.nccl.fabric_design = "rail";
  Json c = ClaimJson("o", {{"a", "gpu-4"}, {"b", "gpu-4"}, {"nic", "nic-4"}});
  c["status"]["allocation"]["devices"]["config"] = {
      {{"source", "FromClaim"},
       {"opaque", {{"driver", "accel.io"}, {"parameters", {{"ncclSocketIfname", "^lo,docker"}}}}}}};
  claims_["o"] = c;
  PrepareResult r = Make()->Prepare(Ref("o"));
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_THAT(r.devices[0].request_names, ElementsAre("a", "b"));
  Json spec = Spec("o");
  auto env = Env(spec);
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "^lo,docker");
  EXPECT_EQ(env["NCCL_CROSS_NIC"], "0");
  EXPECT_EQ(env["NCCL_TOPO_FILE"], "/etc/accel/nccl-topo.xml");
  EXPECT_EQ(spec["containerEdits"]["mounts"][0]["hostPath"], (dir_ / "topo.xml").string());
  EXPECT_EQ(spec["containerEdits"]["mounts"][0]["containerPath"], "/etc/accel/nccl-topo.xml");

  c["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"] = {{"nccl", false}};
  c["metadata"]["uid"] = "o2";
  claims_["o2"] = c;
  ASSERT_EQ(Make()->Prepare(Ref("o2")).error, "");
  EXPECT_FALSE(Env(Spec("o2")).count("NCCL_IB_HCA"));
}

TEST_F(PreparerTest, IdempotentAndAcrossRestartsWithoutFetching) {
  claims_["u8"] = ClaimJson("u8", EightPairs());
  std::vector<PreparedDevice> first;
  {
    auto p = Make();
    first = p->Prepare(Ref("u8")).devices;
    EXPECT_EQ(fetches_, 1);
    PrepareResult again = p->Prepare(Ref("u8"));
    EXPECT_EQ(again.error, "");
    EXPECT_EQ(fetches_, 1);
    EXPECT_EQ(again.devices.size(), first.size());
    EXPECT_EQ(p->stats().from_checkpoint, 1u);
  }
  claims_.clear();  // the API server is away: the checkpoint must answer
  auto restarted = Make();
  PrepareResult r = restarted->Prepare(Ref("u8"));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(fetches_, 1);
  ASSERT_EQ(r.devices.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(r.devices[i].device_name, first[i].device_name);
    EXPECT_EQ(r.devices[i].cdi_device_ids, first[i].cdi_device_ids);
  }
  // A reboot empties /var/run/cdi but not the state dir: the spec is made again.
  fs::remove(dir_ / "cdi" / "k8s.accel.io-claim_u8.json");
  claims_["u8"] = ClaimJson("u8", EightPairs());
  EXPECT_EQ(restarted->Prepare(Ref("u8")).error, "");
  EXPECT_EQ(fetches_, 2);
  EXPECT_FALSE(Spec("u8").is_null());
}

TEST_F(PreparerTest, CorruptCheckpointStartsEmpty) {
  fs::create_directories(dir_ / "state");
  std::ofstream(dir_ / "state" / "checkpoint.json") << "\x01garbage";
  claims_["u1"] = ClaimJson("u1", {{"gpu", "gpu-0"}});
  auto p = Make();
  EXPECT_THAT(logs_, Contains(HasSubstr("checkpoint.json.corrupt")));
  EXPECT_EQ(p->Prepare(Ref("u1")).error, "");
}

TEST_F(PreparerTest, UnknownDeviceIsThatClaimsErrorOnly) {
  claims_["bad"] = ClaimJson("bad", {{"gpu", "gpu-0"}, {"gpu", "gpu-9"}});
  claims_["good"] = ClaimJson("good", {{"gpu", "gpu-1"}});
  claims_["away"] = ClaimJson("away", {{"gpu", "gpu-1"}}, "node-2");
  auto p = Make();
  PrepareResult bad = p->Prepare(Ref("bad"));
  EXPECT_THAT(bad.error, HasSubstr("device gpu-9 is not published by this node (pool node-1): "));
  EXPECT_THAT(bad.devices, IsEmpty());
  EXPECT_THAT(p->Prepare(Ref("away")).error,
              HasSubstr("device gpu-1 of pool node-2 is not this node's (pool node-1)"));
  EXPECT_EQ(p->Prepare(Ref("good")).error, "");
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 1u);
  EXPECT_EQ(p->Prepared().size(), 1u);
  EXPECT_EQ(p->stats().failed, 2u);
  EXPECT_THAT(logs_, Contains(HasSubstr("gpu-9")));
}

TEST_F(PreparerTest, ApiErrorsAndBadClaims) {
  auto p = Make();
  EXPECT_THAT(p->Prepare(Ref("missing")).error,
              HasSubstr("cannot read ResourceClaim team-a/claim-missing: resourceclaims"));
  claims_["stale"] = ClaimJson("other-uid", {{"gpu", "gpu-0"}});
  EXPECT_THAT(p->Prepare(Ref("stale")).error, HasSubstr("metadata.uid"));
  claims_["junk"] = Json::array({1, 2});
  EXPECT_THAT(p->Prepare(Ref("junk")).error, HasSubstr("is not a JSON object"));
  Json unalloc = ClaimJson("un", {});
  unalloc.erase("status");
  claims_["un"] = unalloc;
  EXPECT_THAT(p->Prepare(Ref("un")).error, HasSubstr("not allocated"));
  EXPECT_THAT(p->Prepare(ClaimRef{"team-a", "", "x"}).error, HasSubstr("no claim uid"));
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 0u);
  // A claim with nothing of ours: prepared, no spec, no devices.
  claims_["none"] = ClaimJson("none", {});
  PrepareResult none = p->Prepare(Ref("none"));
  EXPECT_EQ(none.error, "");
  EXPECT_THAT(none.devices, IsEmpty());
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 0u);
}

TEST_F(PreparerTest, UnwritableCdiDirectoryLeavesNothingBehind) {
  claims_["a"] = ClaimJson("a", {{"gpu", "gpu-0"}});
  claims_["b"] = ClaimJson("b", {{"gpu", "gpu-1"}});
  // Claim a's spec path is taken by a directory: its rename fails; b is fine.
  fs::create_directories(dir_ / "cdi" / "k8s.accel.io-claim_a.json");
  auto p = Make();
  PrepareResult a = p->Prepare(Ref("a"));
  EXPECT_THAT(a.error, HasSubstr("ResourceClaim team-a/claim-a: "));
  EXPECT_EQ(p->Prepare(Ref("b")).error, "");
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 2u);  // the blocking directory and b's spec, no temp file
  EXPECT_EQ(p->Prepared().size(), 1u);

  // The whole directory unwritable (its parent is a file).
  std::ofstream(dir_ / "file") << "x";
  options_.cdi_dir = (dir_ / "file" / "cdi").string();
  options_.state_dir = (dir_ / "state2").string();
  auto q = Make();
  EXPECT_THAT(q->Prepare(Ref("b")).error, HasSubstr("file/cdi"));
  EXPECT_TRUE(q->Prepared().empty());
}

TEST_F(PreparerTest, CheckpointWriteFailureTakesTheSpecBack) {
  std::ofstream(dir_ / "file") << "x";
  options_.state_dir = (dir_ / "file" / "state").string();
  claims_["a"] = ClaimJson("a", {{"gpu", "gpu-0"}});
  auto p = Make();
  EXPECT_THAT(p->Prepare(Ref("a")).error, HasSubstr("file/state"));
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 0u);
}

TEST_F(PreparerTest, UnprepareRemovesSpecThenEntryIdempotently) {
  claims_["u1"] = ClaimJson("u1", {{"gpu", "gpu-0"}, {"nic", "nic-0"}});
  auto p = Make();
  ASSERT_EQ(p->Prepare(Ref("u1")).error, "");
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 1u);
  EXPECT_EQ(p->Unprepare(Ref("u1")), "");
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 0u);
  EXPECT_TRUE(p->Prepared().empty());
  EXPECT_EQ(p->Unprepare(Ref("u1")), "");
  EXPECT_EQ(p->Unprepare(Ref("never-seen")), "");
  // A spec left by a crash before its checkpoint entry goes too.
  std::ofstream(dir_ / "cdi" / "k8s.accel.io-claim_orphan.json") << "{}";
  EXPECT_EQ(p->Unprepare(Ref("orphan")), "");
  EXPECT_EQ(FilesIn(dir_ / "cdi"), 0u);
  EXPECT_EQ(p->stats().unprepared, 4u);
  EXPECT_TRUE(Checkpoint(options_.state_dir).Entries().empty());
}

TEST_F(PreparerTest, SetInventoryAndHookAndConcurrentClaims) {
  std::atomic<int> hooked{0};
  options_.on_prepare = [&](const ClaimRef&, std::chrono::nanoseconds d, const PrepareResult&) {
    if (d.count() >= 0) ++hooked;
  };
  for (int k = 0; k < 8; ++k) {
    std::string uid = "c" + std::to_string(k);
    claims_[uid] = ClaimJson(uid, {{"gpu", "gpu-" + std::to_string(k)},
                                   {"nic", "nic-" + std::to_string(kPairOf[k])}});
  }
  auto p = Make();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(8);
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] { errors[k] = p->Prepare(Ref("c" + std::to_string(k))).error; });
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(errors, Not(Contains(Not(""))));
  EXPECT_EQ(hooked, 8);
  EXPECT_EQ(p->Prepared().size(), 8u);
  EXPECT_EQ(p->stats().prepared, 8u);

  // GPU 7 lost: a new claim for it fails, the prepared one still answers.
  auto smaller = Hgx();
  smaller->devices.erase(smaller->devices.begin() + 7);
  p->SetInventory(smaller);
  claims_["late"] = ClaimJson("late", {{"gpu", "gpu-7"}});
  EXPECT_THAT(p->Prepare(Ref("late")).error, HasSubstr("device gpu-7 is not published"));
  EXPECT_EQ(p->Prepare(Ref("c7")).error, "");
}

TEST(ClaimNcclEnv, OffAndGaudi) {
  auto inv = Hgx();
  std::vector<const DraDevice*> devs = {inv->Find("gpu-0"), inv->Find("nic-0")};
  NcclOptions off;
  off.enabled = false;
  EXPECT_THAT(ClaimNcclEnv(*inv, devs, off).env, IsEmpty());
  ClaimNccl on = ClaimNcclEnv(*inv, devs, {});
  EXPECT_THAT(on.env, Contains(std::pair<std::string, std::string>("NCCL_IB_HCA", "=mlx5_0:1")));
  for (kube::NodeDevice& d : inv->node_devices) d.vendor = devices::Vendor::kHabana;
  ClaimNccl gaudi = ClaimNcclEnv(*inv, devs, {});
  EXPECT_THAT(gaudi.env, IsEmpty());
  EXPECT_THAT(gaudi.notes, Contains(HasSubstr("HCCL")));
}

}  // namespace
}  // namespace accel::dra
