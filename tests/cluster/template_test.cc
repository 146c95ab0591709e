// The cluster template reader (cluster/template.h, kubelet/overrides.h): the example
// template reads back every field; each bad input is an InputError naming the key path and the
// fix; random mutations of the example only ever give a template or an InputError.
#include "cluster/template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "kubelet/overrides.h"
#include "common/error.h"
#include "common/structured_file.h"

namespace accel::cluster {
namespace template_test {

const std::string kExampleDir = std::string(ACCEL_SOURCE_DIR) + "/examples/cluster";
const std::string kExample = kExampleDir + "/ai-prod.yaml";

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A small valid template; cases replace parts of it.
const std::string kBase = R"(apiVersion: accel.cluster/v1
kind: ClusterTemplate
metadata: {name: t1}
spec:
  kubernetesVersion: v1.33.2
  flavors: [../flavors/, flavors/]
  aliases: ../flavors/aliases.json
  nodeGroups:
  - name: g0
    flavor: gpu-4-2cell
    count: 2
    vendor: nvidia
)";

ClusterTemplate Parse(const std::string& text) { return ParseClusterTemplateText(text, "t.yaml", kExampleDir); }

// The error for `text`; fails the test when it parses.
InputError ErrorOf(const std::string& text) {
  try {
    Parse(text);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "parsed without error:\n" << text;
  return InputError("", "", "");
}

// `text` must fail at key path `field`, with `problem` in the message and `fix` in the hint.
void ExpectError(const std::string& text, const std::string& field, const std::string& problem, const std::string& fix) {
  const InputError e = ErrorOf(text);
  EXPECT_EQ(e.where(), "t.yaml") << e.what();
  EXPECT_EQ(e.field(), field) << e.what();
  EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find(fix), std::string::npos) << e.what();
  EXPECT_FALSE(e.hint().empty()) << "no fix given: " << e.what();
}

// kBase with the group's lines (after "vendor: nvidia") extended by `lines`.
std::string WithGroup(const std::string& lines) { return kBase + lines; }

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ClusterTemplate, ExampleReadsBackEveryField) {
  const ClusterTemplate t = LoadClusterTemplate(kExample);
  EXPECT_EQ(t.name, "ai-prod");
  EXPECT_EQ(t.source, kExample);
  EXPECT_EQ(t.kubernetes_version.ToString(), "v1.33.2");
  EXPECT_TRUE(t.kubernetes_version.AtLeast(1, 32));
  EXPECT_FALSE(t.kubernetes_version.AtLeast(1, 34));
  ASSERT_EQ(t.flavor_paths.size(), 2u);
  EXPECT_EQ(t.flavor_paths[1], kExampleDir + "/flavors/");
  // Every flavor of both directories, the alias file skipped.
  for (const char* name : {"gpu-1g", "gpu-4-2cell", "shared", "mi300x-2", "gaudi2-4"})
    EXPECT_NE(t.FindFlavor(name), nullptr) << name;
  EXPECT_EQ(t.flavors.size(), t.flavor_files.size());
  ASSERT_NE(t.aliases, nullptr);
  EXPECT_NE(t.aliases->Find("mi300x"), nullptr);
  ASSERT_NE(t.hypervisor, nullptr);
  EXPECT_EQ(t.hypervisor->hostname, "hgx-h100");
  EXPECT_EQ(t.kubelet["cgroupDriver"], "systemd");
  EXPECT_EQ(t.kubelet["kubeReserved"]["memory"], "1Gi");
  EXPECT_EQ(t.kubelet["evictionHard"]["nodefs.available"], "10%");
  EXPECT_EQ(t.kubelet["featureGates"]["CPUManagerPolicyAlphaOptions"], true);

  ASSERT_EQ(t.groups.size(), 4u);
  const NodeGroup& h100 = t.groups[0];
  EXPECT_EQ(h100.name, "h100-train");
  EXPECT_EQ(h100.flavor_name, "h100-4-rdma");
  EXPECT_EQ(h100.flavor.vcpus, 32);
  EXPECT_EQ(h100.flavor_file, std::string(ACCEL_SOURCE_DIR) + "/examples/cluster/flavors/h100-4-rdma.yaml");
  ASSERT_EQ(h100.request.pci.size(), 2u);
  EXPECT_EQ(h100.request.pci[0].count, 4);
  EXPECT_EQ(h100.request.pci[1].count, 4);
  EXPECT_EQ(h100.count, 4);
  EXPECT_EQ(h100.min_count, 2);
  EXPECT_EQ(h100.max_count, 8);
  EXPECT_EQ(h100.vendor, Vendor::kNvidia);
  EXPECT_EQ(h100.stack, Stack::kOperator);
  EXPECT_EQ(h100.sharing.mig, "all-disabled");
  EXPECT_FALSE(h100.sharing.time_slicing);
  EXPECT_FALSE(h100.sharing.mps);
  EXPECT_EQ(h100.network.rdma, RdmaMode::kSriov);
  EXPECT_EQ(h100.labels.at("accel.io/pool"), "training");
  EXPECT_EQ(h100.labels.at("accel.io/gpu"), "h100");
  ASSERT_EQ(h100.taints.size(), 1u);
  EXPECT_EQ(h100.taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(h100.taints[0].value, "present");
  EXPECT_EQ(h100.taints[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(h100.hypervisor, t.hypervisor);  // inherited, the same object
  EXPECT_EQ(h100.hypervisor_path, t.hypervisor_path);
  EXPECT_EQ(h100.kubelet, nlohmann::json({{"maxPods", 64}, {"topologyManagerScope", "pod"}}));
  // Merged: the group's fields over the cluster's.
  EXPECT_EQ(h100.kubelet_merged["maxPods"], 64);
  EXPECT_EQ(h100.kubelet_merged["cgroupDriver"], "systemd");
  EXPECT_EQ(h100.kubelet_merged["kubeReserved"], nlohmann::json({{"memory", "1Gi"}}));

  const NodeGroup& amd = t.groups[1];
  EXPECT_EQ(amd.name, "mi300x-infer");
  EXPECT_EQ(amd.vendor, Vendor::kAmd);
  EXPECT_EQ(amd.stack, Stack::kAccel);
  EXPECT_FALSE(amd.min_count);
  ASSERT_TRUE(amd.sharing.time_slicing);
  EXPECT_EQ(amd.sharing.time_slicing->replicas, 4);
  EXPECT_TRUE(amd.sharing.time_slicing->fail_requests_greater_than_one);
  EXPECT_FALSE(amd.sharing.time_slicing->rename_by_default);
  EXPECT_EQ(amd.network.rdma, RdmaMode::kNone);
  ASSERT_NE(amd.hypervisor, nullptr);
  EXPECT_EQ(amd.hypervisor->hostname, "epyc-nps4-mi300x");
  EXPECT_EQ(amd.kubelet, nlohmann::json::object());
  EXPECT_EQ(amd.kubelet_merged, t.kubelet);

  const NodeGroup& gaudi = t.groups[2];
  EXPECT_EQ(gaudi.vendor, Vendor::kHabana);
  EXPECT_EQ(gaudi.network.rdma, RdmaMode::kNone);
  EXPECT_TRUE(gaudi.sharing.none());
  EXPECT_EQ(gaudi.hypervisor->hostname, "gaudi2-8hpu");

  const NodeGroup& sys = t.groups[3];
  EXPECT_EQ(sys.vendor, Vendor::kNone);
  EXPECT_EQ(sys.stack, Stack::kAccel);
  EXPECT_TRUE(sys.taints.empty());
  EXPECT_EQ(sys.kubelet_merged["cpuManagerPolicy"], "none");
  EXPECT_EQ(t.FindGroup("system"), &t.groups[3]);
  EXPECT_EQ(t.FindGroup("nope"), nullptr);
}

TEST(ClusterTemplate, JsonReadsAsYaml) {
  const std::string yaml = ReadText(kExample);
  const std::string json = ParseStructuredText(yaml, "ai-prod.yaml").dump(1, '\t');
  const ClusterTemplate a = ParseClusterTemplateText(yaml, "a.yaml", kExampleDir);
  const ClusterTemplate b = ParseClusterTemplateText(json, "a.json", kExampleDir);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  EXPECT_EQ(a.kubelet, b.kubelet);
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].name, b.groups[i].name);
    EXPECT_EQ(a.groups[i].labels, b.groups[i].labels);
    EXPECT_EQ(a.groups[i].kubelet_merged, b.groups[i].kubelet_merged);
  }
}

