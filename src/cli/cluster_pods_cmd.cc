// accel cluster pods: whether a node group's kubelet admits a pod, and how many fit one node.
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cluster/plan.h"
#include "kubelet/admission.h"
#include "cluster/group_node.h"
#include "cluster/template.h"
#include "common/error.h"

namespace accel::cli {

namespace {

struct PodsOptions {
  std::string template_file;
  std::string group;
  std::string pod_file;
  std::string output = "table";
};

std::string Hugepages(const std::map<uint64_t, uint64_t>& pages) {
  std::string s;
  for (const auto& [kib, mib] : pages)
    s += ", " + kubelet::MiQuantity(mib) + " hugepages-" + (kib >= 1048576 ? "1Gi" : kib == 2048 ? "2Mi" : std::to_string(kib) + "Ki");
  return s;
}

std::string Devices(const std::map<std::string, int>& devices) {
  std::string s;
  for (const auto& [name, count] : devices) s += ", " + std::to_string(count) + " " + name;
  return s;
}

void PrintTable(const kubelet::PodFit& f, const kubelet::KubeletNode& node) {
  std::cout << "pod " << (f.pod.empty() ? "(unnamed)" : f.pod) << " (" << kubelet::QosClassName(f.qos) << ") on node group "
            << node.group << " (flavor " << node.layout.flavor << ")\n";
  std::cout << "  kubelet: " << node.PolicySummary() << ", reservedSystemCPUs "
            << (node.reserved_cpus.Empty() ? "-" : node.reserved_cpus.ToString()) << ", maxPods " << node.max_pods << "\n";
  std::cout << "  node: " << node.layout.vcpus << " vCPUs in " << node.cell_count() << " guest cell"
            << (node.cell_count() == 1 ? "" : "s");
  for (const kubelet::NodeResource& r : node.resources) {
    std::cout << ", " << r.total() << " " << r.name << " (";
    std::string where;
    for (size_t c = 0; c < r.per_cell.size(); ++c)
      if (r.per_cell[c] > 0) where += (where.empty() ? "" : " ") + std::string("cell ") + std::to_string(c) + ": " + std::to_string(r.per_cell[c]);
    if (r.without_cell > 0) where += (where.empty() ? "" : " ") + std::string("no NUMA node: ") + std::to_string(r.without_cell);
    std::cout << where << ")";
  }
  std::cout << "\n";
  for (const kubelet::AdmissionDemand& d : f.first.demands) {
    std::cout << "  asks" << (d.container.empty() ? "" : " (container " + d.container + ")") << ": ";
    std::string what;
    if (d.exclusive_cpus > 0) what += ", " + std::to_string(d.exclusive_cpus) + " exclusive CPUs";
    if (d.aligned_memory) what += ", " + kubelet::MiQuantity(d.memory_mib) + " memory from the Memory Manager" + Hugepages(d.hugepages_mib);
    what += Devices(d.devices);
    std::cout << (what.empty() ? "nothing the kubelet aligns (shared CPUs, node-wide memory)" : what.substr(2)) << "\n";
  }
  if (f.first.admitted) {
    std::cout << "  ADMITTED";
    if (f.first.cells.empty()) std::cout << " (nothing to align: shared pool and node-wide memory)";
    std::cout << "\n";
    for (const kubelet::CellShare& s : f.first.cells) {
      std::string what;
      if (!s.cpus.Empty()) what += ", vCPUs " + s.cpus.ToString();
      if (s.memory_mib > 0) what += ", " + kubelet::MiQuantity(s.memory_mib) + " memory";
      what += Hugepages(s.hugepages_mib) + Devices(s.devices);
      std::cout << "    guest cell " << s.cell << ": " << (what.empty() ? "-" : what.substr(2)) << "\n";
    }
    std::cout << "  per node: " << f.per_node << " such pod" << (f.per_node == 1 ? "" : "s");
    if (!f.stopped_reason.empty()) std::cout << "; the next: " << f.stopped_reason << ": " << f.stopped_message;
    else std::cout << " (counting stops at " << kubelet::kMaxPodsCounted << ")";
    std::cout << "\n";
  } else {
    std::cout << "  REJECTED: " << f.first.reason << "\n    " << f.first.message << "\n";
  }
  if (!f.notes.empty()) {
    std::cout << "  where the kubelet's own choice can differ:\n";
    for (const std::string& n : f.notes) std::cout << "    - " << n << "\n";
  }
}

int Pods(const PodsOptions& o) {
  const cluster::ClusterTemplate t = cluster::LoadClusterTemplate(o.template_file);
  const cluster::NodeGroup* group = t.FindGroup(o.group);
  if (group == nullptr) {
    std::string names;
    for (const cluster::NodeGroup& g : t.groups) names += (names.empty() ? "" : ", ") + g.name;
    throw InputError("--group", "", "the template has no node group '" + o.group + "'", "its groups: " + names);
  }
  // Plan only that group (another group's flavor that fits nowhere is not this question's).
  cluster::ClusterTemplate one = t;
  one.groups = {*group};
  const cluster::ClusterPlan plan = cluster::PlanCluster(one);
  const kubelet::KubeletNode node = cluster::KubeletNodeOf(t, *group, plan.groups.front());
  kubelet::PodResources pod;
  if (o.pod_file == "-") {
    const std::string text(std::istreambuf_iterator<char>(std::cin), {});
    pod = kubelet::ParsePodText(text, "<stdin>");
  } else {
    pod = kubelet::LoadPod(o.pod_file);
  }
  const kubelet::PodFit fit = kubelet::FitPod(node, pod);
  if (o.output == "json") std::cout << kubelet::PodFitJson(fit, node).dump(2) << "\n";
  else PrintTable(fit, node);
  return fit.first.admitted ? kExitOk : kExitNoFit;
}

}  // namespace

void RegisterClusterPods(CLI::App* cluster, int* exit_code) {
  auto o = std::make_shared<PodsOptions>();
  CLI::App* pods = cluster->add_subcommand(
      "pods",
      "Whether a node group's kubelet admits a pod, and how many such pods one node takes.\n\n"
      "The group's guest (planned as accel cluster plan does) is its kubelet's node: guest cells as NUMA\n"
      "nodes, the kubelet's reservations taken out, the devices its stack advertises on each cell\n"
      "(nvidia.com/gpu or MIG resources with time-slicing replicas, amd.com/gpu, habana.ai/gaudi, the RDMA\n"
      "resources). The pod (a v1 Pod, YAML or JSON; its QoS class computed as Kubernetes does) is\n"
      "admitted by the kubelet's rules, with accel's placement engine placing it on the guest:\n"
      "  - a Guaranteed pod with integer CPUs under the static CPU Manager gets exclusive CPUs (whole\n"
      "    cores under full-pcpus-only, else SMTAlignmentError); under the Static Memory Manager its\n"
      "    memory and hugepages come from the cells of its CPUs;\n"
      "  - devices that report a guest cell are aligned for every pod; single-numa-node needs one cell to\n"
      "    hold all of it (TopologyAffinityError otherwise); restricted needs the narrowest set of cells\n"
      "    to be the same for every aligned resource;\n"
      "  - what the node does not have at all is \"Insufficient <resource>\".\n"
      "Then copies of the pod are admitted on an empty node until one is refused: that many fit a node.\n"
      "The output says where the kubelet's own choice of CPUs and cells can differ from the engine's.\n\n"
      "Examples:\n"
      "  accel cluster pods examples/cluster/ai-prod.yaml --group h100-train --pod trainer.yaml\n"
      "  kubectl get pod web-0 -o json | accel cluster pods ai-prod.yaml --group system --pod - -o json\n\n"
      "Exit status: 0 admitted; 1 rejected (the reason and what was short); 2 bad template, group or pod\n"
      "file (a Deployment or Job is refused with how to extract its pod template).");
  pods->add_option("template", o->template_file, "cluster template (accel.cluster/v1, YAML or JSON)")->required();
  pods->add_option("--group", o->group, "the node group whose nodes run the pod")->required();
  pods->add_option("--pod", o->pod_file, "the Pod (v1, YAML or JSON; - reads stdin)")->required();
  pods->add_option("-o,--output", o->output, "table (default) or json (accel.cluster-pods/v1)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  pods->callback([o, exit_code] { *exit_code = Pods(*o); });
}

}  // namespace accel::cli
