// The vendor stack per node group (cluster/vendor_stack.h): every generated Kubernetes object
// validates against the real CRD schemas (shared/crds/validate.py) except the Gaudi ClusterPolicy,
// which has no public CRD; the files read back to exactly StackPart::objects; one NVIDIA
// ClusterPolicy however many NVIDIA operator groups, one NVIDIADriver per group with its
// selector, version and kernel module type; the MIG and device-plugin node labels name keys the
// ConfigMaps hold; the AMD DeviceConfig and the Gaudi ClusterPolicy select the right nodes;
// accel's agent gets a per-group DaemonSet and an agent.yaml; impossible stacks are InputErrors.
#include "cluster/vendor_stack.h"

#include <gtest/gtest.h>

#include <set>

#include "common/error.h"
#include "common/structured_file.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_parted_config.h"
#include "support/crd_validate.h"

namespace accel::cluster {
namespace vendor_stack_test {

using nlohmann::json;

const std::string kExampleDir = std::string(ACCEL_SOURCE_DIR) + "/examples/cluster";

// A template head; tests append node groups (paths relative to examples/cluster).
const std::string kHead = R"(apiVersion: accel.cluster/v1
kind: ClusterTemplate
metadata: {name: t1}
spec:
  kubernetesVersion: v1.33.2
  flavors: [../flavors/, flavors/]
  aliases: ../flavors/aliases.json
  hypervisor: ../../fixtures/hosts/hgx-h100.json
)";

ClusterTemplate Parse(const std::string& text) { return ParseClusterTemplateText(text, "t.yaml", kExampleDir); }

StackPart StackOf(const ClusterTemplate& t) { return VendorStack(t, PlanCluster(t)); }

StackPart StackOfText(const std::string& text) { return StackOf(Parse(text)); }

const ClusterTemplate& Example() {
  static const ClusterTemplate t = LoadClusterTemplate(kExampleDir + "/ai-prod.yaml");
  return t;
}

// The YAML documents of a generated file (they are separated by "---" lines).
std::vector<std::string> Documents(const std::string& text) {
  std::vector<std::string> docs;
  size_t start = 0;
  while (true) {
    const size_t sep = text.find("\n---\n", start);
    docs.push_back(text.substr(start, sep == std::string::npos ? std::string::npos : sep + 1 - start));
    if (sep == std::string::npos) break;
    start = sep + 5;
  }
  return docs;
}

bool IsObjectFile(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".yaml") == 0 && path.find("/agent.yaml") == std::string::npos &&
         path != "stack/accel/values.yaml";
}

bool IsGaudiPolicy(const json& o) { return o.value("apiVersion", "") == "habanalabs.habana.ai/v1"; }

// Every object of every file of `part`, except the Gaudi ClusterPolicy, through validate.py.
void ExpectValid(const StackPart& part, const std::string& label) {
  std::string all;
  int count = 0;
  for (const auto& [path, text] : part.files) {
    if (!IsObjectFile(path)) continue;
    for (const std::string& doc : Documents(text)) {
      if (IsGaudiPolicy(ParseStructuredText(doc, path))) continue;
      all += "---\n# " + path + "\n" + doc;
      ++count;
    }
  }
  ASSERT_GT(count, 0);
  const test_support::CrdResult r = test_support::ValidateObjects(all, label);
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << all;
}

std::vector<json> ObjectsOfKind(const StackPart& part, const std::string& kind) {
  std::vector<json> out;
  for (const auto& o : part.objects)
    if (o.value("kind", "") == kind) out.push_back(json::parse(o.dump()));
  return out;
}

json OnlyObject(const StackPart& part, const std::string& kind) {
  const std::vector<json> all = ObjectsOfKind(part, kind);
  EXPECT_EQ(all.size(), 1u) << kind;
  return all.empty() ? json() : all.front();
}

json ConfigMap(const StackPart& part, const std::string& name) {
  for (const json& o : ObjectsOfKind(part, "ConfigMap"))
    if (o["metadata"]["name"] == name) return o;
  ADD_FAILURE() << "no ConfigMap " << name;
  return json();
}

// The error VendorStack throws for `text`.
InputError StackError(const std::string& text) {
  const ClusterTemplate t = Parse(text);
  const ClusterPlan plan = PlanCluster(t);
  try {
    VendorStack(t, plan);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return InputError("", "", "");
}

TEST(VendorStack, ExampleObjectsValidate) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  ExpectValid(StackOf(Example()), "vendor-stack-example");
}

