// CDI specs: names, JSON, atomic write and idempotent removal, and each vendor's device edits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "common/error.h"
#include "dra/cdi_spec.h"

namespace accel::dra {
namespace cdi_spec_test {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

class CdiSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("accel-cdi-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Touch(const std::string& rel, const std::string& content = "") {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << content;
  }
  fs::path dir_;
};

std::vector<std::string> Nodes(const CdiEdits& e) {
  std::vector<std::string> out;
  for (const kube::DeviceNodeSpec& n : e.device_nodes)
    out.push_back(n.container_path + (n.host_path == n.container_path ? "" : "<-" + n.host_path));
  return out;
}

// One NVIDIA GPU (minor 3) with a MIG device, an AMD GPU, a Gaudi HPU, and two NICs.
Inventory SmallInventory() {
  Inventory inv;
  inv.driver = "accel.io";
  inv.node_name = "node-1";
  kube::NodeDevice nv;
  nv.id = nv.physical_id = "GPU-aaaa";
  nv.index = 3;
  nv.minor = 3;
  nv.pci_address = "0000:18:00.0";
  kube::NodeDevice mig = nv;
  mig.id = "MIG-bbbb";
  mig.mig_profile = "1g.10gb";
  mig.gpu_instance_id = 7;
  mig.compute_instance_id = 0;
  kube::NodeDevice amd;
  amd.vendor = devices::Vendor::kAmd;
  amd.id = amd.physical_id = "0000:c1:00.0";
  amd.minor = 129;
  kube::NodeDevice gaudi;
  gaudi.vendor = devices::Vendor::kHabana;
  gaudi.id = gaudi.physical_id = "AM12345";
  gaudi.minor = 2;
  kube::NodeDevice lost = amd;
  lost.minor = -1;
  inv.node_devices = {nv, mig, amd, gaudi, lost};
  fabric::FabricNic n0;
  n0.rdma_device = "mlx5_0";
  fabric::FabricNic n1;
  n1.rdma_device = "mlx5_1";
  inv.fabric.nics = {n0, n1};
  auto add = [&](std::string name, DeviceKind kind, int node_device, int nic) {
    DraDevice d;
    d.name = std::move(name);
    d.kind = kind;
    d.node_device = node_device;
    d.nic = nic;
    inv.devices.push_back(d);
  };
  add("gpu-0", DeviceKind::kGpu, 0, -1);
  add("gpu-0-mig-1g-10gb-0", DeviceKind::kMig, 1, -1);
  add("gpu-1", DeviceKind::kGpu, 2, -1);
  add("gpu-2", DeviceKind::kGpu, 3, -1);
  add("gpu-3", DeviceKind::kGpu, 4, -1);
  add("nic-0", DeviceKind::kNic, -1, 0);
  add("nic-1", DeviceKind::kNic, -1, 1);
  add("nic-9", DeviceKind::kNic, -1, 9);
  return inv;
}

TEST(CdiNames, FollowCdiAndNvidiasDraDriver) {
  EXPECT_EQ(ClaimCdiKind("accel.io"), "k8s.accel.io/claim");
  EXPECT_EQ(ClaimCdiDeviceName("6f1c-22", "gpu-3"), "6f1c-22-gpu-3");
  EXPECT_EQ(QualifiedCdiName("k8s.accel.io/claim", "6f1c-22-gpu-3"),
            "k8s.accel.io/claim=6f1c-22-gpu-3");
  EXPECT_EQ(CdiSpecFileName("k8s.accel.io/claim", "6f1c-22"), "k8s.accel.io-claim_6f1c-22.json");
  EXPECT_EQ(CdiSpecFileName("k8s.accel.io/claim", "a/b"), "k8s.accel.io-claim_a_b.json");
}

TEST(CdiJson, ShapeAndVersion) {
  CdiSpec spec;
  spec.kind = "k8s.accel.io/claim";
  CdiDevice d;
  d.name = "1234-gpu-0";
  d.edits.device_nodes = {{"/dev/nvidia0", "/dev/nvidia0", "rw"},
                          {"/dev/nvidiactl", "/host/dev/nvidiactl", "rw"}};
  spec.devices = {d, CdiDevice{"1234-nic-0", {}}};
  spec.edits.env = {{"NVIDIA_VISIBLE_DEVICES", "GPU-a"}, {"NCCL_IB_HCA", "=mlx5_0:1"}};
  spec.edits.mounts = {{"/etc/accel/nccl-topo.xml", "/var/lib/accel/topo.xml", true}};
  nlohmann::ordered_json j = CdiSpecJson(spec);
  EXPECT_EQ(j["cdiVersion"], "0.5.0");
  EXPECT_EQ(j["kind"], "k8s.accel.io/claim");
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][0]["name"], "1234-gpu-0");
  EXPECT_EQ(j["devices"][0]["containerEdits"]["deviceNodes"][0],
            nlohmann::ordered_json({{"path", "/dev/nvidia0"}, {"permissions", "rw"}}));
  EXPECT_EQ(j["devices"][0]["containerEdits"]["deviceNodes"][1]["hostPath"],
            "/host/dev/nvidiactl");
  EXPECT_EQ(j["devices"][1]["containerEdits"], nlohmann::ordered_json::object());
  EXPECT_EQ(j["containerEdits"]["env"],
            nlohmann::ordered_json({"NVIDIA_VISIBLE_DEVICES=GPU-a", "NCCL_IB_HCA==mlx5_0:1"}));
  EXPECT_EQ(j["containerEdits"]["mounts"][0],
            nlohmann::ordered_json({{"hostPath", "/var/lib/accel/topo.xml"},
                                    {"containerPath", "/etc/accel/nccl-topo.xml"},
                                    {"options", {"ro", "nosuid", "nodev", "bind"}}}));
  spec.edits = {};
  EXPECT_FALSE(CdiSpecJson(spec).contains("containerEdits"));
}

