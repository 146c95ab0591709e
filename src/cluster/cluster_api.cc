#include "cluster/cluster_api.h"

#include <cstdio>
#include <stdexcept>

#include "common/error.h"
#include "common/hash.h"
#include "common/strings.h"
#include "common/yaml_out.h"
#include "fleet/fleet_view.h"

namespace accel::cluster {

namespace {

using nlohmann::ordered_json;

constexpr const char* kCapiGroup = "cluster.x-k8s.io";
constexpr const char* kBootstrapGroup = "bootstrap.cluster.x-k8s.io";
constexpr const char* kInfraGroup = "infrastructure.cluster.x-k8s.io";
constexpr const char* kClusterNameLabel = "cluster.x-k8s.io/cluster-name";
// kubernetes/autoscaler cluster-autoscaler/cloudprovider/clusterapi/README.md.
constexpr const char* kMinSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
constexpr const char* kMaxSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
constexpr const char* kCapacityPrefix = "capacity.cluster-autoscaler.kubernetes.io/";
constexpr const char* kAcceleratorLabel = "cluster-api/accelerator";
// KubeadmConfigTemplate v1beta2 limits (the CRD's maxLength).
constexpr size_t kMaxFileContent = 10240;
constexpr size_t kMaxExtraArgValue = 1024;

constexpr const char* kPatchFile = "kubeadm/patches/kubeletconfiguration+strategic.json";
constexpr const char* kDropInFile = "kubelet.conf.d/50-accel.conf";
constexpr const char* kUnitFile = "hugepages/accel-guest-hugepages.service";
constexpr const char* kCmdlineFile = "hugepages/kernel-cmdline.txt";

std::string GroupPath(size_t i) { return "spec.nodeGroups[" + std::to_string(i) + "]"; }

// 8 hex digits of FNV-1a over the object's spec: the name suffix of an immutable template.
std::string SpecHash(const ordered_json& spec) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(Fnv1a(spec.dump()) & 0xffffffffu));
  return buf;
}

std::string JoinLabels(const NodeLabels& labels) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : labels) parts.push_back(k + "=" + v);
  return JoinStrings(parts, ",");
}

std::string TaintText(const Taint& taint) {
  return taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" + std::string(TaintEffectName(taint.effect));
}

std::string JoinTaints(const std::vector<Taint>& taints) {
  std::vector<std::string> parts;
  for (const Taint& taint : taints) parts.push_back(TaintText(taint));
  return JoinStrings(parts, ",");
}

// The extended resource a vendor's device plugin advertises for a whole device.
std::string DeviceResource(Vendor vendor) {
  switch (vendor) {
    case Vendor::kNvidia: return "nvidia.com/gpu";
    case Vendor::kAmd: return "amd.com/gpu";
    case Vendor::kHabana: return "habana.ai/gaudi";
    case Vendor::kNone: break;
  }
  return "";
}

int AcceleratorCount(const kubelet::GuestLayout& layout) {
  int n = 0;
  for (const kubelet::GuestDevice& d : layout.devices)
    if (d.role == topology::PciRole::kGpu || d.role == topology::PciRole::kHpu) ++n;
  return n;
}

bool HasRdmaNic(const kubelet::GuestLayout& layout) {
  for (const kubelet::GuestDevice& d : layout.devices)
    if (d.rdma || d.role == topology::PciRole::kNic) return true;
  return false;
}

bool Autoscaled(const NodeGroup& g) { return g.min_count || g.max_count; }
int MinOf(const NodeGroup& g) { return g.min_count ? *g.min_count : g.count; }
int MaxOf(const NodeGroup& g) { return g.max_count ? *g.max_count : g.count; }

// The kubelet's drop-in directory (KEP-3983): alpha in 1.28 behind KubeletConfigDropInDir (a
// kubelet given --config-dir without the gate does not start), beta and on by default in 1.30 or
// 1.31 (the release blog says 1.30, the KEP page 1.31), GA in 1.35. From 1.31 it is on either way.
bool UsesDropIn(const ClusterTemplate& t) { return t.kubernetes_version.AtLeast(1, 31); }

