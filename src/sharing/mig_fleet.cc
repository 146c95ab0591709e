// Fleet and demand files for the MIG planner (mig_planner.h). Read through
// common/structured_file.h, so JSON and YAML give the same tree; every key is checked, and a
// fleet's current layouts must pass ValidateLayout.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/structured_file.h"
#include "sharing/mig_planner.h"

namespace accel::sharing {
namespace {

using nlohmann::json;

constexpr int64_t kMaxIndex = 4095;
constexpr int64_t kMaxCount = 4096;
constexpr int64_t kMaxDemand = 1000000;

std::string Show(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string KnownModels() {
  std::string s;
  for (const GpuModel& m : MigCatalog()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

// Reads one object of a file, refusing keys it does not know.
class Fields {
 public:
  Fields(const std::string& where, std::string path, const json& obj,
         std::set<std::string> known, const std::string& shape)
      : where_(where), path_(std::move(path)), obj_(obj) {
    if (!obj.is_object()) Fail("", "must be a mapping: " + shape);
    for (const auto& [key, value] : obj.items()) {
      if (!known.count(key)) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        Fail(key, "is not a known key", "allowed here: " + list);
      }
    }
  }

  [[noreturn]] void Fail(const std::string& key, const std::string& problem,
                         const std::string& hint = "") const {
    const std::string field = key.empty() ? path_ : path_.empty() ? key : path_ + "." + key;
    throw InputError(where_, field, problem, hint);
  }

  const json* Get(const std::string& key) const {
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }

  std::string String(const std::string& key, bool required, const std::string& fallback = "") const {
    const json* v = Get(key);
    if (!v) {
      if (required) Fail(key, "is required");
      return fallback;
    }
    if (!v->is_string() || v->get<std::string>().empty()) Fail(key, Show(*v) + " is not a non-empty string");
    return v->get<std::string>();
  }

  bool Bool(const std::string& key, bool fallback) const {
    const json* v = Get(key);
    if (!v) return fallback;
    if (!v->is_boolean()) Fail(key, Show(*v) + " is not true or false");
    return v->get<bool>();
  }

  std::optional<int64_t> Int(const std::string& key, int64_t lo, int64_t hi) const {
    const json* v = Get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
      Fail(key, Show(*v) + " is not a whole number from " + std::to_string(lo) + " to " +
                    std::to_string(hi));
    }
    return v->get<int64_t>();
  }

  const std::string& path() const { return path_; }

 private:
  const std::string& where_;
  std::string path_;
  const json& obj_;
};

ExistingInstance ReadInstance(const std::string& where, const std::string& path, const json& obj,
                              const GpuModel& model) {
  Fields f(where, path, obj, {"profile", "start", "busy"}, "{profile, start, busy}");
  const std::string name = f.String("profile", true);
  std::optional<int> profile = FindProfile(model, name);
  if (!profile) {
    f.Fail("profile", model.name + " has no profile '" + name + "'", "its profiles: " + ProfileNameList(model));
  }
  std::optional<int64_t> start = f.Int("start", 0, model.memory_slices - 1);
  if (!start) f.Fail("start", "is required", "the instance's first memory slice (nvidia-smi mig -lgi)");
  return {{*profile, static_cast<int>(*start)}, f.Bool("busy", false)};
}

void CheckLayout(const std::string& where, const std::string& path, const GpuModel& model,
                 const std::vector<ExistingInstance>& instances) {
  MigLayout layout;
  for (const ExistingInstance& e : instances) layout.push_back(e.placement);
  std::vector<LayoutProblem> problems = ValidateLayout(model, layout);
  if (problems.empty()) return;
  std::string why;
  for (const LayoutProblem& p : problems) why += (why.empty() ? "" : "; ") + p.message;
  const int first = problems.front().instances.empty() ? -1 : problems.front().instances.front();
  throw InputError(where, path + ".instances" + (first < 0 ? "" : "[" + std::to_string(first) + "]"),
                   "the current layout is impossible on " + model.name + ": " + why,
                   "list the instances as `nvidia-smi mig -lgi` shows them");
}

// Appends the GPUs of one `gpus` entry (`count` of them).
void ReadGpu(const std::string& where, size_t i, const json& obj, std::map<std::string, int>& next_index,
             std::set<std::pair<std::string, int>>& seen, Fleet& fleet) {
  const std::string path = "gpus[" + std::to_string(i) + "]";
  Fields f(where, path, obj, {"node", "index", "model", "mig-enabled", "busy", "count", "instances"},
           "{node, index, model, mig-enabled, busy, count, instances}");
  FleetGpu gpu;
  gpu.node = f.String("node", false);
  const std::string model_name = f.String("model", true);
  gpu.model = FindGpuModel(model_name);
  if (!gpu.model) f.Fail("model", "unknown GPU model '" + model_name + "'", "known models: " + KnownModels());
  gpu.mig_enabled = f.Bool("mig-enabled", true);
  gpu.busy = f.Bool("busy", false);
  if (gpu.busy && gpu.mig_enabled) {
    f.Fail("busy", "applies only to a GPU with MIG off", "with MIG on, mark the busy instances instead");
  }
  if (const json* list = f.Get("instances")) {
    if (!list->is_array()) f.Fail("instances", "must be a list of {profile, start, busy}");
    if (!gpu.mig_enabled && !list->empty()) f.Fail("instances", "a GPU with MIG off has no instances");
    for (size_t j = 0; j < list->size(); ++j) {
      gpu.instances.push_back(ReadInstance(where, path + ".instances[" + std::to_string(j) + "]",
                                           (*list)[j], *gpu.model));
    }
    CheckLayout(where, path, *gpu.model, gpu.instances);
  }
  const int count = static_cast<int>(f.Int("count", 1, kMaxCount).value_or(1));
  const int first = static_cast<int>(f.Int("index", 0, kMaxIndex).value_or(next_index[gpu.node]));
  for (int n = 0; n < count; ++n) {
    gpu.index = first + n;
    if (gpu.index > kMaxIndex) f.Fail("count", "takes indices past " + std::to_string(kMaxIndex));
    if (!seen.emplace(gpu.node, gpu.index).second) {
      f.Fail(f.Get("index") ? "index" : "count",
             "GPU " + std::to_string(gpu.index) + " of node '" + gpu.node + "' is listed twice");
    }
    fleet.gpus.push_back(gpu);
  }
  next_index[gpu.node] = std::max(next_index[gpu.node], first + count);
}

}  // namespace

Fleet ParseFleet(std::string_view text, const std::string& source) {
  const json doc = ParseStructuredText(text, source);
  if (doc.is_null()) throw InputError(source, "", "is empty", "write `gpus:` with one entry per GPU");
  Fields top(source, "", doc, {"gpus"}, "{gpus: [...]}");
  const json* gpus = top.Get("gpus");
  if (!gpus || !gpus->is_array()) {
    throw InputError(source, "gpus", gpus ? "must be a list" : "is required",
                     "e.g. gpus: [{node: gpu-a, model: H100-SXM5-80GB, count: 8}]");
  }
  Fleet fleet;
  std::map<std::string, int> next_index;
  std::set<std::pair<std::string, int>> seen;
  for (size_t i = 0; i < gpus->size(); ++i) ReadGpu(source, i, (*gpus)[i], next_index, seen, fleet);
  return fleet;
}

Fleet LoadFleet(const std::string& path) { return ParseFleet(ReadWholeFile(path), path); }

Demand ParseDemand(std::string_view text, const std::string& source) {
  json doc = ParseStructuredText(text, source);
  if (doc.is_null()) throw InputError(source, "", "is empty", "write profile: count lines, e.g. 1g.10gb: 4");
  std::string prefix;
  if (doc.is_object() && doc.contains("demand")) {
    Fields top(source, "", doc, {"demand"}, "{demand: {profile: count}}");
    doc = json(doc["demand"]);
    prefix = "demand";
  }
  if (!doc.is_object()) {
    throw InputError(source, prefix, "must be a mapping of profile name to count", "e.g. 3g.40gb: 2");
  }
  Demand demand;
  for (const auto& [name, count] : doc.items()) {
    const std::string field = prefix.empty() ? name : prefix + "." + name;
    std::string why;
    std::optional<ProfileName> parsed = ParseProfileName(name, &why);
    if (!parsed) throw InputError(source, field, "is not a MIG profile name: " + why, "e.g. 1g.10gb");
    bool known = false;
    for (const GpuModel& m : MigCatalog()) known = known || FindProfile(m, name).has_value();
    if (!known) {
      throw InputError(source, field, "no GPU model has a GPU-instance profile of this name",
                       "demand names GI profiles as `nvidia-smi mig -lgip` prints them, e.g. 3g.40gb");
    }
    if (!count.is_number_integer() || count.get<int64_t>() < 0 || count.get<int64_t>() > kMaxDemand) {
      throw InputError(source, field, Show(count) + " is not a whole number from 0 to " +
                                          std::to_string(kMaxDemand));
    }
    demand.emplace_back(name, static_cast<int>(count.get<int64_t>()));
  }
  return demand;
}

Demand LoadDemand(const std::string& path) { return ParseDemand(ReadWholeFile(path), path); }

}  // namespace accel::sharing