TEST(ClusterTemplate, MinimalTemplateDefaults) {
  const ClusterTemplate t = Parse(kBase);
  ASSERT_EQ(t.groups.size(), 1u);
  const NodeGroup& g = t.groups[0];
  EXPECT_EQ(g.stack, Stack::kAccel);
  EXPECT_TRUE(g.sharing.none());
  EXPECT_EQ(g.network.rdma, RdmaMode::kNone);
  EXPECT_EQ(g.hypervisor, nullptr);
  EXPECT_EQ(g.hypervisor_path, "");
  EXPECT_EQ(g.kubelet_merged, nlohmann::json::object());
  EXPECT_EQ(t.base_dir, kExampleDir);
  // sharing: none, MPS defaults, mig + time-slicing together
  EXPECT_TRUE(Parse(WithGroup("    sharing: none\n")).groups[0].sharing.none());
  const Sharing mps = Parse(WithGroup("    sharing: {mps: {replicas: 2}}\n")).groups[0].sharing;
  ASSERT_TRUE(mps.mps);
  EXPECT_TRUE(mps.mps->fail_requests_greater_than_one);
  const Sharing both = Parse(WithGroup("    sharing: {mig: all-1g.10gb, timeSlicing: {replicas: 2, renameByDefault: true}}\n")).groups[0].sharing;
  EXPECT_EQ(both.mig, "all-1g.10gb");
  EXPECT_TRUE(both.time_slicing->rename_by_default);
  // A pasted KubeletConfiguration header is accepted and not kept.
  const ClusterTemplate k = Parse(WithGroup(
      "    kubelet: {apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration, "
      "cpuManagerPolicyOptions: {full-pcpus-only: true}}\n"));
  EXPECT_EQ(k.groups[0].kubelet, nlohmann::json::parse(R"({"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}})"));
}

