// The Cluster API objects and Magnum lines of `accel cluster plan`: every object validates
// against the real CRDs (shared/crds/validate.py) for every group of the example template and
// for groups with autoscaling bounds (minimum 0: scale-from-zero annotations), networks, an SSH
// key and a failure domain; the YAML reads back to the objects; the names, references, labels,
// taints, files and commands are the plan's; output is deterministic and template names follow
// their spec; bad combinations are InputErrors with the key path; the Magnum script runs under
// /bin/sh with a stand-in `openstack` and passes each group's arguments intact.
#include "cluster/cluster_api.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "support/crd_validate.h"

namespace accel::cluster {
namespace cluster_api_test {

using nlohmann::ordered_json;

const std::string kExampleDir = std::string(ACCEL_SOURCE_DIR) + "/examples/cluster";

// Plans and generates a template text read relative to examples/cluster.
struct Generated {
  ClusterTemplate t;
  ClusterPlan plan;
  StackPart part;
};

Generated Generate(const ClusterTemplate& t, const std::map<std::string, NodeLabels>& labels = {}) {
  Generated g{t, PlanCluster(t), {}};
  g.part = ClusterApiObjects(g.t, g.plan, labels);
  return g;
}

const Generated& Example() {
  static const Generated g = Generate(LoadClusterTemplate(kExampleDir + "/ai-prod.yaml"),
                                      {{"h100-train", {{"nvidia.com/mig.config", "all-disabled"}}},
                                       {"mi300x-infer", {{"accel.io/sharing", "time-slicing"}}}});
  return g;
}

// Autoscaling to and from zero, networks, an SSH key, a failure domain, a kubelet override; a
// fixed group beside it; Kubernetes `version`.
std::string SmallTemplate(const std::string& version = "v1.33.2", const std::string& h100_extra = "") {
  return R"(apiVersion: accel.cluster/v1
kind: ClusterTemplate
metadata: {name: lab}
spec:
  kubernetesVersion: )" + version + R"(
  flavors: [../flavors/, flavors/]
  aliases: ../flavors/aliases.json
  hypervisor: ../../fixtures/hosts/hgx-h100.json
  infrastructure:
    namespace: capi-lab
    sshKeyName: ops
    cloudName: lab-cloud
    networks: [k8s-nodes, storage]
    failureDomain: az-2
  nodeGroups:
  - name: h100
    flavor: gpu-4-2cell
    count: 1
    minCount: 0
    maxCount: 4
    vendor: nvidia
    stack: operator
    network: {rdma: shared}
    labels: {accel.io/pool: burst}
    taints:
    - {key: nvidia.com/gpu, effect: NoSchedule}
    - {key: accel.io/burst, value: "yes", effect: PreferNoSchedule}
)" + h100_extra + R"(  - name: cpu
    flavor: shared
    count: 2
    maxCount: 5
    vendor: none
)";
}

ClusterTemplate ParseSmall(const std::string& text) { return ParseClusterTemplateText(text, "lab.yaml", kExampleDir); }

// The documents of a generated YAML file, each read back as JSON (comments dropped).
std::vector<nlohmann::json> Documents(const std::string& text) {
  std::vector<nlohmann::json> docs;
  std::string current;
  std::istringstream in(text);
  std::string line;
  auto flush = [&] {
    if (current.find("apiVersion") != std::string::npos) docs.push_back(ParseStructuredText(current, "doc"));
    current.clear();
  };
  while (std::getline(in, line)) {
    if (line == "---") flush();
    else current += line + "\n";
  }
  flush();
  return docs;
}

std::string AllObjectsYaml(const Generated& g) {
  std::string all;
  for (const auto& [path, content] : g.part.files)
    if (path.size() > 5 && path.substr(path.size() - 5) == ".yaml") all += content;
  return all;
}

// The object of `kind` in the group's file.
nlohmann::json ObjectOf(const Generated& g, const std::string& group, const std::string& kind) {
  for (const nlohmann::json& doc : Documents(g.part.files.at(group + "/cluster-api.yaml")))
    if (doc["kind"] == kind) return doc;
  ADD_FAILURE() << "no " << kind << " for " << group;
  return nlohmann::json::object();
}

std::string ExtraArg(const nlohmann::json& kct, const std::string& name) {
  for (const auto& a : kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"])
    if (a["name"] == name) return a["value"];
  return "<absent>";
}

const nlohmann::json* FileAt(const nlohmann::json& kct, const std::string& path) {
  for (const auto& f : kct["spec"]["template"]["spec"]["files"])
    if (f["path"] == path) return &f;
  return nullptr;
}

TEST(ClusterApi, ExampleObjectsValidateAgainstTheCrds) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  const Generated& g = Example();
  ASSERT_EQ(g.part.objects.size(), 3 * g.t.groups.size());
  const test_support::CrdResult r = test_support::ValidateObjects(AllObjectsYaml(g), "cluster-api-example");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("deprecated"), std::string::npos) << r.output;
}

