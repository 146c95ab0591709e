// The kubelet layer's model of admission: the pod reader (API-server defaulting and validation,
// QoS class), the node a kubelet manages (allocatable, reservations), and admission on small hand-built guests for each kubelet rule — single-numa-node,
// restricted, full-pcpus-only, the Memory Manager's groups, scope container vs pod, devices
// without a NUMA node, failRequestsGreaterThanOne — plus the example template's groups.
#include "kubelet/admission.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/group_node.h"
#include "cluster/plan.h"
#include "cluster/template.h"
#include "common/error.h"
#include "kubelet/derive.h"
#include "kubelet/pod.h"
#include "kubelet/test_guests.h"

namespace accel::kubelet {
namespace admission_test {

using test_guests::Guest;

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

// The field of the InputError that parsing `text` throws ("" when it parses).
std::string ErrorField(const std::string& text, std::string* problem = nullptr) {
  try {
    ParsePodText(text, "pod.yaml");
  } catch (const InputError& e) {
    if (problem) *problem = e.problem() + " / " + e.hint();
    return e.field();
  }
  return "";
}

PodResources Pod(const std::string& body) {
  return ParsePodText("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + body, "pod.yaml");
}

// One container with these limits (and requests = limits).
PodResources Limits(const std::string& limits) {
  return Pod("  containers:\n  - name: c\n    resources: {limits: " + limits + "}\n");
}

TEST(PodReader, DefaultsRequestsToLimitsAndComputesQos) {
  const PodResources p = Pod(R"(  initContainers:
  - name: fetch
    resources: {limits: {cpu: 2, memory: 1Gi}}
  containers:
  - name: train
    resources:
      limits: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 2, hugepages-1Gi: 4Gi}
)");
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_TRUE(p.containers[0].init);
  EXPECT_EQ(p.containers[1].requests.at("cpu"), 8000);
  EXPECT_EQ(p.containers[1].requests.at("nvidia.com/gpu"), 2000);
  EXPECT_EQ(p.containers[1].requests.at("memory"), 64LL * 1024 * 1024 * 1024 * 1000);
  EXPECT_EQ(QosOf(p), QosClass::kGuaranteed);

  EXPECT_EQ(QosOf(Pod("  containers:\n  - name: c\n")), QosClass::kBestEffort);
  EXPECT_EQ(QosOf(Pod("  containers:\n  - name: c\n    resources: {requests: {cpu: 1}}\n")), QosClass::kBurstable);
  // Every container needs cpu and memory limits: one without makes the pod Burstable.
  EXPECT_EQ(QosOf(Pod(R"(  containers:
  - {name: a, resources: {limits: {cpu: 1, memory: 1Gi}}}
  - {name: b, resources: {limits: {cpu: 1}}}
)")),
            QosClass::kBurstable);
  // The init container counts too (ComputePodQOS walks init and app containers).
  EXPECT_EQ(QosOf(Pod(R"(  initContainers:
  - {name: i, resources: {requests: {cpu: 1}}}
  containers:
  - {name: a, resources: {limits: {cpu: 1, memory: 1Gi}}}
)")),
            QosClass::kBurstable);
  // Requests below the limits: Burstable. Only GPUs: BestEffort (QoS reads cpu and memory only).
  EXPECT_EQ(QosOf(Pod("  containers:\n  - {name: a, resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}}\n")),
            QosClass::kBurstable);
  EXPECT_EQ(QosOf(Limits("{nvidia.com/gpu: 1}")), QosClass::kBestEffort);
  // JSON reads the same.
  const PodResources j = ParsePodText(R"({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [
      {"name": "c", "resources": {"limits": {"cpu": 0.5, "memory": "512Mi"}}}]}})", "pod.json");
  EXPECT_EQ(j.containers[0].requests.at("cpu"), 500);
  EXPECT_EQ(QosOf(j), QosClass::kGuaranteed);
}

TEST(PodReader, AccumulatesInitContainersAndSidecarsAsKubernetesDoes) {
  // KEP-753: max(app + sidecars, each init container + the sidecars started before it).
  const PodResources p = Pod(R"(  initContainers:
  - {name: sidecar, restartPolicy: Always, resources: {limits: {cpu: 1, memory: 1Gi}}}
  - {name: big-init, resources: {limits: {cpu: 6, memory: 1Gi}}}
  containers:
  - {name: a, resources: {limits: {cpu: 2, memory: 1Gi}}}
  - {name: b, resources: {limits: {cpu: 2, memory: 1Gi}}}
)");
  EXPECT_TRUE(p.containers[0].sidecar);
  EXPECT_EQ(PodRequestMilli(p, "cpu"), 7000);  // 6 + the sidecar before it
  const PodResources q = Pod(R"(  initContainers:
  - {name: sidecar, restartPolicy: Always, resources: {limits: {cpu: 3, memory: 1Gi}}}
  - {name: init, resources: {limits: {cpu: 2, memory: 1Gi}}}
  containers:
  - {name: a, resources: {limits: {cpu: 2, memory: 1Gi}}}
)");
  EXPECT_EQ(PodRequestMilli(q, "cpu"), 5000);  // app 2 + sidecar 3
}

TEST(PodReader, RefusesWhatTheApiServerRefusesWithTheKeyPath) {
  std::string problem;
  EXPECT_EQ(ErrorField("apiVersion: apps/v1\nkind: Deployment\nspec: {}\n", &problem), "kind");
  EXPECT_NE(problem.find("spec.template.spec"), std::string::npos) << problem;
  EXPECT_EQ(ErrorField("apiVersion: batch/v1\nkind: CronJob\n", &problem), "kind");
  EXPECT_NE(problem.find("jobTemplate"), std::string::npos) << problem;
  EXPECT_EQ(ErrorField("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n", &problem), "kind");
  EXPECT_EQ(ErrorField("apiVersion: v1\nkind: List\nitems: []\n"), "kind");
  EXPECT_EQ(ErrorField("- 1\n- 2\n"), "");  // not a mapping: no field, still an error
  EXPECT_THROW(ParsePodText("- 1\n", "p"), InputError);
  EXPECT_EQ(ErrorField("apiVersion: v1\nkind: Pod\nspec: {containers: []}\n"), "spec.containers");
  EXPECT_EQ(ErrorField("apiVersion: v2\nkind: Pod\nspec: {containers: [{name: a}]}\n"), "apiVersion");
  const std::string head = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    resources: ";
  EXPECT_EQ(ErrorField(head + "{requests: {cpu: 2}, limits: {cpu: 1}}\n"), "spec.containers[0].resources.requests.cpu");
  EXPECT_EQ(ErrorField(head + "{requests: {nvidia.com/gpu: 1}}\n", &problem),
            "spec.containers[0].resources.requests.nvidia.com/gpu");
  EXPECT_NE(problem.find("overcommitted"), std::string::npos);
  EXPECT_EQ(ErrorField(head + "{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}\n"),
            "spec.containers[0].resources.requests.nvidia.com/gpu");
  EXPECT_EQ(ErrorField(head + "{limits: {nvidia.com/gpu: 500m}}\n"), "spec.containers[0].resources.limits.nvidia.com/gpu");
  EXPECT_EQ(ErrorField(head + "{limits: {gpu: 1}}\n"), "spec.containers[0].resources.limits.gpu");
  EXPECT_EQ(ErrorField(head + "{limits: {hugepages-1Gi: 2Gi}}\n"), "spec.containers[0].resources");
  EXPECT_EQ(ErrorField(head + "{limits: {cpu: 1GB}}\n"), "spec.containers[0].resources.limits.cpu");
  EXPECT_EQ(ErrorField(head + "{limits: {cpu: -1}}\n"), "spec.containers[0].resources.limits.cpu");
  EXPECT_EQ(ErrorField(head + "{limit: {cpu: 1}}\n"), "spec.containers[0].resources.limit");
  EXPECT_EQ(ErrorField("apiVersion: v1\nkind: Pod\nspec: {resources: {limits: {cpu: 1}}, containers: [{name: a}]}\n"),
            "spec.resources");
  EXPECT_EQ(ErrorField("apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, restartPolicy: Always}]}\n"),
            "spec.containers[0].restartPolicy");
  EXPECT_THROW(ParsePodText("{", "p"), InputError);
}

TEST(PodReader, ReadsAPodObjectAsTheApiHandsItOverWithoutItsKind) {
  // A typed Go client's v1.Pod: no kind, no apiVersion, creationTimestamp null, status.
  const nlohmann::json pod = nlohmann::json::parse(R"({
    "metadata": {"name": "p", "namespace": "ml", "uid": "u", "creationTimestamp": null},
    "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"},
                                                                        "requests": {"cpu": "500m"}}}]},
    "status": {"phase": "Pending"}})");
  const PodResources p = ReadPodObject(pod, "pod ml/p");
  EXPECT_EQ(p.name, "p");
  EXPECT_EQ(PodRequestMilli(p, "nvidia.com/gpu"), 2000);
  EXPECT_EQ(PodRequestMilli(p, "cpu"), 500);
  // With its kind it must be a v1 Pod; the rules are ParsePodText's.
  nlohmann::json typed = pod;
  typed["kind"] = "Pod";
  typed["apiVersion"] = "v1";
  EXPECT_EQ(ReadPodObject(typed, "p").name, "p");
  typed["kind"] = "Deployment";
  EXPECT_THROW(ReadPodObject(typed, "p"), InputError);
  nlohmann::json bad = pod;
  bad["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "500m";
  try {
    ReadPodObject(bad, "pod ml/p");
    ADD_FAILURE() << "a fractional device count must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "pod ml/p");
    EXPECT_EQ(e.field(), "spec.containers[0].resources.limits.nvidia.com/gpu");
  }
}