TEST(ClusterTemplate, InfrastructureOperatorsAndDriver) {
  // Defaults: the image-builder image name of the version, "<cluster>-cloud-config", the charts'
  // namespaces, no driver versions (the operators' defaults).
  const ClusterTemplate d = Parse(kBase);
  EXPECT_EQ(d.infrastructure.namespace_name, "default");
  EXPECT_EQ(d.infrastructure.image, "ubuntu-2404-kube-v1.33.2");
  EXPECT_EQ(d.infrastructure.identity_secret, "t1-cloud-config");
  EXPECT_EQ(d.infrastructure.cloud_name, "openstack");
  EXPECT_TRUE(d.infrastructure.networks.empty());
  EXPECT_EQ(d.operators.nvidia.namespace_name, "gpu-operator");
  EXPECT_EQ(d.operators.amd.namespace_name, "kube-amd-gpu");
  EXPECT_EQ(d.operators.network.namespace_name, "nvidia-network-operator");
  EXPECT_EQ(d.ImageOf(d.groups[0]), "ubuntu-2404-kube-v1.33.2");
  EXPECT_EQ(d.DriverVersionOf(d.groups[0]), "");
  EXPECT_EQ(d.groups[0].driver.kernel_module_type, "auto");

  const std::string spec_keys =
      "  infrastructure: {namespace: clusters, image: img-a, sshKeyName: ops, cloudName: site1,\n"
      "                   identitySecret: site1-creds, networks: [k8s-nodes, storage], failureDomain: az-2}\n"
      "  operators: {nvidia: {namespace: nv, driverVersion: \"570.172.08\"}, monitoring: {namespace: mon}}\n";
  const std::string text = Replace(kBase, "  nodeGroups:\n", spec_keys + "  nodeGroups:\n");
  const ClusterTemplate t = Parse(text + "    stack: operator\n    image: img-b\n");
  EXPECT_EQ(t.infrastructure.namespace_name, "clusters");
  EXPECT_EQ(t.infrastructure.ssh_key_name, "ops");
  EXPECT_EQ(t.infrastructure.identity_secret, "site1-creds");
  EXPECT_EQ(t.infrastructure.networks, (std::vector<std::string>{"k8s-nodes", "storage"}));
  EXPECT_EQ(t.infrastructure.failure_domain, "az-2");
  EXPECT_EQ(t.operators.nvidia.namespace_name, "nv");
  EXPECT_EQ(t.operators.monitoring.namespace_name, "mon");
  EXPECT_EQ(t.ImageOf(t.groups[0]), "img-b");
  EXPECT_EQ(t.DriverVersionOf(t.groups[0]), "570.172.08");
  const ClusterTemplate own = Parse(text + "    stack: operator\n    driver: {version: \"580.95.05\", kernelModuleType: open}\n");
  EXPECT_EQ(own.DriverVersionOf(own.groups[0]), "580.95.05");
  EXPECT_EQ(own.groups[0].driver.kernel_module_type, "open");

  const std::string g = "spec.nodeGroups[0].";
  ExpectError(WithGroup("    driver: {version: \"580\"}\n"), g + "driver", "only a vendor operator installs drivers", "stack: operator");
  ExpectError(WithGroup("    stack: operator\n    driver: {kernelModuleType: closed}\n"), g + "driver.kernelModuleType",
              "unknown value", "open");
  ExpectError(WithGroup("    stack: operator\n    driver: {version: \"58 0\"}\n"), g + "driver.version", "not a driver version",
              "580.95.05");
  ExpectError(WithGroup("    stack: operator\n    driver: {versions: x}\n"), g + "driver.versions", "unknown key", "version");
  const std::string amd = Replace(Replace(kBase, "gpu-4-2cell", "mi300x-2"), "nvidia", "amd");
  ExpectError(amd + "    stack: operator\n    driver: {kernelModuleType: open}\n", g + "driver.kernelModuleType",
              "NVIDIA GPU Operator setting", "remove it");
  ASSERT_NO_THROW(Parse(amd + "    stack: operator\n    driver: {version: \"6.4.1\"}\n"));
  ExpectError(Replace(kBase, "  nodeGroups:\n", "  infrastructure: {image: \"two words\"}\n  nodeGroups:\n"),
              "spec.infrastructure.image", "not a name", "ubuntu-2404");
  ExpectError(Replace(kBase, "  nodeGroups:\n", "  infrastructure: {namespace: Default}\n  nodeGroups:\n"),
              "spec.infrastructure.namespace", "DNS-1123", "default");
  ExpectError(Replace(kBase, "  nodeGroups:\n", "  operators: {intel: {}}\n  nodeGroups:\n"), "spec.operators.intel",
              "unknown key", "habana");
  ExpectError(Replace(kBase, "  nodeGroups:\n", "  operators: {accel: {driverVersion: \"1\"}}\n  nodeGroups:\n"),
              "spec.operators.accel.driverVersion", "unknown key", "namespace");
}

