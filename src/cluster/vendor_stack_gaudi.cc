// The Intel Gaudi Base Operator's one ClusterPolicy for the `stack: operator` Gaudi groups (one
// driver version for all of them). No CRD of it is public: the object follows the operator's
// documentation, and its comments say what the documentation does not confirm.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster/vendor_stack_internal.h"
#include "common/error.h"

namespace accel::cluster::vendor_stack_internal {

namespace {

constexpr const char* kHabanaClusterPolicy = "habana-ai";  // the name in Intel's sample (see below)

// The Gaudi driver installer's OS key for a Glance image name ("ubuntu-2404-kube-v1.33.2" ->
// "ubuntu_24.04"); "" when the name does not say.
std::string GaudiOsKey(const std::string& image) {
  for (size_t i = 0; i + 11 <= image.size(); ++i) {
    if (image.compare(i, 7, "ubuntu-") != 0) continue;
    const std::string d = image.substr(i + 7, 4);
    if (std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return "ubuntu_" + d.substr(0, 2) + "." + d.substr(2, 2);
  }
  return "";
}

}  // namespace

void Builder::Habana() {
  const std::vector<const GroupInfo*> ops = Select(Vendor::kHabana, Stack::kOperator);
  if (ops.empty()) return;
  // One ClusterPolicy: one driver version.
  std::string version;
  const GroupInfo* version_by = nullptr;
  for (const GroupInfo* g : ops) {
    const std::string v = t_.DriverVersionOf(*g->group);
    if (version_by == nullptr) {
      version = v;
      version_by = g;
    } else if (v != version) {
      throw InputError(t_.source, FieldOf(g->index, "driver.version"),
                       "the Gaudi Base Operator has one ClusterPolicy, so one driver version, but group " +
                           g->group->name + " asks for " + (v.empty() ? "the default" : v) + " and group " +
                           version_by->group->name + " for " + (version.empty() ? "the default" : version),
                       "give every Gaudi operator group the same driver.version (or set "
                       "spec.operators.habana.driverVersion once)");
    }
  }
  std::map<std::string, std::string> os_keys;  // OS key -> group that needs it
  std::string unknown_os;
  for (const GroupInfo* g : ops) {
    const std::string image = t_.ImageOf(*g->group);
    const std::string key = GaudiOsKey(image);
    if (key.empty())
      unknown_os += "\n  group " + g->group->name + ": image " + image;
    else
      os_keys.emplace(key, g->group->name);
  }

  // Image names and tags follow the documentation's ClusterPolicy for release 1.19.1-26
  // (vault.habana.ai/...; the device plugin tagged without the build number): unconfirmed for
  // other releases.
  auto image = [&](const std::string& repository, const std::string& tag) {
    return ordered_json{{"repository", "vault.habana.ai/" + repository}, {"tag", tag}};
  };
  const std::string plugin_tag = version.substr(0, version.find('-'));
  ordered_json s;
  s["image_registry"] = "vault.habana.ai";
  if (!version.empty()) {
    ordered_json loader;
    ordered_json images = ordered_json::object();
    for (const auto& [key, group] : os_keys) {
      std::string dir = key;
      dir.erase(std::remove(dir.begin(), dir.end(), '_'), dir.end());
      images[key] = image("habana-ai-operator/driver/" + dir + "/driver-installer", version);
    }
    loader["images"] = images;
    loader["repo_server"] = "vault.habana.ai";
    loader["repo_path"] = "artifactory/gaudi-installer/repos";
    s["driver"]["driver_loader"] = loader;
    if (!os_keys.empty())
      s["driver"]["driver_runner"]["image"] = images[os_keys.begin()->first];
    s["device_plugin"]["image"] = image("docker-k8s-device-plugin/docker-k8s-device-plugin", plugin_tag);
    s["runtime"]["runner"]["image"] = image("habana-ai-operator/habana-container-runtime", version);
  }
  s["runtime"]["configuration"]["container_engine"] = ContainerEngine();
  if (!version.empty()) s["metric_exporter"]["runner"]["image"] = image("gaudi-metric-exporter/metric-exporter", version);
  s["metric_exporter"]["port"] = 41611;
  s["metric_exporter"]["interval"] = 20;
  if (!version.empty()) {
    s["feature_discovery"]["runner"]["image"] =
        image("habana-ai-operator/habanalabs-feature-discovery", version);
    s["bmc_monitoring"]["image"] = image("habana-bmc-exporter/bmc-exporter", version);
  }
  s["node_selector"][kStackLabel] = "habana-operator";

  std::string groups;
  for (const GroupInfo* g : ops) groups += (groups.empty() ? "" : ", ") + g->group->name;
  ObjectFile f;
  f.header =
      Written() +
      "\nThe Intel Gaudi Base Operator's one ClusterPolicy (habanalabs.habana.ai/v1), for node groups " + groups +
      ".\nUNVALIDATED: no CRD of this kind is public (shared/crds/README.md), so this object follows the\n"
      "operator's documentation and is not checked against a schema. Sources:\n"
      "  https://docs.habana.ai/en/latest/Installation_Guide/Additional_Installation/Kubernetes_Installation/Kubernetes_Operator.html\n"
      "  (its ClusterPolicy, as adapted in intel/intel-technology-enabling-for-openshift gaudi/gaudi_cluster_policy.yaml)\n"
      "  https://docs.habana.ai/en/latest/Installation_Guide/Additional_Installation/Kubernetes_Installation/Deamonsets_Kubernetes_Operator.html\n"
      "Confirmed there: the field names; node_selector is what the feature-discovery DaemonSet selects, and\n"
      "the other DaemonSets follow feature discovery's labels; metric_exporter port 41611.\n"
      "NOT confirmed: the image repositories and tags for releases other than the documented 1.19.1-26\n"
      "(built here as vault.habana.ai/<component>:<driverVersion>, the device plugin without the build\n"
      "number); whether the operator fills in images left out (no driverVersion given); the driver_loader\n"
      "OS keys beyond the documented ubuntu_22.04 (derived from the image name); the ClusterPolicy's name\n"
      "(habana-ai, as in Intel's sample); and how the operator's DaemonSets tolerate node taints (the\n"
      "documentation shows no tolerations field, so tainted Gaudi nodes may need the operator's defaults).\n"
      "The chart (gaudi-helm/habana-ai-operator) creates a basic ClusterPolicy of its own: replace it with this one.";
  std::string comment = "Selects the nodes of every Gaudi operator group by " + std::string(kStackLabel) +
                        "=habana-operator (set on those groups' nodes).";
  if (!version.empty()) comment += "\nDriver and operand images at " + version + ".";
  if (!unknown_os.empty())
    comment += "\nNo driver_loader image for these groups: their image name does not say which OS they run; add\n"
               "spec.driver.driver_loader.images.<os> for it:" + unknown_os;
  f.docs.push_back({comment,
                    {{"apiVersion", "habanalabs.habana.ai/v1"},
                     {"kind", "ClusterPolicy"},
                     {"metadata", Metadata(kHabanaClusterPolicy, "", "")},
                     {"spec", s}}});
  object_files_["stack/habana/cluster-policy.yaml"] = std::move(f);
}

}  // namespace accel::cluster::vendor_stack_internal
