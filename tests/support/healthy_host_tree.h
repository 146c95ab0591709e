// Fake hosts for the doctor's tests (tests/doctor/ and `accel doctor` in tests/cli/; header only,
// needs accel_doctor and accel_fake_sysfs): a fixture machine written as a sysfs/procfs tree (fake_sysfs.h)
// plus what a healthy, well-set-up host also shows (peermem loaded, GPUs on the nvidia driver,
// persistenced and fabric manager running, performance governor, shallow C-states, local IRQs,
// ACS capabilities without redirect, PCIe MaxReadReq 4096 and equal MaxPayload, tuned's
// accelerator-performance, a pod's memlock, verbs devices and /dev/shm), and helpers to break
// one thing at a time.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "doctor/pci_config.h"
#include "support/fake_sysfs.h"
#include "topology/host.h"
#include "topology/sources.h"

namespace accel::doctor::testing {

namespace fs = std::filesystem;
using accel::testing::FakePciDir;
using accel::testing::FakeSysfsOptions;
using accel::testing::WriteFakeFile;
using accel::testing::WriteFakeSysfs;

inline topology::HostTopology Fixture(const std::string& name) {
  return topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
}

/// Where fake trees go: /dev/shm when there is one (thousands of small files; a disk-backed
/// /tmp can be 20x slower), else the temp directory.
inline fs::path TreeBase() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return fs::temp_directory_path();
}