NodeResource Gpus(const GuestLayout& g, int replicas = 1, int max = 0) {
  NodeResource r{"nvidia.com/gpu", std::vector<int>(g.cells_or_one().size(), 0), 0, max, "test GPUs"};
  for (const GuestDevice& d : g.devices) (d.guest_cell >= 0 ? r.per_cell[static_cast<size_t>(d.guest_cell)] : r.without_cell) += replicas;
  return r;
}

// The node accel derives for `g`, with `overrides` merged over the derived kubelet config.
KubeletNode NodeOf(const GuestLayout& g, const nlohmann::json& overrides = nlohmann::json::object(),
                   std::vector<GuestHugepagePool> pools = {}, int replicas = 1, int max = 0) {
  KubeletInputs in;
  in.version = KubernetesVersion{1, 33, 0};
  in.hugepages = pools;
  in.overrides = overrides;
  const KubeletPlan plan = DeriveKubeletConfig(g, in);
  std::vector<NodeResource> resources;
  if (!g.devices.empty()) resources.push_back(Gpus(g, replicas, max));
  return KubeletNodeFrom(g, pools, plan.config, resources);
}

TEST(KubeletNode, ReadsReservationsAndAllocatable) {
  // 2 cells x 4 cores x 2 threads, 16 GiB each, 1G pools of 4 pages per cell.
  const GuestLayout g = Guest(2, 4, 2, 16384, {0, 1});
  const KubeletNode n = NodeOf(g, nlohmann::json::object(), {{0, 1048576, 4}, {1, 1048576, 4}});
  EXPECT_TRUE(n.static_cpu);
  EXPECT_TRUE(n.full_pcpus_only);
  EXPECT_EQ(n.topology_policy, "single-numa-node");
  EXPECT_TRUE(n.pod_scope);
  EXPECT_TRUE(n.static_memory);
  EXPECT_EQ(n.reserved_cpus.ToString(), "0-1");  // a whole core of cell 0
  EXPECT_EQ(n.allocatable_cpu_milli, 14000);
  EXPECT_EQ(n.allocatable_hugepages_mib.at(1048576), 8192u);
  ASSERT_EQ(n.cell_count(), 2);
  // Cell 0 holds the whole reservation (kubeReserved + systemReserved + 100Mi), cell 1 none.
  const uint64_t reserved = 16384 * 2 - 8192 - n.allocatable_memory_mib;
  EXPECT_EQ(n.cell_memory_mib[0], 16384 - 4096 - reserved);
  EXPECT_EQ(n.cell_memory_mib[1], 16384u - 4096u);
  EXPECT_TRUE(n.findings.empty());
  const topology::HostTopology h = GuestHostTopology(n);
  EXPECT_EQ(topology::CheckInvariants(h), "");
  EXPECT_EQ(h.numa_nodes.size(), 2u);
  EXPECT_EQ(h.numa_nodes[0].cores.size(), 4u);
  EXPECT_EQ(h.pci.size(), 3u);  // host bridge + 2 GPUs

  // Without reservedSystemCPUs the static CPU Manager reserves ceil(kube + system cpu) CPUs, whole
  // cores first; allocatable follows the quantities.
  nlohmann::json c = DeriveKubeletConfig(g, KubeletInputs{}).config;
  c.erase("reservedSystemCPUs");
  c["kubeReserved"]["cpu"] = "1500m";
  const KubeletNode m = KubeletNodeFrom(g, {}, c, {});
  EXPECT_EQ(m.reserved_cpus.ToString(), "0-1");
  EXPECT_EQ(m.allocatable_cpu_milli, 16000 - 1500);
  // A configuration the kubelet would not read is an InputError naming the field.
  c["topologyManagerPolicy"] = "numa-aligned";
  try {
    KubeletNodeFrom(g, {}, c, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "topologyManagerPolicy");
  }
}

