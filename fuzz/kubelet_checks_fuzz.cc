// libFuzzer target: arbitrary bytes as the files `accel doctor --role k8s-node` reads to find and
// check the kubelet's configuration (KUBE-01..05, src/doctor/kubelet_checks.cc): the input is
// cut at "\n--\n" into the kubelet's /proc/PID/cmdline ('\n' stands for the NUL separators), its
// systemd drop-in (10-kubeadm.conf), kubeadm-flags.env, /var/lib/kubelet/config.yaml, one
// --config-dir drop-in and accel-guest-hugepages.service, written under a scratch root on a small
// two-node guest.
//
// The doctor reads these from the node it checks, which may hold anything; a bad file is a
// finding, never an exception. Invariants checked: exactly five findings KUBE-01..05 in order,
// each with a summary; the checks that read the configuration are n/a exactly when KUBE-01 says
// there is nothing (or nothing readable) to check.
//   (built by scripts/fuzz.sh; seeds in fuzz/corpus/kubelet_checks/)
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "doctor/doctor_internal.h"

namespace {

namespace fs = std::filesystem;
using namespace accel;
using namespace accel::doctor;

void Check(bool ok) {
  if (!ok) std::abort();
}

void Put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A guest of two NUMA nodes, 8 CPUs each in SMT pairs, 1 GiB pools, one GPU per node.
topology::HostTopology Guest() {
  topology::HostTopology host;
  host.hostname = "fuzz";
  for (int n = 0; n < 2; ++n) {
    topology::NumaNode node;
    node.id = n;
    for (int c = 0; c < 8; c += 2) {
      node.cpus.Add(n * 8 + c);
      node.cpus.Add(n * 8 + c + 1);
      node.cores.push_back(CpuSet{n * 8 + c, n * 8 + c + 1});
    }
    node.memory_kib = 64ull << 20;
    node.pages = {{4, 8ull << 20, 8ull << 20}, {1048576, 32, 32}};
    host.numa_nodes.push_back(node);
    topology::PciDevice gpu;
    gpu.address = n == 0 ? "0000:21:00.0" : "0000:31:00.0";
    gpu.role = topology::PciRole::kGpu;
    gpu.vendor_id = 0x10de;
    gpu.numa_node = n;
    host.pci.push_back(gpu);
  }
  return host;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A scratch root, removed at exit.
  static const struct Scratch {
    fs::path path = fs::temp_directory_path() / ("kubelet-checks-fuzz-" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } scratch;
  const fs::path& root = scratch.path;
  static const topology::HostTopology host = Guest();
  static const char* kFiles[] = {"proc/77/cmdline",
                                 "etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
                                 "var/lib/kubelet/kubeadm-flags.env",
                                 "var/lib/kubelet/config.yaml",
                                 "etc/kubernetes/kubelet.conf.d/50-accel.conf",
                                 "etc/systemd/system/accel-guest-hugepages.service"};
  std::error_code ec;
  fs::remove_all(root, ec);
  const std::string input(reinterpret_cast<const char*>(data), size);
  size_t at = 0;
  for (size_t i = 0; i < sizeof kFiles / sizeof kFiles[0] && at <= input.size(); ++i) {
    size_t end = input.find("\n--\n", at);
    if (end == std::string::npos) end = input.size();
    std::string part = input.substr(at, end - at);
    if (i == 0) {
      for (char& c : part)
        if (c == '\n') c = '\0';
      Put(root / "proc/77/comm", "kubelet\n");
    }
    if (!part.empty()) Put(root / kFiles[i], part);
    at = end + 4;
  }

  DoctorOptions options;
  options.root = root.string();
  options.role = Role::kK8sNode;
  const Context ctx = BuildContext(host, options);
  std::vector<Finding> findings;
  AppendKubeletChecks(ctx, &findings);  // must not throw
  Check(findings.size() == 5);
  for (size_t i = 0; i < findings.size(); ++i) {
    Check(findings[i].id == "KUBE-0" + std::to_string(i + 1));
    Check(!findings[i].summary.empty());
  }
  const bool unchecked = findings[1].severity == Severity::kNotApplicable;
  Check(findings[2].severity == Severity::kNotApplicable ? unchecked : !unchecked);
  Check(findings[3].severity == Severity::kNotApplicable ? unchecked : !unchecked);
  if (unchecked) Check(findings[0].severity == Severity::kInfo || findings[0].severity >= Severity::kWarn);
  return 0;
}