// Everything one group's objects and Magnum line are built from.
struct GroupInput {
  size_t index = 0;
  const NodeGroup* group = nullptr;
  const GroupPlan* plan = nullptr;
  std::map<std::string, std::string> files;  // GroupFiles(*plan)
  NodeLabels labels;                         // every label its nodes register with
  int accelerators = 0;
};

// Every label the nodes of group i register with: kNodeGroupLabel, the group's own labels and
// the labels the other generators need (`part_labels`, may be null).
NodeLabels NodeLabelsOf(const ClusterTemplate& t, size_t i, const NodeLabels* part_labels) {
  const NodeGroup& g = t.groups[i];
  NodeLabels labels = g.labels;
  auto it = labels.find(kNodeGroupLabel);
  if (it != labels.end() && it->second != g.name)
    throw InputError(t.source, GroupPath(i) + ".labels." + kNodeGroupLabel,
                     "'" + it->second + "' contradicts the label every node of group " + g.name + " carries (" +
                         kNodeGroupLabel + "=" + g.name + ")",
                     std::string("drop it: the plan sets ") + kNodeGroupLabel + " itself");
  labels[kNodeGroupLabel] = g.name;
  if (part_labels) {
    for (const auto& [key, value] : *part_labels) {
      if (key == kNodeGroupLabel) {
        if (value != g.name) throw std::logic_error("a stack part sets " + key + "=" + value + " on group " + g.name);
        continue;
      }
      auto own_it = g.labels.find(key);
      if (own_it != g.labels.end() && own_it->second != value)
        throw InputError(t.source, GroupPath(i) + ".labels." + key,
                         "'" + own_it->second + "' contradicts " + key + "=" + value +
                             ", which the plan derives for the group's stack and sharing",
                         "drop the label and let the plan set it, or change the group's sharing/stack");
      labels[key] = value;
    }
  }
  return labels;
}

std::string FlagValueOfMap(const nlohmann::json& m, const char* sep, bool* ok) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : m.items()) {
    std::string value;
    if (v.is_string()) value = v.get<std::string>();
    else if (v.is_boolean()) value = v.get<bool>() ? "true" : "false";
    else if (v.is_number()) value = v.dump();
    else {
      *ok = false;
      return "";
    }
    parts.push_back(k + sep + value);
  }
  return JoinStrings(parts, ",");
}

bool ScalarText(const nlohmann::json& v, std::string* out) {
  if (v.is_string()) *out = v.get<std::string>();
  else if (v.is_boolean()) *out = v.get<bool>() ? "true" : "false";
  else if (v.is_number()) *out = v.dump();
  else return false;
  return true;
}

// ---- the three Cluster API objects ----

ordered_json Metadata(const std::string& name, const ClusterTemplate& t, const NodeGroup& g) {
  ordered_json m;
  m["name"] = name;
  m["namespace"] = t.infrastructure.namespace_name;
  m["labels"] = {{kClusterNameLabel, t.name}, {kNodeGroupLabel, g.name}};
  return m;
}

ordered_json FileEntry(const ClusterTemplate& t, size_t i, const std::string& path, const std::string& content) {
  if (content.size() > kMaxFileContent)
    throw InputError(t.source, GroupPath(i) + ".kubelet",
                     path + " would hold " + std::to_string(content.size()) +
                         " bytes; a KubeadmConfigTemplate file holds at most " + std::to_string(kMaxFileContent),
                     "override fewer kubelet fields for this group");
  return {{"path", path}, {"owner", "root:root"}, {"permissions", "0644"}, {"content", content}};
}

