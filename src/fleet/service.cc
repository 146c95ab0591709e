#include "fleet/service.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "fleet/change_feed.h"
#include "fleet/fleet_json.h"
#include "fleet/pod_request.h"
#include "fleet/fleet_page.h"
#include "fleet/host_policy_file.h"
#include "fleet/labels.h"
#include "fleet/nova_usage.h"
#include "fleet/placing.h"
#include "fleet/scheduler.h"
#include "http/exposition.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"

namespace accel::fleet {

namespace {

// Upper bounds of the placement latency histogram, in seconds.
const double kLatencyBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

ServiceReply Json(int status, const nlohmann::ordered_json& doc) {
  ServiceReply r;
  r.status = status;
  // Errors quote what the client sent, which may not be UTF-8: replace such bytes, never throw.
  r.body = doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  return r;
}

ServiceReply Error(int status, const std::string& message) {
  nlohmann::ordered_json doc;
  doc["error"] = message;
  return Json(status, doc);
}

ServiceReply MethodNotAllowed(const std::string& allow) {
  ServiceReply r = Error(405, "method not allowed; use " + allow);
  r.allow = allow;
  return r;
}

// "a=1&b=x%2Fy" -> {a: 1, b: x/y}; repeated keys keep every value.
std::multimap<std::string, std::string> ParseQuery(const std::string& query) {
  auto decode = [](const std::string& s) { return PercentDecode(s, true); };
  std::multimap<std::string, std::string> out;
  std::stringstream ss(query);
  std::string part;
  while (std::getline(ss, part, '&')) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    out.emplace(decode(part.substr(0, eq)), eq == std::string::npos ? "" : decode(part.substr(eq + 1)));
  }
  return out;
}

nlohmann::json ParseBody(const std::string& body) {
  if (body.empty()) throw InputError("request body", "", "is empty", "send a JSON object (docs/fleet-api.yaml)");
  nlohmann::json doc = ParseStructuredText(body, "request body");
  if (!doc.is_object()) throw InputError("request body", "", "must be a JSON object", "see docs/fleet-api.yaml");
  return doc;
}

placement::PciAliasTable AliasesOf(const nlohmann::json& doc) {
  if (!doc.contains("aliases") || doc["aliases"].is_null()) return {};
  return placement::ParsePciAliases(doc["aliases"], "request body: aliases");
}

std::vector<placement::PlacementRequest> RequestsOf(const nlohmann::json& flavors, const placement::PciAliasTable& aliases,
                                                    const std::string& field) {
  std::vector<placement::PlacementRequest> out;
  for (const placement::Flavor& f : placement::ParseFlavors(flavors, "request body: " + field))
    out.push_back(placement::BuildRequest(f, aliases, "request body: " + field + " (flavor " + f.name + ")"));
  return out;
}

std::vector<LabelRequirement> WhereOf(const nlohmann::json& doc) {
  std::vector<LabelRequirement> where;
  if (!doc.contains("where")) return where;
  if (!doc["where"].is_array()) throw InputError("request body", "where", "must be a list of label terms", "e.g. [\"az=rack-3\"]");
  for (const nlohmann::json& t : doc["where"]) {
    if (!t.is_string()) throw InputError("request body", "where", "terms must be strings", "e.g. \"az=rack-3\"");
    where.push_back(ParseRequirement(t.get<std::string>(), "request body: where"));
  }
  return where;
}

// Refuses keys a route does not read: a misspelt "claimed" must not place without claiming.
void OnlyKeys(const nlohmann::json& doc, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : doc.items()) {
    bool ok = false;
    std::string list;
    for (const char* k : known) {
      ok = ok || key == k;
      list += std::string(list.empty() ? "" : ", ") + k;
    }
    if (!ok) throw InputError("request body", key, "is not a field of this request", "known: " + list);
  }
}

