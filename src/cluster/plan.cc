#include "cluster/plan.h"

#include <stdexcept>

#include "cluster/cluster_api.h"
#include "cluster/monitoring_stack.h"
#include "cluster/network_stack.h"
#include "cluster/vendor_stack.h"
#include "common/error.h"
#include "common/yaml_out.h"
#include "placement/engine.h"

namespace accel::cluster {

namespace {

using nlohmann::ordered_json;

std::string PageName(uint64_t page_kib) { return page_kib >= 1048576 ? "1G" : "2M"; }

std::string SysfsPages(uint64_t page_kib) { return "hugepages-" + std::to_string(page_kib) + "kB"; }

// Kernel boot parameters for the pools: one size per parameter group; the count is the
// guest's total, which the kernel spreads over its nodes at boot (the unit below then sets
// each node's count exactly).
std::string KernelCmdline(const std::vector<kubelet::GuestHugepagePool>& pools) {
  std::map<uint64_t, uint64_t> total;
  for (const kubelet::GuestHugepagePool& p : pools) total[p.page_kib] += p.pages;
  std::string s;
  for (const auto& [kib, pages] : total) {
    if (s.empty()) s += "default_hugepagesz=" + PageName(kib) + " ";
    s += "hugepagesz=" + PageName(kib) + " hugepages=" + std::to_string(pages) + " ";
  }
  if (!s.empty()) s.back() = '\n';
  return s;
}

std::string HugepagesUnit(const std::string& group, const std::vector<kubelet::GuestHugepagePool>& pools) {
  std::string s =
      "# Written by accel cluster plan for node group " + group +
      ": the guest's hugepage pools per NUMA node,\n"
      "# set before the kubelet starts (it reads them once; the Memory Manager accounts per node).\n"
      "[Unit]\nDescription=accel guest hugepage pools\nDefaultDependencies=no\n"
      "Before=kubelet.service containerd.service\nAfter=local-fs.target\n\n"
      "[Service]\nType=oneshot\nRemainAfterExit=yes\n";
  for (const kubelet::GuestHugepagePool& p : pools)
    s += "ExecStart=/bin/sh -c 'echo " + std::to_string(p.pages) + " > /sys/devices/system/node/node" +
         std::to_string(p.cell) + "/hugepages/" + SysfsPages(p.page_kib) + "/nr_hugepages'\n";
  s += "\n[Install]\nWantedBy=multi-user.target\n";
  return s;
}

}  // namespace

size_t ClusterPlan::finding_count() const {
  size_t n = 0;
  for (const GroupPlan& g : groups) n += g.findings.size();
  return n;
}

std::vector<kubelet::GuestHugepagePool> GuestHugepagesFor(const kubelet::GuestLayout& layout) {
  std::vector<kubelet::GuestHugepagePool> pools;
  for (const kubelet::GuestCellLayout& c : layout.cells) {
    if (c.host_page_kib < 2048) continue;
    const uint64_t page_mib = c.host_page_kib / 1024;
    const uint64_t pages = c.memory_mib / 2 / page_mib;
    if (pages > 0) pools.push_back({c.cell, c.host_page_kib, pages});
  }
  return pools;
}

GroupPlan PlanGroup(const ClusterTemplate& t, const NodeGroup& g, const topology::HostTopology& host,
                    const placement::Placement& placement) {
  GroupPlan gp;
  gp.group = g.name;
  gp.flavor = g.flavor_name;
  gp.hypervisor = host.hostname;
  gp.layout = kubelet::GuestLayoutOf(g.request, placement, host, kubelet::DeviceCellSource::kExpanderBus);
  gp.hugepages = GuestHugepagesFor(gp.layout);
  kubelet::KubeletInputs in;
  in.version = t.kubernetes_version;
  in.hugepages = gp.hugepages;
  in.overrides = g.kubelet_merged.is_object() ? g.kubelet_merged : nlohmann::json::object();
  gp.kubelet = kubelet::DeriveKubeletConfig(gp.layout, in);
  gp.findings = kubelet::CheckKubeletConfig(gp.kubelet.config, gp.layout, gp.hugepages, t.kubernetes_version);
  return gp;
}

ClusterPlan PlanCluster(const ClusterTemplate& t) {
  ClusterPlan plan;
  plan.cluster = t.name;
  for (size_t i = 0; i < t.groups.size(); ++i) {
    const NodeGroup& g = t.groups[i];
    const std::string key = "spec.nodeGroups[" + std::to_string(i) + "]";
    if (!g.hypervisor)
      throw InputError(t.source, key + ".hypervisor",
                       "node group " + g.name + " has no hypervisor to plan its guest layout on",
                       "set spec.hypervisor or the group's hypervisor to a host topology file (accel topo -o json), "
                       "or plan on a fleet (--fleet STORE)");
    placement::PlaceResult fit = placement::Place(*g.hypervisor, {}, {}, g.request);
    if (!fit.fits()) {
      std::string why;
      for (const std::string& r : fit.no_fit.reasons) why += (why.empty() ? "" : "; ") + r;
      throw InputError(t.source, key + ".flavor",
                       "flavor " + g.flavor_name + " does not fit an empty " + g.hypervisor->hostname + ": " + why,
                       "choose a flavor this hardware can hold, or another hypervisor");
    }
    plan.groups.push_back(PlanGroup(t, g, *g.hypervisor, *fit.placement));
  }
  return plan;
}

ordered_json GuestLayoutJson(const kubelet::GuestLayout& g) {
  ordered_json j;
  j["schema"] = "accel.guest-layout/v1";
  j["flavor"] = g.flavor;
  j["host"] = g.host;
  j["vcpus"] = g.vcpus;
  j["cpu_topology"] = {{"sockets", g.sockets}, {"cores", g.cores_per_socket}, {"threads", g.threads_per_core}};
  j["memory_mib"] = g.memory_mib;
  j["cells"] = ordered_json::array();
  for (const kubelet::GuestCellLayout& c : g.cells)
    j["cells"].push_back({{"cell", c.cell},
                          {"vcpus", c.vcpus.ToString()},
                          {"dedicated_vcpus", c.dedicated_vcpus.ToString()},
                          {"shared_vcpus", c.shared_vcpus.ToString()},
                          {"memory_mib", c.memory_mib},
                          {"host_page_kib", c.host_page_kib},
                          {"host_node", c.host_node}});
  j["device_cells"] = g.device_cells == kubelet::DeviceCellSource::kExpanderBus ? "pxb-pcie" : "none";
  j["devices"] = ordered_json::array();
  for (const kubelet::GuestDevice& d : g.devices)
    j["devices"].push_back({{"alias", d.alias},
                            {"host_address", d.host_address},
                            {"role", topology::PciRoleName(d.role)},
                            {"rdma", d.rdma},
                            {"guest_cell", d.guest_cell}});
  return j;
}

ordered_json PlanJson(const ClusterPlan& plan, const std::map<std::string, NodeLabels>* node_labels) {
  ordered_json j;
  j["schema"] = "accel.cluster-plan/v1";
  j["cluster"] = plan.cluster;
  if (!plan.fleet.empty()) j["fleet"] = plan.fleet;
  j["groups"] = ordered_json::array();
  for (const GroupPlan& g : plan.groups) {
    ordered_json gj;
    gj["name"] = g.group;
    gj["flavor"] = g.flavor;
    gj["hypervisor"] = g.hypervisor;
    if (!g.fleet_hosts.empty()) {
      gj["vms"] = ordered_json::array();
      for (size_t k = 0; k < g.fleet_hosts.size(); ++k) {
        ordered_json vm = {{"host", g.fleet_hosts[k]}};
        if (k < g.claim_ids.size()) vm["claim"] = g.claim_ids[k];
        gj["vms"].push_back(vm);
      }
    }
    if (node_labels) {
      auto it = node_labels->find(g.group);
      gj["node_labels"] = ordered_json::object();
      if (it != node_labels->end())
        for (const auto& [k, v] : it->second) gj["node_labels"][k] = v;
    }
    gj["layout"] = GuestLayoutJson(g.layout);
    gj["hugepages"] = ordered_json::array();
    for (const kubelet::GuestHugepagePool& p : g.hugepages)
      gj["hugepages"].push_back({{"cell", p.cell}, {"page_kib", p.page_kib}, {"pages", p.pages}});
    gj["kubelet"]["config"] = g.kubelet.config;
    gj["kubelet"]["choices"] = ordered_json::array();
    for (const kubelet::KubeletChoice& c : g.kubelet.choices)
      gj["kubelet"]["choices"].push_back({{"field", c.field}, {"value", c.value}, {"reason", c.reason}});
    gj["findings"] = ordered_json::array();
    for (const kubelet::KubeletFinding& f : g.findings)
      gj["findings"].push_back({{"field", f.field}, {"problem", f.problem}, {"fix", f.fix}});
    j["groups"].push_back(gj);
  }
  return j;
}

std::map<std::string, std::string> GroupFiles(const GroupPlan& g) {
  std::map<std::string, std::string> files;
  files["guest-layout.json"] = GuestLayoutJson(g.layout).dump(2) + "\n";
  const std::string header = "# Written by accel cluster plan: node group " + g.group + " (flavor " + g.flavor +
                             "). Why each field: plan.json, or accel cluster plan -o table.\n";
  std::string yaml = ToYaml(g.kubelet.config);
  if (!yaml.empty() && yaml.back() != '\n') yaml += '\n';
  files["kubelet-config.yaml"] = header + yaml;
  files["kubeadm/patches/kubeletconfiguration+strategic.json"] = g.kubelet.config.dump(2) + "\n";
  files["kubelet.conf.d/50-accel.conf"] = header + yaml;
  if (!g.hugepages.empty()) {
    files["hugepages/kernel-cmdline.txt"] = KernelCmdline(g.hugepages);
    files["hugepages/accel-guest-hugepages.service"] = HugepagesUnit(g.group, g.hugepages);
  }
  return files;
}

namespace {

// Adds `part` to `into`: files and objects appended, node labels merged; a file written twice or
// a label key given two values is a generator bug.
void Merge(StackPart& into, StackPart part, const char* generator) {
  for (auto& [name, content] : part.files)
    if (!into.files.emplace(name, std::move(content)).second)
      throw std::logic_error(std::string(generator) + " writes " + name + ", which another generator wrote");
  for (auto& object : part.objects) into.objects.push_back(std::move(object));
  for (const auto& [group, labels] : part.node_labels)
    for (const auto& [key, value] : labels) {
      auto [it, fresh] = into.node_labels[group].emplace(key, value);
      if (!fresh && it->second != value)
        throw std::logic_error(std::string(generator) + " labels group " + group + " " + key + "=" + value +
                               ", another generator " + key + "=" + it->second);
    }
}

}  // namespace

StackPart PlanStack(const ClusterTemplate& t, const ClusterPlan& plan) {
  StackPart all;
  Merge(all, VendorStack(t, plan), "the vendor stack");
  Merge(all, NetworkStack(t, plan), "the network stack");
  Merge(all, MonitoringStack(t, plan), "monitoring");
  StackPart capi = ClusterApiObjects(t, plan, all.node_labels);
  // What the Cluster API objects put on each node: the group label and the group's own labels too.
  for (const GroupPlan& gp : plan.groups) {
    NodeLabels& labels = all.node_labels[gp.group];
    labels[kNodeGroupLabel] = gp.group;
    if (const NodeGroup* g = t.FindGroup(gp.group))
      for (const auto& [k, v] : g->labels) labels.emplace(k, v);
  }
  Merge(all, std::move(capi), "the Cluster API objects");
  return all;
}

std::map<std::string, std::string> PlanFiles(const ClusterPlan& plan, const StackPart& stack) {
  std::map<std::string, std::string> files = stack.files;
  files["plan.json"] = PlanJson(plan, &stack.node_labels).dump(2) + "\n";
  for (const GroupPlan& g : plan.groups)
    for (auto& [name, content] : GroupFiles(g))
      if (!files.emplace(g.group + "/" + name, std::move(content)).second)
        throw std::logic_error("a generator wrote " + g.group + "/" + name + ", a file of the group's plan");
  return files;
}

}  // namespace accel::cluster