ordered_json KubeadmConfigTemplate(const ClusterTemplate& t, const GroupInput& in) {
  const NodeGroup& g = *in.group;
  ordered_json spec;
  spec["files"] = ordered_json::array();
  spec["files"].push_back(FileEntry(t, in.index, std::string(kKubeadmPatchesDir) + "/kubeletconfiguration+strategic.json",
                                    in.files.at(kPatchFile)));
  if (UsesDropIn(t))
    spec["files"].push_back(FileEntry(t, in.index, std::string(kKubeletConfigDir) + "/50-accel.conf", in.files.at(kDropInFile)));
  const auto unit = in.files.find(kUnitFile);
  if (unit != in.files.end()) {
    spec["files"].push_back(FileEntry(t, in.index, kHugepagesUnitPath, unit->second));
    // Before kubeadm join starts the kubelet: the Memory Manager reads the pools once, at start.
    spec["preKubeadmCommands"] = {"systemctl daemon-reload", "systemctl enable --now accel-guest-hugepages.service"};
  }

  ordered_json args = ordered_json::array();
  auto arg = [&](const std::string& name, const std::string& value) { args.push_back({{"name", name}, {"value", value}}); };
  // CAPO's templates: the external OpenStack cloud controller, and the provider ID Cluster API
  // matches the Node to its Machine by.
  arg("cloud-provider", "external");
  arg("provider-id", "openstack:///'{{ instance_id }}'");
  if (UsesDropIn(t)) arg("config-dir", kKubeletConfigDir);
  const std::string node_labels = JoinLabels(in.labels);
  if (node_labels.size() > kMaxExtraArgValue)
    throw InputError(t.source, GroupPath(in.index) + ".labels",
                     "the node labels of group " + g.name + " take " + std::to_string(node_labels.size()) +
                         " characters; kubeletExtraArgs holds at most " + std::to_string(kMaxExtraArgValue),
                     "give the group fewer or shorter labels");
  arg("node-labels", node_labels);

  ordered_json registration;
  registration["name"] = "{{ local_hostname }}";
  registration["kubeletExtraArgs"] = args;
  if (!g.taints.empty()) {
    registration["taints"] = ordered_json::array();
    for (const Taint& taint : g.taints) {
      ordered_json tj = {{"key", taint.key}};
      if (!taint.value.empty()) tj["value"] = taint.value;
      tj["effect"] = TaintEffectName(taint.effect);
      registration["taints"].push_back(tj);
    }
  }
  spec["joinConfiguration"]["nodeRegistration"] = registration;
  spec["joinConfiguration"]["patches"]["directory"] = kKubeadmPatchesDir;

  ordered_json o;
  o["apiVersion"] = std::string(kBootstrapGroup) + "/v1beta2";
  o["kind"] = "KubeadmConfigTemplate";
  ordered_json body = {{"template", {{"spec", spec}}}};
  o["metadata"] = Metadata(t.name + "-" + g.name + "-" + SpecHash(body), t, g);
  o["spec"] = body;
  return o;
}

ordered_json OpenStackMachineTemplate(const ClusterTemplate& t, const GroupInput& in) {
  const NodeGroup& g = *in.group;
  ordered_json spec;
  spec["flavor"]["filter"]["name"] = g.flavor.name.empty() ? g.flavor_name : g.flavor.name;
  spec["image"]["filter"]["name"] = t.ImageOf(g);
  if (!t.infrastructure.ssh_key_name.empty()) spec["sshKeyName"] = t.infrastructure.ssh_key_name;
  spec["identityRef"] = {{"type", "Secret"}, {"name", t.infrastructure.identity_secret}, {"cloudName", t.infrastructure.cloud_name}};
  if (!t.infrastructure.networks.empty()) {
    spec["ports"] = ordered_json::array();
    for (const std::string& net : t.infrastructure.networks) spec["ports"].push_back({{"network", {{"filter", {{"name", net}}}}}});
  }
  ordered_json o;
  o["apiVersion"] = std::string(kInfraGroup) + "/v1beta2";
  o["kind"] = "OpenStackMachineTemplate";
  ordered_json body = {{"template", {{"spec", spec}}}};
  o["metadata"] = Metadata(t.name + "-" + g.name + "-" + SpecHash(body), t, g);
  o["spec"] = body;
  return o;
}

