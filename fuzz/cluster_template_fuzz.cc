// libFuzzer target: arbitrary bytes as a cluster template (accel.cluster/v1, YAML or JSON), read
// by cluster::ParseClusterTemplateText with examples/cluster/ as the template's directory.
//
// Only accel::InputError may leave the reader. A template names files (spec.flavors, aliases,
// hypervisor, nodeGroups[].hypervisor); inputs naming any path other than the example's flavors
// and aliases and two small host fixtures are skipped, so the fuzzer never reads /dev/zero or a
// whole file system. (The large host fixtures take a second each to read in the sanitized build,
// and host files have their own target, host_json_fuzz.) What parses must keep
// the reader's promises: at least one group, unique group names, each group's flavor among the
// loaded flavors and its request built, minCount <= count <= maxCount, MIG and MPS only on NVIDIA
// groups, nothing shared on vendor none, kubelet overrides objects and the merge of the two.
// A violation aborts.
//   scripts/fuzz.sh builds it with the others (fuzz/CMakeLists.txt); seeds in fuzz/corpus/cluster_template/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kubelet/overrides.h"
#include "cluster/template.h"
#include "common/error.h"
#include "common/structured_file.h"

namespace {

using namespace accel::cluster;
using namespace accel::kubelet;
using nlohmann::json;

void Check(bool ok) {
  if (!ok) std::abort();
}

// The paths examples/cluster/ai-prod.yaml uses; any other path value skips the input.
bool PathAllowed(const json& v) {
  static const std::set<std::string> kAllowed = {
      "../flavors/", "flavors/", "../flavors", "flavors", "../flavors/aliases.json", "flavors/mi300x-2.yaml",
      "flavors/gaudi2-4.yaml", "../flavors/gpu-4-2cell.yaml", "../flavors/shared.yaml",
      "../../fixtures/hosts/h200-vm.json", "../../fixtures/hosts/devbox.json"};
  return v.is_string() && kAllowed.count(v.get<std::string>()) > 0;
}

bool PathsAllowed(const json& doc) {
  if (!doc.is_object() || !doc.contains("spec") || !doc["spec"].is_object()) return true;  // reads no file
  const json& spec = doc["spec"];
  if (spec.contains("flavors")) {
    const json& f = spec["flavors"];
    if (f.is_array()) {
      for (const json& p : f)
        if (!PathAllowed(p)) return false;
    } else if (!f.is_null() && !PathAllowed(f)) {
      return false;
    }
  }
  for (const char* key : {"aliases", "hypervisor"})
    if (spec.contains(key) && !spec[key].is_null() && !PathAllowed(spec[key])) return false;
  if (spec.contains("nodeGroups") && spec["nodeGroups"].is_array())
    for (const json& g : spec["nodeGroups"])
      if (g.is_object() && g.contains("hypervisor") && !g["hypervisor"].is_null() && !PathAllowed(g["hypervisor"])) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (!PathsAllowed(accel::ParseStructuredText(text, "fuzz template"))) return 0;
  } catch (const accel::InputError&) {
    // the reader refuses it the same way; run it to be sure
  }
  ClusterTemplate t;
  try {
    t = ParseClusterTemplateText(text, "fuzz template", ACCEL_FUZZ_SOURCE_DIR "/examples/cluster");
  } catch (const accel::InputError&) {
    return 0;
  }
  Check(!t.groups.empty() && IsDns1123Label(t.name));
  Check(t.aliases != nullptr && t.kubelet.is_object());
  Check(t.flavors.size() == t.flavor_files.size());
  std::set<std::string> names;
  for (const NodeGroup& g : t.groups) {
    Check(names.insert(g.name).second && IsDns1123Label(g.name));
    Check(t.FindFlavor(g.flavor_name) != nullptr && g.flavor.name == g.flavor_name && g.request.vcpus == g.flavor.vcpus);
    Check(g.count >= 0 && (!g.min_count || *g.min_count <= g.count) && (!g.max_count || *g.max_count >= g.count));
    if (!g.sharing.mig.empty() || g.sharing.mps) Check(g.vendor == Vendor::kNvidia);
    Check(!(g.sharing.mps && (g.sharing.time_slicing || !g.sharing.mig.empty())));
    if (g.vendor == Vendor::kNone) Check(g.sharing.none() && g.stack == Stack::kAccel);
    Check(g.kubelet.is_object() && g.kubelet_merged == MergeKubeletOverrides(t.kubelet, g.kubelet));
    Check((g.hypervisor == nullptr) == g.hypervisor_path.empty());
    for (const auto& [key, value] : g.kubelet.items()) Check(FindKubeletField(key) != nullptr);
  }
  return 0;
}