TEST(ClusterApi, AutoscaledNetworkedObjectsValidateAgainstTheCrds) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  const Generated g = Generate(ParseSmall(SmallTemplate()));
  const test_support::CrdResult r = test_support::ValidateObjects(AllObjectsYaml(g), "cluster-api-small");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Before the drop-in directory is on by default (1.30): the patch alone, still valid.
  const Generated old = Generate(ParseSmall(SmallTemplate("v1.30.9")));
  const test_support::CrdResult r_old = test_support::ValidateObjects(AllObjectsYaml(old), "cluster-api-old");
  EXPECT_EQ(r_old.exit_code, 0) << r_old.output;
}

TEST(ClusterApi, YamlReadsBackToTheObjects) {
  for (const Generated* g : {&Example()}) {
    size_t k = 0;
    for (const NodeGroup& group : g->t.groups) {
      const std::vector<nlohmann::json> docs = Documents(g->part.files.at(group.name + "/cluster-api.yaml"));
      ASSERT_EQ(docs.size(), 3u) << group.name;
      for (const nlohmann::json& doc : docs) {
        ASSERT_LT(k, g->part.objects.size());
        EXPECT_EQ(doc, nlohmann::json::parse(g->part.objects[k].dump())) << group.name << " document " << k;
        ++k;
      }
    }
    EXPECT_EQ(k, g->part.objects.size());
  }
}

TEST(ClusterApi, MachineDeploymentOfTheExampleTrainingGroup) {
  const Generated& g = Example();
  const nlohmann::json md = ObjectOf(g, "h100-train", "MachineDeployment");
  const nlohmann::json kct = ObjectOf(g, "h100-train", "KubeadmConfigTemplate");
  const nlohmann::json osmt = ObjectOf(g, "h100-train", "OpenStackMachineTemplate");
  EXPECT_EQ(md["apiVersion"], "cluster.x-k8s.io/v1beta2");
  EXPECT_EQ(md["metadata"]["name"], "ai-prod-h100-train");
  EXPECT_EQ(md["metadata"]["namespace"], "default");
  EXPECT_EQ(md["spec"]["clusterName"], "ai-prod");
  EXPECT_EQ(md["spec"]["replicas"], 4);
  EXPECT_EQ(md["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"], "2");
  EXPECT_EQ(md["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"], "8");
  // minimum 2: no scale-from-zero hints
  EXPECT_FALSE(md["metadata"]["annotations"].contains("capacity.cluster-autoscaler.kubernetes.io/cpu"));
  const nlohmann::json& machine = md["spec"]["template"]["spec"];
  EXPECT_EQ(machine["version"], "v1.33.2");
  EXPECT_FALSE(machine.contains("failureDomain"));
  EXPECT_EQ(machine["bootstrap"]["configRef"]["name"], kct["metadata"]["name"]);
  EXPECT_EQ(machine["bootstrap"]["configRef"]["kind"], "KubeadmConfigTemplate");
  EXPECT_EQ(machine["infrastructureRef"]["name"], osmt["metadata"]["name"]);
  EXPECT_EQ(machine["infrastructureRef"]["apiGroup"], "infrastructure.cluster.x-k8s.io");
  EXPECT_EQ(md["spec"]["selector"]["matchLabels"], md["spec"]["template"]["metadata"]["labels"]);
  EXPECT_EQ(md["spec"]["selector"]["matchLabels"][kNodeGroupLabel], "h100-train");
  // the fixed system group has no autoscaler annotations
  EXPECT_FALSE(ObjectOf(g, "system", "MachineDeployment")["metadata"].contains("annotations"));
}