// Scale-from-zero hints: what a node of the group offers, for an autoscaler that has none to look at.
void CapacityAnnotations(const GroupInput& in, ordered_json* annotations) {
  const NodeGroup& g = *in.group;
  auto put = [&](const std::string& key, const std::string& value) { (*annotations)[kCapacityPrefix + key] = value; };
  put("cpu", std::to_string(g.flavor.vcpus));
  put("memory", kubelet::MiQuantity(g.flavor.ram_mib));
  const ordered_json& config = in.plan->kubelet.config;
  if (config.contains("maxPods") && config["maxPods"].is_number_integer()) put("maxPods", config["maxPods"].dump());
  // Whole devices only: with MIG or replicas the resources and counts depend on the device
  // plugin's configuration, which the autoscaler cannot be told here.
  const bool whole = g.sharing.none() || (g.sharing.mig == "all-disabled" && !g.sharing.time_slicing && !g.sharing.mps);
  if (in.accelerators > 0 && whole && !DeviceResource(g.vendor).empty()) {
    put("gpu-type", DeviceResource(g.vendor));
    put("gpu-count", std::to_string(in.accelerators));
  }
  put("labels", JoinLabels(in.labels));
  if (!g.taints.empty()) put("taints", JoinTaints(g.taints));
}

ordered_json MachineDeployment(const ClusterTemplate& t, const GroupInput& in, const ordered_json& bootstrap,
                               const ordered_json& infra) {
  const NodeGroup& g = *in.group;
  const std::string name = t.name + "-" + g.name;
  ordered_json o;
  o["apiVersion"] = std::string(kCapiGroup) + "/v1beta2";
  o["kind"] = "MachineDeployment";
  o["metadata"] = Metadata(name, t, g);
  if (Autoscaled(g)) {
    ordered_json annotations;
    annotations[kMinSizeAnnotation] = std::to_string(MinOf(g));
    annotations[kMaxSizeAnnotation] = std::to_string(MaxOf(g));
    if (MinOf(g) == 0) CapacityAnnotations(in, &annotations);
    o["metadata"]["annotations"] = annotations;
  }
  const ordered_json selector = {{kClusterNameLabel, t.name}, {kNodeGroupLabel, g.name}};
  ordered_json spec;
  spec["clusterName"] = t.name;
  spec["replicas"] = g.count;
  spec["selector"]["matchLabels"] = selector;
  ordered_json machine;
  machine["clusterName"] = t.name;
  machine["version"] = t.kubernetes_version.ToString();
  if (!t.infrastructure.failure_domain.empty()) machine["failureDomain"] = t.infrastructure.failure_domain;
  machine["bootstrap"]["configRef"] = {
      {"apiGroup", kBootstrapGroup}, {"kind", "KubeadmConfigTemplate"}, {"name", bootstrap["metadata"]["name"]}};
  machine["infrastructureRef"] = {
      {"apiGroup", kInfraGroup}, {"kind", "OpenStackMachineTemplate"}, {"name", infra["metadata"]["name"]}};
  spec["template"]["metadata"]["labels"] = selector;
  spec["template"]["spec"] = machine;
  o["spec"] = spec;
  return o;
}

std::string Document(const std::vector<std::string>& comments, const ordered_json& object) {
  std::string s = "---\n";
  for (const std::string& c : comments) s += c.empty() ? "#\n" : "# " + c + "\n";
  return s + ToYaml(object);
}

