#include "kubelet/pod.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/quantity.h"
#include "common/structured_file.h"
#include "kubelet/settings.h"

namespace accel::kubelet {

namespace {

using nlohmann::json;

const std::set<std::string, std::less<>>& KnownWorkloadKinds() {
  static const std::set<std::string, std::less<>> kinds = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                                                           "ReplicationController", "Job", "PodTemplate"};
  return kinds;
}

class PodReader {
 public:
  /// `kind_optional`: a Pod object from the API (kube-scheduler's), whose kind may be absent.
  explicit PodReader(std::string where, bool kind_optional = false)
      : where_(std::move(where)), kind_optional_(kind_optional) {}

  PodResources Read(const json& doc) {
    if (!doc.is_object())
      Fail("", "is not a Kubernetes object", "give a Pod: apiVersion: v1, kind: Pod, metadata, spec with containers");
    if (kind_optional_ && (!doc.contains("kind") || doc["kind"].is_null() || doc["kind"] == "")) {
      // An API object without its type (Go clients omit an empty TypeMeta): a Pod by contract.
    } else if (!doc.contains("kind") || !doc["kind"].is_string()) {
      Fail("kind", "missing: the file must be a Pod", "add kind: Pod and apiVersion: v1");
    } else {
      CheckKind(doc["kind"].get<std::string>());
    }
    if (doc.contains("apiVersion") && !(kind_optional_ && (doc["apiVersion"].is_null() || doc["apiVersion"] == "")) &&
        doc["apiVersion"] != "v1")
      Fail("apiVersion", "is " + doc["apiVersion"].dump() + ": a Pod is apiVersion v1", "write apiVersion: v1");
    return Body(doc);
  }

 private:
  void CheckKind(const std::string& kind) const {
    if (kind != "Pod") {
      std::string fix;
      if (KnownWorkloadKinds().count(kind))
        fix = "accel cluster pods reads one Pod: write the " + kind +
              "'s pod template as a Pod (apiVersion: v1, kind: Pod, metadata, spec: the " + kind +
              (kind == "PodTemplate" ? "'s template.spec)" : "'s spec.template.spec)");
      else if (kind == "CronJob")
        fix = "write the CronJob's spec.jobTemplate.spec.template as a Pod (apiVersion: v1, kind: Pod)";
      else if (kind == "List")
        fix = "give one Pod per file";
      else
        fix = "give the pod template of one replica as a Pod (apiVersion: v1, kind: Pod, spec: its pod spec)";
      Fail("kind", "is " + kind + ": accel cluster pods reads a Pod (what one node admits)", fix);
    }
  }

  PodResources Body(const json& doc) const {
    PodResources pod;
    pod.source = where_;
    if (doc.contains("metadata")) {
      const json& m = doc["metadata"];
      if (!m.is_object()) Fail("metadata", "must be a mapping", "e.g. metadata: {name: trainer}");
      if (m.contains("name")) {
        if (!m["name"].is_string()) Fail("metadata.name", "must be a string", "");
        pod.name = m["name"].get<std::string>();
      }
    }
    if (!doc.contains("spec") || !doc["spec"].is_object())
      Fail("spec", "missing or not a mapping", "a Pod needs spec.containers");
    const json& spec = doc["spec"];
    if (spec.contains("resources") && !spec["resources"].is_null())
      Fail("spec.resources",
           "pod-level resources (the PodLevelResources feature) are not modelled: the kubelet's managers align "
           "containers' resources",
           "give each container its requests and limits");
    if (spec.contains("initContainers") && !spec["initContainers"].is_null()) {
      if (!spec["initContainers"].is_array()) Fail("spec.initContainers", "must be a list", "");
      for (size_t i = 0; i < spec["initContainers"].size(); ++i)
        pod.containers.push_back(Container(spec["initContainers"][i], "spec.initContainers[" + std::to_string(i) + "]", true));
    }
    if (!spec.contains("containers") || !spec["containers"].is_array() || spec["containers"].empty())
      Fail("spec.containers", "missing or empty: a Pod needs at least one container", "");
    for (size_t i = 0; i < spec["containers"].size(); ++i)
      pod.containers.push_back(Container(spec["containers"][i], "spec.containers[" + std::to_string(i) + "]", false));
    if (spec.contains("overhead") && !spec["overhead"].is_null()) {
      if (!spec["overhead"].is_object()) Fail("spec.overhead", "must be a mapping of resources", "");
      for (auto it = spec["overhead"].begin(); it != spec["overhead"].end(); ++it) {
        const int64_t v = Milli(it.value(), "spec.overhead." + it.key());
        if (v > 0) pod.overhead[it.key()] = v;
      }
    }
    return pod;
  }