TEST(VendorStack, ExampleFilesAndLabels) {
  const StackPart part = StackOf(Example());
  std::set<std::string> paths;
  for (const auto& [path, text] : part.files) paths.insert(path);
  for (const char* want : {"stack/nvidia/cluster-policy.yaml", "stack/nvidia/mig-parted-config.yaml",
                           "h100-train/stack/nvidia-driver.yaml", "stack/habana/cluster-policy.yaml",
                           "mi300x-infer/stack/agent.yaml", "mi300x-infer/stack/accel-agent.yaml",
                           "stack/accel/values.yaml"})
    EXPECT_TRUE(paths.count(want)) << want;
  // No device-plugin ConfigMap: no NVIDIA operator group time-slices. Nothing for the CPU group.
  EXPECT_FALSE(paths.count("stack/nvidia/device-plugin-config.yaml"));
  for (const std::string& p : paths) EXPECT_NE(p.rfind("system/", 0), 0u) << p;

  EXPECT_EQ(part.node_labels.at("h100-train").at(kStackLabel), "nvidia-operator");
  EXPECT_EQ(part.node_labels.at("h100-train").at("nvidia.com/mig.config"), "all-disabled");
  EXPECT_EQ(part.node_labels.at("mi300x-infer").at(kStackLabel), "amd-accel");
  EXPECT_EQ(part.node_labels.at("gaudi-train").at(kStackLabel), "habana-operator");
  EXPECT_FALSE(part.node_labels.count("system"));
  // accel's AMD group needs nothing to keep NVIDIA's operator away.
  EXPECT_FALSE(part.node_labels.at("mi300x-infer").count("nvidia.com/gpu.deploy.operands"));

  // The example's only MIG group asks all-disabled: single strategy.
  std::vector<json> nvidia_policies;
  for (const json& o : ObjectsOfKind(part, "ClusterPolicy"))
    if (o["apiVersion"] == "nvidia.com/v1") nvidia_policies.push_back(o);
  ASSERT_EQ(nvidia_policies.size(), 1u);
  EXPECT_EQ(nvidia_policies[0]["spec"]["mig"]["strategy"], "single");
}

// The files hold exactly StackPart::objects, in order, and read back as the same JSON.
TEST(VendorStack, FilesReadBackToObjects) {
  const StackPart part = StackOf(Example());
  std::vector<json> from_files;
  for (const auto& [path, text] : part.files) {
    if (!IsObjectFile(path)) continue;
    for (const std::string& doc : Documents(text)) from_files.push_back(ParseStructuredText(doc, path));
  }
  ASSERT_EQ(from_files.size(), part.objects.size());
  for (size_t i = 0; i < from_files.size(); ++i) EXPECT_EQ(from_files[i], json::parse(part.objects[i].dump())) << i;
  // The non-object files parse too.
  EXPECT_NO_THROW(ParseStructuredText(part.files.at("stack/accel/values.yaml"), "values.yaml"));
  EXPECT_NO_THROW(ParseStructuredText(part.files.at("mi300x-infer/stack/agent.yaml"), "agent.yaml"));
}

TEST(VendorStack, Deterministic) {
  const StackPart a = StackOf(Example());
  const StackPart b = StackOf(Example());
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.node_labels, b.node_labels);
}

const std::string kTwoNvidiaGroups = kHead + R"(  operators:
    nvidia: {namespace: gpu-op, driverVersion: "570.172.08"}
  nodeGroups:
  - name: train
    flavor: gpu-4-2cell
    count: 2
    vendor: nvidia
    stack: operator
    network: {rdma: sriov}
    driver: {version: "580.95.05", kernelModuleType: open}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}, {key: dedicated, value: train, effect: NoExecute}]
  - name: infer
    flavor: gpu-1g
    count: 3
    vendor: nvidia
    stack: operator
)";