TEST(PodAdmission, SingleNumaNodeNeedsOneCellForEverythingAligned) {
  // 2 cells x 4 cores x 2 threads, one GPU per cell, reserved core 0-1.
  const GuestLayout g = Guest(2, 4, 2, 16384, {0, 1});
  NodeAdmission node(NodeOf(g));
  Admission a = node.Try(Limits("{cpu: 4, memory: 4Gi, nvidia.com/gpu: 1}"));
  ASSERT_TRUE(a.admitted) << a.reason << ": " << a.message;
  ASSERT_EQ(a.cells.size(), 1u);
  EXPECT_EQ(a.cells[0].cpus.Count(), 4);
  EXPECT_EQ(a.cells[0].devices.at("nvidia.com/gpu"), 1);
  EXPECT_EQ(a.cells[0].memory_mib, 4096u);

  a = node.Try(Limits("{cpu: 2, memory: 1Gi, nvidia.com/gpu: 2}"));
  EXPECT_EQ(a.reason, "TopologyAffinityError");
  EXPECT_NE(a.message.find("2 nvidia.com/gpu does not fit one guest cell"), std::string::npos) << a.message;
  // 10 CPUs fit no cell of 8 (even counting the reserved core).
  a = node.Try(Limits("{cpu: 10, memory: 1Gi}"));
  EXPECT_EQ(a.reason, "TopologyAffinityError");
  // 8 CPUs fit cell 1 only (cell 0 has 6 once core 0 is reserved).
  a = node.Try(Limits("{cpu: 8, memory: 1Gi}"));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.cells[0].cell, 1);
  // full-pcpus-only: an odd count is refused after the topology manager admitted it.
  a = node.Try(Limits("{cpu: 3, memory: 1Gi}"));
  EXPECT_EQ(a.reason, "SMTAlignmentError");
  // Fractional CPUs stay in the shared pool: nothing pinned, any size up to allocatable.
  a = node.Try(Limits("{cpu: 9500m, memory: 1Gi}"));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_TRUE(a.cells.empty() || a.cells[0].cpus.Empty());
  // The device manager aligns devices for every QoS class: a BestEffort pod asking both GPUs is
  // refused too, one GPU is admitted on its cell.
  a = node.Try(Limits("{nvidia.com/gpu: 2}"));
  EXPECT_EQ(a.reason, "TopologyAffinityError");
  a = node.Try(Limits("{nvidia.com/gpu: 1}"));
  ASSERT_TRUE(a.admitted) << a.message;
  ASSERT_EQ(a.cells.size(), 1u);
  EXPECT_EQ(a.cells[0].devices.at("nvidia.com/gpu"), 1);
  // Not on the node at all.
  a = node.Try(Limits("{amd.com/gpu: 1}"));
  EXPECT_EQ(a.reason, "Insufficient amd.com/gpu");
  a = node.Try(Limits("{cpu: 1, memory: 64Gi}"));
  EXPECT_EQ(a.reason, "Insufficient memory");
}