// A whole number in [lo, hi]; `fallback` when absent or null.
int IntField(const nlohmann::json& doc, const std::string& key, int fallback, int lo, int hi) {
  if (!doc.contains(key) || doc[key].is_null()) return fallback;
  const nlohmann::json& v = doc[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw InputError("request body", key, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(v.get<int64_t>());
}

// "partition": {"index": I, "count": N} (ScheduleOptions::partition); `fallback` when absent or null.
SchedulePartition PartitionField(const nlohmann::json& doc, const SchedulePartition& fallback) {
  if (!doc.contains("partition") || doc["partition"].is_null()) return fallback;
  const nlohmann::json& v = doc["partition"];
  const std::string hint = "{\"index\": 0, \"count\": 2} is the first of two replicas; {\"index\": 0, \"count\": 1} is none";
  if (!v.is_object()) throw InputError("request body", "partition", "must be an object with index and count", hint);
  for (const auto& [key, value] : v.items())
    if (key != "index" && key != "count") throw InputError("request body", "partition." + key, "is not a field of partition", hint);
  auto whole = [&](const char* key, int lo, int hi) {
    if (!v.contains(key) || !v[key].is_number_integer() || v[key].get<int64_t>() < lo || v[key].get<int64_t>() > hi)
      throw InputError("request body", std::string("partition.") + key,
                       "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi), hint);
    return static_cast<int>(v[key].get<int64_t>());
  };
  SchedulePartition p;
  p.count = whole("count", 1, 1024);
  p.index = whole("index", 0, p.count - 1);
  return p;
}

template <typename T>
T Field(const nlohmann::json& doc, const std::string& key, T fallback) {
  if (!doc.contains(key) || doc[key].is_null()) return fallback;
  try {
    return doc[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError("request body", key, "has the wrong type", "see docs/fleet-api.yaml");
  }
}

}  // namespace

// A fixed set of store connections: a request takes one for its duration.
class FleetService::Pool {
 public:
  Pool(const std::string& url, int n) {
    for (int i = 0; i < std::max(1, n); ++i) free_.push_back(FleetStore::Open(url));
  }
  class Lease {
   public:
    Lease(Pool& pool, std::unique_ptr<FleetStore> store) : pool_(pool), store_(std::move(store)) {}
    ~Lease() { pool_.Return(std::move(store_)); }
    FleetStore& operator*() { return *store_; }
    FleetStore* operator->() { return store_.get(); }
    FleetStore* get() { return store_.get(); }

   private:
    Pool& pool_;
    std::unique_ptr<FleetStore> store_;
  };
  Lease Take() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty(); });
    std::unique_ptr<FleetStore> s = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(s));
  }

 private:
  void Return(std::unique_ptr<FleetStore> s) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(s));
    cv_.notify_one();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<FleetStore>> free_;
};

// What the scheduler extender reaches of the service: its view, its pool, its change feed.
class FleetService::ExtenderLink : public ExtenderHost {
 public:
  explicit ExtenderLink(FleetService* service) : s_(service) {}
  void ReadView(const std::function<void(const FleetView&)>& read) override {
    std::shared_lock<std::shared_mutex> lock(s_->view_mu_);
    read(s_->view_);
  }
  void WithStore(const std::function<void(FleetStore&)>& use) override {
    auto lease = s_->pool_->Take();
    use(*lease);
  }
  void CatchUp(FleetStore& store) override { s_->RefreshChanged(store); }
  void AfterWrite(FleetStore& store, const PlaceOutcome* outcome) override {
    if (outcome && outcome->placed && outcome->retries == 0 && outcome->instances.size() == 1)
      s_->ApplyOwnClaim(outcome->instances[0], outcome->claim_ids.at(0));
    else
      s_->RefreshAfterWrite(store);
  }

 private:
  FleetService* s_;
};

FleetService::FleetService(ServiceOptions options)
    : options_(std::move(options)), latency_buckets_(std::size(kLatencyBuckets), 0) {
  ParsePartition(FormatPartition(options_.partition), "partition");  // throws unless 0 <= index < count
  pool_ = std::make_unique<Pool>(options_.store_url, options_.connections);
  refresher_store_ = FleetStore::Open(options_.store_url);
  FleetSnapshot snapshot = refresher_store_->Snapshot();
  change_mark_ = snapshot.change;
  view_ = FleetView::FromSnapshot(snapshot);
  refreshed_at_ = NowUnix();
  RecomputeCapacity();
  extender_link_ = std::make_unique<ExtenderLink>(this);
  extender_ = std::make_unique<SchedulerExtender>(*extender_link_, options_.extender);
}