TEST(VendorStack, OneClusterPolicyAndADriverPerGroup) {
  const StackPart part = StackOfText(kTwoNvidiaGroups);
  const json cp = OnlyObject(part, "ClusterPolicy");
  EXPECT_EQ(cp["apiVersion"], "nvidia.com/v1");
  EXPECT_EQ(cp["metadata"]["name"], "cluster-policy");
  EXPECT_EQ(cp["spec"]["driver"]["useNvidiaDriverCRD"], true);
  EXPECT_EQ(cp["spec"]["migManager"]["enabled"], true);
  EXPECT_FALSE(cp["spec"]["devicePlugin"].contains("config"));  // nobody shares
  EXPECT_FALSE(cp["spec"]["migManager"]["config"].contains("name"));  // nobody asks MIG
  // The operands tolerate every operator group's taints (and NVIDIA's default).
  const json tolerations = cp["spec"]["daemonsets"]["tolerations"];
  EXPECT_EQ(tolerations.size(), 2u) << tolerations;
  EXPECT_NE(tolerations.dump().find("\"dedicated\""), std::string::npos);

  const std::vector<json> drivers = ObjectsOfKind(part, "NVIDIADriver");
  ASSERT_EQ(drivers.size(), 2u);
  std::map<std::string, json> by_name;
  for (const json& d : drivers) by_name[d["metadata"]["name"]] = d;
  const json& train = by_name.at("train");
  EXPECT_EQ(train["spec"]["nodeSelector"], json({{kNodeGroupLabel, "train"}}));
  EXPECT_EQ(train["spec"]["version"], "580.95.05");
  EXPECT_EQ(train["spec"]["kernelModuleType"], "open");
  EXPECT_EQ(train["spec"]["rdma"]["enabled"], true);
  EXPECT_EQ(train["spec"]["tolerations"].size(), 2u);
  EXPECT_FALSE(train["metadata"].contains("namespace"));  // cluster-scoped
  const json& infer = by_name.at("infer");
  EXPECT_EQ(infer["spec"]["nodeSelector"], json({{kNodeGroupLabel, "infer"}}));
  EXPECT_EQ(infer["spec"]["version"], "570.172.08");  // spec.operators.nvidia.driverVersion
  EXPECT_EQ(infer["spec"]["kernelModuleType"], "auto");
  EXPECT_FALSE(infer["spec"].contains("rdma"));
  EXPECT_FALSE(infer["spec"].contains("tolerations"));
  EXPECT_TRUE(part.files.count("train/stack/nvidia-driver.yaml"));
  EXPECT_TRUE(part.files.count("infer/stack/nvidia-driver.yaml"));
}

TEST(VendorStack, NoDriverVersionLeavesItOut) {
  std::string text = kTwoNvidiaGroups;
  const std::string with = ", driverVersion: \"570.172.08\"";
  text.erase(text.find(with), with.size());
  const StackPart part = StackOfText(text);
  for (const json& d : ObjectsOfKind(part, "NVIDIADriver")) {
    if (d["metadata"]["name"] == "infer") {
      EXPECT_FALSE(d["spec"].contains("version")) << d;
    }
  }
}

TEST(VendorStack, TwoNvidiaGroupsValidate) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  ExpectValid(StackOfText(kTwoNvidiaGroups), "vendor-stack-two-nvidia");
}

// MIG and sharing: the labels name keys of the ConfigMaps.
const std::string kSharing = kHead + R"(  nodeGroups:
  - name: mig-ts
    flavor: gpu-1g
    count: 1
    vendor: nvidia
    stack: operator
    sharing: {mig: all-1g.10gb, timeSlicing: {replicas: 4}}
  - name: balanced
    flavor: gpu-4-2cell
    count: 1
    vendor: nvidia
    stack: operator
    sharing: {mig: all-balanced}
  - name: ts
    flavor: gpu-1g
    count: 1
    vendor: nvidia
    stack: operator
    sharing: {timeSlicing: {replicas: 2, renameByDefault: true}}
  - name: ts2
    flavor: gpu-1g
    count: 1
    vendor: nvidia
    stack: operator
    sharing: {timeSlicing: {replicas: 2, renameByDefault: true}}
)";