TEST_F(CdiSpecTest, WriteAtomicallyRemoveIdempotently) {
  CdiSpec spec;
  spec.kind = "k8s.accel.io/claim";
  spec.devices = {CdiDevice{"u1-gpu-0", {}}};
  std::string path = WriteCdiSpec((dir_ / "cdi").string(), spec, "u1");
  EXPECT_EQ(path, (dir_ / "cdi" / "k8s.accel.io-claim_u1.json").string());
  std::ifstream in(path);
  nlohmann::json back = nlohmann::json::parse(in);
  EXPECT_EQ(back["devices"][0]["name"], "u1-gpu-0");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "cdi"), fs::directory_iterator()), 1);
  RemoveCdiSpec(path);
  EXPECT_FALSE(fs::exists(path));
  RemoveCdiSpec(path);  // again: fine
}

TEST_F(CdiSpecTest, UnwritableDirectoryLeavesNothing) {
  Touch("file", "x");
  CdiSpec spec;
  spec.kind = "k8s.accel.io/claim";
  EXPECT_THROW(WriteCdiSpec((dir_ / "file" / "cdi").string(), spec, "u1"), SystemError);
  // A directory where the spec file should be: the rename fails, no temporary file stays.
  fs::create_directories(dir_ / "cdi" / "k8s.accel.io-claim_u2.json");
  EXPECT_THROW(WriteCdiSpec((dir_ / "cdi").string(), spec, "u2"), SystemError);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "cdi"), fs::directory_iterator()), 1);
}