FleetService::~FleetService() { Stop(); }

void FleetService::Start() {
  refresher_.Start(options_.refresh, [this] {
    RefreshNow();
    if (std::chrono::steady_clock::now() - capacity_at_ >= options_.capacity_every) RecomputeCapacity();
  });
  extender_->Start();
}

void FleetService::Stop() {
  refresher_.Stop();
  if (extender_) extender_->Stop();
}

bool FleetService::RefreshNow() {
  std::lock_guard<std::mutex> lock(refresher_mu_);  // the refresher thread and SIGHUP share it
  try {
    RefreshChanged(*refresher_store_);
    store_up_ = true;
    refreshed_at_ = NowUnix();
    return true;
  } catch (const std::exception&) {
    store_up_ = false;
    return false;
  }
}

void FleetService::RefreshChanged(FleetStore& store) {
  // One poll at a time: answers applied out of order could undo a newer one (a host removed in
  // the older answer and added again in the newer).
  std::lock_guard<std::mutex> polling(changes_mu_);
  // Claims only for hosts whose generation moved (or that are new): a heartbeat, or a row the
  // feed returns again (fleet_store.h), changes the record only.
  ChangeBatch batch = ReadChanges(store, change_mark_.load(), [this](const std::string& host) -> int64_t {
    std::shared_lock<std::shared_mutex> lock(view_mu_);
    const HostEntry* e = view_.Find(host);
    return e ? e->record.generation : -1;
  });
  const int64_t mark = batch.mark;
  std::unique_lock<std::shared_mutex> lock(view_mu_);
  ApplyChanges(std::move(batch), &view_, NowUnix());
  change_mark_ = mark;
}

void FleetService::ApplyOwnClaim(const Candidate& c, const std::string& claim_id) {
  std::unique_lock<std::shared_mutex> lock(view_mu_);
  const int i = view_.IndexOf(c.host);
  // A poll since the decision may have brought the host in already (with this claim, or with
  // others' that the next poll completes): then leave it to the polls.
  if (i < 0 || view_.hosts()[i].record.generation != c.generation) return;
  if (!view_.Apply(static_cast<size_t>(i), c.placement).empty()) return;
  HostEntry e = view_.hosts()[i];
  e.claims.push_back(claim_id);
  view_.Upsert(std::move(e));
}

void FleetService::RefreshAfterWrite(FleetStore& store) {
  try {
    RefreshChanged(store);
  } catch (const SystemError&) {
    store_up_ = false;  // the write is committed: answer it; the refresher catches up
  }
}

void FleetService::RecomputeCapacity() {
  capacity_at_ = std::chrono::steady_clock::now();
  if (options_.capacity_flavors.empty()) return;
  CapacityReport report;
  {
    std::shared_lock<std::shared_mutex> lock(view_mu_);
    report = fleet::Capacity(view_, options_.capacity_flavors, {});
  }
  std::unique_lock<std::shared_mutex> lock(view_mu_);
  capacity_ = std::move(report);
}