TEST(PodAdmission, CommitsAndCountsWhatOneNodeTakes) {
  const GuestLayout g = Guest(2, 4, 2, 16384, {0, 1});
  const KubeletNode n = NodeOf(g);
  // 2-CPU pods with a GPU: one per GPU.
  PodFit f = FitPod(n, Limits("{cpu: 2, memory: 1Gi, nvidia.com/gpu: 1}"));
  EXPECT_EQ(f.per_node, 2);
  EXPECT_EQ(f.stopped_reason, "Insufficient nvidia.com/gpu");
  // 2-CPU pods without: 3 whole cores free on cell 0, 4 on cell 1.
  f = FitPod(n, Limits("{cpu: 2, memory: 1Gi}"));
  EXPECT_EQ(f.per_node, 7);
  EXPECT_EQ(f.stopped_reason, "Insufficient cpu");
  // 4-CPU pods: one on cell 0 (3 cores free), two on cell 1; cell 0's last core is too small.
  f = FitPod(n, Limits("{cpu: 4, memory: 1Gi}"));
  EXPECT_EQ(f.per_node, 3);
  EXPECT_EQ(f.stopped_reason, "Insufficient cpu");  // 2 CPUs of allocatable left
  f = FitPod(n, Limits("{cpu: 6, memory: 1Gi}"));
  EXPECT_EQ(f.per_node, 2);  // cell 0 (6 free) and cell 1 (8 free, 2 left)
  EXPECT_EQ(f.stopped_reason, "Insufficient cpu");

  NodeAdmission node(n);
  const Admission refused = node.Try(Limits("{cpu: 3, memory: 1Gi}"));
  EXPECT_THROW(node.Commit(refused), std::logic_error);
  const Admission a = node.Try(Limits("{cpu: 8, memory: 1Gi}"));
  node.Commit(a);
  EXPECT_THROW(node.Commit(a), std::logic_error);  // stale: the CPUs are taken
  EXPECT_EQ(node.pods(), 1);
  EXPECT_EQ(node.HeldPerCell()[1].cpus.Count(), 8);
}

