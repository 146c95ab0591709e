#include "dra/slice_publisher.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/hash.h"
#include "common/strings.h"

namespace accel::dra {

namespace {

using nlohmann::json;

constexpr const char* kHashAnnotation = "accel.io/slice-hash";
constexpr int kPasses = 3;

std::string StringAt(const json& o, const char* a, const char* b) {
  if (!o.is_object() || !o.contains(a) || !o[a].is_object() || !o[a].contains(b) || !o[a][b].is_string()) return "";
  return o[a][b].get<std::string>();
}

std::string PoolOf(const json& slice) {
  if (!slice.contains("spec") || !slice["spec"].is_object()) return "";
  return StringAt(slice["spec"], "pool", "name");
}

long long GenerationOf(const json& slice) {
  const json* g = nullptr;
  if (slice.contains("spec") && slice["spec"].is_object() && slice["spec"].contains("pool") &&
      slice["spec"]["pool"].is_object() && slice["spec"]["pool"].contains("generation"))
    g = &slice["spec"]["pool"]["generation"];
  return g && g->is_number_integer() ? g->get<long long>() : 0;
}

std::string HashOf(const json& slice) {
  if (!slice.contains("metadata") || !slice["metadata"].is_object()) return "";
  return StringAt(slice["metadata"], "annotations", kHashAnnotation);
}

std::string ItemPath(const std::string& name) { return kubeapi::ApiPath("resource.k8s.io/v1", "resourceslices", "", name); }

}  // namespace

const std::string& SlicePublisher::CollectionPath() {
  static const std::string path = kubeapi::ApiPath("resource.k8s.io/v1", "resourceslices");
  return path;
}

SlicePublisher::SlicePublisher(kubeapi::KubeClient* client, std::string driver, std::string node, Log log)
    : client_(client), driver_(std::move(driver)), node_(std::move(node)), log_(std::move(log)) {}

std::vector<json> SlicePublisher::ListPublished() {
  return client_->List(CollectionPath(), "", "spec.nodeName=" + node_ + ",spec.driver=" + driver_);
}

void SlicePublisher::EnsureOwner() {
  if (owner_) return;
  const std::string path = kubeapi::ApiPath("v1", "nodes", "", node_);
  std::string problem;
  try {
    const std::optional<json> node = client_->Get(path);
    const std::string uid = node ? StringAt(*node, "metadata", "uid") : "";
    if (!uid.empty()) {
      owner_ = json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_}, {"uid", uid}, {"controller", true}};
      return;
    }
    problem = node ? "it has no metadata.uid" : "no such Node";
  } catch (const SystemError& e) {
    problem = e.what();
  }
  if (log_)
    log_("dra: cannot read Node " + node_ + " (" + problem +
         "); publishing ResourceSlices without an owner, so they outlive the node until accel deletes them");
}

PublishResult SlicePublisher::Publish(const std::vector<json>& desired) {
  std::set<std::string> names;
  for (size_t i = 0; i < desired.size(); ++i) {
    const std::string field = "[" + std::to_string(i) + "]";
    if (!desired[i].is_object()) throw InputError("ResourceSlices to publish", field, "is not an object");
    const std::string name = StringAt(desired[i], "metadata", "name");
    if (name.empty()) throw InputError("ResourceSlices to publish", field + ".metadata.name", "missing or empty");
    if (!names.insert(name).second)
      throw InputError("ResourceSlices to publish", field + ".metadata.name", "'" + name + "' is given twice");
  }
  std::lock_guard<std::mutex> lock(mu_);
  EnsureOwner();
  PublishResult total;
  for (int pass = 1;; ++pass) {
    try {
      const PublishResult r = PublishOnce(desired);
      total.created += r.created;
      total.updated += r.updated;
      total.deleted += r.deleted;
      total.unchanged = r.unchanged;
      total.generation = r.generation;
      total.owner_set = r.owner_set;
      return total;
    } catch (const kubeapi::ApiError& e) {
      // Someone (an older agent, an admin) wrote a slice between our list and our write: list
      // again and redo the comparison.
      if (!(e.IsConflict() || e.IsAlreadyExists()) || pass >= kPasses) throw;
      if (log_) log_(std::string("dra: ResourceSlice write conflicted, publishing again: ") + e.what());
    }
  }
}

