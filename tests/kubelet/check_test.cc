// The kubelet options that exclude each other (kubelet/check.h CheckKubeletOptions): pairs the
// kubelet refuses to start with, and settings it silently ignores (warnings).
#include "kubelet/check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace accel::kubelet {
namespace check_test {

TEST(KubeletOptions, RefusedPairsAndIgnoredSettings) {
  GuestLayout one;  // no NUMA topology: one guest node, 2 sockets
  one.vcpus = 8;
  one.sockets = 2;
  one.cores_per_socket = 4;
  auto keys = [&](const nlohmann::json& c) {
    std::vector<std::string> k;
    for (const KubeletFinding& f : CheckKubeletOptions(ReadKubeletSettings(c), one))
      k.push_back(std::string(f.severity == Severity::kWarning ? "warning " : "error ") + f.field);
    return k;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(keys({{"cpuManagerPolicy", "static"}, {"cpuManagerPolicyOptions", {{"align-by-socket", "true"}}}}),
            V{"error cpuManagerPolicyOptions.align-by-socket"});
  EXPECT_EQ(keys({{"cpuManagerPolicy", "static"},
                  {"cpuManagerPolicyOptions", {{"prefer-align-cpus-by-uncorecache", "true"}, {"distribute-cpus-across-numa", "true"}}}}),
            V{"error cpuManagerPolicyOptions.prefer-align-cpus-by-uncorecache"});
  EXPECT_EQ(keys({{"topologyManagerPolicyOptions", {{"prefer-closest-numa-nodes", "yes"}, {"pack", "true"}}}}),
            (V{"error topologyManagerPolicyOptions.pack", "error topologyManagerPolicyOptions.prefer-closest-numa-nodes"}));
  EXPECT_EQ(keys({{"enforceNodeAllocatable", {"pods", "system-reserved"}}}), V{"error enforceNodeAllocatable"});
  EXPECT_EQ(keys({{"enforceNodeAllocatable", {"pods", "system-reserved"}}, {"systemReservedCgroup", "/system.slice"}}), V{});
  EXPECT_EQ(keys({{"enforceNodeAllocatable", {"none", "pods"}}}), V{"error enforceNodeAllocatable"});
  EXPECT_EQ(keys({{"shutdownGracePeriod", "30s"}, {"shutdownGracePeriodCriticalPods", "1m"}}),
            V{"error shutdownGracePeriodCriticalPods"});
  EXPECT_EQ(keys({{"shutdownGracePeriod", "1m"}, {"shutdownGracePeriodCriticalPods", "30s"}}), V{});
  EXPECT_EQ(keys({{"reservedSystemCPUs", "0"}, {"kubeReserved", {{"cpu", "500m"}}}}), V{"warning kubeReserved.cpu"});
  EXPECT_EQ(keys({{"reservedMemory", {{{"numaNode", 0}, {"limits", {{"memory", "1Gi"}}}}}}}), V{"warning reservedMemory"});
  // Options of a CPU manager that is not static are CheckKubeletConfig's business, not repeated.
  EXPECT_EQ(keys({{"cpuManagerPolicyOptions", {{"full-pcpus-only", "true"}, {"distribute-cpus-across-cores", "true"}}}}), V{});
}

}  // namespace check_test
}  // namespace accel::kubelet