TEST(VendorStack, MigAndDevicePluginLabelsMatchConfigMapKeys) {
  const StackPart part = StackOfText(kSharing);
  const json cp = OnlyObject(part, "ClusterPolicy");
  EXPECT_EQ(cp["spec"]["mig"]["strategy"], "mixed");  // all-balanced is several profiles
  EXPECT_EQ(cp["spec"]["migManager"]["config"]["name"], "accel-mig-parted-config");
  EXPECT_EQ(cp["spec"]["migManager"]["config"]["default"], "all-disabled");
  EXPECT_EQ(cp["spec"]["devicePlugin"]["config"]["name"], "accel-device-plugin-config");
  EXPECT_EQ(cp["spec"]["devicePlugin"]["config"]["default"], "default");

  const json plugin_cm = ConfigMap(part, "accel-device-plugin-config");
  const json mig_cm = ConfigMap(part, "accel-mig-parted-config");
  EXPECT_EQ(plugin_cm["metadata"]["namespace"], "gpu-operator");
  EXPECT_TRUE(plugin_cm["data"].contains("default"));
  const sharing::MigPartedConfig mig =
      sharing::ParseMigPartedConfig(mig_cm["data"]["config.yaml"].get<std::string>(), "config.yaml");
  EXPECT_NE(mig.Find("all-disabled"), nullptr);
  EXPECT_FALSE(sharing::HasErrors(sharing::ValidateMigPartedConfig(mig)));

  for (const char* g : {"mig-ts", "balanced"}) {
    const std::string label = part.node_labels.at(g).at("nvidia.com/mig.config");
    EXPECT_NE(mig.Find(label), nullptr) << g << " " << label;
  }
  EXPECT_EQ(part.node_labels.at("mig-ts").at("nvidia.com/mig.config"), "all-1g.10gb");
  EXPECT_FALSE(part.node_labels.at("ts").count("nvidia.com/mig.config"));
  EXPECT_FALSE(part.node_labels.at("balanced").count("nvidia.com/device-plugin.config"));

  std::set<std::string> keys_used;
  for (const char* g : {"mig-ts", "ts", "ts2"}) {
    const std::string key = part.node_labels.at(g).at("nvidia.com/device-plugin.config");
    ASSERT_TRUE(plugin_cm["data"].contains(key)) << g << " " << key;
    keys_used.insert(key);
  }
  // Equal sharing shares a key; data holds the used keys and "default", nothing else.
  EXPECT_EQ(part.node_labels.at("ts").at("nvidia.com/device-plugin.config"), "time-slicing-2-renamed");
  EXPECT_EQ(part.node_labels.at("ts2").at("nvidia.com/device-plugin.config"), "time-slicing-2-renamed");
  EXPECT_EQ(plugin_cm["data"].size(), keys_used.size() + 1);

  // Under mixed, the MIG group time-slices its MIG devices' resource.
  const std::string key = part.node_labels.at("mig-ts").at("nvidia.com/device-plugin.config");
  EXPECT_EQ(key, "time-slicing-4-all-1g.10gb");
  const json config = ParseStructuredText(plugin_cm["data"][key].get<std::string>(), key);
  EXPECT_EQ(config["version"], "v1");
  EXPECT_EQ(config["sharing"]["timeSlicing"]["resources"],
            json::parse(R"([{"name": "nvidia.com/mig-1g.10gb", "replicas": 4}])"));
  const json ts = ParseStructuredText(plugin_cm["data"]["time-slicing-2-renamed"].get<std::string>(), "ts");
  EXPECT_EQ(ts["sharing"]["timeSlicing"]["renameByDefault"], true);
  EXPECT_EQ(ts["sharing"]["timeSlicing"]["resources"][0]["name"], "nvidia.com/gpu");

  // all-balanced on the H100: NVIDIA's 2 x 1g.10gb + 2g.20gb + 3g.40gb, filtered to the H100.
  const sharing::MigConfig* balanced = mig.Find("all-balanced");
  ASSERT_NE(balanced, nullptr);
  ASSERT_EQ(balanced->entries.size(), 1u);
  EXPECT_EQ(balanced->entries[0].mig_devices,
            (std::vector<std::pair<std::string, int>>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}}));
  ASSERT_FALSE(balanced->entries[0].device_filter.empty());
  EXPECT_EQ(balanced->entries[0].device_filter[0].ToString(), "0x233010DE");
  const sharing::MigConfig* one = mig.Find("all-1g.10gb");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->entries[0].mig_devices, (std::vector<std::pair<std::string, int>>{{"1g.10gb", 7}}));
}

TEST(VendorStack, SharingObjectsValidate) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  ExpectValid(StackOfText(kSharing), "vendor-stack-sharing");
}

TEST(VendorStack, UniformMigIsSingleStrategy) {
  const StackPart part = StackOfText(kHead + R"(  nodeGroups:
  - {name: a, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-1g.10gb, timeSlicing: {replicas: 3}}}
  - {name: b, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-disabled}}
  - {name: c, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mps: {replicas: 4}}}
)");
  const json cp = OnlyObject(part, "ClusterPolicy");
  EXPECT_EQ(cp["spec"]["mig"]["strategy"], "single");
  // Under single, MIG devices are nvidia.com/gpu: the key carries no MIG config name.
  EXPECT_EQ(part.node_labels.at("a").at("nvidia.com/device-plugin.config"), "time-slicing-3");
  EXPECT_EQ(part.node_labels.at("c").at("nvidia.com/device-plugin.config"), "mps-4-max1");
  const json cm = ConfigMap(part, "accel-device-plugin-config");
  const json mps = ParseStructuredText(cm["data"]["mps-4-max1"].get<std::string>(), "mps");
  EXPECT_EQ(mps["sharing"]["mps"]["failRequestsGreaterThanOne"], true);
  EXPECT_EQ(mps["sharing"]["mps"]["resources"][0]["replicas"], 4);
}