TEST(ClusterTemplate, StructureErrors) {
  const InputError syntax = ErrorOf("a: [");
  EXPECT_EQ(syntax.where(), "t.yaml:1:1") << syntax.what();
  EXPECT_NE(syntax.problem().find("is not valid YAML"), std::string::npos) << syntax.what();
  EXPECT_NE(syntax.hint().find("indentation"), std::string::npos) << syntax.what();
  ExpectError("", "", "is empty", "ai-prod.yaml");
  ExpectError(Replace(kBase, "kind: ClusterTemplate\n", ""), "kind", "is missing", "ClusterTemplate");
  ExpectError(Replace(kBase, "accel.cluster/v1", "accel.cluster/v2"), "apiVersion", "v2", "accel.cluster/v1");
  ExpectError(kBase + "status: {}\n", "status", "unknown key", "known here: apiVersion, kind, metadata, spec");
  ExpectError(Replace(kBase, "{name: t1}", "{name: T_1}"), "metadata.name", "DNS-1123", "lower-case");
  ExpectError(Replace(kBase, "{name: t1}", "{}"), "metadata.name", "is missing", "ai-prod");
  ExpectError(Replace(kBase, "v1.33.2", "1.33"), "spec.kubernetesVersion", "vMAJOR.MINOR.PATCH", "v1.33.2");
  ExpectError(Replace(kBase, "  kubernetesVersion: v1.33.2\n", ""), "spec.kubernetesVersion", "is missing", "v1.33.2");
  ExpectError(Replace(kBase, "    flavor: gpu", "    flavour: gpu"), "spec.nodeGroups[0].flavour", "unknown key", "flavor");
  ExpectError(Replace(kBase, "  nodeGroups:", "  nodeGroups: []\n  x:"), "spec.x", "unknown key", "nodeGroups");
  ExpectError(Replace(kBase, "  nodeGroups:\n", "  nodeGroups: []\n  other:\n"), "spec.other", "unknown key", "known here");
  ExpectError(kBase + "  - 3\n", "spec.nodeGroups[1]", "must be a mapping", "name:");
  // Duplicate keys are refused by the common reader, with the line.
  const InputError dup = ErrorOf(Replace(kBase, "    count: 2\n", "    count: 2\n    count: 3\n"));
  EXPECT_NE(std::string(dup.what()).find("twice"), std::string::npos) << dup.what();
  EXPECT_EQ(dup.field(), "spec.nodeGroups[0].count") << dup.what();
  EXPECT_NE(dup.problem().find("(lines "), std::string::npos) << dup.what();
  // So are several documents, which yaml-cpp alone would drop.
  EXPECT_NE(ErrorOf(kBase + "---\napiVersion: x\n").problem().find("more than one YAML document"), std::string::npos);
}

