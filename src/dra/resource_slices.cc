#include "dra/resource_slices.h"

#include "common/yaml_out.h"
#include "dra/device_names.h"

namespace accel::dra {

namespace {

nlohmann::json AttributeJson(const AttributeValue& v) {
  switch (v.type) {
    case AttributeValue::Type::kInt: return {{"int", v.int_value}};
    case AttributeValue::Type::kBool: return {{"bool", v.bool_value}};
    case AttributeValue::Type::kVersion: return {{"version", v.string_value}};
    case AttributeValue::Type::kString: break;
  }
  return {{"string", v.string_value}};
}

nlohmann::json CountersJson(const std::map<std::string, std::string>& counters) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : counters) out[name] = {{"value", value}};
  return out;
}

// Device groups that must not be split without reason: a GPU and its MIG devices.
std::vector<std::vector<const DraDevice*>> Groups(const Inventory& inv) {
  std::vector<std::vector<const DraDevice*>> out;
  for (const DraDevice& d : inv.devices) {
    if (d.kind == DeviceKind::kMig && !out.empty()) {
      out.back().push_back(&d);
    } else {
      out.push_back({&d});
    }
  }
  return out;
}

}  // namespace

nlohmann::json DeviceJson(const DraDevice& device) {
  nlohmann::json d;
  d["name"] = device.name;
  if (!device.attributes.empty()) {
    nlohmann::json attrs = nlohmann::json::object();
    for (const auto& [name, value] : device.attributes) attrs[name] = AttributeJson(value);
    d["attributes"] = std::move(attrs);
  }
  if (!device.capacity.empty()) {
    nlohmann::json cap = nlohmann::json::object();
    for (const auto& [name, value] : device.capacity) cap[name] = {{"value", value}};
    d["capacity"] = std::move(cap);
  }
  if (!device.consumes_counters.empty()) {
    nlohmann::json uses = nlohmann::json::array();
    for (const CounterConsumption& c : device.consumes_counters) {
      uses.push_back({{"counterSet", c.counter_set}, {"counters", CountersJson(c.counters)}});
    }
    d["consumesCounters"] = std::move(uses);
  }
  return d;
}

std::vector<nlohmann::json> BuildResourceSlices(const Inventory& inv, int64_t generation) {
  // The specs first (devices or counter sets), then the pool fields once the count is known.
  std::vector<nlohmann::json> specs;
  for (size_t i = 0; i < inv.counter_sets.size(); i += kMaxCounterSetsPerSlice) {
    nlohmann::json sets = nlohmann::json::array();
    for (size_t k = i; k < inv.counter_sets.size() && k < i + kMaxCounterSetsPerSlice; ++k) {
      sets.push_back({{"name", inv.counter_sets[k].name},
                      {"counters", CountersJson(inv.counter_sets[k].counters)}});
    }
    specs.push_back({{"sharedCounters", std::move(sets)}});
  }

  // Devices: greedy, group by group; a group that does not fit the current slice starts a new
  // one (a group larger than a whole slice is split device by device).
  std::vector<const DraDevice*> current;
  bool counters = false;
  auto flush = [&] {
    if (current.empty()) return;
    nlohmann::json devices = nlohmann::json::array();
    for (const DraDevice* d : current) devices.push_back(DeviceJson(*d));
    specs.push_back({{"devices", std::move(devices)}});
    current.clear();
    counters = false;
  };
  auto fits = [&](size_t extra, bool extra_counters) {
    const bool c = counters || extra_counters;
    return current.size() + extra <= (c ? kMaxDevicesPerSliceWithCounters : kMaxDevicesPerSlice);
  };
  for (const std::vector<const DraDevice*>& group : Groups(inv)) {
    bool group_counters = false;
    for (const DraDevice* d : group) group_counters = group_counters || !d->consumes_counters.empty();
    if (!fits(group.size(), group_counters)) flush();
    for (const DraDevice* d : group) {
      if (!fits(1, !d->consumes_counters.empty())) flush();
      current.push_back(d);
      counters = counters || !d->consumes_counters.empty();
    }
  }
  flush();
  if (specs.empty()) specs.push_back({{"devices", nlohmann::json::array()}});

  std::vector<nlohmann::json> out;
  for (size_t n = 0; n < specs.size(); ++n) {
    nlohmann::json spec;
    spec["driver"] = inv.driver;
    spec["nodeName"] = inv.node_name;
    spec["pool"] = {{"name", inv.node_name},
                    {"generation", generation},
                    {"resourceSliceCount", static_cast<int64_t>(specs.size())}};
    spec.update(specs[n]);
    nlohmann::json slice;
    slice["apiVersion"] = "resource.k8s.io/v1";
    slice["kind"] = "ResourceSlice";
    slice["metadata"] = {{"name", ResourceSliceName(inv.node_name, inv.driver, static_cast<int>(n))},
                         {"labels", {{kSliceManagedByLabel, "accel"}}}};
    slice["spec"] = std::move(spec);
    out.push_back(std::move(slice));
  }
  return out;
}

namespace {

// nlohmann::json sorts keys; the API's own order reads better: apiVersion, kind, metadata,
// spec, and in the spec driver, nodeName, pool before the lists.
nlohmann::ordered_json Ordered(const nlohmann::json& slice) {
  nlohmann::ordered_json out;
  for (const char* key : {"apiVersion", "kind", "metadata"}) {
    if (slice.contains(key)) out[key] = nlohmann::ordered_json::parse(slice[key].dump());
  }
  if (slice.contains("spec")) {
    const nlohmann::json& spec = slice["spec"];
    nlohmann::ordered_json s;
    for (const char* key : {"driver", "nodeName", "pool"}) {
      if (spec.contains(key)) s[key] = nlohmann::ordered_json::parse(spec[key].dump());
    }
    for (auto it = spec.begin(); it != spec.end(); ++it) {
      if (s.contains(it.key())) continue;
      if (it.value().is_array()) {
        // Devices and counter sets: "name" first, as kubectl prints them.
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const nlohmann::json& item : it.value()) {
          nlohmann::ordered_json o;
          if (item.is_object() && item.contains("name")) o["name"] = item["name"].get<std::string>();
          for (auto f = item.begin(); item.is_object() && f != item.end(); ++f) {
            if (f.key() != "name") o[f.key()] = nlohmann::ordered_json::parse(f.value().dump());
          }
          list.push_back(item.is_object() ? o : nlohmann::ordered_json::parse(item.dump()));
        }
        s[it.key()] = std::move(list);
      } else {
        s[it.key()] = nlohmann::ordered_json::parse(it.value().dump());
      }
    }
    out["spec"] = std::move(s);
  }
  for (auto it = slice.begin(); it != slice.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = nlohmann::ordered_json::parse(it.value().dump());
  }
  return out;
}

}  // namespace

std::string ResourceSlicesYaml(const std::vector<nlohmann::json>& slices) {
  std::string out;
  for (size_t i = 0; i < slices.size(); ++i) {
    if (i > 0) out += "---\n";
    out += ToYaml(Ordered(slices[i]));
  }
  return out;
}

nlohmann::json ResourceSliceList(const std::vector<nlohmann::json>& slices) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSliceList"},
          {"metadata", nlohmann::json::object()},
          {"items", slices}};
}

}  // namespace accel::dra