TEST(VendorStack, OnlyAccelGroupsHaveNoOperatorObjects) {
  const StackPart part = StackOfText(kHead + R"(  nodeGroups:
  - name: agent-mig
    flavor: gpu-1g
    count: 2
    vendor: nvidia
    sharing: {mig: all-1g.10gb}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  - {name: agent-mps, flavor: gpu-1g, count: 1, vendor: nvidia, sharing: {mps: {replicas: 4}}}
  - {name: cpu, flavor: shared, count: 1, vendor: none}
)");
  std::set<std::string> kinds;
  for (const auto& o : part.objects) kinds.insert(o.value("kind", ""));
  EXPECT_EQ(kinds, (std::set<std::string>{"ConfigMap", "DaemonSet"}));
  for (const auto& [path, text] : part.files) EXPECT_NE(path.rfind("stack/nvidia/", 0), 0u) << path;
  // No operator group, so no label to keep it away.
  for (const auto& [group, labels] : part.node_labels) {
    EXPECT_FALSE(labels.count("nvidia.com/gpu.deploy.operands")) << group;
    EXPECT_FALSE(labels.count("nvidia.com/device-plugin.config")) << group;
  }
  EXPECT_EQ(part.node_labels.at("agent-mig").at(kStackLabel), "nvidia-accel");

  // The agent of the MIG group: its selector, its taint, its MIG config.
  const std::vector<json> daemonsets = ObjectsOfKind(part, "DaemonSet");
  ASSERT_EQ(daemonsets.size(), 2u);
  json mig_ds;
  for (const json& d : daemonsets)
    if (d["metadata"]["name"] == "accel-agent-agent-mig") mig_ds = d;
  ASSERT_FALSE(mig_ds.is_null());
  EXPECT_EQ(mig_ds["metadata"]["namespace"], "accel-system");
  const json& pod = mig_ds["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeSelector"], json({{kNodeGroupLabel, "agent-mig"}}));
  EXPECT_EQ(pod["tolerations"], json::parse(R"([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])"));
  EXPECT_EQ(mig_ds["spec"]["selector"]["matchLabels"], mig_ds["spec"]["template"]["metadata"]["labels"]);

  const json agent = ParseStructuredText(part.files.at("agent-mig/stack/agent.yaml"), "agent.yaml");
  EXPECT_EQ(agent["vendors"], json::parse(R"(["nvidia"])"));
  EXPECT_EQ(agent["devicePlugin"]["config"]["flags"]["migStrategy"], "single");
  EXPECT_EQ(agent["mig"]["enabled"], true);
  EXPECT_EQ(agent["mig"]["config"], "all-1g.10gb");
  const json cm = ConfigMap(part, "accel-agent-agent-mig");
  EXPECT_EQ(ParseStructuredText(cm["data"]["agent.yaml"].get<std::string>(), "cm"), agent);
  const sharing::MigPartedConfig parted =
      sharing::ParseMigPartedConfig(cm["data"]["mig-parted.yaml"].get<std::string>(), "mig-parted.yaml");
  EXPECT_NE(parted.Find("all-1g.10gb"), nullptr);

  // MPS: hostPID, the compute capability, the MPS root.
  const json mps = ParseStructuredText(part.files.at("agent-mps/stack/agent.yaml"), "agent.yaml");
  EXPECT_EQ(mps["devicePlugin"]["config"]["sharing"]["mps"]["resources"][0]["name"], "nvidia.com/gpu");
  EXPECT_EQ(mps["devicePlugin"]["config"]["flags"]["mpsRoot"], "/run/nvidia/mps");
  for (const json& d : daemonsets) {
    if (d["metadata"]["name"] != "accel-agent-agent-mps") continue;
    EXPECT_EQ(d["spec"]["template"]["spec"]["hostPID"], true);
    EXPECT_NE(d.dump().find("compute,utility"), std::string::npos);
  }

  // Both groups are in the Helm values; the chart's own groups are off.
  const json values = ParseStructuredText(part.files.at("stack/accel/values.yaml"), "values.yaml");
  EXPECT_EQ(values["nodeGroups"]["nvidia"]["enabled"], false);
  EXPECT_EQ(values["nodeGroups"]["agent-mig"]["nodeSelector"], json({{kNodeGroupLabel, "agent-mig"}}));
  EXPECT_EQ(values["nodeGroups"]["agent-mig"]["mig"]["config"], "all-1g.10gb");
  EXPECT_EQ(values["nodeGroups"]["agent-mig"]["migStrategy"], "single");
  EXPECT_EQ(values["nodeGroups"]["agent-mps"]["mps"]["replicas"], 4);
  EXPECT_FALSE(values["nodeGroups"].contains("cpu"));
}