TEST_F(CdiSpecTest, NvidiaGpuAndMig) {
  Inventory inv = SmallInventory();
  DeviceNodeOptions opt{dir_.string()};
  DeviceCdi gpu = DeviceCdiEdits(inv, *inv.Find("gpu-0"), opt);
  EXPECT_THAT(Nodes(gpu.edits), ElementsAre("/dev/nvidia3", "/dev/nvidiactl", "/dev/nvidia-uvm",
                                            "/dev/nvidia-uvm-tools"));
  EXPECT_EQ(gpu.visible_env, "NVIDIA_VISIBLE_DEVICES");
  EXPECT_EQ(gpu.visible_value, "GPU-aaaa");
  EXPECT_THAT(gpu.edits.env, IsEmpty());

  // Without the capabilities in /proc the MIG device has its GPU's nodes only.
  DeviceCdi mig = DeviceCdiEdits(inv, *inv.Find("gpu-0-mig-1g-10gb-0"), opt);
  EXPECT_THAT(Nodes(mig.edits), ElementsAre("/dev/nvidia3", "/dev/nvidiactl", "/dev/nvidia-uvm",
                                            "/dev/nvidia-uvm-tools"));
  EXPECT_EQ(mig.visible_value, "MIG-bbbb");
  Touch("proc/driver/nvidia/capabilities/gpu3/mig/gi7/access",
        "DeviceFileMinor: 66\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
  Touch("proc/driver/nvidia/capabilities/gpu3/mig/gi7/ci0/access", "DeviceFileMinor: 67\n");
  EXPECT_THAT(MigCapabilityMinors(dir_.string(), 3, 7, 0), ElementsAre(66, 67));
  mig = DeviceCdiEdits(inv, *inv.Find("gpu-0-mig-1g-10gb-0"), opt);
  EXPECT_THAT(Nodes(mig.edits),
              ElementsAre("/dev/nvidia3", "/dev/nvidia-caps/nvidia-cap66",
                          "/dev/nvidia-caps/nvidia-cap67", "/dev/nvidiactl", "/dev/nvidia-uvm",
                          "/dev/nvidia-uvm-tools"));
  Touch("proc/driver/nvidia/capabilities/gpu3/mig/gi7/ci0/access", "garbage");
  EXPECT_THAT(MigCapabilityMinors(dir_.string(), 3, 7, 0), IsEmpty());
}

TEST_F(CdiSpecTest, AmdAndGaudi) {
  Inventory inv = SmallInventory();
  DeviceNodeOptions opt{dir_.string()};
  DeviceCdi amd = DeviceCdiEdits(inv, *inv.Find("gpu-1"), opt);
  EXPECT_THAT(Nodes(amd.edits), ElementsAre("/dev/dri/card1", "/dev/dri/renderD129", "/dev/kfd"));
  EXPECT_EQ(amd.visible_env, "");
  DeviceCdi gaudi = DeviceCdiEdits(inv, *inv.Find("gpu-2"), opt);
  EXPECT_THAT(Nodes(gaudi.edits),
              ElementsAre("/dev/accel/accel2", "/dev/accel/accel_controlD2"));
  EXPECT_EQ(gaudi.visible_env, "HABANA_VISIBLE_DEVICES");
  EXPECT_EQ(gaudi.visible_value, "2");
  try {
    DeviceCdiEdits(inv, *inv.Find("gpu-3"), opt);
    ADD_FAILURE() << "no error for a device without a node";
  } catch (const SystemError& e) {
    EXPECT_THAT(e.what(), HasSubstr("gpu-3"));
    EXPECT_THAT(e.what(), HasSubstr("device node is unknown"));
  }
}

TEST_F(CdiSpecTest, RdmaNicUverbsFromSysfs) {
  Inventory inv = SmallInventory();
  DeviceNodeOptions opt{dir_.string()};
  Touch("sys/class/infiniband/mlx5_0/device/infiniband_verbs/uverbs4/dev", "231:196");
  DeviceCdi nic = DeviceCdiEdits(inv, *inv.Find("nic-0"), opt);
  EXPECT_THAT(Nodes(nic.edits), ElementsAre("/dev/infiniband/uverbs4", "/dev/infiniband/rdma_cm"));
  EXPECT_EQ(nic.visible_env, "");
  // The class directory names it when the device link does not.
  Touch("sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_9\n");
  Touch("sys/class/infiniband_verbs/uverbs7/ibdev", "mlx5_1\n");
  EXPECT_EQ(FindUverbsIndex(dir_.string(), "mlx5_1"), 7);
  EXPECT_EQ(FindUverbsIndex(dir_.string(), "mlx5_2"), -1);
  EXPECT_EQ(FindUverbsIndex(dir_.string(), "../x"), -1);
  EXPECT_THAT(Nodes(DeviceCdiEdits(inv, *inv.Find("nic-1"), opt).edits),
              ElementsAre("/dev/infiniband/uverbs7", "/dev/infiniband/rdma_cm"));
  fs::remove_all(dir_ / "sys");
  try {
    DeviceCdiEdits(inv, *inv.Find("nic-1"), opt);
    ADD_FAILURE() << "no error without a uverbs device";
  } catch (const SystemError& e) {
    EXPECT_THAT(e.what(), HasSubstr("uverbs device of mlx5_1"));
    EXPECT_THAT(e.what(), HasSubstr("modprobe ib_uverbs"));
  }
  EXPECT_THROW(DeviceCdiEdits(inv, *inv.Find("nic-9"), opt), InputError);
}

}  // namespace
}  // namespace accel::dra