  [[noreturn]] void Fail(const std::string& field, const std::string& problem, const std::string& fix) const {
    throw InputError(where_, field, problem, fix);
  }

  int64_t Milli(const json& v, const std::string& field) const {
    const std::string text = QuantityTextOf(v);
    if (text.empty()) Fail(field, "must be a quantity", "e.g. \"2\", \"500m\", \"8Gi\"");
    std::string error;
    const std::optional<Quantity> q = ParseQuantity(text, &error);
    if (!q) Fail(field, error, "");
    if (q->milli < 0) Fail(field, "is negative", "requests and limits are zero or more");
    return q->milli;
  }

  void CheckName(const std::string& name, const std::string& field) const {
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage") return;
    if (name.rfind("hugepages-", 0) == 0) {
      if (HugepageKib(name) == 0)
        Fail(field, "'" + name + "' is not a hugepages resource", "hugepages-2Mi or hugepages-1Gi");
      return;
    }
    if (name.find('/') != std::string::npos) return;
    Fail(field, "'" + name + "' is not a resource Kubernetes knows",
         "cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with its domain "
         "(nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi)");
  }

  std::map<std::string, int64_t> List(const json& r, const std::string& key, const std::string& path) const {
    std::map<std::string, int64_t> out;
    if (!r.contains(key) || r[key].is_null()) return out;
    if (!r[key].is_object()) Fail(path + "." + key, "must be a mapping of resource: quantity", "e.g. {cpu: 8, memory: 64Gi}");
    for (auto it = r[key].begin(); it != r[key].end(); ++it) {
      const std::string field = path + "." + key + "." + it.key();
      CheckName(it.key(), field);
      out[it.key()] = Milli(it.value(), field);
    }
    return out;
  }

  ContainerResources Container(const json& c, const std::string& path, bool init) const {
    if (!c.is_object()) Fail(path, "must be a mapping (a container)", "");
    ContainerResources out;
    out.init = init;
    out.name = path.substr(5);  // "containers[1]"
    if (c.contains("name")) {
      if (!c["name"].is_string()) Fail(path + ".name", "must be a string", "");
      out.name = c["name"].get<std::string>();
    }
    if (c.contains("restartPolicy") && !c["restartPolicy"].is_null()) {
      if (!init) Fail(path + ".restartPolicy", "is for init containers only (sidecars)", "remove it");
      if (c["restartPolicy"] != "Always")
        Fail(path + ".restartPolicy", "must be Always (a sidecar) when set", "remove it, or write Always");
      out.sidecar = true;
    }
    if (!c.contains("resources") || c["resources"].is_null()) return out;
    const json& r = c["resources"];
    const std::string rpath = path + ".resources";
    if (!r.is_object()) Fail(rpath, "must be a mapping", "e.g. resources: {limits: {cpu: 8, memory: 64Gi}}");
    for (auto it = r.begin(); it != r.end(); ++it)
      if (it.key() != "requests" && it.key() != "limits" && it.key() != "claims")
        Fail(rpath + "." + it.key(), "is not a key of resources", "use requests, limits (claims: DRA, not counted)");
    std::map<std::string, int64_t> requests = List(r, "requests", rpath);
    const std::map<std::string, int64_t> limits = List(r, "limits", rpath);
    // The API server's validation and defaulting (pkg/apis/core/validation, v1 defaults).
    for (const auto& [name, req] : requests) {
      auto lim = limits.find(name);
      const bool exact = IsExtendedResource(name) || name.rfind("hugepages-", 0) == 0;
      if (exact && lim == limits.end())
        Fail(rpath + ".requests." + name, "has no limit: " + name + " cannot be overcommitted",
             "set limits." + name + " to the same value (or only the limit)");
      if (lim != limits.end() && exact && lim->second != req)
        Fail(rpath + ".requests." + name, "must equal its limit (" + name + " cannot be overcommitted)",
             "make requests and limits the same");
      if (lim != limits.end() && req > lim->second)
        Fail(rpath + ".requests." + name, "is larger than its limit", "a request must be at most the limit");
    }
    for (const auto& [name, lim] : limits) {
      if (IsExtendedResource(name) && lim % 1000 != 0)
        Fail(rpath + ".limits." + name, "must be a whole number (devices are counted)", "e.g. " + name + ": 1");
      if (!requests.count(name)) requests[name] = lim;  // requests default to limits
    }
    bool hugepages = false;
    for (const auto& [name, v] : requests) hugepages = hugepages || (name.rfind("hugepages-", 0) == 0 && v > 0);
    if (hugepages && !(requests.count("cpu") && requests["cpu"] > 0) && !(requests.count("memory") && requests["memory"] > 0))
      Fail(rpath, "asks for hugepages without cpu or memory (Kubernetes refuses it)", "request cpu or memory too");
    for (const auto& [name, v] : requests)
      if (v > 0) out.requests[name] = v;
    for (const auto& [name, v] : limits)
      if (v > 0) out.limits[name] = v;
    return out;
  }

