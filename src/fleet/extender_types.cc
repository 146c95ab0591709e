#include "fleet/extender_types.h"

#include "common/error.h"
#include "common/json_reader.h"
#include "common/json_text.h"

namespace accel::fleet {

namespace {

using nlohmann::json;

bool EqualFoldAscii(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The member of `obj` Go's decoder would put into field `name`: the exact key, else the first
// key equal to it ignoring case; nullptr when none (or when it is null: a nil pointer).
const json* Member(const json& obj, std::string_view name) {
  if (auto it = obj.find(name); it != obj.end()) return it->is_null() ? nullptr : &*it;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (EqualFoldAscii(it.key(), name)) return it->is_null() ? nullptr : &*it;
  return nullptr;
}

// `v` with its objects' keys in the order json keeps them (sorted): a node handed back as sent.
nlohmann::ordered_json Ordered(const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      nlohmann::ordered_json o = nlohmann::ordered_json::object();
      for (auto it = v.begin(); it != v.end(); ++it) o[it.key()] = Ordered(it.value());
      return o;
    }
    case json::value_t::array: {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const json& x : v) a.push_back(Ordered(x));
      return a;
    }
    case json::value_t::string: return v.get<std::string>();
    case json::value_t::boolean: return v.get<bool>();
    case json::value_t::number_integer: return v.get<int64_t>();
    case json::value_t::number_unsigned: return v.get<uint64_t>();
    case json::value_t::number_float: return v.get<double>();
    default: return nullptr;
  }
}

json Parse(std::string_view body, const std::string& where, const JsonReader& r) {
  if (body.empty()) r.Fail("", "the body is empty", "kube-scheduler sends a JSON object");
  json doc = ParseJsonText(body, where);
  r.Object(doc, "");
  return doc;
}

}  // namespace

ExtenderArgs ReadExtenderArgs(std::string_view body) {
  const JsonReader r("extender args");
  const json doc = Parse(body, "extender args", r);
  ExtenderArgs out;
  const json* pod = Member(doc, "Pod");
  if (pod == nullptr) r.Fail("Pod", "is missing", "the pod to schedule (a v1.Pod)");
  out.pod = r.Object(*pod, "Pod");
  if (const json* names = Member(doc, "NodeNames")) {
    out.node_cache_capable = true;
    out.node_names = r.Strings(*names, "NodeNames");
  } else if (const json* nodes = Member(doc, "Nodes")) {
    r.Object(*nodes, "Nodes");
    if (const json* items = Member(*nodes, "items")) {
      r.Array(*items, "Nodes.items");
      for (size_t i = 0; i < items->size(); ++i) {
        const std::string at = JsonReader::Index("Nodes.items", i);
        const json& node = r.Object((*items)[i], at);
        const json* meta = Member(node, "metadata");
        if (meta == nullptr) r.Fail(at + ".metadata", "is missing", "a v1.Node has metadata.name");
        r.Object(*meta, at + ".metadata");
        const json* name = Member(*meta, "name");
        if (name == nullptr) r.Fail(at + ".metadata.name", "is missing");
        out.node_names.push_back(r.String(*name, at + ".metadata.name"));
        out.nodes.push_back(node);
      }
    }
  } else {
    r.Fail("NodeNames", "is missing, and so is Nodes",
           "kube-scheduler sends NodeNames to a nodeCacheCapable extender and Nodes to others");
  }
  return out;
}

ExtenderBindingArgs ReadExtenderBindingArgs(std::string_view body) {
  const JsonReader r("extender binding args");
  const json doc = Parse(body, "extender binding args", r);
  auto field = [&](const char* name) {
    const json* v = Member(doc, name);
    if (v == nullptr) r.Fail(name, "is missing");
    std::string s = r.String(*v, name);
    if (s.empty()) r.Fail(name, "is empty");
    return s;
  };
  ExtenderBindingArgs out;
  out.pod_name = field("PodName");
  out.pod_namespace = field("PodNamespace");
  out.pod_uid = field("PodUID");
  out.node = field("Node");
  return out;
}

nlohmann::ordered_json FilterResultJson(const ExtenderFilterResult& result) {
  nlohmann::ordered_json doc;
  if (result.node_cache_capable) {
    doc["Nodes"] = nullptr;
    doc["NodeNames"] = result.node_names;
  } else {
    nlohmann::ordered_json list;
    list["metadata"] = nlohmann::ordered_json::object();
    list["items"] = nlohmann::ordered_json::array();
    for (const json& n : result.nodes) list["items"].push_back(Ordered(n));
    doc["Nodes"] = std::move(list);
    doc["NodeNames"] = nullptr;
  }
  doc["FailedNodes"] = nlohmann::ordered_json::object();
  for (const auto& [node, why] : result.failed_nodes) doc["FailedNodes"][node] = why;
  doc["FailedAndUnresolvableNodes"] = nlohmann::ordered_json::object();
  for (const auto& [node, why] : result.failed_and_unresolvable_nodes) doc["FailedAndUnresolvableNodes"][node] = why;
  doc["Error"] = result.error;
  return doc;
}

nlohmann::ordered_json PriorityListJson(const std::vector<HostPriority>& priorities) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const HostPriority& p : priorities) list.push_back({{"Host", p.host}, {"Score", p.score}});
  return list;
}

nlohmann::ordered_json ErrorResultJson(const std::string& error) {
  nlohmann::ordered_json doc;
  doc["Error"] = error;
  return doc;
}

}  // namespace accel::fleet