TEST(PodAdmission, RestrictedNeedsTheSameNarrowestCellsForEveryResource) {
  // 3 cells x 4 cores, no SMT, one GPU per cell; restricted, Static memory.
  const GuestLayout g = Guest(3, 4, 1, 8192, {0, 1, 2});
  const KubeletNode n = NodeOf(g, {{"topologyManagerPolicy", "restricted"}});
  NodeAdmission node(n);
  // 6 CPUs need 2 cells; 4 GiB memory 1: the kubelet prefers no common hint.
  Admission a = node.Try(Limits("{cpu: 6, memory: 4Gi}"));
  EXPECT_EQ(a.reason, "TopologyAffinityError") << a.message;
  EXPECT_NE(a.message.find("differ"), std::string::npos) << a.message;
  // 6 CPUs + 10 GiB + 2 GPUs all need 2 cells: admitted over two cells.
  a = node.Try(Limits("{cpu: 6, memory: 10Gi, nvidia.com/gpu: 2}"));
  ASSERT_TRUE(a.admitted) << a.message;
  ASSERT_EQ(a.cells.size(), 2u);
  ASSERT_EQ(a.memory_masks.size(), 1u);
  node.Commit(a);
  const std::vector<int> group = a.memory_masks[0];
  EXPECT_EQ(node.MemoryGroup(group[0]), group);
  // The Memory Manager keeps those cells for that group: a one-cell Guaranteed pod goes to the
  // third cell only, and a second one finds no cell.
  const int third = 3 - group[0] - group[1];
  a = node.Try(Limits("{cpu: 1, memory: 1Gi}"));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.cells[0].cell, third);
  node.Commit(a);
  // 8Gi fits an empty cell, but no cell set has it free under the group rules: the Memory Manager
  // gives no hint, the topology manager admits on the CPU, and the Memory Manager's Allocate fails.
  a = node.Try(Limits("{cpu: 1, memory: 8Gi}"));
  EXPECT_EQ(a.reason, "UnexpectedAdmissionError") << a.message;
  // Too many CPUs for the third cell: the topology manager refuses first.
  a = node.Try(Limits("{cpu: 4, memory: 1Gi}"));
  EXPECT_EQ(a.reason, "TopologyAffinityError") << a.message;
  // A Burstable pod is not the Memory Manager's: admitted.
  a = node.Try(Pod("  containers:\n  - {name: c, resources: {requests: {cpu: 1, memory: 1Gi}}}\n"));
  EXPECT_TRUE(a.admitted) << a.message;
}

