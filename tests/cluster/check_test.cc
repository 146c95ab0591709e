// accel cluster check (cluster/check.h): the example template checks clean; one small template per
// finding kind gives exactly that finding, at the right key, with a fix; the selector checks on
// hand-written operator objects; MIG configs built from the catalog equal NVIDIA's own default
// config file; the fleet checks against a SQLite store in a temporary directory.
#include "cluster/check.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "cluster/network_stack.h"
#include "cluster/vendor_stack.h"
#include "common/error.h"
#include "fleet/fleet_store.h"
#include "placement/engine.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_parted_config.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::cluster {
namespace check_test {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

const std::string kSourceDir = ACCEL_SOURCE_DIR;
const std::string kExampleDir = kSourceDir + "/examples/cluster";

// A template on the example flavors; `groups` is the text of spec.nodeGroups' items.
std::string Template(const std::string& groups, const std::string& spec_extra = "") {
  return "apiVersion: accel.cluster/v1\n"
         "kind: ClusterTemplate\n"
         "metadata: {name: t1}\n"
         "spec:\n"
         "  kubernetesVersion: v1.33.2\n"
         "  flavors: [../flavors/, flavors/]\n"
         "  aliases: ../flavors/aliases.json\n"
         "  hypervisor: ../../fixtures/hosts/hgx-h100.json\n" +
         spec_extra + "  nodeGroups:\n" + groups;
}

ClusterTemplate Parse(const std::string& text, const std::string& base = kExampleDir) {
  return ParseClusterTemplateText(text, "t.yaml", base);
}

std::string Dump(const CheckReport& r) { return CheckJson(r).dump(2); }

std::vector<CheckFinding> Of(const CheckReport& r, const std::string& kind) {
  std::vector<CheckFinding> out;
  for (const CheckFinding& f : r.findings)
    if (f.kind == kind) out.push_back(f);
  return out;
}

// The one finding of `kind` in `r` (fails when there is not exactly one), with a fix.
CheckFinding One(const CheckReport& r, const std::string& kind) {
  const std::vector<CheckFinding> found = Of(r, kind);
  EXPECT_EQ(found.size(), 1u) << Dump(r);
  if (found.empty()) return {};
  EXPECT_FALSE(found[0].fix.empty()) << Dump(r);
  EXPECT_FALSE(found[0].problem.empty()) << Dump(r);
  return found[0];
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// --- The example -------------------------------------------------------------------------------

TEST(ClusterCheck, ExampleTemplateIsClean) {
  const ClusterTemplate t = LoadClusterTemplate(kExampleDir + "/ai-prod.yaml");
  const CheckReport r = CheckCluster(t, {});
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  ASSERT_EQ(r.groups.size(), 4u);
  EXPECT_EQ(r.groups[0].gpu_models, std::vector<std::string>{"H100-SXM5-80GB"});
  EXPECT_EQ(r.groups[0].planned_on, "hgx-h100");
  // The predicted labels: the template's, the group label, what NFD and the GPU Operator set.
  EXPECT_EQ(r.groups[0].labels.at("accel.io/node-group"), "h100-train");
  EXPECT_EQ(r.groups[0].labels.at("accel.io/pool"), "training");
  EXPECT_EQ(r.groups[0].labels.at("nvidia.com/gpu.present"), "true");
  EXPECT_EQ(r.groups[1].labels.at("feature.node.kubernetes.io/amd-gpu"), "true");
  EXPECT_EQ(r.groups[2].labels.at("feature.node.kubernetes.io/pci-1da3.present"), "true");
  EXPECT_EQ(r.groups[3].labels.count("nvidia.com/gpu.present"), 0u);
  // What it warns about, and why (docs/node-groups.md): four H100s over two guest cells under
  // single-numa-node (whole-node pods are rejected), and the same for the two MI300X. The RDMA
  // NICs come with the flavor, and the example reserves CPUs with reservedSystemCPUs only.
  std::set<std::string> warned;
  for (const CheckFinding& f : r.findings) warned.insert(f.group + " " + f.kind + " " + f.key);
  EXPECT_TRUE(warned.count("h100-train topology spec.nodeGroups[0].kubelet.topologyManagerPolicy")) << Dump(r);
  EXPECT_TRUE(warned.count("mi300x-infer topology spec.nodeGroups[1].kubelet.topologyManagerPolicy")) << Dump(r);
  EXPECT_EQ(warned.size(), 2u) << Dump(r);
  const ordered_json j = CheckJson(r);
  EXPECT_EQ(j["schema"], "accel.cluster-check/v1");
  EXPECT_EQ(j["clean"], true);
  EXPECT_EQ(j["errors"], 0);
  EXPECT_EQ(j["fleet"], nullptr);
  for (const auto& f : j["findings"]) {
    for (const char* key : {"severity", "kind", "group", "key", "problem", "fix"}) EXPECT_TRUE(f.contains(key)) << f.dump();
    EXPECT_EQ(f["severity"], "warning");
  }
}

// What `accel cluster plan` generates for a template: the vendor and network stacks.
CheckInputs Generated(const ClusterTemplate& t) {
  CheckInputs in;
  in.generate = [&t](const ClusterPlan& plan) {
    return std::vector<StackPart>{VendorStack(t, plan), NetworkStack(t, plan)};
  };
  return in;
}

TEST(ClusterCheck, ExampleWithItsGeneratedStacksIsClean) {
  const ClusterTemplate t = LoadClusterTemplate(kExampleDir + "/ai-prod.yaml");
  const CheckReport r = CheckCluster(t, Generated(t));
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  EXPECT_TRUE(Of(r, "selector").empty()) << Dump(r);
  const std::set<std::string> objects(r.objects.begin(), r.objects.end());
  EXPECT_TRUE(objects.count("ClusterPolicy/cluster-policy")) << Dump(r);
  EXPECT_TRUE(objects.count("NVIDIADriver/h100-train")) << Dump(r);
  EXPECT_EQ(r.groups[0].labels.at("accel.io/stack"), "nvidia-operator");
}

TEST(ClusterCheck, GeneratedStacksOfMixedNvidiaGroupsAreClean) {
  // Two operator groups (one driver each) and an agent group beside them: the generator labels the
  // agent group out of the GPU Operator's reach, and no two NVIDIADrivers share a group.
  const ClusterTemplate t = Parse(Template(R"(  - {name: op-a, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-1g.10gb}}
  - {name: op-b, flavor: gpu-4-2cell, count: 1, vendor: nvidia, stack: operator, labels: {accel.io/pool: training}}
  - {name: agent, flavor: gpu-1g, count: 1, vendor: nvidia, stack: accel, sharing: {timeSlicing: {replicas: 4}}}
)"));
  const CheckReport r = CheckCluster(t, Generated(t));
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  EXPECT_EQ(r.groups[2].labels.at("nvidia.com/gpu.deploy.operands"), "false");
}

// --- One template per finding kind -------------------------------------------------------------

TEST(ClusterCheck, BrokenSumRuleIsAKubeletFindingAtTheOverride) {
  const ClusterTemplate t = Parse(Template(R"(  - name: g
    flavor: gpu-1g
    count: 1
    vendor: nvidia
    kubelet:
      memoryManagerPolicy: Static
      kubeReserved: {memory: 1Gi}
      systemReserved: {memory: 1Gi}
      reservedMemory: [{numaNode: 0, limits: {memory: 2Gi}}]
)"));
  const CheckReport r = CheckCluster(t, {});
  const std::vector<CheckFinding> k = Of(r, "kubelet");
  ASSERT_EQ(k.size(), 1u) << Dump(r);
  EXPECT_EQ(k[0].severity, CheckSeverity::kError);
  EXPECT_EQ(k[0].group, "g");
  EXPECT_EQ(k[0].key, "spec.nodeGroups[0].kubelet.reservedMemory");
  // 1Gi + 1Gi + evictionHard's 100Mi (accel writes the kubelet's default out): the usual mistake.
  EXPECT_TRUE(Contains(k[0].fix, "2148Mi")) << k[0].fix;
  EXPECT_TRUE(Contains(k[0].problem, "evictionHard")) << k[0].problem;
}

TEST(ClusterCheck, ClusterWideOverrideIsBlamedOnSpecKubelet) {
  const ClusterTemplate t = Parse(Template(R"(  - name: g
    flavor: gpu-1g
    count: 1
    vendor: nvidia
)",
                                           "  kubelet: {memoryManagerPolicy: Static, reservedMemory: [{numaNode: 0, "
                                           "limits: {memory: 1Gi}}]}\n"));
  const CheckReport r = CheckCluster(t, {});
  const CheckFinding f = One(r, "kubelet");
  EXPECT_EQ(f.key, "spec.kubelet.reservedMemory");
}

// A flavor of two guest cells with three MI300X on an 8-node EPYC: with numa_policy preferred
// the third GPU comes from a host node the guest is not on, so it reports no guest cell.
class RemoteDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("accel-check-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flavors");
    std::ofstream(dir_ / "aliases.json")
        << R"([{"name": "mi300x-any", "vendor_id": "1002", "product_id": "74a1", "device_type": "type-PCI", "numa_policy": "preferred"}])";
    std::ofstream(dir_ / "flavors" / "mi300x-3.yaml") << "name: mi300x-3\nvcpus: 16\nram: 65536\nextra_specs:\n"
                                                         "  hw:cpu_policy: dedicated\n  hw:numa_nodes: 2\n"
                                                         "  hw:mem_page_size: 1GB\n  pci_passthrough:alias: mi300x-any:3\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Text(const std::string& kubelet) {
    return "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: t1}\nspec:\n"
           "  kubernetesVersion: v1.33.2\n  flavors: [flavors/]\n  aliases: aliases.json\n"
           "  hypervisor: " + kSourceDir + "/fixtures/hosts/epyc-nps4-mi300x.json\n"
           "  nodeGroups:\n  - name: amd\n    flavor: mi300x-3\n    count: 1\n    vendor: amd\n" + kubelet;
  }
  fs::path dir_;
};

TEST_F(RemoteDeviceTest, SingleNumaNodeForcedOnARemoteGpuRejectsPods) {
  // Derived: restricted (a GPU is local to no guest cell) — clean.
  const CheckReport derived = CheckCluster(Parse(Text(""), dir_.string()), {});
  EXPECT_EQ(derived.error_count(), 0u) << Dump(derived);
  // Forced by an override: the kubelet would reject every pod asking for that GPU.
  const CheckReport forced =
      CheckCluster(Parse(Text("    kubelet: {topologyManagerPolicy: single-numa-node}\n"), dir_.string()), {});
  const CheckFinding f = One(forced, "kubelet");
  EXPECT_EQ(f.key, "spec.nodeGroups[0].kubelet.topologyManagerPolicy");
  EXPECT_TRUE(Contains(f.problem, "TopologyAffinityError")) << f.problem;
  EXPECT_TRUE(Contains(f.fix, "restricted")) << f.fix;
}

TEST(ClusterCheck, KubeletOptionsThatExcludeEachOther) {
  const ClusterTemplate t = Parse(Template(R"(  - name: g
    flavor: gpu-1g
    count: 1
    vendor: nvidia
    kubelet:
      featureGates: {CPUManagerPolicyAlphaOptions: true}
      cpuManagerPolicyOptions: {full-pcpus-only: "true", distribute-cpus-across-cores: "true"}
      kubeReservedCgroup: /kube.slice
)"));
  const CheckReport r = CheckCluster(t, {});
  std::set<std::string> keys;
  for (const CheckFinding& f : Of(r, "kubelet-options"))
    if (f.severity == CheckSeverity::kError) keys.insert(f.key);
  EXPECT_EQ(keys, (std::set<std::string>{"spec.nodeGroups[0].kubelet.cpuManagerPolicyOptions.distribute-cpus-across-cores",
                                         "spec.nodeGroups[0].kubelet.reservedSystemCPUs"}))
      << Dump(r);
}

TEST(ClusterCheck, SingleNumaNodeOverCellsWarnsAboutWholeNodePods) {
  const CheckReport r = CheckCluster(Parse(Template(R"(  - name: g
    flavor: gpu-4-2cell
    count: 1
    vendor: nvidia
)")),
                                     {});
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  const CheckFinding f = One(r, "topology");
  EXPECT_EQ(f.severity, CheckSeverity::kWarning);
  EXPECT_TRUE(Contains(f.problem, "more than 2 GPUs")) << f.problem;
  // One guest cell: nothing to warn about.
  EXPECT_TRUE(Of(CheckCluster(Parse(Template("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia}\n")), {}), "topology").empty());
}

TEST(ClusterCheck, MigConfigMustExistOnTheGroupsGpuModel) {
  auto check = [](const std::string& mig) {
    return CheckCluster(Parse(Template("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia, sharing: {mig: " + mig + "}}\n")), {});
  };
  for (const char* ok : {"all-disabled", "all-balanced", "all-1g.10gb", "all-1g.10gb.me", "all-3g.40gb", "all-7g.80gb"}) {
    const CheckReport r = check(ok);
    EXPECT_TRUE(Of(r, "mig").empty()) << ok << ": " << Dump(r);
    EXPECT_EQ(r.error_count(), 0u) << ok << ": " << Dump(r);
  }
  // An A100-40GB profile on an H100.
  CheckFinding f = One(check("all-1g.5gb"), "mig");
  EXPECT_EQ(f.key, "spec.nodeGroups[0].sharing.mig");
  EXPECT_TRUE(Contains(f.problem, "1g.5gb does not exist on H100-SXM5-80GB")) << f.problem;
  EXPECT_TRUE(Contains(f.fix, "all-balanced")) << f.fix;
  // Not one of NVIDIA's default names.
  f = One(check("training-mix"), "mig");
  EXPECT_TRUE(Contains(f.problem, "default-mig-parted-config")) << f.problem;
  // all-enabled makes no MIG device: a warning.
  EXPECT_EQ(One(check("all-enabled"), "mig").severity, CheckSeverity::kWarning);
}

TEST(ClusterCheck, MigOnAGpuThatIsNotMigCapable) {
  const std::string text = "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: t1}\nspec:\n"
                           "  kubernetesVersion: v1.33.2\n  flavors: [flavors/]\n  aliases: aliases.json\n"
                           "  hypervisor: " + kSourceDir + "/fixtures/hosts/devbox.json\n  nodeGroups:\n"
                           "  - {name: g, flavor: rtx, count: 1, vendor: nvidia, sharing: {mig: all-1g.10gb}}\n";
  const fs::path dir = fs::temp_directory_path() / ("accel-check-rtx-" + std::to_string(::getpid()));
  fs::create_directories(dir / "flavors");
  std::ofstream(dir / "aliases.json")
      << R"([{"name": "rtx4090", "vendor_id": "10de", "product_id": "2684", "device_type": "type-PCI"}])";
  std::ofstream(dir / "flavors" / "rtx.yaml") << "name: rtx\nvcpus: 4\nram: 8192\nextra_specs:\n  pci_passthrough:alias: rtx4090:1\n";
  const CheckReport r = CheckCluster(Parse(text, dir.string()), {});
  fs::remove_all(dir);
  const CheckFinding f = One(r, "mig");
  EXPECT_TRUE(Contains(f.problem, "10de:2684")) << f.problem;
  EXPECT_EQ(r.groups[0].gpu_models, std::vector<std::string>{"10de:2684"});
}

TEST(ClusterCheck, OneGpuOperatorStrategyMustSuitEveryOperatorGroup) {
  // all-balanced needs mixed (several profiles per node); MPS refuses mixed.
  const std::string groups = R"(  - {name: mig, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-balanced}}
  - {name: mps, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mps: {replicas: 4}}}
)";
  const CheckReport r = CheckCluster(Parse(Template(groups)), {});
  const CheckFinding f = One(r, "sharing");
  EXPECT_EQ(f.group, "");
  EXPECT_TRUE(Contains(f.problem, "mig (several MIG profiles on one node): mixed")) << f.problem;
  EXPECT_TRUE(Contains(f.problem, "mps (no MIG, MPS): none or single")) << f.problem;
  // The same groups with stack: accel each get their own device plugin config: no finding.
  std::string accel = groups;
  for (size_t at; (at = accel.find("stack: operator")) != std::string::npos;) accel.replace(at, 15, "stack: accel");
  EXPECT_TRUE(Of(CheckCluster(Parse(Template(accel)), {}), "sharing").empty());
}

ordered_json Yaml(const std::string& text) {
  std::vector<ordered_json> objects = ParseKubernetesObjects(text, "test.yaml");
  EXPECT_EQ(objects.size(), 1u);
  return objects.empty() ? ordered_json() : objects[0];
}

TEST(ClusterCheck, ClusterPolicyStrategyAgainstTheGroupsMigConfig) {
  CheckInputs in;
  in.objects = {Yaml("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
                     "spec: {mig: {strategy: single}, migManager: {enabled: false}}\n")};
  const CheckReport r = CheckCluster(
      Parse(Template("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-balanced}}\n")), in);
  std::set<std::string> keys;
  for (const CheckFinding& f : Of(r, "sharing")) keys.insert(f.key);
  EXPECT_EQ(keys, (std::set<std::string>{"ClusterPolicy/cluster-policy.spec.mig.strategy",
                                         "ClusterPolicy/cluster-policy.spec.migManager.enabled"}))
      << Dump(r);
}

TEST(ClusterCheck, MpsUnderTheGpuOperator) {
  const ClusterTemplate t =
      Parse(Template("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mps: {replicas: 4}}}\n"));
  CheckInputs in;
  // Mixed refuses MPS; CDI off is a warning (recent device plugins need CDI for MPS).
  in.objects = {Yaml("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cp}\n"
                     "spec: {mig: {strategy: mixed}, cdi: {enabled: false}}\n")};
  CheckReport r = CheckCluster(t, in);
  std::vector<std::string> got;
  for (const CheckFinding& f : Of(r, "sharing")) got.push_back(std::string(CheckSeverityName(f.severity)) + " " + f.key);
  EXPECT_EQ(got, (std::vector<std::string>{"error ClusterPolicy/cp.spec.mig.strategy", "warning ClusterPolicy/cp.spec.cdi.enabled"}))
      << Dump(r);
  // The CRD's defaults (cdi on) and single: clean.
  in.objects = {Yaml("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cp}\nspec: {mig: {strategy: single}}\n")};
  EXPECT_TRUE(Of(CheckCluster(t, in), "sharing").empty());
}

TEST(ClusterCheck, MigConfigFromTheGeneratedConfigMap) {
  CheckInputs in;
  in.objects = ParseKubernetesObjects(R"(apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: cluster-policy}
spec: {mig: {strategy: mixed}, migManager: {enabled: true, config: {name: mig-parted-config}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: mig-parted-config, namespace: gpu-operator}
data:
  config.yaml: |
    version: v1
    mig-configs:
      all-disabled:
        - devices: all
          mig-enabled: false
      too-many:
        - devices: all
          mig-enabled: true
          mig-devices: {"3g.40gb": 3}
)",
                                      "objects.yaml");
  auto check = [&](const std::string& mig) {
    return CheckCluster(
        Parse(Template("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: " + mig + "}}\n")), in);
  };
  EXPECT_TRUE(Of(check("all-disabled"), "mig").empty());
  EXPECT_TRUE(Contains(One(check("all-balanced"), "mig").problem, "ConfigMap mig-parted-config has no config all-balanced"));
  EXPECT_EQ(One(check("too-many"), "mig").severity, CheckSeverity::kError);  // 3 x 3g.40gb do not fit an H100
}

TEST(ClusterCheck, RdmaWithoutAnRdmaDeviceWarns) {
  const CheckReport r =
      CheckCluster(Parse(Template("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia, network: {rdma: sriov}}\n")), {});
  const CheckFinding f = One(r, "network");
  EXPECT_EQ(f.severity, CheckSeverity::kWarning);
  EXPECT_EQ(f.key, "spec.nodeGroups[0].network.rdma");
}

TEST(ClusterCheck, LabelsThatFightAccels) {
  const CheckReport r = CheckCluster(Parse(Template(R"(  - name: g
    flavor: gpu-1g
    count: 1
    vendor: nvidia
    stack: operator
    sharing: {mig: all-1g.10gb}
    labels: {accel.io/node-group: other, nvidia.com/mig.config: all-balanced, nvidia.com/gpu.deploy.operands: "false"}
)")),
                                     {});
  std::set<std::string> keys;
  for (const CheckFinding& f : Of(r, "labels")) keys.insert(f.key);
  EXPECT_EQ(keys, (std::set<std::string>{"spec.nodeGroups[0].labels.accel.io/node-group",
                                         "spec.nodeGroups[0].labels.nvidia.com/mig.config",
                                         "spec.nodeGroups[0].labels.nvidia.com/gpu.deploy.operands"}))
      << Dump(r);
}

TEST(ClusterCheck, FlavorThatDoesNotFitItsHypervisorIsAFindingNotBadInput) {
  const CheckReport r = CheckCluster(Parse(Template("  - {name: g, flavor: gaudi2-4, count: 1, vendor: habana}\n"
                                                    "  - {name: ok, flavor: gpu-1g, count: 1, vendor: nvidia}\n")),
                                     {});
  const CheckFinding f = One(r, "fit");
  EXPECT_EQ(f.group, "g");
  EXPECT_EQ(f.key, "spec.nodeGroups[0].flavor");
  EXPECT_EQ(r.groups[0].planned_on, "");
  EXPECT_EQ(r.groups[1].planned_on, "hgx-h100");  // the other group is still checked
}

TEST(ClusterCheck, NoHypervisorAndNoFleetIsBadInput) {
  const std::string text = "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: t1}\nspec:\n"
                           "  kubernetesVersion: v1.33.2\n  flavors: [../flavors/]\n  aliases: ../flavors/aliases.json\n"
                           "  nodeGroups:\n  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia}\n";
  try {
    CheckCluster(Parse(text), {});
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "spec.nodeGroups[0].hypervisor");
  }
}

// --- Selectors ---------------------------------------------------------------------------------

const std::map<std::string, NodeLabels> kGroups = {
    {"a", {{"accel.io/node-group", "a"}, {"accel.io/pool", "training"}, {"nvidia.com/gpu.present", "true"}}},
    {"b", {{"accel.io/node-group", "b"}, {"accel.io/pool", "training"}, {"nvidia.com/gpu.present", "true"}}},
    {"c", {{"accel.io/node-group", "c"}, {"accel.io/pool", "inference"}, {"nvidia.com/gpu.present", "true"},
           {"nvidia.com/gpu.deploy.operands", "false"}}},
    {"sys", {{"accel.io/node-group", "sys"}}},
};

std::vector<std::string> Keys(const std::vector<CheckFinding>& findings) {
  std::vector<std::string> k;
  for (const CheckFinding& f : findings) k.push_back(f.group + " " + f.key);
  return k;
}

ordered_json Driver(const std::string& name, const std::string& selector_yaml, bool is_default = false) {
  return Yaml("apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata: {name: " + name + "}\nspec: {driverType: gpu" +
              (is_default ? ", default: true" : "") + (selector_yaml.empty() ? "" : ", nodeSelector: " + selector_yaml) +
              "}\n");
}

TEST(ClusterCheck, NvidiaDriversSelectingOneGroup) {
  using V = std::vector<std::string>;
  // Per group: clean.
  EXPECT_EQ(Keys(CheckSelectorOverlap({Driver("a", "{accel.io/node-group: a}"), Driver("b", "{accel.io/node-group: b}")}, kGroups)), V{});
  // One on the pool, one on the group: both select a.
  EXPECT_EQ(Keys(CheckSelectorOverlap({Driver("pool", "{accel.io/pool: training}"), Driver("a", "{accel.io/node-group: a}")}, kGroups)),
            V{"a NVIDIADriver/a.spec.nodeSelector"});
  // No selector: every GPU node the operator manages (c has operands=false, sys no GPU).
  EXPECT_EQ(Keys(CheckSelectorOverlap({Driver("all", ""), Driver("b", "{accel.io/node-group: b}")}, kGroups)),
            V{"b NVIDIADriver/b.spec.nodeSelector"});
  // A default driver covers what no other selects: no conflict; but only one default, without selector.
  EXPECT_EQ(Keys(CheckSelectorOverlap({Driver("d", "", true), Driver("a", "{accel.io/node-group: a}")}, kGroups)), V{});
  EXPECT_EQ(Keys(CheckSelectorOverlap({Driver("d1", "", true), Driver("d2", "", true)}, kGroups)),
            V{" NVIDIADriver/d2.spec.default"});
  EXPECT_EQ(Keys(CheckSelectorOverlap({Driver("d", "{accel.io/pool: training}", true)}, kGroups)),
            V{" NVIDIADriver/d.spec.nodeSelector"});
  // NVIDIADrivers while the ClusterPolicy does not delegate drivers to them.
  const ordered_json policy = Yaml("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cp}\nspec: {driver: {enabled: true}}\n");
  EXPECT_EQ(Keys(CheckSelectorOverlap({policy, Driver("a", "{accel.io/node-group: a}")}, kGroups)),
            V{" ClusterPolicy/cp.spec.driver.useNvidiaDriverCRD"});
  EXPECT_EQ(Keys(CheckSelectorOverlap({policy, policy}, kGroups)), V{" ClusterPolicy/cp"});
}

TEST(ClusterCheck, DeviceConfigsNicNodePoliciesAndGaudiPolicies) {
  using V = std::vector<std::string>;
  const std::map<std::string, NodeLabels> amd = {
      {"x", {{"accel.io/node-group", "x"}, {"feature.node.kubernetes.io/amd-gpu", "true"}}},
      {"y", {{"accel.io/node-group", "y"}, {"feature.node.kubernetes.io/amd-gpu", "true"}}}};
  auto dc = [](const std::string& name, const std::string& selector) {
    return Yaml("apiVersion: amd.com/v1alpha1\nkind: DeviceConfig\nmetadata: {name: " + name +
                ", namespace: kube-amd-gpu}\nspec: {" + (selector.empty() ? "" : "selector: " + selector) + "}\n");
  };
  EXPECT_EQ(Keys(CheckSelectorOverlap({dc("x", "{accel.io/node-group: x}"), dc("y", "{accel.io/node-group: y}")}, amd)), V{});
  // Without a selector a DeviceConfig takes every AMD GPU node.
  EXPECT_EQ(Keys(CheckSelectorOverlap({dc("default", ""), dc("y", "{accel.io/node-group: y}")}, amd)),
            V{"y DeviceConfig/y.spec.selector"});

  auto nnp = [](const std::string& name, const std::string& selector, const std::string& section = "sriovDevicePlugin") {
    return Yaml("apiVersion: mellanox.com/v1alpha1\nkind: NicNodePolicy\nmetadata: {name: " + name +
                "}\nspec: {nodeSelector: " + selector + ", " + section + ": {image: i, repository: r, version: v}}\n");
  };
  EXPECT_EQ(Keys(CheckSelectorOverlap({nnp("a", "{accel.io/node-group: a}"), nnp("train", "{accel.io/pool: training}")}, kGroups)),
            V{"a NicNodePolicy/train.spec.nodeSelector"});
  const ordered_json ncp = Yaml("apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata: {name: nic-cluster-policy}\n"
                                "spec: {sriovDevicePlugin: {image: i, repository: r, version: v}}\n");
  EXPECT_EQ(Keys(CheckSelectorOverlap({ncp, nnp("a", "{accel.io/node-group: a}")}, kGroups)),
            V{" NicNodePolicy/a.spec.sriovDevicePlugin"});
  EXPECT_EQ(Keys(CheckSelectorOverlap({ncp, nnp("a", "{accel.io/node-group: a}", "ofedDriver")}, kGroups)), V{});

  auto gaudi = [](const std::string& name, const std::string& selector) {
    return Yaml("apiVersion: habanalabs.habana.ai/v1\nkind: ClusterPolicy\nmetadata: {name: " + name + "}\nspec: {" +
                (selector.empty() ? "" : "node_selector: " + selector) + "}\n");
  };
  EXPECT_EQ(Keys(CheckSelectorOverlap({gaudi("g1", "{accel.io/node-group: a}"), gaudi("g2", "")}, kGroups)),
            V{"a ClusterPolicy/g2.spec.node_selector"});
}

TEST(ClusterCheck, NodeAffinityOfANicClusterPolicy) {
  const ordered_json ncp = Yaml(R"(apiVersion: mellanox.com/v1alpha1
kind: NicClusterPolicy
metadata: {name: nic-cluster-policy}
spec:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: accel.io/pool, operator: In, values: [training]}
        - {key: nvidia.com/gpu.deploy.operands, operator: DoesNotExist}
      - matchExpressions:
        - {key: accel.io/node-group, operator: NotIn, values: [a, b, c, sys]}
)");
  EXPECT_EQ(ObjectSelects(ncp, kGroups.at("a")), true);
  EXPECT_EQ(ObjectSelects(ncp, kGroups.at("c")), false);
  EXPECT_EQ(ObjectSelects(ncp, kGroups.at("sys")), false);
  EXPECT_EQ(ObjectSelects(ncp, {{"accel.io/node-group", "new"}}), true);
  EXPECT_EQ(ObjectSelects(Yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), {}), std::nullopt);
}