TEST(ClusterApi, KubeadmConfigTemplateCarriesLabelsTaintsAndThePlanFiles) {
  const Generated& g = Example();
  const nlohmann::json kct = ObjectOf(g, "h100-train", "KubeadmConfigTemplate");
  EXPECT_EQ(kct["apiVersion"], "bootstrap.cluster.x-k8s.io/v1beta2");
  const std::string name = kct["metadata"]["name"];
  EXPECT_EQ(name.rfind("ai-prod-h100-train-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("ai-prod-h100-train-").size() + 8);
  // every label: the group's own, the node-group label, the stack's, the autoscaler's accelerator label
  EXPECT_EQ(ExtraArg(kct, "node-labels"),
            "accel.io/gpu=h100,accel.io/node-group=h100-train,accel.io/pool=training,cluster-api/accelerator=nvidia,"
            "nvidia.com/mig.config=all-disabled");
  EXPECT_EQ(g.part.node_labels.at("h100-train").at("cluster-api/accelerator"), "nvidia");
  EXPECT_EQ(ExtraArg(kct, "config-dir"), kKubeletConfigDir);
  EXPECT_EQ(ExtraArg(kct, "cloud-provider"), "external");
  EXPECT_EQ(ExtraArg(kct, "provider-id"), "openstack:///'{{ instance_id }}'");
  const nlohmann::json& join = kct["spec"]["template"]["spec"]["joinConfiguration"];
  EXPECT_EQ(join["patches"]["directory"], "/etc/kubernetes/patches");
  EXPECT_EQ(join["nodeRegistration"]["taints"],
            nlohmann::json::parse(R"([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])"));

  const std::map<std::string, std::string> files = GroupFiles(g.plan.groups[0]);
  const nlohmann::json* patch = FileAt(kct, "/etc/kubernetes/patches/kubeletconfiguration+strategic.json");
  ASSERT_NE(patch, nullptr);
  EXPECT_EQ((*patch)["content"], files.at("kubeadm/patches/kubeletconfiguration+strategic.json"));
  const nlohmann::json* dropin = FileAt(kct, "/etc/kubernetes/kubelet.conf.d/50-accel.conf");
  ASSERT_NE(dropin, nullptr);
  EXPECT_EQ((*dropin)["content"], files.at("kubelet.conf.d/50-accel.conf"));
  const nlohmann::json* unit = FileAt(kct, kHugepagesUnitPath);
  ASSERT_NE(unit, nullptr);
  EXPECT_EQ((*unit)["content"], files.at("hugepages/accel-guest-hugepages.service"));
  EXPECT_EQ(kct["spec"]["template"]["spec"]["preKubeadmCommands"],
            nlohmann::json::parse(R"(["systemctl daemon-reload", "systemctl enable --now accel-guest-hugepages.service"])"));
  // the file says what kubeadm cannot do: the kernel command line
  const std::string& text = g.part.files.at("h100-train/cluster-api.yaml");
  EXPECT_NE(text.find("kubeadm cannot set the kernel command line"), std::string::npos);
  EXPECT_NE(text.find(std::string(Trim(files.at("hugepages/kernel-cmdline.txt")))), std::string::npos);

  // The CPU-only system group: no hugepage pools, so no unit and no commands; no taints; not autoscaled.
  const nlohmann::json sys = ObjectOf(g, "system", "KubeadmConfigTemplate");
  EXPECT_EQ(FileAt(sys, kHugepagesUnitPath), nullptr);
  EXPECT_FALSE(sys["spec"]["template"]["spec"].contains("preKubeadmCommands"));
  EXPECT_FALSE(sys["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"].contains("taints"));
  EXPECT_EQ(ExtraArg(sys, "node-labels"), "accel.io/node-group=system,accel.io/pool=system");
}

TEST(ClusterApi, OpenStackMachineTemplateOfTheExample) {
  const Generated& g = Example();
  const nlohmann::json osmt = ObjectOf(g, "h100-train", "OpenStackMachineTemplate");
  EXPECT_EQ(osmt["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta2");
  const nlohmann::json& spec = osmt["spec"]["template"]["spec"];
  EXPECT_EQ(spec["flavor"]["filter"]["name"], "h100-4-rdma");
  EXPECT_EQ(spec["image"]["filter"]["name"], "ubuntu-2404-kube-v1.33.2");
  EXPECT_EQ(spec["identityRef"], nlohmann::json::parse(R"({"type": "Secret", "name": "ai-prod-cloud-config", "cloudName": "openstack"})"));
  EXPECT_FALSE(spec.contains("ports"));
  EXPECT_FALSE(spec.contains("sshKeyName"));
  EXPECT_FALSE(spec.contains("serverGroup"));
  // SR-IOV RDMA with the NICs in the flavor: no port to add
  EXPECT_EQ(g.part.files.at("h100-train/cluster-api.yaml").find("vnicType: direct"), std::string::npos);
  EXPECT_EQ(g.part.files.at("system/cluster-api.yaml").find("vnicType"), std::string::npos);
}

TEST(ClusterApi, ScaleFromZeroNetworksAndInfrastructureKeys) {
  const Generated g = Generate(ParseSmall(SmallTemplate()));
  const nlohmann::json md = ObjectOf(g, "h100", "MachineDeployment");
  const nlohmann::json& a = md["metadata"]["annotations"];
  EXPECT_EQ(md["metadata"]["namespace"], "capi-lab");
  EXPECT_EQ(md["spec"]["replicas"], 1);
  EXPECT_EQ(a["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"], "0");
  EXPECT_EQ(a["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"], "4");
  EXPECT_EQ(a["capacity.cluster-autoscaler.kubernetes.io/cpu"], "32");
  EXPECT_EQ(a["capacity.cluster-autoscaler.kubernetes.io/memory"], "256Gi");
  EXPECT_EQ(a["capacity.cluster-autoscaler.kubernetes.io/gpu-type"], "nvidia.com/gpu");
  EXPECT_EQ(a["capacity.cluster-autoscaler.kubernetes.io/gpu-count"], "4");
  EXPECT_EQ(a["capacity.cluster-autoscaler.kubernetes.io/labels"],
            "accel.io/node-group=h100,accel.io/pool=burst,cluster-api/accelerator=nvidia");
  EXPECT_EQ(a["capacity.cluster-autoscaler.kubernetes.io/taints"], "nvidia.com/gpu:NoSchedule,accel.io/burst=yes:PreferNoSchedule");
  EXPECT_EQ(md["spec"]["template"]["spec"]["failureDomain"], "az-2");

  // maxCount alone: the minimum is the count; no capacity hints, no accelerator label (no GPUs)
  const nlohmann::json cpu = ObjectOf(g, "cpu", "MachineDeployment");
  EXPECT_EQ(cpu["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"], "2");
  EXPECT_EQ(cpu["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"], "5");
  EXPECT_EQ(cpu["metadata"]["annotations"].size(), 2u);
  EXPECT_EQ(g.part.node_labels.count("cpu"), 0u);

  const nlohmann::json osmt = ObjectOf(g, "h100", "OpenStackMachineTemplate");
  const nlohmann::json& spec = osmt["spec"]["template"]["spec"];
  EXPECT_EQ(spec["sshKeyName"], "ops");
  EXPECT_EQ(spec["identityRef"]["cloudName"], "lab-cloud");
  EXPECT_EQ(spec["identityRef"]["name"], "lab-cloud-config");
  EXPECT_EQ(spec["ports"], nlohmann::json::parse(R"([{"network": {"filter": {"name": "k8s-nodes"}}},
                                                     {"network": {"filter": {"name": "storage"}}}])"));
  // taint without a value
  const nlohmann::json kct = ObjectOf(g, "h100", "KubeadmConfigTemplate");
  EXPECT_EQ(kct["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["taints"][0],
            nlohmann::json::parse(R"({"key": "nvidia.com/gpu", "effect": "NoSchedule"})"));
}

TEST(ClusterApi, BeforeKubernetes131NoDropIn) {
  const Generated g = Generate(ParseSmall(SmallTemplate("v1.30.9")));
  const nlohmann::json kct = ObjectOf(g, "h100", "KubeadmConfigTemplate");
  EXPECT_EQ(ExtraArg(kct, "config-dir"), "<absent>");
  EXPECT_EQ(FileAt(kct, "/etc/kubernetes/kubelet.conf.d/50-accel.conf"), nullptr);
  EXPECT_NE(FileAt(kct, "/etc/kubernetes/patches/kubeletconfiguration+strategic.json"), nullptr);
  EXPECT_EQ(ObjectOf(g, "h100", "MachineDeployment")["spec"]["template"]["spec"]["version"], "v1.30.9");
}

TEST(ClusterApi, DeterministicAndTemplateNamesFollowTheirSpec) {
  const ClusterTemplate t = ParseSmall(SmallTemplate());
  const Generated a = Generate(t);
  const Generated b = Generate(t);
  EXPECT_EQ(a.part.files, b.part.files);
  // A kubelet override changes the bootstrap template's name (so the group rolls), not the machine template's.
  const Generated c = Generate(ParseSmall(SmallTemplate("v1.33.2", "    kubelet: {maxPods: 90}\n")));
  EXPECT_NE(ObjectOf(a, "h100", "KubeadmConfigTemplate")["metadata"]["name"],
            ObjectOf(c, "h100", "KubeadmConfigTemplate")["metadata"]["name"]);
  EXPECT_EQ(ObjectOf(a, "h100", "OpenStackMachineTemplate")["metadata"]["name"],
            ObjectOf(c, "h100", "OpenStackMachineTemplate")["metadata"]["name"]);
  EXPECT_EQ(ObjectOf(c, "h100", "MachineDeployment")["metadata"]["annotations"]["capacity.cluster-autoscaler.kubernetes.io/maxPods"],
            "90");
  // ... and the other group's templates not at all
  EXPECT_EQ(ObjectOf(a, "cpu", "KubeadmConfigTemplate")["metadata"]["name"],
            ObjectOf(c, "cpu", "KubeadmConfigTemplate")["metadata"]["name"]);
}

InputError ErrorOf(const ClusterTemplate& t, const std::map<std::string, NodeLabels>& labels) {
  const ClusterPlan plan = PlanCluster(t);
  try {
    ClusterApiObjects(t, plan, labels);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return InputError("", "", "");
}

TEST(ClusterApi, ContradictingLabelsAreInputErrors) {
  const ClusterTemplate t = ParseSmall(SmallTemplate());
  const InputError e = ErrorOf(t, {{"h100", {{"accel.io/pool", "steady"}}}});
  EXPECT_EQ(e.where(), "lab.yaml");
  EXPECT_EQ(e.field(), "spec.nodeGroups[0].labels.accel.io/pool");
  EXPECT_NE(e.problem().find("'burst' contradicts accel.io/pool=steady"), std::string::npos) << e.what();
  EXPECT_FALSE(e.hint().empty());
  // the same value is no contradiction
  EXPECT_NO_THROW(Generate(t, {{"h100", {{"accel.io/pool", "burst"}}}}));

  std::string text = SmallTemplate();
  const std::string pool = "labels: {accel.io/pool: burst}";
  text.replace(text.find(pool), pool.size(), "labels: {accel.io/node-group: other}");
  const ClusterTemplate own = ParseSmall(text);
  const InputError e2 = ErrorOf(own, {});
  EXPECT_EQ(e2.field(), "spec.nodeGroups[0].labels.accel.io/node-group") << e2.what();

  // a generator naming a group the template lacks is a bug, not input
  const ClusterPlan plan = PlanCluster(t);
  EXPECT_THROW(ClusterApiObjects(t, plan, {{"nope", {{"a", "b"}}}}), std::logic_error);
}

TEST(ClusterApi, TooOldKubernetesAndTooManyLabels) {
  const InputError e = ErrorOf(ParseSmall(SmallTemplate("v1.24.9")), {});
  EXPECT_EQ(e.field(), "spec.kubernetesVersion");
  EXPECT_NE(e.problem().find("1.25"), std::string::npos) << e.what();

  NodeLabels many;
  for (int i = 0; i < 40; ++i) many["accel.io/label-" + std::to_string(i)] = std::string(20, 'x');
  const InputError e2 = ErrorOf(ParseSmall(SmallTemplate()), {{"cpu", many}});
  EXPECT_EQ(e2.field(), "spec.nodeGroups[1].labels");
  EXPECT_NE(e2.problem().find("1024"), std::string::npos) << e2.what();
}

TEST(ClusterApi, KubeletConfigAsFlags) {
  const nlohmann::json config = nlohmann::json::parse(R"({
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "cpuManagerPolicy": "static", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
    "reservedSystemCPUs": "0-1", "topologyManagerPolicy": "restricted",
    "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
    "kubeReserved": {"cpu": "500m", "memory": "1Gi"}, "systemReserved": {"memory": "924Mi"},
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
    "featureGates": {"CPUManagerPolicyAlphaOptions": true}, "maxPods": 64,
    "memoryManagerPolicy": "Static",
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1536Mi"}}, {"numaNode": 1, "limits": {"memory": "512Mi"}}],
    "authentication": {"anonymous": {"enabled": false}}, "enforceNodeAllocatable": ["pods"]
  })");
  const KubeletFlags f = KubeletConfigFlags(config);
  const std::vector<std::string> want = {
      "--cpu-manager-policy=static", "--cpu-manager-policy-options=full-pcpus-only=true", "--reserved-cpus=0-1",
      "--topology-manager-policy=restricted", "--topology-manager-policy-options=prefer-closest-numa-nodes=true",
      "--kube-reserved=cpu=500m,memory=1Gi", "--system-reserved=memory=924Mi",
      "--eviction-hard=memory.available<100Mi,nodefs.available<10%", "--feature-gates=CPUManagerPolicyAlphaOptions=true",
      "--max-pods=64", "--memory-manager-policy=Static", "--reserved-memory=0:memory=1536Mi",
      "--reserved-memory=1:memory=512Mi", "--enforce-node-allocatable=pods"};
  // nlohmann::json keeps keys sorted; compare as sets of flags
  EXPECT_EQ(std::set<std::string>(f.flags.begin(), f.flags.end()), std::set<std::string>(want.begin(), want.end()));
  EXPECT_EQ(f.not_carried, std::vector<std::string>{"authentication"});
  EXPECT_TRUE(KubeletConfigFlags(nlohmann::json::array()).flags.empty());
  // a map holding an object cannot be a flag
  EXPECT_EQ(KubeletConfigFlags(nlohmann::json::parse(R"({"kubeReserved": {"cpu": {"x": 1}}})")).not_carried,
            std::vector<std::string>{"kubeReserved"});
}

TEST(ClusterApi, ShellQuote) {
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

// Runs `script` under /bin/sh with a stand-in `openstack` that prints each argument on its own
// line and a blank line after each call; returns what it printed.
std::string RunWithFakeOpenstack(const std::string& script, const std::string& args) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("accel-magnum-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream fake(dir / "openstack");
    fake << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\necho\n";
  }
  std::filesystem::permissions(dir / "openstack", std::filesystem::perms::owner_all);
  {
    std::ofstream s(dir / "nodegroups.sh");
    s << script;
  }
  const std::string cmd = "PATH='" + dir.string() + "':/usr/bin:/bin sh '" + (dir / "nodegroups.sh").string() + "' " + args + " 2>&1";
  std::string out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return "<popen failed>";
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  return out;
}

// The calls the script made, each as its argument list.
std::vector<std::vector<std::string>> Calls(const std::string& out) {
  std::vector<std::vector<std::string>> calls(1);
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) calls.emplace_back();
    else calls.back().push_back(line);
  }
  if (calls.back().empty()) calls.pop_back();
  return calls;
}

TEST(ClusterApi, MagnumScriptPassesEachGroupIntact) {
  const Generated& g = Example();
  const std::string& script = g.part.files.at("magnum/nodegroups.sh");
  EXPECT_EQ(script.rfind("#!/bin/sh\n", 0), 0u);
  const auto calls = Calls(RunWithFakeOpenstack(script, ""));
  ASSERT_EQ(calls.size(), g.t.groups.size());
  const std::vector<std::string>& h100 = calls[0];
  const std::vector<std::string> head = {"coe", "nodegroup", "create", "ai-prod", "h100-train",
                                         "--flavor", "h100-4-rdma", "--image", "ubuntu-2404-kube-v1.33.2",
                                         "--node-count", "4", "--min-nodes", "2", "--max-nodes", "8",
                                         "--role", "worker", "--merge-labels"};
  ASSERT_GT(h100.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(h100.begin(), h100.begin() + head.size()), head);
  std::vector<std::string> labels;
  for (size_t i = head.size(); i + 1 < h100.size(); i += 2) {
    EXPECT_EQ(h100[i], "--labels");
    labels.push_back(h100[i + 1]);
  }
  ASSERT_FALSE(labels.empty());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "accel.io/node-group=h100-train"), labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "nvidia.com/mig.config=all-disabled"), labels.end());
  const std::string& options = labels.back();
  EXPECT_EQ(options.rfind("kubelet_options=--node-labels=accel.io/gpu=h100,accel.io/node-group=h100-train,", 0), 0u) << options;
  EXPECT_NE(options.find(" --register-with-taints=nvidia.com/gpu=present:NoSchedule "), std::string::npos) << options;
  EXPECT_NE(options.find(" --cpu-manager-policy=static"), std::string::npos) << options;
  EXPECT_NE(options.find(" --eviction-hard=memory.available<100Mi,nodefs.available<10%"), std::string::npos) << options;
  EXPECT_NE(options.find(" --reserved-memory=0:"), std::string::npos) << options;
  // a fixed group: min = max = count
  const std::vector<std::string>& sys = calls[3];
  EXPECT_EQ(sys[4], "system");
  EXPECT_EQ(std::vector<std::string>(sys.begin() + 9, sys.begin() + 15),
            (std::vector<std::string>{"--node-count", "3", "--min-nodes", "3", "--max-nodes", "3"}));
  // another cluster name
  EXPECT_EQ(Calls(RunWithFakeOpenstack(script, "other-cluster"))[1][3], "other-cluster");
  // what Magnum cannot express is said
  EXPECT_NE(script.find("the image's kernel command line must carry: default_hugepagesz=1G"), std::string::npos);
  EXPECT_NE(script.find("#   kubectl taint nodes -l capi.stackhpc.com/node-group=h100-train --overwrite "
                        "'nvidia.com/gpu=present:NoSchedule'"),
            std::string::npos);
}

}  // namespace
}  // namespace accel::cluster