TEST(PodAdmission, DevicesWithoutANumaNodeAreNeverAligned) {
  // A plain Nova guest: GPUs without guest NUMA node; accel derives restricted.
  const GuestLayout g = Guest(2, 4, 1, 8192, {-1, -1});
  const KubeletNode n = NodeOf(g);
  EXPECT_EQ(n.topology_policy, "restricted");
  NodeAdmission node(n);
  const Admission a = node.Try(Limits("{cpu: 2, memory: 1Gi, nvidia.com/gpu: 2}"));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.devices.at("nvidia.com/gpu"), 2);
  // A GPU with a cell beside one without: the kubelet counts only the one with a cell.
  const GuestLayout mixed = Guest(2, 4, 1, 8192, {0, -1});
  NodeAdmission m(NodeOf(mixed));
  const Admission b = m.Try(Limits("{cpu: 2, memory: 1Gi, nvidia.com/gpu: 2}"));
  EXPECT_EQ(b.reason, "TopologyAffinityError");
  EXPECT_NE(b.message.find("report a guest cell"), std::string::npos) << b.message;
}

TEST(PodAdmission, ScopeContainerAlignsEachContainerOnItsOwn) {
  const GuestLayout g = Guest(2, 4, 1, 8192, {0, 1});
  const std::string two = R"(  containers:
  - {name: a, resources: {limits: {cpu: 3, memory: 1Gi, nvidia.com/gpu: 1}}}
  - {name: b, resources: {limits: {cpu: 3, memory: 1Gi, nvidia.com/gpu: 1}}}
)";
  // Scope pod: 6 CPUs and 2 GPUs in one cell — no.
  Admission a = NodeAdmission(NodeOf(g)).Try(Pod(two));
  EXPECT_EQ(a.reason, "TopologyAffinityError");
  // Scope container: each container on its own cell.
  a = NodeAdmission(NodeOf(g, {{"topologyManagerScope", "container"}})).Try(Pod(two));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.cells.size(), 2u);
  EXPECT_EQ(a.demands.size(), 2u);
  // An init container is tried and let go: its CPUs come back for the app container.
  const std::string init = R"(  initContainers:
  - {name: i, resources: {limits: {cpu: 4, memory: 1Gi}}}
  containers:
  - {name: a, resources: {limits: {cpu: 4, memory: 1Gi}}}
)";
  a = NodeAdmission(NodeOf(g, {{"topologyManagerScope", "container"}})).Try(Pod(init));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.cells.size(), 1u);
  EXPECT_EQ(a.cells[0].cpus.Count(), 4);
}

TEST(PodAdmission, SharedReplicasAndBestEffortPolicies) {
  const GuestLayout g = Guest(2, 4, 1, 8192, {0, 1});
  // Time-slicing 4 ways with failRequestsGreaterThanOne.
  NodeAdmission node(NodeOf(g, nlohmann::json::object(), {}, 4, 1));
  Admission a = node.Try(Limits("{cpu: 1, memory: 1Gi, nvidia.com/gpu: 2}"));
  EXPECT_EQ(a.reason, "UnexpectedAdmissionError");
  EXPECT_NE(a.message.find("failRequestsGreaterThanOne"), std::string::npos);
  EXPECT_EQ(FitPod(node.node(), Limits("{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}")).per_node, 7);  // 7 free CPUs
  // Topology none: a pod larger than a cell is placed over both.
  NodeAdmission none(NodeOf(g, {{"topologyManagerPolicy", "none"}}));
  a = none.Try(Limits("{cpu: 6, memory: 10Gi, nvidia.com/gpu: 2}"));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.cells.size(), 2u);
  // best-effort admits what fits somewhere...
  NodeAdmission best(NodeOf(g, {{"topologyManagerPolicy", "best-effort"}, {"memoryManagerPolicy", "None"}}));
  EXPECT_TRUE(best.Try(Limits("{cpu: 7, memory: 1Gi}")).admitted);
  EXPECT_EQ(best.Try(Limits("{cpu: 8, memory: 1Gi}")).reason, "Insufficient cpu");
  // ...but with the Static Memory Manager accel admits only what restricted would (the memory goes
  // to the merged hint, which accel does not compute): 7 CPUs span both cells, 1Gi fits one.
  NodeAdmission best_static(NodeOf(g, {{"topologyManagerPolicy", "best-effort"}}));
  a = best_static.Try(Limits("{cpu: 7, memory: 1Gi}"));
  EXPECT_EQ(a.reason, "UnexpectedAdmissionError");
  EXPECT_NE(a.message.find("may still admit"), std::string::npos) << a.message;
  EXPECT_TRUE(best_static.Try(Limits("{cpu: 6, memory: 10Gi}")).admitted);  // both need 2 cells
}