TEST(ClusterTemplate, GroupErrors) {
  const std::string g = "spec.nodeGroups[0].";
  ExpectError(Replace(kBase, "    count: 2\n", ""), g + "count", "is missing", "count: 4");
  ExpectError(Replace(kBase, "count: 2", "count: -1"), g + "count", "out of range", "0 to");
  ExpectError(Replace(kBase, "count: 2", "count: \"2\""), g + "count", "must be an integer", "count: 4");
  ExpectError(WithGroup("    minCount: 3\n"), g + "minCount", "above count 2", "minCount <= count <= maxCount");
  ExpectError(WithGroup("    maxCount: 1\n"), g + "maxCount", "below count 2", "minCount <= count <= maxCount");
  ExpectError(Replace(kBase, "    vendor: nvidia\n", ""), g + "vendor", "is missing", "nvidia, amd, habana or none");
  ExpectError(Replace(kBase, "vendor: nvidia", "vendor: intel"), g + "vendor", "unknown value 'intel'", "habana");
  ExpectError(Replace(kBase, "  - name: g0\n    flavor", "  - flavor"), g + "name", "is missing", "h100-train");
  ExpectError(Replace(kBase, "flavor: gpu-4-2cell", "flavor: gpu-4-2cel"), g + "flavor",
              "no flavor named 'gpu-4-2cel'", "did you mean 'gpu-4-2cell'? known: ");
  ExpectError(kBase + "  - {name: g0, flavor: shared, count: 1, vendor: none}\n", "spec.nodeGroups[1].name",
              "earlier group", "unique");
  ExpectError(WithGroup("    stack: vendor\n"), g + "stack", "unknown value", "accel, operator");
}

TEST(ClusterTemplate, ImpossibleCombinations) {
  const std::string g = "spec.nodeGroups[0].";
  const std::string amd = Replace(Replace(kBase, "gpu-4-2cell", "mi300x-2"), "nvidia", "amd");
  const std::string gaudi = Replace(Replace(kBase, "gpu-4-2cell", "gaudi2-4"), "nvidia", "habana");
  const std::string cpu = Replace(Replace(kBase, "gpu-4-2cell", "shared"), "nvidia", "none");
  ASSERT_NO_THROW(Parse(amd));
  ASSERT_NO_THROW(Parse(gaudi));
  ASSERT_NO_THROW(Parse(cpu));
  ExpectError(amd + "    sharing: {mig: all-1g.24gb}\n", g + "sharing.mig", "MIG is an NVIDIA feature", "DCM");
  ExpectError(gaudi + "    sharing: {mps: {replicas: 2}}\n", g + "sharing.mps", "MPS is an NVIDIA feature", "remove mps");
  ExpectError(amd + "    stack: operator\n    sharing: {timeSlicing: {replicas: 2}}\n", g + "sharing.timeSlicing",
              "no time-slicing", "stack: accel");
  ASSERT_NO_THROW(Parse(amd + "    sharing: {timeSlicing: {replicas: 2}}\n"));
  ExpectError(WithGroup("    sharing: {mig: all-1g.10gb, mps: {replicas: 2}}\n"), g + "sharing.mps", "MIG", "keep one");
  ExpectError(WithGroup("    sharing: {timeSlicing: {replicas: 2}, mps: {replicas: 2}}\n"), g + "sharing.mps", "exclude", "keep one");
  ExpectError(WithGroup("    sharing: {timeSlicing: {replicas: 1}}\n"), g + "sharing.timeSlicing.replicas", "out of range", "at least 2");
  ExpectError(WithGroup("    sharing: {timeSlicing: {}}\n"), g + "sharing.timeSlicing.replicas", "is missing", "replicas: 4");
  ExpectError(WithGroup("    sharing: {mig: \"all 1g\"}\n"), g + "sharing.mig", "mig-parted config name", "all-1g.10gb");
  ExpectError(WithGroup("    sharing: {migs: x}\n"), g + "sharing.migs", "unknown key", "mig, mps, timeSlicing");
  ExpectError(cpu + "    stack: operator\n", g + "stack", "vendor none", "leave stack out");
  ExpectError(cpu + "    sharing: {timeSlicing: {replicas: 2}}\n", g + "sharing", "no accelerators", "remove sharing");
  ASSERT_NO_THROW(Parse(cpu + "    stack: accel\n    network: {rdma: sriov}\n"));
  ExpectError(WithGroup("    network: {rdma: infiniband}\n"), g + "network.rdma", "unknown value", "sriov, shared, none");
  // The flavor's accelerators decide the vendor.
  ExpectError(Replace(kBase, "vendor: nvidia", "vendor: amd"), g + "vendor", "passes through 4 nvidia", "set vendor: nvidia");
  ExpectError(Replace(kBase, "vendor: nvidia", "vendor: none"), g + "vendor", "passes through 4 nvidia", "set vendor: nvidia");
  ExpectError(Replace(kBase, "gpu-4-2cell", "shared"), g + "flavor", "passes through no nvidia accelerator", "vendor: none");
}