ServiceReply FleetService::Handle(const ServiceRequest& r) {
  try {
    const std::string& p = r.path;
    const bool get = r.method == "GET" || r.method == "HEAD";
    if (p == "/" || p == "/index.html") return get ? Page() : MethodNotAllowed("GET, HEAD");
    if (p.rfind("/hosts/", 0) == 0 && p.size() > 11 && p.substr(p.size() - 4) == ".svg") {
      if (!get) return MethodNotAllowed("GET, HEAD");
      std::string name;  // percent-decoded
      for (const auto& [k, v] : ParseQuery("n=" + p.substr(7, p.size() - 11))) name = v;
      // Claims first: never wait for a store connection while holding the view.
      std::vector<Claim> claims = pool_->Take()->ListClaims(name);
      std::shared_lock<std::shared_mutex> lock(view_mu_);
      const HostEntry* e = view_.Find(name);
      if (!e) return Error(404, "no host '" + name + "'");
      ServiceReply reply;
      reply.content_type = "image/svg+xml";
      reply.body = HostPicture(*e, claims);
      return reply;
    }
    if (p == "/api/v1/hosts" || p.rfind("/api/v1/hosts/", 0) == 0) return get ? Hosts(r) : MethodNotAllowed("GET, HEAD");
    if (p == "/api/v1/claims") {
      if (!get) return MethodNotAllowed("GET, HEAD");
      std::optional<std::string> host;
      auto q = ParseQuery(r.query);
      if (auto it = q.find("host"); it != q.end()) host = it->second;
      return Json(200, ClaimsJson(pool_->Take()->ListClaims(host)));
    }
    if (p.rfind("/api/v1/claims/", 0) == 0) {
      if (r.method != "DELETE") return MethodNotAllowed("DELETE");
      return Release({p.substr(15)}, true);
    }
    if (p == "/api/v1/release") {
      if (r.method != "POST") return MethodNotAllowed("POST");
      nlohmann::json doc = ParseBody(r.body);
      OnlyKeys(doc, {"ids"});
      std::vector<std::string> ids = Field<std::vector<std::string>>(doc, "ids", {});
      if (ids.empty()) throw InputError("request body", "ids", "is missing or empty", "e.g. {\"ids\": [\"c-0123456789ab\"]}");
      return Release(ids, false);
    }
    if (p == "/api/v1/place") return r.method == "POST" ? Place(r) : MethodNotAllowed("POST");
    if (p == "/api/v1/capacity") return r.method == "POST" ? Capacity(r) : MethodNotAllowed("POST");
    if (p == "/api/v1/filter") return r.method == "POST" ? Filter(r) : MethodNotAllowed("POST");
    if (const std::string prefix = SchedulerExtender::kPrefix;
        p.rfind(prefix, 0) == 0 && SchedulerExtender::IsVerb(p.substr(prefix.size()))) {
      if (r.method != "POST") return MethodNotAllowed("POST");
      ExtenderReply reply = extender_->Handle(p.substr(prefix.size()), r.body);
      return {reply.status, "application/json", std::move(reply.body), ""};
    }
    return Error(404, "no such path: " + p + " (docs/fleet-api.yaml lists the API)");
  } catch (const InputError& e) {
    return Error(400, e.what());
  } catch (const SystemError& e) {
    store_up_ = false;
    return Error(503, e.what());
  }
}

ServiceReply FleetService::Hosts(const ServiceRequest& r) {
  if (r.path.size() > std::string("/api/v1/hosts/").size()) {
    const std::string name = r.path.substr(14);
    // Claims first: never wait for a store connection while holding the view.
    nlohmann::ordered_json claims = ClaimsJson(pool_->Take()->ListClaims(name))["claims"];
    std::shared_lock<std::shared_mutex> lock(view_mu_);
    const HostEntry* e = view_.Find(name);
    if (!e) return Error(404, "no host '" + name + "'");
    nlohmann::ordered_json doc = HostJson(*e, view_.taken_at());
    doc["claims"] = claims;
    return Json(200, doc);
  }
  std::shared_lock<std::shared_mutex> lock(view_mu_);
  std::vector<LabelRequirement> where;
  for (const auto& [k, v] : ParseQuery(r.query))
    if (k == "where") where.push_back(ParseRequirement(v, "query: where"));
  nlohmann::ordered_json doc;
  doc["schema"] = "accel.fleet-hosts/v1";
  doc["hosts"] = nlohmann::ordered_json::array();
  for (const HostEntry& e : view_.hosts())
    if (MatchesAll(where, e.record.labels)) doc["hosts"].push_back(HostJson(e, view_.taken_at()));
  return Json(200, doc);
}

