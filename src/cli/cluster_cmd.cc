// accel cluster plan: a cluster template's node groups → each group's guest layout, its
// kubelet configuration (with the reason for every field), and the files a cluster needs.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cluster/fleet_plan.h"
#include "cluster/plan.h"
#include "cluster/template.h"
#include "common/atomic_dir.h"
#include "common/error.h"
#include "common/yaml_out.h"
#include "fleet/fleet_store.h"
#include "fleet/store_url.h"

namespace accel::cli {

namespace {

struct PlanOptions {
  std::string template_file;
  std::string out;
  bool force = false;
  std::string output = "table";
  std::string fleet;             ///< --fleet STORE: place the groups' VMs on the fleet's hosts
  bool claim = false;            ///< --claim: and claim them
  std::string strategy = "pack";
  std::string seed;
};

void PrintTable(const cluster::ClusterPlan& plan, const cluster::StackPart& stack) {
  std::cout << "cluster " << plan.cluster << ": " << plan.groups.size() << " node group"
            << (plan.groups.size() == 1 ? "" : "s") << "\n";
  for (const cluster::GroupPlan& g : plan.groups) {
    const kubelet::GuestLayout& l = g.layout;
    std::cout << "\n" << g.group << " (flavor " << g.flavor << ", planned on " << g.hypervisor << ")\n";
    if (!g.fleet_hosts.empty()) {
      std::cout << "  VMs: ";
      for (size_t k = 0; k < g.fleet_hosts.size(); ++k)
        std::cout << (k ? ", " : "") << g.fleet_hosts[k] << (k < g.claim_ids.size() ? " (" + g.claim_ids[k] + ")" : "");
      std::cout << "\n";
    }
    std::cout << "  guest: " << l.vcpus << " vCPUs (" << l.threads_per_core << " thread"
              << (l.threads_per_core == 1 ? "" : "s") << " per core), " << kubelet::MiQuantity(l.memory_mib) << ", "
              << (l.cells.empty() ? std::string("no NUMA topology") : std::to_string(l.cells.size()) + " NUMA cell(s)")
              << "\n";
    for (const kubelet::GuestCellLayout& c : l.cells) {
      std::cout << "    cell " << c.cell << ": vCPUs " << c.vcpus.ToString() << ", " << kubelet::MiQuantity(c.memory_mib)
                << (c.host_page_kib >= 1048576 ? " in 1G host pages" : c.host_page_kib >= 2048 ? " in 2M host pages" : "")
                << ", host node " << c.host_node;
      int devices = 0;
      for (const kubelet::GuestDevice& d : l.devices) devices += d.guest_cell == c.cell ? 1 : 0;
      if (devices) std::cout << ", " << devices << " device" << (devices == 1 ? "" : "s");
      std::cout << "\n";
    }
    for (const kubelet::GuestHugepagePool& p : g.hugepages)
      std::cout << "    guest hugepages: cell " << p.cell << ": " << p.pages << " x "
                << (p.page_kib >= 1048576 ? "1Gi" : "2Mi") << "\n";
    auto labels = stack.node_labels.find(g.group);
    if (labels != stack.node_labels.end()) {
      std::cout << "  node labels:";
      for (const auto& [k, v] : labels->second) std::cout << " " << k << "=" << v;
      std::cout << "\n";
    }
    std::cout << "  kubelet:\n";
    for (const kubelet::KubeletChoice& c : g.kubelet.choices)
      std::cout << "    " << c.field << ": " << c.value << "\n      why: " << c.reason << "\n";
    for (const kubelet::KubeletFinding& f : g.findings)
      std::cout << "  PROBLEM " << f.field << ": " << f.problem << "\n    fix: " << f.fix << "\n";
  }
}

// The plan on the fleet's hosts; prints why and returns nullopt when a group does not fit.
std::optional<cluster::ClusterPlan> PlanOnFleet(const cluster::ClusterTemplate& t, fleet::FleetStore& store,
                                                const PlanOptions& o) {
  cluster::FleetPlanOptions fo;
  fo.claim = o.claim;
  fo.strategy = o.strategy == "spread" ? fleet::FleetStrategy::kSpread : fleet::FleetStrategy::kPack;
  fo.seed = o.seed;
  cluster::FleetPlanResult r = cluster::PlanClusterOnFleet(t, store, fo);
  if (r.placed()) {
    r.plan.fleet = fleet::ParseStoreUrl(o.fleet).display;
    return std::move(r.plan);
  }
  for (const cluster::UnplacedGroup& u : r.unplaced) {
    std::cerr << "accel cluster plan: node group " << u.group << ": " << u.fitted << " of " << u.wanted
              << " VMs fit on distinct hosts of the fleet" << (o.claim ? "; nothing claimed" : "") << "\n";
    for (const std::string& why : u.why) std::cerr << "  - " << why << "\n";
  }
  return std::nullopt;
}

// Gives back every claim of `plan` (a plan that is not accepted keeps nothing).
void ReleaseClaims(fleet::FleetStore* store, const cluster::ClusterPlan& plan) {
  if (!store) return;
  size_t n = 0;
  for (const cluster::GroupPlan& g : plan.groups)
    for (const std::string& id : g.claim_ids) n += store->Release(id) ? 1 : 0;
  if (n) std::cerr << "accel cluster plan: released the " << n << " claim(s) made for this plan\n";
}

int Plan(const PlanOptions& o) {
  if (o.claim && o.fleet.empty())
    throw InputError("--claim", "", "claims the groups' VMs on a fleet", "give the fleet store with --fleet STORE");
  const cluster::ClusterTemplate t = cluster::LoadClusterTemplate(o.template_file);
  std::unique_ptr<fleet::FleetStore> store;
  std::optional<cluster::ClusterPlan> fleet_plan;
  if (!o.fleet.empty()) {
    store = fleet::FleetStore::Open(o.fleet);
    fleet_plan = PlanOnFleet(t, *store, o);
    if (!fleet_plan) return kExitNoFit;
  }
  fleet::FleetStore* claimed = o.claim ? store.get() : nullptr;
  const cluster::ClusterPlan plan = fleet_plan ? std::move(*fleet_plan) : cluster::PlanCluster(t);
  // The stacks are derived whatever the output, so a template they cannot serve fails here.
  cluster::StackPart stack;
  try {
    stack = cluster::PlanStack(t, plan);
  } catch (...) {  // the claims made for this plan must not outlive it; main() reports the error
    ReleaseClaims(claimed, plan);
    throw;
  }
  if (o.output == "json") std::cout << cluster::PlanJson(plan, &stack.node_labels).dump(2) << "\n";
  else if (o.output == "yaml") std::cout << ToYaml(cluster::PlanJson(plan, &stack.node_labels));
  else PrintTable(plan, stack);
  const size_t findings = plan.finding_count();
  if (findings > 0 && !o.force) {
    ReleaseClaims(claimed, plan);
    if (!o.out.empty())
      std::cerr << "accel cluster plan: " << findings << " problem(s) above; nothing written to " << o.out
                << " (fix the template's kubelet overrides, or --force)\n";
    return kExitNoFit;
  }
  if (!o.out.empty()) {
    try {
      const auto files = cluster::PlanFiles(plan, stack);
      WriteDirectoryAtomically(o.out, files);
      std::cerr << "accel cluster plan: wrote " << files.size() << " files to " << o.out << "\n";
    } catch (...) {  // as above: release, then main() reports the error
      ReleaseClaims(claimed, plan);
      throw;
    }
  }
  return findings > 0 ? kExitNoFit : kExitOk;
}

}  // namespace

void RegisterCluster(CLI::App& app, int* exit_code) {
  CLI::App* cluster = app.add_subcommand(
      "cluster",
      "Kubernetes node groups on tuned flavors: from one cluster template (accel.cluster/v1) to\n"
      "each group's guest layout and the kubelet configuration that uses it.");
  cluster->require_subcommand(1);
  auto po = std::make_shared<PlanOptions>();
  CLI::App* plan = cluster->add_subcommand(
      "plan",
      "Derive each node group's guest layout and KubeletConfiguration, and write the files.\n\n"
      "Per group the flavor is placed on the group's hypervisor topology; the guest it gets (NUMA\n"
      "cells, SMT siblings, memory and host pages, which GPU/NIC sits behind which guest cell)\n"
      "decides the kubelet: static CPU Manager with whole-core reservedSystemCPUs on cell 0,\n"
      "single-numa-node only when every device reports a guest cell, a Static Memory Manager whose\n"
      "reservedMemory sums exactly to kubeReserved + systemReserved + evictionHard. The template's\n"
      "kubelet overrides are applied, then every rule is checked again.\n\n"
      "Files (--out DIR, replaced as a whole): plan.json; per group guest-layout.json,\n"
      "kubelet-config.yaml, kubeadm/patches/kubeletconfiguration+strategic.json,\n"
      "kubelet.conf.d/50-accel.conf, the guest's hugepages boot settings, cluster-api.yaml\n"
      "(MachineDeployment, KubeadmConfigTemplate, OpenStackMachineTemplate), the group's vendor\n"
      "stack (stack/: NVIDIADriver, DeviceConfig, accel agent), network (network/: NicNodePolicy,\n"
      "HostDeviceNetwork) and NCCL topology (nccl/); cluster-wide stack/ (ClusterPolicy, device\n"
      "plugin and mig-parted ConfigMaps, NicClusterPolicy, ServiceMonitors and PrometheusRules)\n"
      "and magnum/nodegroups.sh. docs/node-groups.md shows every file.\n\n"
      "Examples:\n"
      "  accel cluster plan examples/cluster/ai-prod.yaml\n"
      "  accel cluster plan examples/cluster/ai-prod.yaml --out /tmp/ai-prod -o json\n"
      "  accel cluster plan examples/cluster/ai-prod.yaml --fleet /var/lib/accel/fleet.db --claim\n\n"
      "With --fleet the groups' VMs are placed on real hypervisors, one VM per host, and with\n"
      "--claim claimed (plan.json lists each VM's host and claim; accel fleet release frees them).\n\n"
      "Exit status: 0 planned (and written); 1 a kubelet rule is broken (each with its fix;\n"
      "nothing written without --force), or a group does not fit the fleet (nothing claimed); 2 bad template (key path and fix; nothing written);\n"
      "5 the output directory could not be written.");
  plan->add_option("template", po->template_file, "cluster template (accel.cluster/v1, YAML or JSON)")->required();
  plan->add_option("--out", po->out, "directory to write the plan's files to (replaced as a whole)");
  plan->add_flag("--force", po->force, "write the files even when a kubelet rule is broken");
  plan->add_option("--fleet", po->fleet,
                   "place each group's VMs on distinct hosts of this fleet store (SQLite file or\n"
                   "postgresql:// URL, as accel fleet --store) and derive the layout from where they land");
  plan->add_flag("--claim", po->claim, "with --fleet: claim the VMs (all groups or none)");
  plan->add_option("--strategy", po->strategy, "with --fleet: pack (default) or spread")
      ->check(CLI::IsMember({"pack", "spread"}));
  plan->add_option("--seed", po->seed, "with --fleet: tiebreak seed among equally good hosts");
  plan->add_option("-o,--output", po->output, "table (default, every choice with its reason), json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}))
      ->capture_default_str();
  plan->callback([po, exit_code] { *exit_code = Plan(*po); });
  RegisterClusterCheck(cluster, exit_code);
  RegisterClusterPods(cluster, exit_code);
}

}  // namespace accel::cli
