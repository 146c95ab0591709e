// The sysfs topology source: every fixture machine written as a fake sysfs tree
// (tests/support/fake_sysfs.h) reads back as the same machine; bad trees give InputError.
#include "topology/sysfs_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "cli/cli_test_util.h"
#include "common/error.h"
#include "support/fake_sysfs.h"
#include "support/shared_fixture.h"
#include "topology/hwloc_source.h"
#include "topology/sources.h"

namespace accel::topology {
namespace sysfs_source_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SysfsSource : public ::testing::Test {
 protected:
  // Fake trees are thousands of small files: on tmpfs they take milliseconds, on a loaded
  // ext4 /tmp seconds.
  static fs::path ScratchRoot() {
    std::error_code ec;
    if (fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0) return "/dev/shm";
    return fs::temp_directory_path();
  }

  void SetUp() override {
    base_ = ScratchRoot() /
            ("accel-sysfs-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override { fs::remove_all(base_); }

  std::string Dir(const std::string& name) {
    fs::path p = base_ / name;
    fs::create_directories(p);
    return p.string();
  }

  fs::path base_;
};

std::vector<std::string> HostFixtures() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// OS devices the sysfs source reads (DRM nodes, accel devices, NVMe namespaces). NVML/CUDA/
// OpenCL indexes are a library's view, not the kernel's; SCSI disks and DMA channels are not
// read.
std::vector<std::string> SysfsOsDevices(const std::vector<std::string>& names) {
  std::vector<std::string> kept;
  for (const std::string& n : names)
    if (n.rfind("card", 0) == 0 || n.rfind("renderD", 0) == 0 || n.rfind("accel", 0) == 0 ||
        n.rfind("nvme", 0) == 0)
      kept.push_back(n);
  return Sorted(kept);
}

std::string PoolsText(const std::vector<HugepagePool>& pools) {
  std::string s;
  for (const HugepagePool& p : pools)
    s += std::to_string(p.size_kib) + ":" + std::to_string(p.total) + "/" +
         std::to_string(p.free) + " ";
  return s;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// Every difference between what was written and what was read back, one line each.
std::vector<std::string> Differences(const HostTopology& want, const HostTopology& got,
                                     bool compare_models = true) {
  std::vector<std::string> diffs;
  auto diff = [&](const std::string& what, const std::string& w, const std::string& g) {
    if (w != g) diffs.push_back(what + ": want \"" + w + "\" got \"" + g + "\"");
  };
  diff("hostname", want.hostname, got.hostname);
  diff("package count", std::to_string(want.packages.size()), std::to_string(got.packages.size()));
  for (size_t i = 0; i < std::min(want.packages.size(), got.packages.size()); ++i) {
    const Package &w = want.packages[i], &g = got.packages[i];
    std::string p = "packages[" + std::to_string(i) + "]";
    diff(p + ".id", std::to_string(w.id), std::to_string(g.id));
    diff(p + ".cpus", w.cpus.ToString(), g.cpus.ToString());
    if (compare_models) diff(p + ".model", w.model, g.model);
  }
  diff("node count", std::to_string(want.numa_nodes.size()), std::to_string(got.numa_nodes.size()));
  for (size_t i = 0; i < std::min(want.numa_nodes.size(), got.numa_nodes.size()); ++i) {
    const NumaNode &w = want.numa_nodes[i], &g = got.numa_nodes[i];
    std::string n = "numa_nodes[" + std::to_string(i) + "]";
    diff(n + ".id", std::to_string(w.id), std::to_string(g.id));
    diff(n + ".package", std::to_string(w.package), std::to_string(g.package));
    diff(n + ".cpus", w.cpus.ToString(), g.cpus.ToString());
    std::vector<std::string> wc, gc;
    for (const CpuSet& c : w.cores) wc.push_back(c.ToString());
    for (const CpuSet& c : g.cores) gc.push_back(c.ToString());
    diff(n + ".cores", Join(wc), Join(gc));
    diff(n + ".memory_kib", std::to_string(w.memory_kib), std::to_string(g.memory_kib));
    diff(n + ".pages", PoolsText(w.pages), PoolsText(g.pages));
    std::vector<std::string> wd, gd;
    for (int d : w.distances) wd.push_back(std::to_string(d));
    for (int d : g.distances) gd.push_back(std::to_string(d));
    diff(n + ".distances", Join(wd), Join(gd));
  }
  std::set<std::string> want_addresses, got_addresses;
  for (const PciDevice& d : want.pci) want_addresses.insert(d.address);
  for (const PciDevice& d : got.pci) got_addresses.insert(d.address);
  for (const std::string& a : want_addresses)
    if (!got_addresses.count(a)) diffs.push_back("pci " + a + ": missing");
  for (const std::string& a : got_addresses)
    if (!want_addresses.count(a)) diffs.push_back("pci " + a + ": extra");
  for (const PciDevice& w : want.pci) {
    const PciDevice* g = got.FindPci(w.address);
    if (g == nullptr) continue;
    std::string p = "pci " + w.address;
    diff(p + ".parent", w.parent, g->parent);
    diff(p + ".role", PciRoleName(w.role), PciRoleName(g->role));
    diff(p + ".vendor", std::to_string(w.vendor_id), std::to_string(g->vendor_id));
    diff(p + ".device", std::to_string(w.device_id), std::to_string(g->device_id));
    diff(p + ".class", std::to_string(w.class_id), std::to_string(g->class_id));
    diff(p + ".numa_node", std::to_string(w.numa_node), std::to_string(g->numa_node));
    diff(p + ".rdma", Join(Sorted(w.rdma_devices)), Join(Sorted(g->rdma_devices)));
    diff(p + ".netdevs", Join(Sorted(w.netdevs)), Join(Sorted(g->netdevs)));
    diff(p + ".os_devices", Join(SysfsOsDevices(w.os_devices)), Join(g->os_devices));
    diff(p + ".sriov", std::to_string(w.sriov_total_vfs) + "/" + std::to_string(w.sriov_num_vfs),
         std::to_string(g->sriov_total_vfs) + "/" + std::to_string(g->sriov_num_vfs));
    diff(p + ".physfn", w.physfn, g->physfn);
    // Gen/width steps: lanes double, so the nearest link is within a third of any value at
    // or above Gen1 x1 (0.25 GB/s; old hwloc exports carry less).
    double w_gbps = w.link_gbps > 0 ? std::max(w.link_gbps, 0.25) : 0;
    if (std::fabs(w_gbps - g->link_gbps) > std::max(0.002, w_gbps / 3))
      diffs.push_back(p + ".link_gbps: want " + std::to_string(w.link_gbps) + " got " +
                      std::to_string(g->link_gbps));
  }
  return diffs;
}

TEST_F(SysfsSource, EveryFixtureHostRoundTrips) {
  std::vector<std::string> fixtures = HostFixtures();
  ASSERT_GE(fixtures.size(), 5u);
  for (const std::string& file : fixtures) {
    SCOPED_TRACE(file);
    HostTopology want = LoadTopology(file);
    std::string root = Dir(fs::path(file).stem().string());
    accel::testing::WriteFakeSysfs(want, root);
    HostTopology got = LoadSysfsHost(root);
    EXPECT_EQ(got.source, "sysfs:" + root);
    std::vector<std::string> diffs = Differences(want, got);
    EXPECT_TRUE(diffs.empty()) << Join(diffs);
    // Fixture link speeds are hwloc's exact Gen/width values: they come back to the digit.
    for (const PciDevice& w : want.pci) {
      if (const PciDevice* g = got.FindPci(w.address)) {
        EXPECT_NEAR(w.link_gbps, g->link_gbps, 0.0015) << w.address;
      }
    }
    // The reader keeps hwloc's tree order: host bridges by address, then depth first.
    std::vector<std::string> want_order, got_order;
    for (const PciDevice& d : want.pci) want_order.push_back(d.address);
    for (const PciDevice& d : got.pci) got_order.push_back(d.address);
    EXPECT_EQ(want_order, got_order);
  }
}

// The same for the real machines hwloc exported (shared fixtures; absent in CI).
TEST_F(SysfsSource, HwlocExportsRoundTrip) {
  fs::path dir = test_support::SharedPath("fixtures/hwloc");
  ACCEL_REQUIRE_SHARED(dir.string());
  int checked = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".xml") continue;
    SCOPED_TRACE(e.path().string());
    HostTopology want = LoadHwlocXml(e.path().string());
    std::string root = Dir(e.path().stem().string());
    accel::testing::WriteFakeSysfs(want, root);
    HostTopology got = LoadSysfsHost(root);
    // hwloc marks the DGX-2's NVSwitches by subtype even where their config space reads as
    // zeros; sysfs has only the ids, so that one comes back as "other".
    for (PciDevice& d : want.pci)
      if (d.role == PciRole::kNvSwitch && d.vendor_id == 0) d.role = PciRole::kOther;
    std::vector<std::string> diffs = Differences(want, got);
    EXPECT_TRUE(diffs.empty()) << Join(diffs);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST_F(SysfsSource, LoadTopologyTakesADirectoryOrSysfsPrefix) {
  HostTopology want = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json");
  std::string root = Dir("hgx");
  accel::testing::WriteFakeSysfs(want, root);
  HostTopology by_dir = LoadTopology(root);
  HostTopology by_prefix = LoadTopology("sysfs:" + root);
  EXPECT_TRUE(Differences(want, by_dir).empty());
  EXPECT_TRUE(Differences(by_dir, by_prefix).empty());
  EXPECT_EQ(by_prefix.source, "sysfs:" + root);
}

TEST_F(SysfsSource, TopoCommandReadsADirectory) {
  HostTopology want = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/gaudi2-8hpu.json");
  std::string root = Dir("gaudi");
  accel::testing::WriteFakeSysfs(want, root);
  cli::testing::RunResult r = cli::testing::RunAccel("topo --topology " + root);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(want.hostname));
  r = cli::testing::RunAccel("topo --topology " + (base_ / "nothing-here").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

std::string ErrorOf(const std::string& root) {
  try {
    LoadSysfsHost(root);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(SysfsSource, MissingTreesAreInputErrors) {
  std::string missing = (base_ / "missing").string();
  EXPECT_THAT(ErrorOf(missing), HasSubstr(missing + ": does not exist"));
  std::string empty = Dir("empty");
  EXPECT_THAT(ErrorOf(empty), HasSubstr(empty + ": is a directory without a sys/ subdirectory"));
  std::string file = (base_ / "file").string();
  std::ofstream(file) << "x";
  EXPECT_THAT(ErrorOf(file), HasSubstr(file + ": is not a directory"));
}

TEST_F(SysfsSource, EmptySysIsOneEmptyNode) {
  std::string root = Dir("bare");
  fs::create_directories(root + "/sys");
  HostTopology host = LoadSysfsHost(root);
  EXPECT_EQ(host.hostname, "localhost");
  ASSERT_EQ(host.numa_nodes.size(), 1u);
  EXPECT_TRUE(host.pci.empty());
}

TEST_F(SysfsSource, NoNumaDirectoriesMeansOneNodeWithEveryOnlineCpu) {
  HostTopology want = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/devbox.json");
  std::string root = Dir("devbox");
  accel::testing::WriteFakeSysfs(want, root);
  fs::remove_all(root + "/sys/devices/system/node");
  accel::testing::WriteFakeFile(root, "etc/hostname", "from-etc\n");
  fs::remove(root + "/proc/sys/kernel/hostname");
  HostTopology got = LoadSysfsHost(root);
  EXPECT_EQ(got.hostname, "from-etc");
  ASSERT_EQ(got.numa_nodes.size(), 1u);
  EXPECT_EQ(got.numa_nodes[0].id, 0);
  EXPECT_EQ(got.numa_nodes[0].cpus.ToString(), "0-31");
  EXPECT_EQ(got.numa_nodes[0].cores.size(), 16u);
  EXPECT_EQ(got.numa_nodes[0].memory_kib, want.numa_nodes[0].memory_kib);  // /proc/meminfo
  EXPECT_EQ(PoolsText(got.numa_nodes[0].pages), PoolsText(want.numa_nodes[0].pages));
}

TEST_F(SysfsSource, VirtualFunctionsLinkToTheirPhysicalFunction) {
  HostTopology host = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json");
  // Enable two VFs on the first SR-IOV NIC, as siblings of the PF like Linux shows them.
  PciDevice* pf = nullptr;
  for (PciDevice& d : host.pci)
    if (d.sriov_total_vfs > 0 && pf == nullptr) pf = &d;
  ASSERT_NE(pf, nullptr);
  pf->sriov_num_vfs = 2;
  PciDevice pf_copy = *pf;
  std::vector<PciDevice> vfs;
  for (int i = 0; i < 2; ++i) {
    PciDevice vf = pf_copy;
    vf.address = pf_copy.address.substr(0, pf_copy.address.size() - 4) + "00." + std::to_string(2 + i);
    vf.device_id = 0x101e;
    vf.sriov_total_vfs = vf.sriov_num_vfs = 0;
    vf.physfn = pf_copy.address;
    vf.rdma_devices = {"mlx5_vf" + std::to_string(i)};
    vf.netdevs = {};
    vf.os_devices = {};
    vfs.push_back(vf);
  }
  auto at = std::find_if(host.pci.begin(), host.pci.end(),
                         [&](const PciDevice& d) { return d.address == pf_copy.address; });
  host.pci.insert(at + 1, vfs.begin(), vfs.end());
  ASSERT_EQ(CheckInvariants(host), "");
  std::string root = Dir("vfs");
  accel::testing::WriteFakeSysfs(host, root);
  std::string pf_dir = accel::testing::FakePciDir(host, root, pf_copy.address);
  EXPECT_TRUE(fs::is_symlink(pf_dir + "/virtfn0"));
  EXPECT_EQ(fs::canonical(pf_dir + "/virtfn1"),
            fs::canonical(accel::testing::FakePciDir(host, root, vfs[1].address)));
  HostTopology got = LoadSysfsHost(root);
  std::vector<std::string> diffs = Differences(host, got);
  EXPECT_TRUE(diffs.empty()) << Join(diffs);
  EXPECT_EQ(got.FindPci(vfs[0].address)->physfn, pf_copy.address);
  EXPECT_EQ(got.FindPci(pf_copy.address)->sriov_num_vfs, 2);
}

TEST_F(SysfsSource, LinuxShapedTree) {
  HostTopology host = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json");
  std::string root = Dir("shape");
  accel::testing::WriteFakeSysfs(host, root);
  // /sys/bus/pci/devices and /sys/class links resolve into the device tree.
  const PciDevice* nic = nullptr;
  for (const PciDevice& d : host.pci)
    if (!d.rdma_devices.empty() && nic == nullptr) nic = &d;
  ASSERT_NE(nic, nullptr);
  std::string dir = accel::testing::FakePciDir(host, root, nic->address);
  EXPECT_EQ(fs::canonical(root + "/sys/bus/pci/devices/" + nic->address), fs::canonical(dir));
  EXPECT_EQ(fs::canonical(root + "/sys/class/infiniband/" + nic->rdma_devices[0] + "/device"),
            fs::canonical(dir));
  EXPECT_EQ(fs::canonical(root + "/sys/class/net/" + nic->netdevs[0]).parent_path().parent_path(),
            fs::canonical(dir));
  std::ifstream speed(dir + "/current_link_speed");
  std::string line;
  std::getline(speed, line);
  EXPECT_EQ(line, "32.0 GT/s PCIe");  // Gen5 x16 = 63.015 GB/s
  std::ifstream cls(dir + "/class");
  std::getline(cls, line);
  EXPECT_EQ(line, "0x020700");
  // A VM guest's tells, on request.
  host = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/devbox.json");
  std::string vm = Dir("vm");
  accel::testing::FakeSysfsOptions options;
  options.vm_guest = true;
  options.cmdline = "ro isolcpus=managed_irq,domain,2-5,9 nohz_full=2-5";
  accel::testing::WriteFakeSysfs(host, vm, options);
  std::ifstream cpuinfo(vm + "/proc/cpuinfo");
  std::string all((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  EXPECT_THAT(all, HasSubstr(" hypervisor "));
  std::ifstream isolated(vm + "/sys/devices/system/cpu/isolated");
  std::getline(isolated, line);
  EXPECT_EQ(line, "2-5,9");
}

TEST_F(SysfsSource, OddButValidTrees) {
  std::string root = Dir("odd");
  fs::path pci = fs::path(root) / "sys/devices/pci0000:00";
  // A subtractive-decode bridge (class 0609) with a function below it is still a bridge; a VMD
  // domain below a function is a host bridge of its own.
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:1e.0/class", "0x060901\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:1e.0/0000:01:00.0/class", "0x020000\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:0e.0/class", "0x010400\n");
  accel::testing::WriteFakeFile(
      root, "sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/class", "0x060400\n");
  accel::testing::WriteFakeFile(root,
                         "sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/"
                         "10000:e1:00.0/class",
                         "0x010802\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:1e.0/0000:01:00.0/numa_node", "7\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:1e.0/0000:01:00.0/current_link_speed",
                         "8 GT/s\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:1e.0/0000:01:00.0/current_link_width",
                         "4\n");
  // virtio-net and virtio-blk keep their class devices under virtioN/.
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:03.0/class", "0x020000\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:03.0/virtio0/net/eth0/type", "1\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:04.0/class", "0x010000\n");
  accel::testing::WriteFakeFile(root, "sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda/size", "1\n");
  HostTopology host = LoadSysfsHost(root);
  EXPECT_EQ(host.FindPci("0000:00:03.0")->netdevs, std::vector<std::string>{"eth0"});
  EXPECT_EQ(host.FindPci("0000:00:04.0")->os_devices, std::vector<std::string>{"vda"});
  ASSERT_NE(host.FindPci("0000:00:1e.0"), nullptr);
  EXPECT_EQ(host.FindPci("0000:00:1e.0")->role, PciRole::kBridge);
  EXPECT_EQ(host.FindPci("0000:01:00.0")->role, PciRole::kNic);
  // No node 7 here; and on a machine with one node every device is local to it.
  EXPECT_EQ(host.FindPci("0000:01:00.0")->numa_node, 0);
  EXPECT_NEAR(host.FindPci("0000:01:00.0")->link_gbps, 3.938, 0.001);
  ASSERT_NE(host.FindPci("pci10000:e0"), nullptr);
  EXPECT_EQ(host.FindPci("pci10000:e0")->role, PciRole::kHostBridge);
  EXPECT_EQ(host.FindPci("10000:e1:00.0")->parent, "10000:e0:1d.0");
  EXPECT_EQ(host.FindPci("10000:e1:00.0")->role, PciRole::kStorage);
}

// Random damage to a valid tree: garbage, empty or missing files, files where directories
// belong. Loading must return a consistent host or throw InputError, never crash.
TEST_F(SysfsSource, DamagedTreesNeverCrash) {
  HostTopology host = LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/devbox.json");
  std::string pristine = Dir("pristine");
  accel::testing::WriteFakeSysfs(host, pristine);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(pristine))
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(fs::relative(e.path(), pristine));
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 100u);
  const std::vector<std::string> garbage = {
      "",        "\n",      "-1\n",           "99999999999999999999\n", "0x\n", "nan\n",
      "0-\n",    "3-1\n",   "65536\n",        "abc def\n",              "\xff\xfe\x00\x01",
      "-5 -7\n", "1,,2\n",  "1000000000000\n", "Unknown\n",              "0xffffffff\n"};
  std::mt19937 rng(12345);
  int loaded = 0, refused = 0;
  for (int round = 0; round < 100; ++round) {
    std::string root = (base_ / ("damaged" + std::to_string(round % 4))).string();
    fs::remove_all(root);
    fs::copy(pristine, root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    for (int k = 0; k < 8; ++k) {
      fs::path target = fs::path(root) / files[rng() % files.size()];
      switch (rng() % 4) {
        case 0:
        case 1:
          std::ofstream(target, std::ios::trunc) << garbage[rng() % garbage.size()];
          break;
        case 2:
          fs::remove(target);
          break;
        default:
          fs::remove(target);
          fs::create_directories(target);  // a directory where a file belongs
          break;
      }
    }
    try {
      HostTopology got = LoadSysfsHost(root);
      EXPECT_EQ(CheckInvariants(got), "");
      ++loaded;
    } catch (const InputError&) {
      ++refused;
    }
  }
  EXPECT_GT(loaded, 0);
  SUCCEED() << loaded << " loaded, " << refused << " refused";
}

// LoadSysfsHost on the machine that runs it: only what holds on every Linux machine (each has
// /sys/devices/system/cpu with at least one CPU); the reader itself is tested on fake trees.
TEST_F(SysfsSource, ThisMachine) {
  try {
    HostTopology host = LoadSysfsHost("/");
    EXPECT_FALSE(host.AllCpus().Empty());
    EXPECT_EQ(host.source, "sysfs:/");
  } catch (const InputError& e) {
    ADD_FAILURE() << e.what();
  }
}

}  // namespace
}  // namespace accel::topology