TEST(VendorStack, AccelAgentsValidate) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  ExpectValid(StackOfText(kHead + R"(  nodeGroups:
  - {name: agent-mig, flavor: gpu-1g, count: 2, vendor: nvidia, sharing: {mig: all-balanced, timeSlicing: {replicas: 2}}}
  - {name: agent-mps, flavor: gpu-1g, count: 1, vendor: nvidia, sharing: {mps: {replicas: 4}}}
)"),
              "vendor-stack-agents");
}

TEST(VendorStack, AccelNvidiaGroupBesideOperatorGroupsTurnsOperandsOff) {
  const StackPart part = StackOfText(kHead + R"(  nodeGroups:
  - {name: op, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator}
  - {name: mine, flavor: gpu-1g, count: 1, vendor: nvidia, stack: accel, sharing: {mig: all-3g.40gb}}
)");
  EXPECT_EQ(part.node_labels.at("mine").at("nvidia.com/gpu.deploy.operands"), "false");
  // Its MIG config label from the start, so the operator does not label it all-disabled.
  EXPECT_EQ(part.node_labels.at("mine").at("nvidia.com/mig.config"), "all-3g.40gb");
  // The agent's own MIG config is not the operator's business: no mig-parted ConfigMap for it.
  EXPECT_FALSE(part.files.count("stack/nvidia/mig-parted-config.yaml"));
  EXPECT_FALSE(part.node_labels.at("op").count("nvidia.com/gpu.deploy.operands"));
  // The ClusterPolicy says so.
  EXPECT_NE(part.files.at("stack/nvidia/cluster-policy.yaml").find("nvidia.com/gpu.deploy.operands=false"),
            std::string::npos);
  EXPECT_EQ(ObjectsOfKind(part, "NVIDIADriver").size(), 1u);
}

const std::string kAmd = kHead + R"(  operators:
    amd: {namespace: amd-gpu, driverVersion: "6.4.1"}
  nodeGroups:
  - name: mi300x
    flavor: mi300x-2
    count: 2
    vendor: amd
    stack: operator
    hypervisor: ../../fixtures/hosts/epyc-nps4-mi300x.json
    taints: [{key: amd.com/gpu, value: present, effect: NoSchedule}]
  - name: mi300x-b
    flavor: mi300x-2
    count: 2
    vendor: amd
    stack: operator
    driver: {version: "6.3.3"}
    hypervisor: ../../fixtures/hosts/epyc-nps4-mi300x.json
)";

TEST(VendorStack, AmdDeviceConfigPerGroup) {
  const StackPart part = StackOfText(kAmd);
  const std::vector<json> configs = ObjectsOfKind(part, "DeviceConfig");
  ASSERT_EQ(configs.size(), 2u);
  for (const json& c : configs) {
    const std::string name = c["metadata"]["name"];
    EXPECT_EQ(c["apiVersion"], "amd.com/v1alpha1");
    EXPECT_EQ(c["metadata"]["namespace"], "amd-gpu");
    EXPECT_EQ(c["spec"]["selector"], json({{kNodeGroupLabel, name}}));
    EXPECT_EQ(c["spec"]["devicePlugin"]["enableDevicePlugin"], true);
    EXPECT_EQ(c["spec"]["metricsExporter"]["enable"], true);
    EXPECT_EQ(c["spec"]["driver"]["version"], name == "mi300x" ? "6.4.1" : "6.3.3");
    EXPECT_EQ(c["spec"]["driver"].contains("tolerations"), name == "mi300x");
  }
  EXPECT_TRUE(ObjectsOfKind(part, "ClusterPolicy").empty());
}

TEST(VendorStack, AmdValidates) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  ExpectValid(StackOfText(kAmd), "vendor-stack-amd");
}

