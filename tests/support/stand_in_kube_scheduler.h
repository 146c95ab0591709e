// StandInKubeScheduler: kube-scheduler's side of the scheduler-extender protocol, written from the
// published sources (k8s.io/kube-scheduler/extender/v1 types.go, pkg/scheduler/extender.go's
// HTTPExtender, schedule_one.go's use of it), for tests of `accel fleet serve` as an extender:
//   - it reads the extender block of a KubeSchedulerConfiguration (the deploy files' own);
//   - IsInterested: with managedResources, only pods whose containers or init containers name
//     one of them in requests or limits;
//   - filter and prioritize POST ExtenderArgs {Pod, Nodes, NodeNames}: NodeNames (a list of names)
//     to a nodeCacheCapable extender, else Nodes (a v1.NodeList of the whole Node objects), the
//     other null; to urlPrefix (trailing '/' trimmed) + "/" + verb, Content-Type application/json;
//   - any status but 200 is a failed call; a 200 with Error set is a failed call with that text;
//   - a filter answer is read back as kube-scheduler reads it: NodeNames (each must be one it sent)
//     from a nodeCacheCapable extender, Nodes.items otherwise; FailedAndUnresolvableNodes win over
//     FailedNodes;
//   - a node's total score adds score x weight x (MaxNodeScore 100 / MaxExtenderPriority 10);
//   - bind POSTs ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}.
// Pods and Nodes are built as Go's encoding/json writes a v1.Pod / v1.Node (no kind and apiVersion
// on typed objects; quantities as strings).
//
// Transport: accel's own HTTP client (http/client.h). Header only; not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/structured_file.h"
#include "http/client.h"

namespace accel::test_support {

/// The fields of kubescheduler.config.k8s.io/v1 Extender, as JSON names them.
inline const std::set<std::string>& ExtenderConfigFields() {
  static const std::set<std::string> fields = {
      "urlPrefix",  "filterVerb", "preemptVerb",      "prioritizeVerb",   "weight",   "bindVerb",
      "enableHTTPS", "tlsConfig", "httpTimeout",      "nodeCacheCapable", "managedResources", "ignorable"};
  return fields;
}

/// One extender of a KubeSchedulerConfiguration, as kube-scheduler uses it.
struct ExtenderConfig {
  std::string url_prefix;  ///< urlPrefix
  std::string filter_verb, prioritize_verb, bind_verb;
  int64_t weight = 0;
  bool node_cache_capable = false;
  std::set<std::string> managed_resources;  ///< managedResources[].name
  std::set<std::string> ignored_by_scheduler;  ///< the ones with ignoredByScheduler: true

  /// Reads `config` (a KubeSchedulerConfiguration's parsed tree) extenders[index]. Throws
  /// std::runtime_error when there is none.
  static ExtenderConfig FromSchedulerConfig(const nlohmann::json& config, size_t index = 0) {
    if (!config.contains("extenders") || !config["extenders"].is_array() || config["extenders"].size() <= index)
      throw std::runtime_error("no extenders[" + std::to_string(index) + "] in the KubeSchedulerConfiguration");
    const nlohmann::json& e = config["extenders"][index];
    ExtenderConfig c;
    c.url_prefix = e.value("urlPrefix", "");
    c.filter_verb = e.value("filterVerb", "");
    c.prioritize_verb = e.value("prioritizeVerb", "");
    c.bind_verb = e.value("bindVerb", "");
    c.weight = e.value("weight", int64_t{0});
    c.node_cache_capable = e.value("nodeCacheCapable", false);
    if (e.contains("managedResources"))
      for (const nlohmann::json& r : e["managedResources"]) {
        c.managed_resources.insert(r.value("name", ""));
        if (r.value("ignoredByScheduler", false)) c.ignored_by_scheduler.insert(r.value("name", ""));
      }
    return c;
  }
};

/// A pod as Go writes a v1.Pod kube-scheduler holds.
struct PodSpec {
  std::string ns = "default";
  std::string name;
  std::string uid;
  std::map<std::string, std::string> limits;    ///< of its one container, quantities as text
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> init_limits;  ///< an init container's limits; empty = none