std::string ClusterApiFile(const ClusterTemplate& t, const GroupInput& in, std::vector<ordered_json>* objects) {
  const NodeGroup& g = *in.group;
  const ordered_json kct = KubeadmConfigTemplate(t, in);
  const ordered_json osmt = OpenStackMachineTemplate(t, in);
  const ordered_json md = MachineDeployment(t, in, kct, osmt);

  std::string s = "# Written by accel cluster plan: node group " + g.name + " of cluster " + t.name +
                  " as Cluster API objects (CAPI v1beta2, CAPO v1beta2).\n"
                  "# Apply to the management cluster, next to the Cluster and its OpenStackCluster:\n"
                  "#   kubectl apply -f " + g.name + "/cluster-api.yaml\n"
                  "# The templates are named by a hash of their spec: applying a changed plan creates new ones\n"
                  "# and the MachineDeployment rolls the group's machines onto them (delete the old ones after).\n";

  std::vector<std::string> md_notes = {
      std::to_string(g.count) + " x " + g.flavor_name + ", Kubernetes " + t.kubernetes_version.ToString() + "."};
  if (Autoscaled(g)) {
    md_notes.push_back("The cluster autoscaler (--cloud-provider=clusterapi) scales it between " + std::to_string(MinOf(g)) +
                       " and " + std::to_string(MaxOf(g)) + "; drop spec.replicas before re-applying once it does,");
    md_notes.push_back("or the apply resets the autoscaler's count.");
  }
  s += Document(md_notes, md);

  std::vector<std::string> kct_notes = {
      "The node's kubelet: labels and taints at registration, the plan's KubeletConfiguration as a kubeadm patch",
      std::string("(") + kKubeadmPatchesDir + ", Kubernetes >= 1.25)" +
          (UsesDropIn(t) ? std::string(" and as a --config-dir drop-in (") + kKubeletConfigDir + ", >= 1.31)." : ".")};
  if (in.files.count(kUnitFile)) {
    const auto cmdline = in.files.find(kCmdlineFile);
    std::string line = cmdline == in.files.end() ? "" : std::string(Trim(cmdline->second));
    kct_notes.push_back("Guest hugepages per NUMA node come from accel-guest-hugepages.service, started before kubeadm join.");
    kct_notes.push_back("kubeadm cannot set the kernel command line; 1 GiB pages reserved after boot can fall short on a");
    kct_notes.push_back("fragmented guest, so the sure way is an image whose command line carries: " + line);
  }
  s += Document(kct_notes, kct);

  std::vector<std::string> osmt_notes = {"The Nova server of each node: flavor " + osmt["spec"]["template"]["spec"]["flavor"]["filter"]["name"].get<std::string>() +
                                         ", image " + t.ImageOf(g) + "."};
  if (g.network.rdma != RdmaMode::kNone && !HasRdmaNic(in.plan->layout)) {
    osmt_notes.push_back("network.rdma is " + std::string(RdmaModeName(g.network.rdma)) + " but flavor " + g.flavor_name +
                         " passes no RDMA NIC through. Better: pass the NICs through with the flavor");
    osmt_notes.push_back("(a PCI alias), so accel places each behind its guest cell and the kubelet policy accounts for it.");
    osmt_notes.push_back("Else give each node SR-IOV ports, one per rail (the template has no key naming those networks):");
    if (t.infrastructure.networks.empty())
      osmt_notes.push_back("  ports:   # an explicit list replaces CAPO's default port: name the nodes' network first");
    else
      osmt_notes.push_back("  ports:   # after the ports below");
    osmt_notes.push_back("  - {network: {filter: {name: <rdma network>}}, vnicType: direct, nameSuffix: rail0}");
    osmt_notes.push_back("accel's guest layout and the kubelet derivation do not see such ports.");
  }
  if (t.infrastructure.networks.empty())
    osmt_notes.push_back("No spec.infrastructure.networks: one port on the cluster's network (CAPO's default).");
  s += Document(osmt_notes, osmt);

  objects->push_back(md);
  objects->push_back(kct);
  objects->push_back(osmt);
  return s;
}

// ---- Magnum ----