TEST(VendorStack, GaudiClusterPolicyShape) {
  const StackPart part = StackOf(Example());
  const std::string& text = part.files.at("stack/habana/cluster-policy.yaml");
  EXPECT_NE(text.find("UNVALIDATED"), std::string::npos);
  EXPECT_NE(text.find("https://docs.habana.ai/"), std::string::npos);
  json policy;
  for (const auto& o : part.objects)
    if (o.value("apiVersion", "") == "habanalabs.habana.ai/v1") policy = json::parse(o.dump());
  ASSERT_FALSE(policy.is_null());
  EXPECT_EQ(policy["kind"], "ClusterPolicy");
  EXPECT_EQ(policy["metadata"]["name"], "habana-ai");
  EXPECT_FALSE(policy["metadata"].contains("namespace"));
  EXPECT_EQ(policy["spec"]["node_selector"], json({{kStackLabel, "habana-operator"}}));
  EXPECT_EQ(policy["spec"]["image_registry"], "vault.habana.ai");
  EXPECT_EQ(policy["spec"]["runtime"]["configuration"]["container_engine"], "containerd");
  EXPECT_EQ(policy["spec"]["metric_exporter"]["port"], 41611);
  // No driver version in the example: no images.
  EXPECT_FALSE(policy["spec"].contains("driver"));
  EXPECT_FALSE(policy["spec"].contains("device_plugin"));
}

const std::string kGaudi = kHead + R"(  operators:
    habana: {driverVersion: "1.21.3-57"}
  nodeGroups:
  - {name: g1, flavor: gaudi2-4, count: 1, vendor: habana, stack: operator, hypervisor: ../../fixtures/hosts/gaudi2-8hpu.json}
  - {name: g2, flavor: gaudi2-4, count: 1, vendor: habana, stack: operator, hypervisor: ../../fixtures/hosts/gaudi2-8hpu.json,
     image: rocky-9-kube}
)";

TEST(VendorStack, GaudiDriverVersionSetsTheImages) {
  const StackPart part = StackOfText(kGaudi);
  const json policy = OnlyObject(part, "ClusterPolicy");
  const json& s = policy["spec"];
  // The default image ubuntu-2404-kube-v1.33.2 names the OS; rocky-9-kube does not.
  EXPECT_EQ(s["driver"]["driver_loader"]["images"],
            json::parse(R"({"ubuntu_24.04": {"repository": "vault.habana.ai/habana-ai-operator/driver/ubuntu24.04/driver-installer", "tag": "1.21.3-57"}})"));
  EXPECT_EQ(s["device_plugin"]["image"]["tag"], "1.21.3");
  EXPECT_EQ(s["metric_exporter"]["runner"]["image"]["tag"], "1.21.3-57");
  EXPECT_NE(part.files.at("stack/habana/cluster-policy.yaml").find("group g2: image rocky-9-kube"), std::string::npos);
  EXPECT_EQ(part.node_labels.at("g1").at(kStackLabel), "habana-operator");
  EXPECT_EQ(part.node_labels.at("g2").at(kStackLabel), "habana-operator");
}

TEST(VendorStack, GaudiGroupsWithTwoDriverVersionsAreAnError) {
  std::string text = kGaudi + "  - {name: g3, flavor: gaudi2-4, count: 1, vendor: habana, stack: operator, "
                              "hypervisor: ../../fixtures/hosts/gaudi2-8hpu.json, driver: {version: \"1.22.0-1\"}}\n";
  const InputError e = StackError(text);
  EXPECT_EQ(e.field(), "spec.nodeGroups[2].driver.version");
  EXPECT_NE(e.problem().find("one ClusterPolicy"), std::string::npos) << e.what();
}

TEST(VendorStack, ExampleAmdAgentTimeSlicesItsResource) {
  const StackPart part = StackOf(Example());
  const json agent = ParseStructuredText(part.files.at("mi300x-infer/stack/agent.yaml"), "agent.yaml");
  EXPECT_EQ(agent["vendors"], json::parse(R"(["amd"])"));
  EXPECT_EQ(agent["devicePlugin"]["config"]["sharing"]["timeSlicing"]["resources"],
            json::parse(R"([{"name": "amd.com/gpu", "replicas": 4}])"));
  EXPECT_EQ(agent["devicePlugin"]["config"]["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"], true);
  EXPECT_FALSE(agent["devicePlugin"]["config"].contains("flags"));
  // The chart time-slices nvidia.com/gpu only: the group is listed, not written, in values.yaml.
  const std::string& values_text = part.files.at("stack/accel/values.yaml");
  const json values = ParseStructuredText(values_text, "values.yaml");
  EXPECT_FALSE(values["nodeGroups"].contains("mi300x-infer"));
  EXPECT_NE(values_text.find("mi300x-infer: shares amd.com/gpu"), std::string::npos);
  const json ds = OnlyObject(part, "DaemonSet");
  EXPECT_EQ(ds["spec"]["template"]["spec"]["nodeSelector"], json({{kNodeGroupLabel, "mi300x-infer"}}));
  EXPECT_EQ(ds["spec"]["template"]["spec"]["tolerations"][0]["key"], "amd.com/gpu");
}