  nlohmann::json Json() const {
    nlohmann::json resources = nlohmann::json::object();
    if (!limits.empty()) resources["limits"] = limits;
    if (!requests.empty()) resources["requests"] = requests;
    nlohmann::json pod = {
        {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}, {"creationTimestamp", nullptr}}},
        {"spec",
         {{"containers", {{{"name", "main"}, {"image", "registry.example/app:1"}, {"resources", resources}}}},
          {"schedulerName", "default-scheduler"}}},
        {"status", {{"phase", "Pending"}}}};
    if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
    if (!init_limits.empty())
      pod["spec"]["initContainers"] = {
          {{"name", "init"}, {"image", "registry.example/init:1"}, {"resources", {{"limits", init_limits}}}}};
    return pod;
  }
};

/// A node as Go writes a v1.Node.
inline nlohmann::json NodeJson(const std::string& name, const std::map<std::string, std::string>& allocatable = {}) {
  nlohmann::json alloc = {{"cpu", "224"}, {"memory", "2063597568Ki"}, {"pods", "110"}};
  for (const auto& [k, v] : allocatable) alloc[k] = v;
  return {{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}, {"creationTimestamp", nullptr}}},
          {"spec", nlohmann::json::object()},
          {"status", {{"capacity", alloc}, {"allocatable", alloc}}}};
}

/// What a filter call came back with, as kube-scheduler keeps it.
struct FilterOutcome {
  bool ok = false;            ///< the call succeeded (200, no Error, nodes it knows)
  std::string error;          ///< why not
  std::vector<std::string> passed;  ///< node names that pass, in the answer's order
  std::map<std::string, std::string> failed;       ///< FailedNodes (those not also unresolvable)
  std::map<std::string, std::string> unresolvable; ///< FailedAndUnresolvableNodes
  nlohmann::json answer;      ///< the body as JSON
};

class StandInKubeScheduler {
 public:
  /// `base_url`: "http://127.0.0.1:PORT", where urlPrefix's host points in the deploy file.
  StandInKubeScheduler(std::string base_url, ExtenderConfig config)
      : base_url_(std::move(base_url)), config_(std::move(config)) {
    // urlPrefix's path part: "http://accel-fleet.accel-system.svc:9470/scheduler" -> "/scheduler".
    const size_t scheme = config_.url_prefix.find("://");
    const size_t path = config_.url_prefix.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    prefix_ = path == std::string::npos ? "" : config_.url_prefix.substr(path);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  }

  const ExtenderConfig& config() const { return config_; }

  /// HTTPExtender.IsInterested.
  bool IsInterested(const nlohmann::json& pod) const {
    if (config_.managed_resources.empty()) return true;
    for (const char* list : {"containers", "initContainers"}) {
      if (!pod["spec"].contains(list)) continue;
      for (const nlohmann::json& c : pod["spec"][list])
        for (const char* kind : {"requests", "limits"})
          if (c.contains("resources") && c["resources"].contains(kind))
            for (auto it = c["resources"][kind].begin(); it != c["resources"][kind].end(); ++it)
              if (config_.managed_resources.count(it.key())) return true;
    }
    return false;
  }

