// libFuzzer target: arbitrary bytes as a Kubernetes Pod (YAML or JSON), read by
// kubelet::ParsePodText, then judged by kubelet::NodeAdmission on a fixed small guest (2 cells of 4
// SMT-2 cores, one GPU per cell and one without a NUMA node, 1G hugepage pools, the kubelet
// configuration accel derives for it).
//
// Only accel::InputError may leave the reader, and nothing may leave the admission. What parses
// must keep the reader's promises: at least one container, no zero quantities kept, every
// request within its limit, extended resources and hugepages with request == limit in whole
// devices, the pod's accumulated requests not negative; an admitted pod can be committed and
// holds no more than the node has.
//   scripts/fuzz.sh builds it with the others (fuzz/CMakeLists.txt); seeds in fuzz/corpus/cluster_pod/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kubelet/derive.h"
#include "kubelet/check.h"
#include "kubelet/admission.h"
#include "cluster/group_node.h"
#include "common/error.h"

namespace {

using namespace accel::cluster;
using namespace accel::kubelet;

void Check(bool ok) {
  if (!ok) std::abort();
}

const KubeletNode& Node() {
  static const KubeletNode node = [] {
    GuestLayout g;
    g.flavor = "fuzz";
    g.vcpus = 16;
    g.threads_per_core = 2;
    g.memory_mib = 2 * 16384;
    for (int c = 0; c < 2; ++c) {
      GuestCellLayout cell;
      cell.cell = c;
      for (int v = 8 * c; v < 8 * c + 8; ++v) cell.vcpus.Add(v);
      cell.dedicated_vcpus = cell.vcpus;
      cell.memory_mib = 16384;
      cell.host_page_kib = 1048576;
      g.cells.push_back(cell);
    }
    const std::vector<GuestHugepagePool> pools = {{0, 1048576, 4}, {1, 1048576, 4}};
    KubeletInputs in;
    in.hugepages = pools;
    const KubeletPlan plan = DeriveKubeletConfig(g, in);
    std::vector<NodeResource> resources = {{"nvidia.com/gpu", {1, 1}, 1, 0, "fuzz"},
                                           {"rdma/fuzz_shared", {0, 0}, 63, 0, "fuzz"},
                                           {"amd.com/gpu", {4, 4}, 0, 1, "fuzz"}};
    return KubeletNodeFrom(g, pools, plan.config, resources);
  }();
  return node;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  PodResources pod;
  try {
    pod = ParsePodText(text, "fuzz pod");
  } catch (const accel::InputError&) {
    return 0;
  }
  Check(!pod.containers.empty());
  for (const ContainerResources& c : pod.containers) {
    Check(!c.sidecar || c.init);
    for (const auto& [name, request] : c.requests) {
      Check(request > 0);
      auto limit = c.limits.find(name);
      if (limit != c.limits.end()) Check(request <= limit->second);
      const bool exact = name.rfind("hugepages-", 0) == 0 || (name.find('/') != std::string::npos && name.rfind("kubernetes.io/", 0) != 0);
      if (exact && name.find('/') != std::string::npos) Check(limit != c.limits.end() && limit->second == request && request % 1000 == 0);
    }
  }
  for (const char* r : {"cpu", "memory", "nvidia.com/gpu", "hugepages-1Gi"}) Check(PodRequestMilli(pod, r) >= 0);
  (void)QosClassName(QosOf(pod));
  NodeAdmission node(Node());
  const Admission a = node.Try(pod);
  Check(a.admitted == a.reason.empty());
  if (a.admitted) {
    node.Commit(a);
    int cpus = 0;
    for (const CellShare& s : node.HeldPerCell()) cpus += s.cpus.Count();
    Check(cpus <= Node().layout.vcpus);
    Check(node.pods() == 1);
  }
  return 0;
}
