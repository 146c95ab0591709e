// One group, planned: its guest layout on its hypervisor (or a fleet host's hardware), and the
// checks that need only the template and that layout — labels, kubelet, topology (and network,
// check_network.cc).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/check_internal.h"
#include "common/error.h"
#include "common/strings.h"
#include "kubelet/check.h"
#include "kubelet/settings.h"
#include "placement/engine.h"
#include "sharing/mig_geometry.h"
#include "topology/classify.h"

namespace accel::cluster::check_internal {

namespace {

// The template key a kubelet field is fixed at: the group's own override when it sets the
// field, else the cluster-wide one when that does, else the group's (an override is the fix for
// a derived value too).
std::string KubeletKey(const ClusterTemplate& t, size_t i, const std::string& field) {
  const std::string top = field.substr(0, field.find_first_of(".["));
  const NodeGroup& g = t.groups[i];
  if (!g.kubelet.contains(top) && t.kubelet.is_object() && t.kubelet.contains(top)) return "spec.kubelet." + field;
  return GroupKey(i) + ".kubelet." + field;
}

std::string DeviceWord(const kubelet::GuestDevice& d) {
  return d.role == topology::PciRole::kHpu ? "HPU" : d.role == topology::PciRole::kGpu ? "GPU" : "device";
}

}  // namespace

void Checker::PlanAndCheckGroup(GroupState& s) {
  const NodeGroup& g = *s.group;
  const std::string key = GroupKey(s.index);
  GroupCheck gc;
  gc.name = g.name;
  gc.flavor = g.flavor_name;
  gc.vendor = std::string(VendorName(g.vendor));
  gc.stack = std::string(StackName(g.stack));
  gc.count = g.count;

  CheckLabels(s);
  std::optional<placement::Placement> placed;
  const topology::HostTopology* host = g.hypervisor.get();
  std::string host_name = host ? host->hostname : "";
  if (host) {
    placement::PlaceResult fit = placement::Place(*host, {}, {}, g.request);
    if (fit.fits()) {
      placed = std::move(fit.placement);
    } else {
      Add(Error("fit", g.name, key + ".flavor",
                "flavor " + g.flavor_name + " does not fit an empty " + host->hostname + ": " +
                    JoinStrings(fit.no_fit.reasons, "; "),
                "choose a flavor this hardware can hold, or another hypervisor"));
    }
  } else if (in_.fleet) {
    EmptyFit fit = FitEmpty(*in_.fleet, g.request);
    if (fit.first) {
      host = fit.first->hardware.get();
      host_name = fit.first->record.name;
      placed = std::move(fit.placement);
    } else {
      Add(Error("fit", g.name, key + ".flavor",
                "flavor " + g.flavor_name + " fits no host of the fleet, even empty" +
                    (fit.why_not.empty() ? std::string() : ": " + fit.why_not),
                "choose a flavor the fleet's hardware can hold, or add hosts that can"));
    }
  } else {
    throw InputError(t_.source, key + ".hypervisor", "node group " + g.name + " has no hypervisor to plan its guest layout on",
                     "set spec.hypervisor or the group's hypervisor to a host topology file (accel topo -o json), "
                     "or check against a fleet (--fleet STORE)");
  }
  if (placed) {
    s.plan = PlanGroup(t_, g, *host, *placed);
    s.plan->hypervisor = host_name;
    gc.planned_on = host_name;
    const kubelet::GuestLayout& layout = s.plan->layout;
    std::set<std::string> models;
    for (const kubelet::GuestDevice& d : layout.devices)
      if (d.vendor_id == topology::kVendorNvidia && d.role == topology::PciRole::kGpu) {
        const sharing::GpuModel* m = sharing::FindGpuModelByPciId((uint32_t{d.device_id} << 16) | topology::kVendorNvidia);
        models.insert(m ? m->name : "10de:" + Hex4(d.device_id));
      }
    gc.gpu_models.assign(models.begin(), models.end());
    CheckKubelet(s);
    CheckTopology(s);
    CheckNetwork(s);
  }
  report_.groups.push_back(std::move(gc));
}

void Checker::CheckLabels(const GroupState& s) {
  const NodeGroup& g = *s.group;
  const std::string key = GroupKey(s.index) + ".labels";
  auto it = g.labels.find(kNodeGroupLabel);
  if (it != g.labels.end() && it->second != g.name)
    Add(Error("labels", g.name, key + "." + kNodeGroupLabel,
              std::string("sets ") + kNodeGroupLabel + "=" + it->second + ": accel selects this group's nodes with " +
                  kNodeGroupLabel + "=" + g.name + " (every per-group object does), so either the label or every "
                  "object selecting the group is wrong",
              std::string("remove ") + kNodeGroupLabel + " from labels: accel sets it"));
  it = g.labels.find("nvidia.com/mig.config");
  if (it != g.labels.end() && !g.sharing.mig.empty() && it->second != g.sharing.mig)
    Add(Error("labels", g.name, key + ".nvidia.com/mig.config",
              "asks mig-manager for " + it->second + " while sharing.mig is " + g.sharing.mig +
                  ": the nodes get one of them, and the device plugin config the other",
              "remove the label: sharing.mig sets it"));
  it = g.labels.find("nvidia.com/gpu.deploy.operands");
  if (it != g.labels.end() && it->second == "false" && g.vendor == Vendor::kNvidia && g.stack == Stack::kOperator)
    Add(Error("labels", g.name, key + ".nvidia.com/gpu.deploy.operands",
              "is false on a group whose stack is the GPU Operator: the operator removes every operand (driver, "
              "device plugin, ...) from these nodes, so no GPU is advertised",
              "remove the label, or use stack: accel"));
}

void Checker::CheckKubelet(const GroupState& s) {
  const NodeGroup& g = *s.group;
  const GroupPlan& p = *s.plan;
  for (const kubelet::KubeletFinding& f : p.findings)
    Add(Error("kubelet", g.name, KubeletKey(t_, s.index, f.field), f.problem, f.fix));
  const kubelet::KubeletSettings settings = kubelet::ReadKubeletSettings(json(p.kubelet.config));
  for (const kubelet::KubeletFinding& f : kubelet::CheckKubeletOptions(settings, p.layout))
    Add(CheckFinding{f.severity == kubelet::Severity::kWarning ? CheckSeverity::kWarning : CheckSeverity::kError,
                     "kubelet-options", g.name, KubeletKey(t_, s.index, f.field), f.problem, f.fix});
}

// single-numa-node admits a pod only when all it asks for comes from one guest NUMA node
// (policy_single_numa_node.go: only single-node hints survive the filter), so a pod asking for
// more accelerators than one guest cell holds is rejected, however many the node has.
void Checker::CheckTopology(const GroupState& s) {
  const NodeGroup& g = *s.group;
  const GroupPlan& p = *s.plan;
  const json c(p.kubelet.config);
  if (!c.contains("topologyManagerPolicy") || c["topologyManagerPolicy"] != "single-numa-node") return;
  const std::vector<kubelet::GuestCellLayout> cells = p.layout.cells_or_one();
  if (cells.size() < 2) return;
  std::map<int, int> per_cell;
  int total = 0;
  std::string word = "accelerator";
  for (const kubelet::GuestDevice& d : p.layout.devices)
    if (d.role == topology::PciRole::kGpu || d.role == topology::PciRole::kHpu) {
      ++total;
      if (d.guest_cell >= 0) ++per_cell[d.guest_cell];
      word = DeviceWord(d);
    }
  int most = 0;
  for (const auto& [cell, n] : per_cell) most = std::max(most, n);
  if (total == 0 || most >= total) return;
  Add(Warning("topology", g.name, KubeletKey(t_, s.index, "topologyManagerPolicy"),
              "single-numa-node rejects a pod asking for more than " + CountOf(static_cast<size_t>(most), word) +
                  " (the most one guest cell holds; a node has " + std::to_string(total) + " on " +
                  CountOf(cells.size(), "cell") + "), or more CPUs or memory than one cell holds: a whole-node pod (" +
                  std::to_string(total) + " " + word + "s) ends in TopologyAffinityError",
              "keep pods within one guest cell; for whole-node pods set kubelet topologyManagerPolicy: restricted "
              "(with topologyManagerPolicyOptions prefer-closest-numa-nodes), or use a flavor with one guest cell"));
}

}  // namespace accel::cluster::check_internal
