// The AMD GPU Operator's objects for the `stack: operator` AMD groups: a DeviceConfig per group,
// selecting its nodes (a node may belong to one DeviceConfig only).
#include <string>
#include <utility>

#include "cluster/vendor_stack_internal.h"

namespace accel::cluster::vendor_stack_internal {

void Builder::Amd() {
  for (const GroupInfo* g : Select(Vendor::kAmd, Stack::kOperator)) {
    const NodeGroup& n = *g->group;
    const ordered_json tolerations = Tolerations(TaintsOf(n));
    ordered_json s;
    s["selector"] = GroupSelector(n);
    s["driver"] = {{"enable", true}};
    const std::string version = t_.DriverVersionOf(n);
    if (!version.empty()) s["driver"]["version"] = version;
    if (!n.taints.empty()) s["driver"]["tolerations"] = tolerations;
    s["devicePlugin"] = {{"enableDevicePlugin", true}, {"enableNodeLabeller", true}};
    if (!n.taints.empty()) {
      s["devicePlugin"]["devicePluginTolerations"] = tolerations;
      s["devicePlugin"]["nodeLabellerTolerations"] = tolerations;
    }
    s["metricsExporter"] = {{"enable", true}};
    if (!n.taints.empty()) s["metricsExporter"]["tolerations"] = tolerations;
    ObjectFile f;
    f.header = Written() +
               "\nInstall the AMD GPU Operator's chart without its default DeviceConfig (Helm value\n"
               "crds.defaultCR.install=false): it selects every AMD GPU node (feature.node.kubernetes.io/amd-gpu),\n"
               "and a node may belong to one DeviceConfig only.";
    f.docs.push_back({"The AMD stack of node group " + n.name + ": amdgpu driver " +
                          (version.empty() ? std::string("(the operator's default)") : version) +
                          ", device plugin, node labeller and metrics exporter on the group's nodes (selector " +
                          kNodeGroupLabel + ").",
                      {{"apiVersion", "amd.com/v1alpha1"},
                       {"kind", "DeviceConfig"},
                       {"metadata", Metadata(n.name, t_.operators.amd.namespace_name, n.name)},
                       {"spec", s}}});
    object_files_[n.name + "/stack/amd-device-config.yaml"] = std::move(f);
  }
}

}  // namespace accel::cluster::vendor_stack_internal