TEST(ClusterCheck, StacksReachingTheWrongGroups) {
  // An NVIDIA stack: accel group the GPU Operator still reaches; an operator group nothing selects
  // once drivers come from NVIDIADriver objects.
  const ClusterTemplate t = Parse(Template(R"(  - {name: agent, flavor: gpu-1g, count: 1, vendor: nvidia, stack: accel}
  - {name: op, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator}
)"));
  CheckInputs in;
  in.objects = {Yaml("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\n"
                     "spec: {driver: {enabled: true, useNvidiaDriverCRD: true}}\n")};
  CheckReport r = CheckCluster(t, in);
  EXPECT_EQ(Keys(Of(r, "selector")), (std::vector<std::string>{"agent spec.nodeGroups[0].stack", "op spec.nodeGroups[1].stack"}))
      << Dump(r);
  // The vendor stack's answer: operands=false on the agent group, an NVIDIADriver for the other.
  in.part_labels["agent"]["nvidia.com/gpu.deploy.operands"] = "false";
  in.objects.push_back(Driver("op", "{accel.io/node-group: op}"));
  r = CheckCluster(t, in);
  EXPECT_TRUE(Of(r, "selector").empty()) << Dump(r);
  EXPECT_EQ(r.objects, (std::vector<std::string>{"ClusterPolicy/cluster-policy", "NVIDIADriver/op"}));
}

TEST(ClusterCheck, GeneratedPartsJoinTheObjectsAndAGeneratorErrorIsAWarning) {
  const ClusterTemplate t = Parse(Template("  - {name: op, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator}\n"));
  CheckInputs in;
  int calls = 0;
  in.generate = [&](const ClusterPlan& plan) {
    ++calls;
    EXPECT_EQ(plan.groups.size(), 1u);
    StackPart part;
    part.objects.push_back(Yaml("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cp}\nspec: {}\n"));
    part.node_labels["op"]["accel.io/stack"] = "nvidia-operator";
    return std::vector<StackPart>{part};
  };
  CheckReport r = CheckCluster(t, in);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.objects, std::vector<std::string>{"ClusterPolicy/cp"});
  EXPECT_EQ(r.groups[0].labels.at("accel.io/stack"), "nvidia-operator");
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  in.generate = [](const ClusterPlan&) -> std::vector<StackPart> {
    throw InputError("t.yaml", "spec.nodeGroups[0].sharing.mig", "cannot write it", "use all-disabled");
  };
  r = CheckCluster(t, in);
  const CheckFinding f = One(r, "selector");
  EXPECT_EQ(f.severity, CheckSeverity::kWarning);
  EXPECT_EQ(f.key, "spec.nodeGroups[0].sharing.mig");
}