/// A fresh, empty directory, removed by the destructor.
class TempRoot {
 public:
  explicit TempRoot(const std::string& name) {
    static int counter = 0;
    path_ = (TreeBase() /
             ("accel-doctor-" + name + "-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter++)))
                .string();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Device Control of a well-set-up device: MaxReadReq 4096, MaxPayload 256, relaxed ordering
/// and no-snoop enabled, error reporting on.
constexpr uint16_t kHealthyDevCtl = 0x583f;

/// 4096 bytes of config space: a power management capability at 0x40 and the PCI Express
/// capability at 0x60 (Device Capabilities with `mps_supported_code`, Device Control
/// `devctl`); an AER capability at 0x100 and, when `acs` is set, an ACS capability at 0x148
/// whose control word is *acs.
inline std::string ConfigSpace(std::optional<uint16_t> acs, uint16_t devctl = kHealthyDevCtl,
                               unsigned mps_supported_code = 2) {
  std::string c(kExtendedConfigSize, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) c[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put32(0, 0xc0301000);  // vendor 1000, device c030
  put32(0x04, 0x00100406);  // command: memory, bus master; status: capabilities list
  c[0x34] = 0x40;
  put32(0x40, 0x0001u | (0x60u << 8));              // PM, next 0x60
  put32(0x60, 0x0010u | (0x0002u << 16));           // PCI Express v2, last
  put32(0x64, 0x00008000u | (mps_supported_code & 7));  // Device Capabilities
  put32(0x68, devctl);                              // Device Control, Device Status 0
  put32(0x100, 0x0001u | (1u << 16) | ((acs ? 0x148u : 0u) << 20));
  if (acs) {
    put32(0x148, 0x000Du | (1u << 16));
    put32(0x14c, 0x007fu | (static_cast<uint32_t>(*acs) << 16));  // capability, control
  }
  return c;
}

inline void WriteBinary(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// A symlink at ROOT/rel pointing at `target` (replacing whatever is there).
inline void Link(const std::string& root, const std::string& rel, const std::string& target) {
  fs::path link = fs::path(root) / rel;
  fs::create_directories(link.parent_path());
  std::error_code ec;
  fs::remove_all(link, ec);
  fs::create_symlink(target, link);
}

/// Binds PCI function `address` to `driver` (a driver link as Linux has it).
inline void BindDriver(const topology::HostTopology& host, const std::string& root,
                       const std::string& address, const std::string& driver) {
  fs::create_directories(fs::path(root) / "sys/bus/pci/drivers" / driver);
  std::string dir = FakePciDir(host, root, address);
  std::error_code ec;
  fs::remove(fs::path(dir) / "driver", ec);
  fs::create_symlink(fs::path(root) / "sys/bus/pci/drivers" / driver, fs::path(dir) / "driver");
}

/// Options for the healthy extras.
struct HealthyOptions {
  FakeSysfsOptions sysfs;
  bool peermem = true;
  bool cpu_files = true;   ///< governor and cpuidle files for every CPU
  bool irqs = true;        ///< one MSI IRQ per GPU/RDMA function, on its local CPUs
  std::string gpu_driver = "nvidia";
  bool tuned = true;       ///< tuned running with accelerator-performance
  bool pod = true;         ///< memlock unlimited, /dev/infiniband, a 2 GiB-per-GPU /dev/shm
};

/// Writes `host` under `root` as a healthy bare-metal training node.
inline void WriteHealthyHost(const topology::HostTopology& host, const std::string& root,
                             const HealthyOptions& o = {}) {
  WriteFakeSysfs(host, root, o.sysfs);
  WriteFakeFile(root, "proc/sys/kernel/osrelease", "5.15.0-91-generic\n");
  bool nvidia = false;
  for (const topology::PciDevice& d : host.pci) nvidia |= d.is_accelerator() && d.vendor_id == 0x10de;
  if (nvidia) {
    WriteFakeFile(root, "proc/driver/nvidia/version",
                  "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
                  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
    if (o.peermem) WriteFakeFile(root, "sys/module/nvidia_peermem/version", "550.54.15\n");
    WriteFakeFile(root, "run/nvidia-persistenced/socket", "");
    fs::create_directories(fs::path(root) / "run/systemd/system");
    Link(root, "run/systemd/units/invocation:nvidia-fabricmanager.service", "8d2f0c1e4b");
  }
  int irq = 100;
  for (const topology::PciDevice& d : host.pci) {
    std::string dir = FakePciDir(host, root, d.address);
    if (d.role == topology::PciRole::kBridge) WriteBinary(dir + "/config", ConfigSpace(uint16_t{0}));
    if (d.is_accelerator() || d.is_rdma()) WriteBinary(dir + "/config", ConfigSpace(std::nullopt));
    if (d.role == topology::PciRole::kGpu && d.vendor_id == 0x10de)
      BindDriver(host, root, d.address, o.gpu_driver);
    if (o.irqs && (d.is_accelerator() || (d.is_rdma() && !d.is_vf()))) {
      CpuSet local;
      int idx = host.NodeIndex(d.numa_node);
      local = idx >= 0 ? host.numa_nodes[idx].cpus : host.AllCpus();
      WriteFakeFile(dir, "local_cpulist", local.ToString() + "\n");
      WriteFakeFile(dir, "msi_irqs/" + std::to_string(irq), "msix\n");
      std::string cpu = std::to_string(local.First()) + "\n";
      WriteFakeFile(root, "proc/irq/" + std::to_string(irq) + "/smp_affinity_list", local.ToString() + "\n");
      WriteFakeFile(root, "proc/irq/" + std::to_string(irq) + "/effective_affinity_list", cpu);
      ++irq;
    }
  }
  if (o.cpu_files) {
    CpuSet all = host.AllCpus();
    for (int c = all.First(); c >= 0; c = all.Next(c)) {
      std::string cpu = "sys/devices/system/cpu/cpu" + std::to_string(c);
      WriteFakeFile(root, cpu + "/cpufreq/scaling_governor", "performance\n");
      WriteFakeFile(root, cpu + "/cpuidle/state0/name", "POLL\n");
      WriteFakeFile(root, cpu + "/cpuidle/state0/latency", "0\n");
      WriteFakeFile(root, cpu + "/cpuidle/state0/disable", "0\n");
      WriteFakeFile(root, cpu + "/cpuidle/state1/name", "C1\n");
      WriteFakeFile(root, cpu + "/cpuidle/state1/latency", "2\n");
      WriteFakeFile(root, cpu + "/cpuidle/state1/disable", "0\n");
      WriteFakeFile(root, cpu + "/cpuidle/state2/name", "C6\n");
      WriteFakeFile(root, cpu + "/cpuidle/state2/latency", "170\n");
      WriteFakeFile(root, cpu + "/cpuidle/state2/disable", "1\n");
    }
    WriteFakeFile(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "intel_pstate\n");
    WriteFakeFile(root, "sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n");
  }
  if (o.tuned) {
    WriteFakeFile(root, "etc/tuned/active_profile", "accelerator-performance\n");
    WriteFakeFile(root, "etc/tuned/profile_mode", "manual\n");
    WriteFakeFile(root, "run/tuned/tuned.pid", "1234\n");
  }
  if (o.pod) {
    WriteFakeFile(root, "proc/self/limits",
                  "Limit                     Soft Limit           Hard Limit           Units     \n"
                  "Max cpu time              unlimited            unlimited            seconds   \n"
                  "Max open files            1048576              1048576              files     \n"
                  "Max locked memory         unlimited            unlimited            bytes     \n"
                  "Max address space         unlimited            unlimited            bytes     \n");
    // Docker's default capability set: no CAP_IPC_LOCK.
    WriteFakeFile(root, "proc/self/status",
                  "Name:\taccel\nCapInh:\t0000000000000000\nCapPrm:\t00000000a80425fb\n"
                  "CapEff:\t00000000a80425fb\nCapBnd:\t00000000a80425fb\n");
    int uverbs = 0, accelerators = 0;
    for (const topology::PciDevice& d : host.pci) {
      accelerators += d.is_accelerator();
      for (size_t i = 0; i < d.rdma_devices.size(); ++i)
        WriteFakeFile(root, "dev/infiniband/uverbs" + std::to_string(uverbs++), "");
    }
    if (uverbs > 0) WriteFakeFile(root, "dev/infiniband/rdma_cm", "");
    WriteFakeFile(root, "proc/mounts",
                  "overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0\n"
                  "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
                  "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n"
                  "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=" +
                      std::to_string(std::max(1, accelerators) * 2 * 1048576) + "k,inode64 0 0\n");
  }
}

/// Changes to a tree that another test will use again, undone by Restore or the destructor:
/// every path is saved (file contents, link target, or absence) before its first change.
class TreeEditor {
 public:
  explicit TreeEditor(std::string root) : root_(std::move(root)) {}
  ~TreeEditor() { Restore(); }
  TreeEditor(const TreeEditor&) = delete;
  TreeEditor& operator=(const TreeEditor&) = delete;

  /// Paths are relative to the root, or absolute paths inside it (FakePciDir's).
  void Set(const std::string& path, const std::string& text) {
    fs::path p = Full(path);
    Save(p);
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(p, ec))) fs::remove_all(p, ec);
    fs::remove(p, ec);  // a link is replaced, not written through
    WriteBinary(p.string(), text);
  }
  void Remove(const std::string& path) {
    fs::path p = Full(path);
    Save(p);
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  void MakeDir(const std::string& path) {
    fs::path p = Full(path);
    Save(p);
    std::error_code ec;
    fs::remove(p, ec);
    fs::create_directories(p);
  }
  void SetLink(const std::string& path, const std::string& target) {
    fs::path p = Full(path);
    Save(p);
    std::error_code ec;
    fs::remove_all(p, ec);
    fs::create_directories(p.parent_path());
    fs::create_symlink(target, p);
  }
  /// Undoes every change, newest first.
  void Restore() {
    std::error_code ec;
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      fs::remove_all(it->remove, ec);
      if (it->kind == Saved::kFile) WriteBinary(it->path.string(), it->data);
      if (it->kind == Saved::kLink) fs::create_symlink(it->data, it->path, ec);
    }
    saved_.clear();
    seen_.clear();
  }

 private:
  struct Saved {
    enum Kind { kAbsent, kFile, kLink } kind = kAbsent;
    fs::path path;    // what was changed
    fs::path remove;  // removed on restore: the path, or its topmost new ancestor
    std::string data; // file contents or link target
  };
  fs::path Full(const std::string& path) const {
    return path.rfind(root_, 0) == 0 ? fs::path(path) : fs::path(root_) / path;
  }
  void Save(const fs::path& p) {
    if (!seen_.insert(p.string()).second) return;
    Saved s;
    s.path = p;
    s.remove = p;
    std::error_code ec;
    fs::file_status st = fs::symlink_status(p, ec);
    if (fs::is_symlink(st)) {
      s.kind = Saved::kLink;
      s.data = fs::read_symlink(p).string();
    } else if (fs::is_regular_file(st)) {
      s.kind = Saved::kFile;
      std::ifstream in(p, std::ios::binary);
      s.data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else if (fs::is_directory(st)) {
      ADD_FAILURE() << "TreeEditor cannot save directory " << p << "; change the files in it";
      return;
    } else {
      // Absent: remove the highest directory the change will create.
      fs::path top = p;
      while (top.has_parent_path() && top.parent_path() != fs::path(root_) &&
             !fs::exists(fs::symlink_status(top.parent_path(), ec)))
        top = top.parent_path();
      s.remove = top;
    }
    saved_.push_back(std::move(s));
  }

  std::string root_;
  std::vector<Saved> saved_;
  std::set<std::string> seen_;
};

/// A healthy tree of fixture `name` written once per test process and shared by every test
/// that asks (they undo their changes with TreeEditor); removed when the process exits. Only
/// the HGX H100 gets per-CPU governor and idle-state files (the other machines have hundreds of
/// CPUs and nothing new to show there); the EPYC's NICs are RoCE.
inline const std::string& SharedRoot(const std::string& name) {
  static std::map<std::string, std::unique_ptr<TempRoot>> roots;
  std::unique_ptr<TempRoot>& root = roots[name];
  if (!root) {
    root = std::make_unique<TempRoot>(name + "-shared");
    HealthyOptions o;
    o.cpu_files = name == "hgx-h100";
    if (name == "epyc-nps4-mi300x") o.sysfs.rdma_link_layer = "Ethernet";
    WriteHealthyHost(Fixture(name), root->path(), o);
  }
  return root->path();
}

inline const std::string& SharedHgxRoot() { return SharedRoot("hgx-h100"); }

/// The finding with `id`; fails the test (and returns an empty one) when absent.
inline Finding Find(const DoctorReport& report, const std::string& id) {
  for (const Finding& f : report.findings)
    if (f.id == id) return f;
  ADD_FAILURE() << "no finding " << id;
  return Finding{};
}

/// Runs the doctor on `root` with `host` as its topology.
inline DoctorReport RunOn(const topology::HostTopology& host, const std::string& root,
                        Role role = Role::kBareMetal) {
  DoctorOptions o;
  o.root = root;
  o.role = role;
  return RunDoctor(host, o);
}

/// "GDR-01=fail HOST-08=info ..." for every finding that is not ok or n/a, for failure messages.
inline std::string Problems(const DoctorReport& report) {
  std::string out;
  for (const Finding& f : report.findings)
    if (f.severity >= Severity::kInfo)
      out += f.id + "=" + SeverityName(f.severity) + " (" + f.summary + ")\n";
  return out;
}

/// True when some evidence of `f` has `path` and a value containing `fragment`.
inline bool HasEvidence(const Finding& f, const std::string& path, const std::string& fragment = "") {
  for (const Evidence& e : f.evidence)
    if (e.path == path && e.value.find(fragment) != std::string::npos) return true;
  return false;
}

/// Every HgxTreeTest shares one healthy tree; each test changes it through edit_, which puts
/// everything back when the test ends.
class HgxTreeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    host_ = new topology::HostTopology(Fixture("hgx-h100"));
    root_ = SharedHgxRoot();
  }
  static void TearDownTestSuite() {
    delete host_;
    host_ = nullptr;
  }
  DoctorReport Doctor(Role role = Role::kBareMetal) { return RunOn(*host_, root_, role); }
  /// With options of the test's choosing (the root is filled in).
  DoctorReport Doctor(DoctorOptions options) {
    options.root = root_;
    return RunDoctor(*host_, options);
  }
  std::string Pci(const std::string& address) { return FakePciDir(*host_, root_, address); }
  void Bind(const std::string& address, const std::string& driver) {
    edit_.SetLink(Pci(address) + "/driver", root_ + "/sys/bus/pci/drivers/" + driver);
  }
  void BindAllGpus(const std::string& driver) {
    for (const topology::PciDevice& d : host_->pci)
      if (d.role == topology::PciRole::kGpu) Bind(d.address, driver);
  }
  // The booted command line and what the kernel then shows as isolated.
  void Boot(const std::string& cmdline, const std::string& isolated) {
    edit_.Set("proc/cmdline", cmdline + "\n");
    edit_.Set("sys/devices/system/cpu/isolated", isolated + "\n");
  }

  static inline topology::HostTopology* host_ = nullptr;
  static inline std::string root_;
  TreeEditor edit_{root_};
};


}  // namespace accel::doctor::testing