std::string MagnumScript(const ClusterTemplate& t, const std::vector<GroupInput>& inputs) {
  std::string s =
      "#!/bin/sh\n"
      "# Written by accel cluster plan: the node groups of cluster " + t.name + " as Magnum node groups.\n"
      "#   sh magnum/nodegroups.sh [CLUSTER]     CLUSTER: the Magnum cluster's name or UUID (default " + t.name + ")\n"
      "#\n"
      "# Each group is one `openstack coe nodegroup create` (python-magnumclient). Its labels are Magnum labels,\n"
      "# merged into the cluster's (--merge-labels; without it they would replace kube_tag and the rest):\n"
      "#   - the node labels themselves (the cluster autoscaler's Magnum provider reads them for new nodes);\n"
      "#   - kubelet_options, which Magnum's Heat driver (k8s_fedora_coreos_v1; deprecated in 2025.1) appends\n"
      "#     verbatim to the kubelet's flags: --node-labels, --register-with-taints and the group's kubelet\n"
      "#     configuration as flags, where the kubelet has a flag for the field.\n"
      "# What Magnum cannot express:\n"
      "#   - the kubeadm patch and the kubelet drop-in (the Cluster API files carry them; here only flags);\n"
      "#   - the guest's hugepage pools: no boot unit runs on Magnum nodes, so the image's kernel command line\n"
      "#     must carry them (each group's hugepages/kernel-cmdline.txt);\n"
      "#   - extra SR-IOV ports per node group (RDMA NICs must come with the flavor), server groups;\n"
      "#   - with the Cluster API drivers (k8s_capi_helm, k8s_cluster_api) Magnum labels reach neither the\n"
      "#     kubelet nor the nodes: label and taint the nodes after they join (the commented kubectl lines\n"
      "#     at the end; k8s_capi_helm marks each node capi.stackhpc.com/node-group=<group>), or use the\n"
      "#     Cluster API files of this plan instead.\n"
      "# Fixed-size groups pass --min-nodes = --max-nodes = their count, so an autoscaler enabled on the\n"
      "# cluster leaves them alone (the client's default minimum is 0).\n"
      "set -eu\n"
      "cluster=\"${1:-" + t.name + "}\"\n";

  std::string after_join;
  for (const GroupInput& in : inputs) {
    const NodeGroup& g = *in.group;
    const KubeletFlags kf = KubeletConfigFlags(in.plan->kubelet.config);
    std::vector<std::string> options = {"--node-labels=" + JoinLabels(in.labels)};
    if (!g.taints.empty()) options.push_back("--register-with-taints=" + JoinTaints(g.taints));
    options.insert(options.end(), kf.flags.begin(), kf.flags.end());

    s += "\n# " + g.name + ": " + std::to_string(g.count) + " x " + g.flavor_name +
         (Autoscaled(g) ? " (autoscaled " + std::to_string(MinOf(g)) + "-" + std::to_string(MaxOf(g)) + ")" : "") +
         ", vendor " + std::string(VendorName(g.vendor)) + ", stack " + std::string(StackName(g.stack)) + "\n";
    if (!kf.not_carried.empty())
      s += "#   kubelet fields without a flag (not carried): " + JoinStrings(kf.not_carried, ", ") + "\n";
    const auto cmdline = in.files.find(kCmdlineFile);
    if (cmdline != in.files.end())
      s += "#   the image's kernel command line must carry: " + std::string(Trim(cmdline->second)) + "\n";
    if (g.network.rdma != RdmaMode::kNone && !HasRdmaNic(in.plan->layout))
      s += "#   network.rdma " + std::string(RdmaModeName(g.network.rdma)) + ": the flavor passes no RDMA NIC through, and Magnum adds no SR-IOV port\n";
    s += "openstack coe nodegroup create \"$cluster\" " + ShellQuote(g.name) + " \\\n";
    s += "    --flavor " + ShellQuote(g.flavor.name.empty() ? g.flavor_name : g.flavor.name) + " \\\n";
    s += "    --image " + ShellQuote(t.ImageOf(g)) + " \\\n";
    s += "    --node-count " + std::to_string(g.count) + " --min-nodes " + std::to_string(MinOf(g)) + " --max-nodes " +
         std::to_string(MaxOf(g)) + " \\\n";
    s += "    --role worker \\\n    --merge-labels \\\n";
    for (const auto& [k, v] : in.labels) s += "    --labels " + ShellQuote(k + "=" + v) + " \\\n";
    s += "    --labels " + ShellQuote("kubelet_options=" + JoinStrings(options, " ")) + "\n";

    after_join += "#   kubectl label nodes -l capi.stackhpc.com/node-group=" + g.name + " --overwrite";
    for (const auto& [k, v] : in.labels) after_join += " " + ShellQuote(k + "=" + v);
    after_join += "\n";
    if (!g.taints.empty()) {
      after_join += "#   kubectl taint nodes -l capi.stackhpc.com/node-group=" + g.name + " --overwrite";
      for (const Taint& taint : g.taints) after_join += " " + ShellQuote(TaintText(taint));
      after_join += "\n";
    }
  }
  s += "\n# Cluster API drivers only, once the nodes are Ready (k8s_capi_helm's node label; for k8s_cluster_api\n"
       "# select the nodes by name). Taints set after the join leave a window in which other pods may land.\n";
  s += after_join;
  return s;
}

}  // namespace