// --- MIG configs against NVIDIA's own file ------------------------------------------------------

// Every config of NVIDIA's config-default.yaml, on every catalog model it applies to (the entry
// whose device-filter names the model, or an entry without filter whose profiles the model has),
// equals the config sharing::DefaultMigConfig builds from the catalog; and where NVIDIA's file has nothing
// for a model, sharing::DefaultMigConfig refuses the name for it too (all-disabled and all-enabled apart).
TEST(ClusterCheck, DefaultMigConfigsEqualNvidiasFile) {
  const std::string path = test_support::SharedPath("peers/mig/config-default.yaml");
  ACCEL_REQUIRE_SHARED(path);
  const sharing::MigPartedConfig nvidia = sharing::LoadMigPartedConfig(path);
  // Profile index -> instances, as an entry asks them on `model`.
  auto resolved = [](const sharing::MigConfigEntry& e, const sharing::GpuModel& model) {
    std::map<int, int> counts;
    for (const auto& [p, n] : e.mig_devices) {
      const std::optional<int> i = sharing::FindProfile(model, p);
      counts[i ? *i : -1] += n;
    }
    return counts;
  };
  int compared = 0;
  for (const sharing::MigConfig& c : nvidia.configs)
    for (const sharing::GpuModel& model : sharing::MigCatalog()) {
      const sharing::MigConfigEntry* filtered = nullptr;
      const sharing::MigConfigEntry* plain = nullptr;
      for (const sharing::MigConfigEntry& e : c.entries) {
        if (!e.device_filter.empty() && sharing::EntryMatchesModel(e, model) && !filtered) filtered = &e;
        if (e.device_filter.empty() && !plain) plain = &e;
      }
      std::string why;
      const std::optional<sharing::MigPartedConfig> ours = sharing::DefaultMigConfig(c.name, model, &why);
      const std::string what = c.name + " on " + model.name;
      const sharing::MigConfigEntry* theirs = filtered ? filtered : plain;
      if (!theirs) {
        // NVIDIA's entries are all for other models: accel knows no such profile here either.
        EXPECT_FALSE(ours) << what << ": NVIDIA's file has no entry for it, accel builds one";
        continue;
      }
      if (!sharing::ResolveEntry(*theirs, model, nullptr)) {
        EXPECT_FALSE(ours) << what << ": the model has no such profile, accel builds a config anyway";
        continue;
      }
      ASSERT_TRUE(ours) << what << ": " << why;
      const sharing::MigConfigEntry& mine = ours->configs[0].entries[0];
      EXPECT_EQ(mine.mig_enabled, theirs->mig_enabled) << what;
      bool other_name = false;
      for (const auto& [p, n] : theirs->mig_devices) {
        const std::optional<int> i = sharing::FindProfile(model, p);
        other_name = other_name || (i && sharing::IsOtherName(model.profiles[static_cast<size_t>(*i)], p));
      }
      // A profile known here only by another board's name: NVIDIA's count is that board's.
      if (other_name) continue;
      EXPECT_EQ(resolved(mine, model), resolved(*theirs, model)) << what;
      ++compared;
    }
  EXPECT_GT(compared, 100);
}