// accel's default MIG configs (examples/mig/default-configs.yaml, generated from the MIG catalog
// and checked against NVIDIA's own file by the sharing tests): every all-balanced and
// all-<profile> entry, on every model its device-filter names, is what sharing::DefaultMigDevices writes.
TEST(VendorStack, DefaultMigDevicesMatchTheDefaultConfigs) {
  const sharing::MigPartedConfig defaults =
      sharing::LoadMigPartedConfig(std::string(ACCEL_SOURCE_DIR) + "/examples/mig/default-configs.yaml");
  int checked = 0;
  for (const sharing::MigConfig& c : defaults.configs) {
    if (c.name == "all-disabled" || c.name == "all-enabled") {
      std::string why;
      EXPECT_FALSE(sharing::DefaultMigDevices(c.name, sharing::MigCatalog().front(), &why)) << c.name;
      continue;
    }
    for (const sharing::MigConfigEntry& e : c.entries) {
      // The models an entry is for: its device-filter's, or (no filter) every model that prints
      // all its profile names.
      std::vector<const sharing::GpuModel*> models;
      for (const sharing::DeviceFilter& f : e.device_filter) {
        const sharing::GpuModel* model = sharing::FindGpuModelByPciId(f.pci_id);
        ASSERT_NE(model, nullptr) << c.name << " " << f.ToString();
        models.push_back(model);
      }
      if (e.device_filter.empty()) {
        for (const sharing::GpuModel& m : sharing::MigCatalog()) {
          bool prints_all = true;
          for (const auto& [profile, count] : e.mig_devices) {
            bool found = false;
            for (const sharing::MigProfile& p : m.profiles) found = found || p.name == profile;
            prints_all = prints_all && found;
          }
          if (prints_all) models.push_back(&m);
        }
        EXPECT_FALSE(models.empty()) << c.name;
      }
      for (const sharing::GpuModel* model : models) {
        std::string why;
        const std::optional<sharing::MigDevices> devices = sharing::DefaultMigDevices(c.name, *model, &why);
        ASSERT_TRUE(devices) << c.name << " on " << model->name << ": " << why;
        EXPECT_EQ(*devices, e.mig_devices) << c.name << " on " << model->name;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 50);
  // And the other way: a profile a model lacks, an unknown name.
  std::string why;
  const sharing::GpuModel& h100 = *sharing::FindGpuModel("H100-SXM5-80GB");
  EXPECT_FALSE(sharing::DefaultMigDevices("all-1g.5gb", h100, &why));
  EXPECT_NE(why.find("has no MIG profile 1g.5gb"), std::string::npos) << why;
  EXPECT_FALSE(sharing::DefaultMigDevices("custom", h100, &why));
  EXPECT_EQ(*sharing::DefaultMigDevices("all-1g.10gb.me", h100), (sharing::MigDevices{{"1g.10gb+me", 1}}));
}

TEST(VendorStack, MigConfigAccelCannotWriteIsAnError) {
  const InputError e = StackError(kHead + R"(  nodeGroups:
  - {name: a, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: custom-layout}}
)");
  EXPECT_EQ(e.field(), "spec.nodeGroups[0].sharing.mig");
  EXPECT_NE(e.hint().find("all-balanced"), std::string::npos) << e.what();

  const InputError p = StackError(kHead + R"(  nodeGroups:
  - {name: a, flavor: gpu-1g, count: 1, vendor: nvidia, sharing: {mig: all-1g.5gb}}
)");
  EXPECT_EQ(p.field(), "spec.nodeGroups[0].sharing.mig");
  EXPECT_NE(p.problem().find("H100-SXM5-80GB has no MIG profile 1g.5gb"), std::string::npos) << p.what();
}

TEST(VendorStack, MpsBesideAMixedMigGroupIsAnError) {
  const InputError e = StackError(kHead + R"(  nodeGroups:
  - {name: a, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-balanced}}
  - {name: b, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mps: {replicas: 2}}}
)");
  EXPECT_EQ(e.field(), "spec.nodeGroups[1].sharing.mps");
  EXPECT_NE(e.problem().find("mixed"), std::string::npos) << e.what();
  // With stack: accel the agent's strategy is per group: fine.
  EXPECT_NO_THROW(StackOfText(kHead + R"(  nodeGroups:
  - {name: a, flavor: gpu-1g, count: 1, vendor: nvidia, stack: operator, sharing: {mig: all-balanced}}
  - {name: b, flavor: gpu-1g, count: 1, vendor: nvidia, stack: accel, sharing: {mps: {replicas: 2}}}
)"));
}

}  // namespace
}  // namespace accel::cluster