KubeletFlags KubeletConfigFlags(const nlohmann::json& config) {
  // KubeletConfiguration field -> kubelet flag (kubelet --help; the flags are deprecated in
  // favour of the config file but still read, which is how Magnum's Heat driver configures it).
  static const std::map<std::string, std::string> kScalar = {
      {"cgroupDriver", "cgroup-driver"},
      {"containerRuntimeEndpoint", "container-runtime-endpoint"},
      {"cpuCFSQuota", "cpu-cfs-quota"},
      {"cpuManagerPolicy", "cpu-manager-policy"},
      {"cpuManagerReconcilePeriod", "cpu-manager-reconcile-period"},
      {"failSwapOn", "fail-swap-on"},
      {"imageGCHighThresholdPercent", "image-gc-high-threshold"},
      {"imageGCLowThresholdPercent", "image-gc-low-threshold"},
      {"kubeReservedCgroup", "kube-reserved-cgroup"},
      {"maxPods", "max-pods"},
      {"memoryManagerPolicy", "memory-manager-policy"},
      {"podPidsLimit", "pod-max-pids"},
      {"reservedSystemCPUs", "reserved-cpus"},
      {"serializeImagePulls", "serialize-image-pulls"},
      {"systemReservedCgroup", "system-reserved-cgroup"},
      {"topologyManagerPolicy", "topology-manager-policy"},
      {"topologyManagerScope", "topology-manager-scope"},
  };
  // key=value maps.
  static const std::map<std::string, std::string> kMap = {
      {"cpuManagerPolicyOptions", "cpu-manager-policy-options"},
      {"evictionMinimumReclaim", "eviction-minimum-reclaim"},
      {"evictionSoftGracePeriod", "eviction-soft-grace-period"},
      {"featureGates", "feature-gates"},
      {"kubeReserved", "kube-reserved"},
      {"systemReserved", "system-reserved"},
      {"topologyManagerPolicyOptions", "topology-manager-policy-options"},
  };
  // signal<quantity maps.
  static const std::map<std::string, std::string> kThreshold = {
      {"evictionHard", "eviction-hard"},
      {"evictionSoft", "eviction-soft"},
  };

  KubeletFlags out;
  if (!config.is_object()) return out;
  for (const auto& [field, value] : config.items()) {
    if (field == "apiVersion" || field == "kind") continue;
    bool ok = true;
    if (auto it = kScalar.find(field); it != kScalar.end()) {
      std::string text;
      if (ScalarText(value, &text)) {
        out.flags.push_back("--" + it->second + "=" + text);
        continue;
      }
    } else if (auto m = kMap.find(field); m != kMap.end() && value.is_object()) {
      const std::string text = FlagValueOfMap(value, "=", &ok);
      if (ok) {
        if (!text.empty()) out.flags.push_back("--" + m->second + "=" + text);
        continue;
      }
    } else if (auto th = kThreshold.find(field); th != kThreshold.end() && value.is_object()) {
      const std::string text = FlagValueOfMap(value, "<", &ok);
      if (ok) {
        if (!text.empty()) out.flags.push_back("--" + th->second + "=" + text);
        continue;
      }
    } else if (field == "enforceNodeAllocatable" && value.is_array()) {
      std::vector<std::string> items;
      for (const auto& item : value) {
        if (!item.is_string()) ok = false;
        else items.push_back(item.get<std::string>());
      }
      if (ok) {
        out.flags.push_back("--enforce-node-allocatable=" + JoinStrings(items, ","));
        continue;
      }
    } else if (field == "reservedMemory" && value.is_array()) {
      // --reserved-memory N:type=quantity,... once per NUMA node (kubelet --help).
      std::vector<std::string> flags;
      for (const auto& entry : value) {
        if (!entry.is_object() || !entry.contains("numaNode") || !entry["numaNode"].is_number_integer() ||
            !entry.contains("limits") || !entry["limits"].is_object()) {
          ok = false;
          break;
        }
        const std::string limits = FlagValueOfMap(entry["limits"], "=", &ok);
        if (!ok) break;
        flags.push_back("--reserved-memory=" + entry["numaNode"].dump() + ":" + limits);
      }
      if (ok) {
        out.flags.insert(out.flags.end(), flags.begin(), flags.end());
        continue;
      }
    }
    out.not_carried.push_back(field);
  }
  return out;
}