// --- Objects from files ------------------------------------------------------------------------

TEST(ClusterCheck, KubernetesObjectsFromYamlStreamsAndLists) {
  const std::vector<ordered_json> objects = ParseKubernetesObjects(R"(---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
--- # second
apiVersion: v1
kind: List
items:
- {apiVersion: nvidia.com/v1alpha1, kind: NVIDIADriver, metadata: {name: b}}
- {apiVersion: amd.com/v1alpha1, kind: DeviceConfig, metadata: {name: c}}
---
...
)",
                                                                   "x.yaml");
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[1]["kind"], "NVIDIADriver");
  // "---" inside a block scalar is content; content may follow the marker on its line.
  const std::vector<ordered_json> block = ParseKubernetesObjects(
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n  config.yaml: |\n    a: 1\n    ---\n    b: 2\n"
      "--- {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"n\"}}\r\n",
      "block.yaml");
  ASSERT_EQ(block.size(), 2u);
  EXPECT_EQ(block[0]["data"]["config.yaml"], "a: 1\n---\nb: 2\n");
  EXPECT_EQ(block[1]["metadata"]["name"], "n");
  EXPECT_EQ(ParseKubernetesObjects(R"({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}})", "x.json").size(), 1u);
  EXPECT_TRUE(ParseKubernetesObjects("", "empty.yaml").empty());
  for (const char* bad : {"apiVersion: v1\nmetadata: {}\n", "- a\n- b\n", "kind: List\napiVersion: v1\nitems: {a: 1}\n",
                          "apiVersion: v1\nkind: ConfigMap\n---\nkey: [unclosed\n"}) {
    try {
      ParseKubernetesObjects(bad, "bad.yaml");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().rfind("bad.yaml", 0), 0u) << e.what();
      EXPECT_TRUE(Contains(e.field(), "document at line")) << e.what();
    }
  }
  // Syntax errors name the line of the file.
  try {
    ParseKubernetesObjects("apiVersion: v1\nkind: ConfigMap\n---\n\nkey: [unclosed\n", "bad.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().rfind("bad.yaml:", 0), 0u) << e.what();
    EXPECT_EQ(e.field(), "document at line 4") << e.what();
  }
}