TEST(ClusterTemplate, LabelAndTaintErrors) {
  const std::string g = "spec.nodeGroups[0].";
  ExpectError(WithGroup("    labels: {\"bad key!\": x}\n"), g + "labels.bad key!", "bad label key", "key=value");
  ExpectError(WithGroup("    labels: {pool: \"-x\"}\n"), g + "labels.pool", "bad label value", "");
  ExpectError(WithGroup("    labels: {gpu: true}\n"), g + "labels.gpu", "boolean", "quote it: gpu: \"true\"");
  ExpectError(WithGroup("    labels: {tier: 1}\n"), g + "labels.tier", "number", "quote it");
  ASSERT_NO_THROW(Parse(WithGroup("    labels: {gpu: \"true\", tier: \"1\", node.kubernetes.io/pool: a}\n")));
  ExpectError(WithGroup("    labels: {node-role.kubernetes.io/gpu: \"\"}\n"), g + "labels.node-role.kubernetes.io/gpu",
              "may not set", "administrator");
  ExpectError(WithGroup("    labels: [a]\n"), g + "labels", "must be a mapping", "labels:");
  ExpectError(WithGroup("    taints: [{key: a, effect: NoSchedul}]\n"), g + "taints[0].effect", "unknown value", "NoSchedule");
  ExpectError(WithGroup("    taints: [{key: a}]\n"), g + "taints[0].effect", "is missing", "NoExecute");
  ExpectError(WithGroup("    taints: [{value: a, effect: NoSchedule}]\n"), g + "taints[0].key", "is missing", "nvidia.com/gpu");
  ExpectError(WithGroup("    taints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]\n"),
              g + "taints[1]", "listed twice", "one taint per key and effect");
  ExpectError(WithGroup("    taints: [{key: \"a b\", effect: NoSchedule}]\n"), g + "taints[0].key", "taint", "");
}