PublishResult SlicePublisher::PublishOnce(const std::vector<json>& desired_in) {
  PublishResult result;
  result.owner_set = owner_.has_value();

  // The desired slices as they will be stored, but for the generation; grouped by pool.
  std::vector<json> desired;
  std::map<std::string, int> pool_sizes;
  for (const json& d : desired_in) {
    json s = d;
    s["apiVersion"] = "resource.k8s.io/v1";
    s["kind"] = "ResourceSlice";
    if (!s.contains("spec") || !s["spec"].is_object()) s["spec"] = json::object();
    s["spec"]["driver"] = driver_;
    s["spec"]["nodeName"] = node_;
    if (!s["spec"].contains("pool") || !s["spec"]["pool"].is_object()) s["spec"]["pool"] = json::object();
    if (PoolOf(s).empty()) s["spec"]["pool"]["name"] = node_;
    ++pool_sizes[PoolOf(s)];
    desired.push_back(std::move(s));
  }
  for (json& s : desired) {
    s["spec"]["pool"]["resourceSliceCount"] = pool_sizes[PoolOf(s)];
    s["spec"]["pool"].erase("generation");
    json& meta = s["metadata"];
    for (const char* server_owned : {"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields"})
      meta.erase(server_owned);
    if (owner_) meta["ownerReferences"] = json::array({*owner_});
    if (meta.contains("annotations") && meta["annotations"].is_object()) meta["annotations"].erase(kHashAnnotation);
    const json content = {{"spec", s["spec"]},
                          {"labels", meta.value("labels", json::object())},
                          {"annotations", meta.value("annotations", json::object())},
                          {"owners", meta.value("ownerReferences", json::array())}};
    meta["annotations"][kHashAnnotation] = Hex16(Fnv1a(content.dump()));  // a fingerprint, not a security measure
  }

  std::set<std::string> wanted;
  for (const json& s : desired) wanted.insert(s["metadata"]["name"].get<std::string>());

  std::map<std::string, json> published;  // by name
  for (json& p : ListPublished()) {
    const std::string name = StringAt(p, "metadata", "name");
    if (!name.empty()) published[name] = std::move(p);
  }

  // Per pool: changed, and the generation to publish.
  std::map<std::string, long long> generation;
  std::map<std::string, bool> changed;
  std::map<std::string, std::set<long long>> published_generations;
  for (const auto& [name, p] : published) published_generations[PoolOf(p)].insert(GenerationOf(p));
  for (const json& s : desired) {
    const std::string pool = PoolOf(s);
    const auto it = published.find(s["metadata"]["name"].get<std::string>());
    if (it == published.end() || PoolOf(it->second) != pool || HashOf(it->second) != HashOf(s)) changed[pool] = true;
  }
  for (const auto& [name, p] : published) {
    const std::string pool = PoolOf(p);
    if (!pool_sizes.count(pool)) continue;
    if (!wanted.count(name)) changed[pool] = true;
  }
  for (const auto& [pool, size] : pool_sizes) {
    const std::set<long long>& gens = published_generations[pool];
    const long long highest = gens.empty() ? 0 : *gens.rbegin();
    if (gens.size() > 1) changed[pool] = true;  // a pool left half-updated by an earlier pass
    generation[pool] = changed[pool] || highest == 0 ? highest + 1 : highest;
    result.generation = std::max(result.generation, generation[pool]);
  }

  for (json& s : desired) {
    const std::string name = s["metadata"]["name"].get<std::string>();
    s["spec"]["pool"]["generation"] = generation[PoolOf(s)];
    const auto it = published.find(name);
    if (it == published.end()) {
      client_->Create(CollectionPath(), s);
      ++result.created;
    } else if (HashOf(it->second) == HashOf(s) && GenerationOf(it->second) == generation[PoolOf(s)] &&
               PoolOf(it->second) == PoolOf(s)) {
      ++result.unchanged;
    } else {
      s["metadata"]["resourceVersion"] = StringAt(it->second, "metadata", "resourceVersion");
      client_->Update(ItemPath(name), s);
      ++result.updated;
    }
  }
  for (const auto& [name, p] : published) {
    if (wanted.count(name)) continue;
    if (client_->Delete(ItemPath(name))) ++result.deleted;
  }
  return result;
}

int SlicePublisher::DeleteAll() {
  std::lock_guard<std::mutex> lock(mu_);
  int deleted = 0;
  for (const json& p : ListPublished()) {
    const std::string name = StringAt(p, "metadata", "name");
    if (!name.empty() && client_->Delete(ItemPath(name))) ++deleted;
  }
  return deleted;
}

}  // namespace accel::dra