TEST(PodAdmission, HugepagesComeFromTheCellOfTheCpus) {
  const GuestLayout g = Guest(2, 4, 1, 16384, {});
  const KubeletNode n = NodeOf(g, nlohmann::json::object(), {{0, 1048576, 2}, {1, 1048576, 6}});
  NodeAdmission node(n);
  Admission a = node.Try(Limits("{cpu: 1, memory: 1Gi, hugepages-1Gi: 4Gi}"));
  ASSERT_TRUE(a.admitted) << a.message;
  EXPECT_EQ(a.cells[0].cell, 1);
  EXPECT_EQ(a.cells[0].hugepages_mib.at(1048576), 4096u);
  node.Commit(a);
  // 2 pages left on each cell, and cell 1 holds an allocation, so the two cannot form a group: no
  // memory hint at all, and the Memory Manager's Allocate fails.
  a = node.Try(Limits("{cpu: 1, memory: 1Gi, hugepages-1Gi: 3Gi}"));
  EXPECT_EQ(a.reason, "UnexpectedAdmissionError") << a.message;
  a = node.Try(Limits("{cpu: 1, memory: 1Gi, hugepages-2Mi: 2Mi}"));
  EXPECT_EQ(a.reason, "Insufficient hugepages-2Mi");
}

// The example template's groups: every group's node is modelled, and a typical pod per group is
// admitted with a count.
TEST(PodAdmission, ExampleTemplateGroups) {
  const cluster::ClusterTemplate t = cluster::LoadClusterTemplate(Src("examples/cluster/ai-prod.yaml"));
  const cluster::ClusterPlan plan = cluster::PlanCluster(t);
  ASSERT_EQ(plan.groups.size(), t.groups.size());
  std::map<std::string, KubeletNode> nodes;
  for (size_t i = 0; i < t.groups.size(); ++i) nodes.emplace(t.groups[i].name, cluster::KubeletNodeOf(t, t.groups[i], plan.groups[i]));
  const KubeletNode& h100 = nodes.at("h100-train");
  ASSERT_NE(h100.FindResource("nvidia.com/gpu"), nullptr);
  EXPECT_EQ(h100.FindResource("nvidia.com/gpu")->per_cell, (std::vector<int>{2, 2}));
  const KubeletNode& mi300x = nodes.at("mi300x-infer");
  ASSERT_NE(mi300x.FindResource("amd.com/gpu"), nullptr);
  EXPECT_EQ(mi300x.FindResource("amd.com/gpu")->total(), 8);
  EXPECT_EQ(mi300x.FindResource("amd.com/gpu")->max_per_container, 1);
  EXPECT_EQ(nodes.at("gaudi-train").FindResource("habana.ai/gaudi")->total(), 4);
  EXPECT_TRUE(nodes.at("system").resources.empty());

  PodFit f = FitPod(h100, Limits("{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}"));
  EXPECT_TRUE(f.first.admitted) << f.first.message;
  EXPECT_EQ(f.per_node, 2);
  f = FitPod(h100, Limits("{cpu: 8, memory: 32Gi, nvidia.com/gpu: 4}"));
  EXPECT_EQ(f.first.reason, "TopologyAffinityError");
  f = FitPod(mi300x, Limits("{cpu: 4, memory: 8Gi, amd.com/gpu: 1}"));
  EXPECT_TRUE(f.first.admitted) << f.first.message;
  EXPECT_EQ(f.per_node, 8);
  f = FitPod(nodes.at("system"), Pod("  containers:\n  - {name: c, resources: {requests: {cpu: 100m, memory: 128Mi}}}\n"));
  EXPECT_TRUE(f.first.admitted);
  EXPECT_EQ(f.per_node, 30);  // 3 CPUs allocatable / 100m
  const nlohmann::ordered_json j = PodFitJson(f, nodes.at("system"));
  EXPECT_EQ(j["schema"], "accel.cluster-pods/v1");
  EXPECT_EQ(j["per_node"], 30);
}

}  // namespace
}  // namespace accel::kubelet