ServiceReply FleetService::Place(const ServiceRequest& r) {
  const auto started = std::chrono::steady_clock::now();
  nlohmann::json doc = ParseBody(r.body);
  OnlyKeys(doc, {"flavor", "pod", "aliases", "count", "different_hosts", "where", "strategy", "policy", "alternates", "seed",
                 "subset_size", "partition", "claim"});
  if (doc.contains("flavor") == doc.contains("pod"))
    throw InputError("request body", doc.contains("pod") ? "pod" : "flavor", doc.contains("pod") ? "is given with a flavor" : "is missing",
                     "the flavor as an object (name, vcpus, ram, extra_specs), or a pod-shaped request as \"pod\" "
                     "(name, cpu_milli, memory_mib, gpu): one of them");
  std::vector<placement::PlacementRequest> reqs;
  if (doc.contains("pod")) reqs.push_back(PodRequestFromJson(doc["pod"], "request body: pod"));
  else reqs = RequestsOf(doc["flavor"], AliasesOf(doc), "flavor");
  if (reqs.size() != 1) throw InputError("request body", "flavor", "must be one flavor");
  ScheduleOptions so;
  if (doc.contains("policy")) so.gpu_policy = ParseGpuPolicy(Field<std::string>(doc, "policy", "accel"), "request body: policy");
  so.where = WhereOf(doc);
  const std::string strategy = Field<std::string>(doc, "strategy", "pack");
  if (strategy != "pack" && strategy != "spread") throw InputError("request body", "strategy", "must be pack or spread");
  so.strategy = strategy == "spread" ? FleetStrategy::kSpread : FleetStrategy::kPack;
  so.count = IntField(doc, "count", 1, 1, 100000);
  so.different_hosts = Field<bool>(doc, "different_hosts", false);
  so.alternates = IntField(doc, "alternates", 4, 0, 64);
  so.tiebreak_seed = Field<std::string>(doc, "seed", options_.seed);
  so.subset_size = IntField(doc, "subset_size", options_.subset_size, 1, 64);
  if (so.subset_size > 1 && so.tiebreak_seed.empty())
    throw InputError("request body", "subset_size", "chooses among the best hosts by the seed's order",
                     "give a seed in the request, or start the replica with --seed");
  so.partition = PartitionField(doc, options_.partition);
  const bool claim = Field<bool>(doc, "claim", false);

  auto lease = pool_->Take();
  int round = 0;
  // Hosts this request registered as in flight; unregistered however the request ends.
  std::vector<std::string> registered;
  struct Unregister {
    FleetService* self;
    std::vector<std::string>* hosts;
    ~Unregister() {
      std::lock_guard<std::mutex> lock(self->in_flight_mu_);
      for (const std::string& h : *hosts)
        if (--self->in_flight_[h] <= 0) self->in_flight_.erase(h);
    }
  } unregister{this, &registered};
  PlaceOutcome outcome = PlaceInFleet(claim ? lease.get() : nullptr, [&] {
    // Every candidate of a round was taken: look at the store before the next round.
    if (round++ > 0) RefreshChanged(*lease);
    std::lock_guard<std::mutex> in_flight(in_flight_mu_);
    std::shared_lock<std::shared_mutex> lock(view_mu_);
    so.now_unix = NowUnix();
    // First round: skip hosts other requests of this replica are claiming on right now.
    so.skip_hosts.clear();
    if (round == 1)
      for (const auto& [host, requests] : in_flight_)
        if (const int i = view_.IndexOf(host); i >= 0) so.skip_hosts.push_back(static_cast<size_t>(i));
    ScheduleResult decision = Schedule(view_, reqs[0], so);
    if (claim)
      for (const InstanceDecision& d : decision.instances) {
        ++in_flight_[d.chosen.host];
        registered.push_back(d.chosen.host);
      }
    return decision;
  });
  // Its own claim goes into the view at once (no statement: the view's generation of the host
  // moves as the store's did). When a candidate was refused, the view was behind the store:
  // one poll of the change feed brings in what the others did.
  if (claim) {
    if (outcome.placed && outcome.retries == 0 && outcome.instances.size() == 1)
      ApplyOwnClaim(outcome.instances[0], outcome.claim_ids.at(0));
    else
      RefreshAfterWrite(*lease);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  {
    std::lock_guard<std::mutex> lock(histogram_mu_);
    for (size_t b = 0; b < std::size(kLatencyBuckets); ++b)
      if (seconds <= kLatencyBuckets[b]) ++latency_buckets_[b];
    ++latency_count_;
    latency_sum_ += seconds;
  }
  if (outcome.placed) ++placed_;
  else if (outcome.lost_race) ++lost_race_;
  else ++no_fit_;
  retries_ += static_cast<uint64_t>(outcome.retries);
  if (outcome.placed && so.partition.count > 1)
    for (const Candidate& c : outcome.instances)
      if (PartitionOfHost(c.host, so.partition.count) != so.partition.index) ++partition_fallbacks_;
  if (outcome.retries > 0) ++conflicted_requests_;
  return Json(200, PlaceOutcomeJson(outcome, reqs[0].flavor, so.count, claim));
}

ServiceReply FleetService::Capacity(const ServiceRequest& r) {
  nlohmann::json doc = ParseBody(r.body);
  OnlyKeys(doc, {"flavors", "aliases", "where", "group_by"});
  if (!doc.contains("flavors")) throw InputError("request body", "flavors", "is missing", "a list of flavor objects");
  std::vector<placement::PlacementRequest> reqs = RequestsOf(doc["flavors"], AliasesOf(doc), "flavors");
  CapacityOptions co;
  co.where = WhereOf(doc);
  co.group_by = Field<std::string>(doc, "group_by", "");
  co.now_unix = NowUnix();
  std::shared_lock<std::shared_mutex> lock(view_mu_);
  return Json(200, CapacityJson(fleet::Capacity(view_, reqs, co), co.group_by));
}

ServiceReply FleetService::Filter(const ServiceRequest& r) {
  nlohmann::json doc = ParseBody(r.body);
  OnlyKeys(doc, {"flavor", "aliases", "hosts", "count", "usage"});
  if (!doc.contains("flavor")) throw InputError("request body", "flavor", "is missing");
  std::vector<placement::PlacementRequest> reqs = RequestsOf(doc["flavor"], AliasesOf(doc), "flavor");
  if (reqs.size() != 1) throw InputError("request body", "flavor", "must be one flavor");
  std::vector<std::string> names = Field<std::vector<std::string>>(doc, "hosts", {});
  const int count = IntField(doc, "count", 1, 1, 100000);
  nlohmann::ordered_json out;
  out["schema"] = "accel.fleet-filter/v1";
  out["flavor"] = reqs[0].flavor;
  out["hosts"] = nlohmann::ordered_json::array();
  out["rejected"] = nlohmann::ordered_json::object();
  // Per host, Nova's usage when the caller sends it (hosts Nova places on hold no accel claims).
  const nlohmann::json nova_usage =
      doc.contains("usage") && !doc["usage"].is_null() ? doc["usage"] : nlohmann::json::object();
  if (!nova_usage.is_object()) throw InputError("request body", "usage", "must map host names to their usage");
  std::shared_lock<std::shared_mutex> lock(view_mu_);
  const int64_t now = NowUnix();
  // Hosts in the same state get the same answer: ask the engine once per distinct state.
  std::unordered_map<std::string, std::string> answers;
  for (const std::string& name : names) {
    const HostEntry* e = view_.Find(name);
    std::string why;
    if (!e) why = "not in the accel fleet";
    else if (e->record.state != HostAdminState::kEnabled) why = std::string("host is ") + HostAdminStateName(e->record.state);
    else if (IsStale(e->record, now)) why = "stale: no heartbeat from its agent";
    else {
      placement::HostUsage usage = e->usage;
      std::string key = e->usage_key;
      if (nova_usage.contains(name)) {
        try {
          usage = UsageFromNova(nova_usage[name], *e->hardware, "usage." + name);
          key = e->record.topology_id + "|" + HostPolicyToJson(e->record.policy).dump() + "|nova|" + nova_usage[name].dump();
        } catch (const InputError& bad) {  // this host only: the others are still answered
          why = "Nova's usage does not match accel's record of the host: " + std::string(bad.what());
        }
      }
      auto known = answers.find(key);
      if (!why.empty()) {
      } else if (known != answers.end()) {
        why = known->second;
      } else {
        // `count` instances one after another on this host (Nova's num_instances on one host).
        for (int k = 0; k < count && why.empty(); ++k) {
          placement::PlaceResult fit = placement::Place(*e->hardware, usage, e->record.policy, reqs[0]);
          if (!fit.fits()) why = NoFitReason(fit.no_fit);
          else usage.Apply(*fit.placement);
        }
        answers.emplace(key, why);
      }
    }
    if (why.empty()) out["hosts"].push_back(name);
    else out["rejected"][name] = why;
  }
  return Json(200, out);
}

ServiceReply FleetService::Release(const std::vector<std::string>& ids, bool single) {
  auto lease = pool_->Take();
  nlohmann::ordered_json doc;
  doc["released"] = nlohmann::ordered_json::array();
  doc["missing"] = nlohmann::ordered_json::array();
  for (const std::string& id : ids) {
    if (lease->Release(id)) doc["released"].push_back(id);
    else doc["missing"].push_back(id);
  }
  RefreshAfterWrite(*lease);
  if (single && doc["released"].empty()) return Error(404, "no claim " + ids.front());
  return Json(200, doc);
}

ServiceReply FleetService::Page() {
  std::shared_lock<std::shared_mutex> lock(view_mu_);
  ServiceReply reply;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = FleetPage(view_, capacity_, view_.taken_at());
  return reply;
}

std::string FleetService::Metrics() {
  using http::MetricType;
  std::string out;
  http::ExpositionWriter w(&out);
  // A family of one unlabelled sample (every such value here is a count or whole seconds).
  auto one = [&w](std::string_view name, std::string_view help, MetricType type, int64_t value) {
    w.BeginFamily(name, help, type);
    w.StartSample();
    w.FinishInt(value);
  };
  std::shared_lock<std::shared_mutex> lock(view_mu_);
  const int64_t now = view_.taken_at();
  std::map<std::string, int> states = {{"enabled", 0}, {"disabled", 0}, {"maintenance", 0}, {"stale", 0}};
  size_t claims = 0;
  for (const HostEntry& e : view_.hosts()) {
    ++states[HostAdminStateName(e.record.state)];
    if (IsStale(e.record, now)) ++states["stale"];
    claims += e.claims.size();
  }
  w.BeginFamily("accel_fleet_hosts", "Hosts in the fleet by state (stale: no agent heartbeat, any state).", MetricType::kGauge);
  for (const auto& [state, n] : states) {
    w.StartSample();
    w.AddLabel("state", state);
    w.FinishInt(n);
  }
  one("accel_fleet_claims", "Live claims in the store, as this replica last saw them.", MetricType::kGauge, static_cast<int64_t>(claims));
  // This replica's share of the hosts (ServiceOptions::partition; all of them without one).
  size_t own_hosts = 0;
  for (const RankRow& row : view_.rows())
    own_hosts += PartitionOf(row.name_hash, options_.partition.count) == options_.partition.index ? 1 : 0;
  w.BeginFamily("accel_fleet_partition_hosts", "Hosts of this replica's partition (--replica INDEX/COUNT; all hosts without one).", MetricType::kGauge);
  w.StartSample();
  w.AddLabel("partition", FormatPartition(options_.partition));
  w.FinishUint(own_hosts);
  w.BeginFamily("accel_fleet_host_accelerators_free", "GPUs/HPUs no claim holds, per host.", MetricType::kGauge);
  for (const HostEntry& e : view_.hosts()) {
    w.StartSample();
    w.AddLabel("host", e.record.name);
    w.FinishInt(e.summary.free_accelerators);
  }
  std::map<std::string, const StrandedHost*> stranded;
  for (const StrandedHost& s : capacity_.stranded) stranded[s.host] = &s;
  w.BeginFamily("accel_fleet_host_accelerators_stranded", "Free GPUs/HPUs of a kind the capacity flavors ask for that none of them can use (stranded by fragmentation), per host.", MetricType::kGauge);
  for (const HostEntry& e : view_.hosts()) {
    w.StartSample();
    w.AddLabel("host", e.record.name);
    auto it = stranded.find(e.record.name);
    w.FinishUint(it == stranded.end() ? 0 : it->second->stranded.size());
  }
  w.BeginFamily("accel_fleet_host_accelerators_unwanted", "Free GPUs/HPUs of a kind no capacity flavor asks for, per host.", MetricType::kGauge);
  for (const HostEntry& e : view_.hosts()) {
    w.StartSample();
    w.AddLabel("host", e.record.name);
    auto it = stranded.find(e.record.name);
    w.FinishUint(it == stranded.end() ? 0 : it->second->unwanted.size());
  }
  std::map<std::string, const HostFragmentationLine*> fragmentation;
  for (const HostFragmentationLine& l : capacity_.fragmentation) fragmentation[l.host] = &l;
  w.BeginFamily("accel_fleet_host_gpus_fragmented", "Free GPU capacity (GPUs) the capacity flavors cannot use, per host: F(h) of docs/fleet-efficiency.md.", MetricType::kGauge);
  for (const HostEntry& e : view_.hosts()) {
    w.StartSample();
    w.AddLabel("host", e.record.name);
    auto it = fragmentation.find(e.record.name);
    w.FinishShortest(it == fragmentation.end() ? 0.0 : it->second->fragmented_milli / 1000.0);
  }
  w.BeginFamily("accel_fleet_gpus_free", "Free GPU capacity of the fleet (GPUs; free parts of shared GPUs included).", MetricType::kGauge);
  w.StartSample();
  w.FinishShortest(static_cast<double>(capacity_.free_gpu_milli) / 1000.0);
  w.BeginFamily("accel_fleet_gpus_fragmented", "Free GPU capacity (GPUs) the capacity flavors cannot use: the fleet's fragmentation.", MetricType::kGauge);
  w.StartSample();
  w.FinishShortest(capacity_.fragmented_gpu_milli / 1000.0);
  w.BeginFamily("accel_fleet_gpus_unwanted", "Free GPU capacity (GPUs) of a kind no capacity flavor asks for.", MetricType::kGauge);
  w.StartSample();
  w.FinishShortest(static_cast<double>(capacity_.unwanted_gpu_milli) / 1000.0);
  w.BeginFamily("accel_fleet_capacity_instances", "More instances of the flavor the fleet takes (fleet capacity).", MetricType::kGauge);
  for (const FlavorCapacity& f : capacity_.flavors) {
    w.StartSample();
    w.AddLabel("flavor", f.flavor);
    w.FinishInt(f.count);
  }
  lock.unlock();
  w.BeginFamily("accel_fleet_placements_total", "Place requests by result.", MetricType::kCounter);
  for (const auto& [result, n] : {std::pair<const char*, uint64_t>{"placed", placed_}, {"no_fit", no_fit_}, {"lost_race", lost_race_}}) {
    w.StartSample();
    w.AddLabel("result", result);
    w.FinishUint(n);
  }
  one("accel_fleet_claim_retries_total", "Candidates refused by the store (taken by another scheduler) before a claim.", MetricType::kCounter, static_cast<int64_t>(retries_.load()));
  one("accel_fleet_claim_conflicts_total", "Place requests that met at least one conflict.", MetricType::kCounter, static_cast<int64_t>(conflicted_requests_.load()));
  one("accel_fleet_partition_fallbacks_total", "Instances placed outside the request's partition (no fitting host of its own left).", MetricType::kCounter, static_cast<int64_t>(partition_fallbacks_.load()));
  {
    std::lock_guard<std::mutex> hl(histogram_mu_);
    w.BeginFamily("accel_fleet_placement_duration_seconds", "Time to answer a place request (decide and claim).", MetricType::kHistogram);
    std::string le;
    for (size_t b = 0; b < std::size(kLatencyBuckets); ++b) {
      le.clear();
      http::AppendShortest(&le, kLatencyBuckets[b]);
      w.StartSample("_bucket");
      w.AddLabel("le", le);
      w.FinishUint(latency_buckets_[b]);
    }
    w.StartSample("_bucket");
    w.AddLabel("le", "+Inf");
    w.FinishUint(latency_count_);
    w.StartSample("_sum");
    w.FinishShortest(latency_sum_);
    w.StartSample("_count");
    w.FinishUint(latency_count_);
  }
  w.BeginFamily("accel_fleet_extender_requests_total",
                "kube-scheduler's extender calls by verb and result (error: answered with Error set; bad_request: 400; "
                "store_unavailable: 503).",
                MetricType::kCounter);
  for (const ExtenderCount& c : extender_->Counts()) {
    w.StartSample();
    w.AddLabel("verb", c.verb);
    w.AddLabel("result", c.result);
    w.FinishUint(c.count);
  }
  one("accel_fleet_store_up", "Whether the last look at the store succeeded.", MetricType::kGauge, store_up_ ? 1 : 0);
  one("accel_fleet_view_age_seconds", "Seconds since this replica last read the store.", MetricType::kGauge, NowUnix() - refreshed_at_);
  return out;
}

}  // namespace accel::fleet