  std::string where_;
  bool kind_optional_ = false;
};

}  // namespace

uint64_t HugepageKib(std::string_view name) {
  if (name.substr(0, 10) != "hugepages-") return 0;
  std::string error;
  const std::optional<Quantity> q = ParseQuantity(name.substr(10), &error);
  if (!q || q->Value() <= 0) return 0;
  return static_cast<uint64_t>(q->Value()) / 1024;
}

std::string HugepageResourceName(uint64_t page_kib) {
  return "hugepages-" + FormatBinaryQuantity(static_cast<int64_t>(page_kib) * 1024);
}

bool IsExtendedResource(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view domain = name.substr(0, slash);
  return domain != "kubernetes.io" && domain.substr(0, 9) != "requests." &&
         !(domain.size() > 14 && domain.substr(domain.size() - 14) == ".kubernetes.io");
}

int64_t PodAccumulate(const PodResources& pod, const std::function<int64_t(const ContainerResources&)>& value) {
  int64_t long_running = 0, sidecars = 0, init_max = 0;
  for (const ContainerResources& c : pod.containers) {
    const int64_t v = value(c);
    if (!c.init) {
      long_running += v;
    } else if (c.sidecar) {
      long_running += v;
      sidecars += v;
      init_max = std::max(init_max, sidecars);
    } else {
      init_max = std::max(init_max, sidecars + v);
    }
  }
  return std::max(long_running, init_max);
}

int64_t ResourceMilli(const std::map<std::string, int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

uint64_t MilliBytesToMib(int64_t milli) {
  const int64_t bytes = (milli + 999) / 1000;
  return static_cast<uint64_t>((bytes + kMiB - 1) / kMiB);
}

int ExclusiveCpusOf(const ContainerResources& c) {
  const int64_t cpu = ResourceMilli(c.requests, "cpu");
  return cpu > 0 && cpu % 1000 == 0 ? static_cast<int>(cpu / 1000) : 0;
}

PodResources ParsePodText(std::string_view text, const std::string& where) {
  return PodReader(where).Read(ParseStructuredText(text, where));
}

PodResources LoadPod(const std::string& path) { return PodReader(path).Read(ReadStructuredFile(path)); }

PodResources ReadPodObject(const nlohmann::json& pod, const std::string& where) {
  return PodReader(where, true).Read(pod);
}

const char* QosClassName(QosClass qos) {
  switch (qos) {
    case QosClass::kGuaranteed: return "Guaranteed";
    case QosClass::kBurstable: return "Burstable";
    case QosClass::kBestEffort: return "BestEffort";
  }
  return "BestEffort";
}

QosClass QosOf(const PodResources& pod) {
  std::map<std::string, int64_t> requests, limits;
  bool guaranteed = true;
  for (const ContainerResources& c : pod.containers) {
    for (const char* r : {"cpu", "memory"}) {
      if (ResourceMilli(c.requests, r) > 0) requests[r] += ResourceMilli(c.requests, r);
      if (ResourceMilli(c.limits, r) > 0) limits[r] += ResourceMilli(c.limits, r);
    }
    if (ResourceMilli(c.limits, "cpu") <= 0 || ResourceMilli(c.limits, "memory") <= 0) guaranteed = false;
  }
  if (requests.empty() && limits.empty()) return QosClass::kBestEffort;
  if (guaranteed)
    for (const auto& [r, v] : requests)
      if (!limits.count(r) || limits[r] != v) guaranteed = false;
  return guaranteed && requests.size() == limits.size() ? QosClass::kGuaranteed : QosClass::kBurstable;
}

int64_t PodRequestMilli(const PodResources& pod, const std::string& resource, bool use_limits) {
  return PodAccumulate(pod, [&](const ContainerResources& c) { return ResourceMilli(use_limits ? c.limits : c.requests, resource); });
}

}  // namespace accel::kubelet
