// accel cluster check: what will go wrong in a cluster template's node groups, before it does —
// each finding with the group, the template key to change, the problem and the fix.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cluster/check.h"
#include "cluster/network_stack.h"
#include "cluster/template.h"
#include "cluster/vendor_stack.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/store_url.h"

namespace accel::cli {

namespace {

struct CheckCmdOptions {
  std::string template_file;
  std::string fleet;                 ///< --fleet STORE; "" = no fleet checks
  std::vector<std::string> objects;  ///< --objects FILE...
  std::string output = "table";
  bool strict = false;
};

// Wraps `text` at `width` columns, each line after the first indented by `indent`.
std::string Wrap(const std::string& text, size_t indent, size_t width = 100) {
  std::string out, line;
  for (const std::string& word : SplitList(text, ' ')) {
    if (word.empty()) continue;
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

void PrintFinding(const cluster::CheckFinding& f) {
  std::cout << "  " << (f.severity == cluster::CheckSeverity::kError ? "ERROR" : "WARNING") << " " << f.kind
            << (f.key.empty() ? "" : "  " + f.key) << "\n";
  std::cout << "    " << Wrap(f.problem, 4) << "\n";
  std::cout << "    fix: " << Wrap(f.fix, 9) << "\n";
}

void PrintTable(const cluster::CheckReport& r) {
  std::cout << "cluster " << r.cluster << " (" << r.source << "): " << r.groups.size() << " node group"
            << (r.groups.size() == 1 ? "" : "s") << "\n";
  for (const cluster::GroupCheck& g : r.groups) {
    std::cout << "\n" << g.name << "  flavor " << g.flavor << ", " << g.vendor << "/" << g.stack << ", " << g.count
              << " node" << (g.count == 1 ? "" : "s");
    if (!g.planned_on.empty()) std::cout << ", planned on " << g.planned_on;
    if (!g.gpu_models.empty()) std::cout << ", GPUs " << JoinStrings(g.gpu_models, ", ");
    std::cout << "\n";
    bool any = false;
    for (const cluster::CheckFinding& f : r.findings)
      if (f.group == g.name) {
        PrintFinding(f);
        any = true;
      }
    if (!any) std::cout << "  ok\n";
    if (g.fleet) {
      const cluster::GroupFleetFit& ft = *g.fleet;
      std::cout << "  fleet: the hardware of " << ft.hardware_fit_hosts << " of " << ft.hosts
                << " hosts holds the flavor; " << ft.capacity << " more fit now; " << ft.distinct_placed << " of "
                << ft.count << " VMs on distinct hosts"
                << (ft.fits_alone ? (ft.fits_together ? ", also after the groups above" : ", but not after the groups above")
                                  : "")
                << "\n";
    }
  }
  bool cluster_wide = false;
  for (const cluster::CheckFinding& f : r.findings)
    if (f.group.empty()) {
      if (!cluster_wide) std::cout << "\ncluster-wide\n";
      cluster_wide = true;
      PrintFinding(f);
    }
  std::cout << "\nchecked: kubelet rules and options, topology, MIG, device plugin strategy, RDMA, labels; "
            << (!r.objects.empty() ? std::to_string(r.objects.size()) + " Kubernetes object" + (r.objects.size() == 1 ? "" : "s") + " (selectors)"
                          : std::string("no Kubernetes objects (selectors not checked)"))
            << "; " << (r.fleet.empty() ? std::string("no fleet") : "fleet " + r.fleet + " (" + std::to_string(r.fleet_hosts) + " hosts)")
            << "\n";
  const size_t errors = r.error_count(), warnings = r.warning_count();
  std::cout << (errors == 0 ? "clean" : std::to_string(errors) + " error" + (errors == 1 ? "" : "s"))
            << (warnings ? ", " + std::to_string(warnings) + " warning" + (warnings == 1 ? "" : "s") : std::string())
            << "\n";
}

int Check(const CheckCmdOptions& o) {
  // Everything the user named is read before anything is checked: bad input exits 2 alone.
  const cluster::ClusterTemplate t = cluster::LoadClusterTemplate(o.template_file);
  cluster::CheckInputs in;
  for (const std::string& file : o.objects)
    for (nlohmann::ordered_json& obj : cluster::ParseKubernetesObjects(ReadWholeFile(file), file))
      in.objects.push_back(std::move(obj));
  fleet::FleetView view;
  if (!o.fleet.empty()) {
    const fleet::StoreUrl url = fleet::ParseStoreUrl(o.fleet, "--fleet");
    // Checking must not create a store where none is.
    if (url.engine == fleet::StoreUrl::kSqlite && !std::filesystem::exists(url.target))
      throw InputError("--fleet", "", "no fleet store at " + url.display,
                       "name an existing store (accel fleet host add --store " + o.fleet + " creates one)");
    auto store = fleet::FleetStore::Open(o.fleet);
    view = fleet::FleetView::FromSnapshot(store->Snapshot());
    in.fleet = &view;
    in.fleet_name = url.display;
  }
  // What `accel cluster plan` generates joins the objects: the vendor operators' objects (one
  // NVIDIA ClusterPolicy, NVIDIADrivers, DeviceConfigs, the Gaudi ClusterPolicy, the mig-parted
  // ConfigMap) and the Network Operator's policies, with the node labels they rely on.
  in.generate = [&t](const cluster::ClusterPlan& plan) {
    return std::vector<cluster::StackPart>{cluster::VendorStack(t, plan), cluster::NetworkStack(t, plan)};
  };
  const cluster::CheckReport report = cluster::CheckCluster(t, in);
  if (o.output == "json") std::cout << cluster::CheckJson(report).dump(2) << "\n";
  else PrintTable(report);
  if (report.error_count() > 0) return kExitNoFit;
  if (o.strict && report.warning_count() > 0) return kExitNoFit;
  return kExitOk;
}

}  // namespace

void RegisterClusterCheck(CLI::App* cluster, int* exit_code) {
  auto o = std::make_shared<CheckCmdOptions>();
  CLI::App* check = cluster->add_subcommand(
      "check",
      "Find what will go wrong in a cluster template's node groups, before it does.\n\n"
      "Every group is planned as `accel cluster plan` plans it, then checked:\n"
      "  kubelet          every kubelet rule on the derived and overridden KubeletConfiguration:\n"
      "                   the Memory Manager sum rule (reservedMemory per NUMA node must add up to\n"
      "                   kubeReserved + systemReserved + evictionHard, 100Mi when unset), whole-core\n"
      "                   reservedSystemCPUs, policy names, single-numa-node with a device local to no\n"
      "                   guest cell (pods rejected in a loop, kubernetes#84869)\n"
      "  kubelet-options  options the kubelet refuses together: distribute-cpus-across-cores with\n"
      "                   full-pcpus-only, align-by-socket with single-numa-node or on more sockets than\n"
      "                   NUMA nodes, reservedSystemCPUs with kube/systemReservedCgroup, ...\n"
      "  topology         single-numa-node where a node's GPUs span guest cells: a whole-node pod is\n"
      "                   rejected with TopologyAffinityError (warning)\n"
      "  mig              sharing.mig on the group's GPU model: the config as NVIDIA's default\n"
      "                   mig-parted config defines it (all-disabled, all-balanced, all-<profile>),\n"
      "                   checked by accel's MIG validator (all-1g.5gb is an A100-40GB profile, not H100)\n"
      "  sharing          MIG, time-slicing and MPS against the device plugin: one MIG strategy per GPU\n"
      "                   Operator (single refuses several profiles per node, MPS refuses mixed)\n"
      "  network          network.rdma on a flavor with no RDMA device (warning)\n"
      "  labels           group labels that fight accel's (accel.io/node-group, nvidia.com/mig.config)\n"
      "  selector         the objects `accel cluster plan` generates (vendor and network stacks) and\n"
      "                   any given with --objects: two NVIDIADrivers, DeviceConfigs or NicNodePolicies\n"
      "                   selecting one group's nodes, a stack: accel group the GPU Operator still\n"
      "                   reaches, an operator group nothing selects, a NicClusterPolicy section also\n"
      "                   in a NicNodePolicy\n"
      "  fleet            with --fleet: whether the flavor fits any host's hardware, how many more fit\n"
      "                   now (fleet capacity), whether `count` VMs fit on distinct hosts, alone and\n"
      "                   after the groups before it\n\n"
      "Each finding names the group, the template key to change, the problem and the fix.\n"
      "Warnings do not change the exit status unless --strict.\n\n"
      "Examples:\n"
      "  accel cluster check examples/cluster/ai-prod.yaml\n"
      "  accel cluster check examples/cluster/ai-prod.yaml -o json | jq '.findings[] | select(.severity==\"error\")'\n"
      "  accel cluster check ai-prod.yaml --fleet sqlite:/var/lib/accel/fleet.db\n"
      "  accel cluster check ai-prod.yaml --fleet postgresql://accel@db/fleet --strict\n"
      "  kubectl get clusterpolicies.nvidia.com,nvidiadrivers,deviceconfigs -A -o yaml > live.yaml\n"
      "  accel cluster check ai-prod.yaml --objects live.yaml\n\n"
      "Exit status: 0 no error (warnings allowed); 1 at least one error (or a warning with --strict),\n"
      "each with its fix; 2 bad input: the template, an --objects file or the --fleet store (key path\n"
      "and fix); 5 the fleet store cannot be reached.");
  check->add_option("template", o->template_file, "cluster template (accel.cluster/v1, YAML or JSON)")->required();
  check->add_option("--fleet", o->fleet,
                    "accel fleet store to check fits against: sqlite:PATH or postgresql://USER@HOST/DB (as `accel "
                    "fleet place --store`); read only");
  check->add_option("--objects", o->objects,
                    "YAML/JSON file of Kubernetes objects the cluster runs or will run (documents separated by ---, or "
                    "a kind: List, as kubectl get -o yaml writes); repeatable")
      ->expected(1);
  check->add_flag("--strict", o->strict, "exit 1 on warnings too");
  check->add_option("-o,--output", o->output, "table (default) or json (accel.cluster-check/v1)")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  check->callback([o, exit_code] { *exit_code = Check(*o); });
}

}  // namespace accel::cli