  /// The ExtenderArgs kube-scheduler sends for `pod` and `nodes`.
  nlohmann::json Args(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes) const {
    nlohmann::json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nullptr}};
    if (config_.node_cache_capable) {
      nlohmann::json names = nlohmann::json::array();
      for (const nlohmann::json& n : nodes) names.push_back(n["metadata"]["name"]);
      args["NodeNames"] = names;
    } else {
      args["Nodes"] = {{"metadata", nlohmann::json::object()}, {"items", nodes}};
    }
    return args;
  }

  /// POSTs `body` to verb `verb`.
  http::HttpResponse Send(const std::string& verb, const std::string& body) const {
    return http::HttpCall(base_url_, "POST", prefix_ + "/" + verb, body);
  }

  FilterOutcome Filter(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes) const {
    FilterOutcome out;
    const http::HttpResponse r = Send(config_.filter_verb, Args(pod, nodes).dump());
    out.answer = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 200) {
      out.error = "failed " + config_.filter_verb + " with extender, code " + std::to_string(r.status);
      return out;
    }
    const nlohmann::json& a = out.answer;
    if (a.value("Error", "") != "") {
      out.error = a["Error"].get<std::string>();
      return out;
    }
    std::set<std::string> sent;
    for (const nlohmann::json& n : nodes) sent.insert(n["metadata"]["name"].get<std::string>());
    if (config_.node_cache_capable && a.contains("NodeNames") && !a["NodeNames"].is_null()) {
      for (const nlohmann::json& n : a["NodeNames"]) {
        if (!sent.count(n.get<std::string>())) {
          out.error = "extender claims a filtered node " + n.dump() + " which is not found in the input node list";
          return out;
        }
        out.passed.push_back(n.get<std::string>());
      }
    } else if (a.contains("Nodes") && !a["Nodes"].is_null() && a["Nodes"].contains("items") && !a["Nodes"]["items"].is_null()) {
      for (const nlohmann::json& n : a["Nodes"]["items"]) out.passed.push_back(n["metadata"]["name"].get<std::string>());
    }
    if (a.contains("FailedAndUnresolvableNodes") && a["FailedAndUnresolvableNodes"].is_object())
      for (auto it = a["FailedAndUnresolvableNodes"].begin(); it != a["FailedAndUnresolvableNodes"].end(); ++it)
        out.unresolvable[it.key()] = it.value().get<std::string>();
    if (a.contains("FailedNodes") && a["FailedNodes"].is_object())
      for (auto it = a["FailedNodes"].begin(); it != a["FailedNodes"].end(); ++it)
        if (!out.unresolvable.count(it.key())) out.failed[it.key()] = it.value().get<std::string>();
    out.ok = true;
    return out;
  }

  /// HostPriorityList as sent back: host -> score (0..10); nullopt when the call failed.
  std::optional<std::map<std::string, int64_t>> Prioritize(const nlohmann::json& pod,
                                                            const std::vector<nlohmann::json>& nodes) const {
    const http::HttpResponse r = Send(config_.prioritize_verb, Args(pod, nodes).dump());
    if (r.status != 200) return std::nullopt;
    const nlohmann::json a = nlohmann::json::parse(r.body, nullptr, false);
    if (!a.is_array()) return std::nullopt;
    std::map<std::string, int64_t> out;
    for (const nlohmann::json& p : a) out[p["Host"].get<std::string>()] = p["Score"].get<int64_t>();
    return out;
  }

  /// ExtenderBindingResult.Error ("" = bound), or "code N" for a status that is not 200.
  std::string Bind(const nlohmann::json& pod, const std::string& node) const {
    const nlohmann::json args = {{"PodName", pod["metadata"]["name"]},
                                 {"PodNamespace", pod["metadata"]["namespace"]},
                                 {"PodUID", pod["metadata"]["uid"]},
                                 {"Node", node}};
    const http::HttpResponse r = Send(config_.bind_verb, args.dump());
    if (r.status != 200) return "code " + std::to_string(r.status);
    const nlohmann::json a = nlohmann::json::parse(r.body, nullptr, false);
    return a.is_object() ? a.value("Error", "") : "answer is not JSON";
  }

  /// One scheduling cycle of `pod` over `nodes` as far as the extender takes part: filter, then
  /// (with more than one node left) prioritize and the highest total score (ties: the first
  /// node in `nodes` order, where kube-scheduler picks at random), then bind. Returns the node, or
  /// "" with *why set.
  std::string ScheduleOne(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes, std::string* why) const {
    if (!IsInterested(pod)) {
      *why = "not interested";
      return "";
    }
    const FilterOutcome f = Filter(pod, nodes);
    if (!f.ok) {
      *why = f.error;
      return "";
    }
    if (f.passed.empty()) {
      *why = "0/" + std::to_string(nodes.size()) + " nodes are available";
      return "";
    }
    std::vector<nlohmann::json> feasible;
    for (const nlohmann::json& n : nodes)
      if (std::find(f.passed.begin(), f.passed.end(), n["metadata"]["name"].get<std::string>()) != f.passed.end())
        feasible.push_back(n);
    std::string best = feasible.front()["metadata"]["name"];
    if (feasible.size() > 1) {
      const auto scores = Prioritize(pod, feasible);
      int64_t top = -1;
      for (const nlohmann::json& n : feasible) {
        const std::string name = n["metadata"]["name"];
        const int64_t total = scores && scores->count(name) ? scores->at(name) * config_.weight * (100 / 10) : 0;
        if (total > top) {
          top = total;
          best = name;
        }
      }
    }
    const std::string error = Bind(pod, best);
    if (!error.empty()) {
      *why = error;
      return "";
    }
    return best;
  }

 private:
  std::string base_url_;
  ExtenderConfig config_;
  std::string prefix_;
};

/// The KubeSchedulerConfiguration in `yaml` (text).
inline nlohmann::json SchedulerConfig(const std::string& yaml, const std::string& where) {
  return ParseStructuredText(yaml, where);
}

}  // namespace accel::test_support