// Random edits of a valid stream only ever give objects (each with apiVersion and kind) or an
// InputError (the fuzz target's property, run here with a fixed seed).
TEST(ClusterCheck, MutatedObjectStreamsGiveObjectsOrInputError) {
  const std::string base = R"(apiVersion: v1
kind: List
items:
- {apiVersion: nvidia.com/v1alpha1, kind: NVIDIADriver, metadata: {name: b}, spec: {nodeSelector: {a: b}}}
--- # next
apiVersion: v1
kind: ConfigMap
metadata: {name: m}
data:
  config.yaml: |
    version: v1
    ---
...
)";
  std::mt19937 rng(14);
  const std::string alphabet = "-:.#{}[]|>\n\r\t \"'aZ0&*!%@`";
  int parsed = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 3); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    try {
      for (const ordered_json& o : ParseKubernetesObjects(text, "m.yaml")) {
        ASSERT_TRUE(o.is_object() && o.contains("apiVersion") && o.contains("kind")) << text;
      }
      ++parsed;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().rfind("m.yaml", 0), 0u) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(refused, 0);
}

// --- Fleet -------------------------------------------------------------------------------------

class FleetCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("accel-check-fleet-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = fleet::FleetStore::Open("sqlite:" + (dir_ / "fleet.db").string());
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void AddHosts(const std::string& fixture, int n, const std::string& prefix) {
    const topology::HostTopology hw = topology::LoadTopology(kSourceDir + "/fixtures/hosts/" + fixture + ".json");
    for (int i = 0; i < n; ++i) {
      fleet::HostSpec spec;
      spec.name = prefix + std::to_string(i);
      spec.topology = hw;
      store_->AddHost(spec);
    }
  }
  CheckReport Check(const std::string& groups, bool with_hypervisor = true) {
    std::string text = Template(groups);
    if (!with_hypervisor) text.erase(text.find("  hypervisor:"), text.find("\n", text.find("  hypervisor:")) - text.find("  hypervisor:") + 1);
    view_ = fleet::FleetView::FromSnapshot(store_->Snapshot());
    CheckInputs in;
    in.fleet = &view_;
    in.fleet_name = "test-fleet";
    return CheckCluster(Parse(text), in);
  }
  fs::path dir_;
  std::unique_ptr<fleet::FleetStore> store_;
  fleet::FleetView view_;
};