TEST(ClusterTemplate, FileErrors) {
  ExpectError(Replace(kBase, "[../flavors/, flavors/]", "[nowhere/]"), "spec.flavors[0]", "does not exist", "relative to the template");
  ExpectError(Replace(kBase, "[../flavors/, flavors/]", "[]"), "spec.flavors", "is empty", "flavors/");
  ExpectError(Replace(kBase, "  flavors: [../flavors/, flavors/]\n", ""), "spec.flavors", "is missing", "flavors/");
  ExpectError(Replace(kBase, "../flavors/aliases.json", "aliases.json"), "spec.aliases", "does not exist", "alias");
  ExpectError(Replace(kBase, "  aliases:", "  hypervisor: live\n  aliases:"), "spec.hypervisor", "'live'", "host file");
  ExpectError(WithGroup("    hypervisor: hosts/none.json\n"), "spec.nodeGroups[0].hypervisor", "does not exist", "host topology");
  // The same flavor directory twice defines every flavor twice.
  ExpectError(Replace(kBase, "[../flavors/, flavors/]", "[flavors/, flavors/mi300x-2.yaml]"), "spec.flavors[1]",
              "defined in both", "unique");
  // Without the alias file the flavor's pci_passthrough:alias cannot be built: the flavor file is named.
  const InputError e = ErrorOf(Replace(Replace(kBase, "  aliases: ../flavors/aliases.json\n", ""), "[../flavors/, flavors/]",
                                       "[../flavors/gpu-4-2cell.yaml]"));
  EXPECT_NE(std::string(e.what()).find("gpu-4-2cell"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("h100"), std::string::npos) << e.what();
  // A flavor directory holding the alias file reads it as flavors when it is not spec.aliases.
  const InputError a = ErrorOf(Replace(kBase, "  aliases: ../flavors/aliases.json\n", ""));
  EXPECT_NE(a.where().find("aliases.json"), std::string::npos) << a.what();
}

TEST(ClusterTemplate, KubeletOverrideErrors) {
  const std::string k = "spec.nodeGroups[0].kubelet.";
  auto with = [](const std::string& kubelet) { return WithGroup("    kubelet: " + kubelet + "\n"); };
  ExpectError(with("{cpuManagerPolcy: static}"), k + "cpuManagerPolcy", "unknown KubeletConfiguration field",
              "did you mean 'cpuManagerPolicy'?");
  ExpectError(with("{cpuManagerPolicy: Static}"), k + "cpuManagerPolicy", "unknown value 'Static'", "did you mean 'static'?");
  ExpectError(with("{memoryManagerPolicy: static}"), k + "memoryManagerPolicy", "unknown value", "Static");
  ExpectError(with("{topologyManagerPolicy: single-numa}"), k + "topologyManagerPolicy", "unknown value", "single-numa-node");
  ExpectError(with("{topologyManagerScope: node}"), k + "topologyManagerScope", "unknown value", "container, pod");
  ExpectError(with("{maxPods: \"110\"}"), k + "maxPods", "must be an integer", "");
  ExpectError(with("{maxPods: 0}"), k + "maxPods", "out of range", "1 to");
  ExpectError(with("{podPidsLimit: abc}"), k + "podPidsLimit", "must be an integer", "");
  ExpectError(with("{failSwapOn: \"no\"}"), k + "failSwapOn", "must be true or false", "without quotes");
  ExpectError(with("{featureGates: {CPUManagerPolicyAlphaOptions: \"true\"}}"), k + "featureGates.CPUManagerPolicyAlphaOptions",
              "must be true or false", "without quotes");
  ExpectError(with("{featureGates: [a]}"), k + "featureGates", "must be a mapping", "CPUManagerPolicyAlphaOptions");
  ExpectError(with("{reservedSystemCPUs: \"0-1,x\"}"), k + "reservedSystemCPUs", "not a CPU list", "0-1,64-65");
  ExpectError(with("{kubeReserved: {memory: 1GB}}"), k + "kubeReserved.memory", "'1GB' is not a quantity", "1Gi");
  ExpectError(with("{kubeReserved: {memory: -1Gi}}"), k + "kubeReserved.memory", "zero or more", "");
  ExpectError(with("{kubeReserved: {gpu: 1}}"), k + "kubeReserved.gpu", "unknown resource", "cpu, memory");
  ExpectError(with("{systemReserved: {memory: [1]}}"), k + "systemReserved.memory", "must be a string", "");
  ExpectError(with("{evictionHard: {memory.available: 120%}}"), k + "evictionHard.memory.available", "percentage", "10%");
  ExpectError(with("{evictionHard: {memory.availble: 100Mi}}"), k + "evictionHard.memory.availble", "unknown eviction signal",
              "did you mean 'memory.available'?");
  ExpectError(with("{evictionSoftGracePeriod: {memory.available: 90}}"), k + "evictionSoftGracePeriod.memory.available",
              "not a duration", "1m30s");
  ExpectError(with("{maxPods: [1]}"), k + "maxPods", "must be an integer", "maxPods: 2");
  ExpectError(with("{cpuManagerReconcilePeriod: 10}"), k + "cpuManagerReconcilePeriod", "unit is missing", "10s");
  ExpectError(with("{cpuManagerPolicyOptions: {full-pcpu-only: \"true\"}}"), k + "cpuManagerPolicyOptions.full-pcpu-only",
              "unknown CPU Manager option", "did you mean 'full-pcpus-only'?");
  ExpectError(with("{cpuManagerPolicyOptions: {full-pcpus-only: \"yes\"}}"), k + "cpuManagerPolicyOptions.full-pcpus-only",
              "\"true\" or \"false\"", "");
  ExpectError(with("{topologyManagerPolicyOptions: {max-allowable-numa-nodes: many}}"),
              k + "topologyManagerPolicyOptions.max-allowable-numa-nodes", "whole number", "12");
  ExpectError(with("{reservedMemory: {numaNode: 0}}"), k + "reservedMemory", "must be a list", "numaNode");
  ExpectError(with("[{numaNode: 0}]"), "spec.nodeGroups[0].kubelet", "must be a mapping", "maxPods");
  ExpectError(with("{reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 0, limits: {memory: 1Gi}}]}"),
              k + "reservedMemory[1].numaNode", "listed twice", "one entry");
  ExpectError(with("{reservedMemory: [{numaNode: 0, limits: {memory: 0}}]}"), k + "reservedMemory[0].limits.memory",
              "greater than zero", "");
  ExpectError(with("{reservedMemory: [{numaNode: 0, limits: {hugepages-3x: 1Gi}}]}"), k + "reservedMemory[0].limits.hugepages-3x",
              "page size", "hugepages-1Gi");
  ExpectError(with("{reservedMemory: [{numaNode: 0, limits: {cpu: 1}}]}"), k + "reservedMemory[0].limits.cpu",
              "unknown memory type", "hugepages-<size>");
  ExpectError(with("{reservedMemory: [{limits: {memory: 1Gi}}]}"), k + "reservedMemory[0].numaNode", "is missing", "numaNode: 0");
  ExpectError(with("{reservedMemory: [{numaNode: 0, limit: {memory: 1Gi}}]}"), k + "reservedMemory[0].limit", "unknown key", "limits");
  ExpectError(with("{kind: KubeletConfig}"), k + "kind", "KubeletConfig", "KubeletConfiguration");
  ExpectError(Replace(kBase, "  nodeGroups:", "  kubelet: {maxpods: 3}\n  nodeGroups:"), "spec.kubelet.maxpods",
              "unknown KubeletConfiguration field", "did you mean 'maxPods'?");
}

TEST(ClusterTemplate, EveryKnownKubeletFieldHasACheckedValue) {
  // One good value per type: every field of the table reads.
  for (const kubelet::KubeletField& f : kubelet::KnownKubeletFields()) {
    std::string value;
    switch (f.type) {
      case kubelet::KubeletFieldType::kString: value = "x"; break;
      case kubelet::KubeletFieldType::kEnum: value = f.values[0]; break;
      case kubelet::KubeletFieldType::kEnumList: value = "[" + f.values[0] + "]"; break;
      case kubelet::KubeletFieldType::kStringList: value = "[a, b]"; break;
      case kubelet::KubeletFieldType::kBool: value = "true"; break;
      case kubelet::KubeletFieldType::kInteger: value = std::to_string(std::max(f.min, 2LL)); break;
      case kubelet::KubeletFieldType::kDuration: value = "1m30s"; break;
      case kubelet::KubeletFieldType::kQuantity: value = "10Mi"; break;
      case kubelet::KubeletFieldType::kCpuSet: value = "\"0-1\""; break;
      case kubelet::KubeletFieldType::kResourceMap: value = "{cpu: 500m, memory: 1Gi}"; break;
      case kubelet::KubeletFieldType::kEvictionMap: value = "{memory.available: 100Mi, nodefs.available: 10%}"; break;
      case kubelet::KubeletFieldType::kEvictionPeriodMap: value = "{memory.available: 30s}"; break;
      case kubelet::KubeletFieldType::kBoolMap: value = "{A: true}"; break;
      case kubelet::KubeletFieldType::kCpuManagerOptions: value = "{full-pcpus-only: \"true\"}"; break;
      case kubelet::KubeletFieldType::kTopologyOptions: value = "{max-allowable-numa-nodes: \"12\"}"; break;
      case kubelet::KubeletFieldType::kReservedMemory: value = "[{numaNode: 0, limits: {memory: 1Gi, hugepages-1Gi: 2Gi}}]"; break;
    }
    const ClusterTemplate t = Parse(WithGroup(std::string("    kubelet: {") + f.name + ": " + value + "}\n"));
    EXPECT_TRUE(t.groups[0].kubelet.contains(f.name)) << f.name;
  }
}

TEST(ClusterTemplate, MergeIsAJsonMergePatch) {
  const nlohmann::json cluster = nlohmann::json::parse(
      R"({"featureGates": {"A": true, "B": false}, "enforceNodeAllocatable": ["pods"], "maxPods": 110})");
  const nlohmann::json group = nlohmann::json::parse(R"({"featureGates": {"B": true}, "enforceNodeAllocatable": ["pods", "kube-reserved"]})");
  const nlohmann::json merged = kubelet::MergeKubeletOverrides(cluster, group);
  EXPECT_EQ(merged, nlohmann::json::parse(
                        R"({"featureGates": {"A": true, "B": true}, "enforceNodeAllocatable": ["pods", "kube-reserved"], "maxPods": 110})"));
}

// Random edits of the example — lines dropped, duplicated or swapped, values replaced by other
// values of the file, bytes flipped — give a template or an InputError, nothing else.
TEST(ClusterTemplate, MutationsOfTheExampleNeverCrash) {
  const std::string text = ReadText(kExample);
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::vector<std::string> tokens = {"", "[]", "{}", "-1", "0", "1", "2", "99999999999999", "true", "\"x\"", "none",
                                     "nvidia", "amd", "operator", "sriov", "~", "*a", "&a 1", "{mig: x}", "[{}]", "1.5",
                                     "v1.33", "NoSchedule", "-", ":", "\"\\u0000\"", "../../", "/", "100Mi", "10%"};
  std::mt19937 rng(20261201);
  int parsed = 0, refused = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<std::string> m = lines;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !m.empty(); ++e) {
      const size_t i = rng() % m.size();
      switch (rng() % 5) {
        case 0: m.erase(m.begin() + static_cast<long>(i)); break;
        case 1: m.insert(m.begin() + static_cast<long>(i), m[rng() % m.size()]); break;
        case 2: std::swap(m[i], m[rng() % m.size()]); break;
        case 3: {
          const size_t colon = m[i].find(": ");
          if (colon != std::string::npos) m[i] = m[i].substr(0, colon + 2) + tokens[rng() % tokens.size()];
          break;
        }
        case 4:
          if (!m[i].empty()) m[i][rng() % m[i].size()] = static_cast<char>(rng() % 128);
          break;
      }
    }
    std::string mutated;
    for (const std::string& l : m) mutated += l + "\n";
    try {
      ParseClusterTemplateText(mutated, "mutated.yaml", kExampleDir);
      ++parsed;
    } catch (const InputError& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an InputError: " << e.what() << "\n" << mutated;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace accel::cluster