StackPart ClusterApiObjects(const ClusterTemplate& t, const ClusterPlan& plan,
                            const std::map<std::string, NodeLabels>& node_labels) {
  if (plan.groups.size() != t.groups.size())
    throw std::logic_error("ClusterApiObjects: the plan has " + std::to_string(plan.groups.size()) +
                           " groups, the template " + std::to_string(t.groups.size()));
  for (const auto& [group, labels] : node_labels)
    if (!t.FindGroup(group)) throw std::logic_error("ClusterApiObjects: node labels for unknown group " + group);
  if (!t.kubernetes_version.AtLeast(1, 25))
    throw InputError(t.source, "spec.kubernetesVersion",
                     t.kubernetes_version.ToString() + " is too old for the Cluster API files: kubeadm join applies a "
                                                       "kubeletconfiguration patch from Kubernetes 1.25 on",
                     "plan a cluster of v1.25 or newer");

  StackPart part;
  std::vector<GroupInput> inputs;
  for (size_t i = 0; i < t.groups.size(); ++i) {
    const NodeGroup& g = t.groups[i];
    const GroupPlan& gp = plan.groups[i];
    if (gp.group != g.name)
      throw std::logic_error("ClusterApiObjects: plan group " + gp.group + " where the template has " + g.name);
    GroupInput in;
    in.index = i;
    in.group = &g;
    in.plan = &gp;
    in.files = GroupFiles(gp);
    in.accelerators = AcceleratorCount(gp.layout);
    const auto part_it = node_labels.find(g.name);
    in.labels = NodeLabelsOf(t, i, part_it == node_labels.end() ? nullptr : &part_it->second);
    if (Autoscaled(g) && in.accelerators > 0 && g.vendor != Vendor::kNone && !in.labels.count(kAcceleratorLabel)) {
      in.labels[kAcceleratorLabel] = std::string(VendorName(g.vendor));
      part.node_labels[g.name][kAcceleratorLabel] = in.labels[kAcceleratorLabel];
    }
    inputs.push_back(std::move(in));
  }
  for (const GroupInput& in : inputs)
    part.files[in.group->name + "/cluster-api.yaml"] = ClusterApiFile(t, in, &part.objects);
  part.files["magnum/nodegroups.sh"] = MagnumScript(t, inputs);
  return part;
}

}  // namespace accel::cluster