TEST_F(FleetCheckTest, CountOnDistinctHostsAndCapacity) {
  AddHosts("hgx-h100", 2, "h100-");
  AddHosts("epyc-nps4-mi300x", 1, "mi300x-");
  CheckReport r = Check("  - {name: g, flavor: gpu-4-2cell, count: 2, vendor: nvidia}\n");
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  ASSERT_TRUE(r.groups[0].fleet);
  const GroupFleetFit& fit = *r.groups[0].fleet;
  EXPECT_EQ(fit.hosts, 3);
  EXPECT_EQ(fit.hardware_fit_hosts, 2);
  EXPECT_EQ(fit.capacity, 4);  // two per HGX (8 H100s, 4 per VM)
  EXPECT_EQ(fit.distinct_placed, 2);
  EXPECT_TRUE(fit.fits_alone);
  EXPECT_TRUE(fit.fits_together);
  EXPECT_EQ(CheckJson(r)["fleet"]["hosts"], 3);

  // Three VMs need three hosts with H100s: two have them.
  r = Check("  - {name: g, flavor: gpu-4-2cell, count: 3, vendor: nvidia}\n");
  CheckFinding f = One(r, "fleet");
  EXPECT_EQ(f.key, "spec.nodeGroups[0].count");
  EXPECT_TRUE(Contains(f.problem, "only 2 of 3 VMs fit on distinct hosts of test-fleet")) << f.problem;
  EXPECT_EQ(r.groups[0].fleet->capacity, 4);  // capacity counts VMs per host, not hosts

  // Each group fits alone, not both: the second finds the HGX hosts taken.
  r = Check("  - {name: a, flavor: gpu-4-2cell, count: 2, vendor: nvidia}\n"
            "  - {name: b, flavor: gpu-4-2cell, count: 2, vendor: nvidia}\n"
            "  - {name: c, flavor: gpu-1g, count: 2, vendor: nvidia}\n");
  EXPECT_TRUE(r.groups[0].fleet->fits_together);
  EXPECT_TRUE(r.groups[1].fleet->fits_alone);
  EXPECT_TRUE(r.groups[1].fleet->fits_together);  // the second VM per HGX: 4 more H100s each
  EXPECT_TRUE(r.groups[2].fleet->fits_alone);
  EXPECT_FALSE(r.groups[2].fleet->fits_together);  // no H100 left
  f = One(r, "fleet");
  EXPECT_EQ(f.group, "c");
  EXPECT_TRUE(Contains(f.problem, "after the groups before it")) << f.problem;
}

TEST_F(FleetCheckTest, FlavorThatFitsNoHost) {
  AddHosts("epyc-nps4-mi300x", 2, "mi300x-");
  const CheckReport r = Check("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia}\n");
  const CheckFinding f = One(r, "fleet");
  EXPECT_EQ(f.key, "spec.nodeGroups[0].flavor");
  EXPECT_TRUE(Contains(f.problem, "fits no host of test-fleet (2 hosts), even empty")) << f.problem;
  EXPECT_EQ(r.groups[0].fleet->hardware_fit_hosts, 0);
}

TEST_F(FleetCheckTest, FullFleetIsNotAHardwareProblem) {
  AddHosts("hgx-h100", 1, "h100-");
  // Fill the host: two 4-GPU VMs.
  view_ = fleet::FleetView::FromSnapshot(store_->Snapshot());
  const ClusterTemplate filler = Parse(Template("  - {name: f, flavor: gpu-4-2cell, count: 1, vendor: nvidia}\n"));
  const topology::HostTopology hw = topology::LoadTopology(kSourceDir + "/fixtures/hosts/hgx-h100.json");
  for (int i = 0; i < 2; ++i) {
    fleet::ClaimResult c = store_->ClaimOnHost("h100-0", [&](const placement::HostUsage& usage) {
      std::optional<placement::Placement> p = placement::Place(hw, usage, {}, filler.groups[0].request).placement;
      if (p) p->host = "h100-0";
      return p;
    });
    ASSERT_TRUE(c.claimed()) << c.refused;
  }
  const CheckReport r = Check("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia}\n");
  const CheckFinding f = One(r, "fleet");
  EXPECT_TRUE(Contains(f.problem, "fits the hardware of 1 host of test-fleet, but none has room now")) << f.problem;
  EXPECT_EQ(r.groups[0].fleet->capacity, 0);
}

TEST_F(FleetCheckTest, GroupWithoutHypervisorIsPlannedOnAFleetHost) {
  AddHosts("hgx-h100", 1, "h100-");
  const CheckReport r = Check("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia}\n", /*with_hypervisor=*/false);
  EXPECT_EQ(r.error_count(), 0u) << Dump(r);
  EXPECT_EQ(r.groups[0].planned_on, "h100-0");
  EXPECT_EQ(r.groups[0].gpu_models, std::vector<std::string>{"H100-SXM5-80GB"});
}

}  // namespace
}  // namespace accel::cluster
