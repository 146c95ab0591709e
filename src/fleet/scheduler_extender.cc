#include "fleet/scheduler_extender.h"

#include <algorithm>

#include "common/error.h"
#include "common/strings.h"
#include "fleet/scheduler.h"
#include "placement/gpu_fit.h"

namespace accel::fleet {

namespace {

constexpr const char* kReasonPrefix = "accel: ";
constexpr const char* kVerbNames[] = {"filter", "prioritize", "bind"};
constexpr const char* kResultNames[] = {"ok", "error", "bad_request", "store_unavailable"};

ExtenderReply Reply(int status, const nlohmann::ordered_json& doc) {
  // Reasons quote pod and node names: replace bytes that are not UTF-8, never throw.
  return {status, doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"};
}

// Every node of `args` passes (a pod that is not accel's).
void PassAll(const ExtenderArgs& args, ExtenderFilterResult* out) {
  out->node_names = args.node_names;
  out->nodes = args.nodes;
}

// Node `i` of `args` passes.
void Pass(const ExtenderArgs& args, size_t i, ExtenderFilterResult* out) {
  if (args.node_cache_capable) out->node_names.push_back(args.node_names[i]);
  else out->nodes.push_back(args.nodes[i]);
}

// Whether `claim` is the claim of pod `uid` (PodUidNote in its placement).
bool IsClaimOf(const Claim& claim, const std::string& flavor, const std::string& uid) {
  if (claim.flavor != flavor) return false;
  const std::string note = PodUidNote(uid);
  return std::find(claim.placement.notes.begin(), claim.placement.notes.end(), note) != claim.placement.notes.end();
}

// The pod's UID from its claim's notes; "" when none.
std::string UidOfClaim(const Claim& claim) {
  const std::string prefix = PodUidNote("");
  for (const std::string& n : claim.placement.notes)
    if (n.rfind(prefix, 0) == 0) return n.substr(prefix.size());
  return "";
}

// Whether hardware `hw` has an accelerator of a model `gpu` allows (else the pod never fits there).
bool HasAllowedGpu(const HardwareInfo& hw, const placement::GpuRequest& gpu) {
  for (const topology::PciDevice* d : hw.accelerators)
    if (placement::GpuModelMatches(placement::GpuModelOf(*d), d->vendor_id, d->device_id, gpu.models)) return true;
  return false;
}

std::string StringAt(const nlohmann::json& doc, const char* object, const char* key) {
  if (!doc.is_object() || !doc.contains(object) || !doc[object].is_object()) return "";
  const nlohmann::json& o = doc[object];
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

}  // namespace

std::string PodUidNote(const std::string& uid) { return "pod uid " + uid; }

SchedulerExtender::SchedulerExtender(ExtenderHost& host, ExtenderOptions options)
    : host_(host), options_(std::move(options)) {}

SchedulerExtender::~SchedulerExtender() { Stop(); }

void SchedulerExtender::Start() {
  if (!options_.read_pod || options_.release_gone_every.count() <= 0) return;
  gone_.Start(options_.release_gone_every, [this] {
    try {
      ReleaseGonePods();
    } catch (const std::exception&) {
      // The store or the API server is down: the claims wait for the next round.
    }
  });
}

void SchedulerExtender::Stop() { gone_.Stop(); }

bool SchedulerExtender::IsVerb(const std::string& verb) {
  return verb == "filter" || verb == "prioritize" || verb == "bind";
}

ExtenderReply SchedulerExtender::Handle(const std::string& verb, const std::string& body) {
  int v = 0;
  while (v < kVerbs && verb != kVerbNames[v]) ++v;
  if (v == kVerbs) return Reply(404, ErrorResultJson("no extender verb '" + verb + "' (filter, prioritize, bind)"));
  try {
    ExtenderReply reply;
    std::string error;
    if (v == 0) {
      reply = Reply(200, FilterResultJson(Filter(ReadExtenderArgs(body))));
    } else if (v == 1) {
      reply = Reply(200, PriorityListJson(Prioritize(ReadExtenderArgs(body))));
    } else {
      error = Bind(ReadExtenderBindingArgs(body));
      reply = Reply(200, ErrorResultJson(error));
    }
    ++counts_[v][error.empty() ? 0 : 1];
    return reply;
  } catch (const InputError& e) {
    ++counts_[v][2];
    return Reply(400, ErrorResultJson(e.what()));
  } catch (const SystemError&) {
    ++counts_[v][3];
    throw;  // the service answers 503
  }
}

std::vector<ExtenderCount> SchedulerExtender::Counts() const {
  std::vector<ExtenderCount> out;
  for (int v = 0; v < kVerbs; ++v)
    for (int r = 0; r < kResults; ++r) out.push_back({kVerbNames[v], kResultNames[r], counts_[v][r].load()});
  return out;
}

ScheduleOptions SchedulerExtender::Options() const {
  ScheduleOptions so;
  so.gpu_policy = options_.policy;
  so.now_unix = NowUnix();
  so.alternates = 0;
  return so;
}

void SchedulerExtender::Remember(const PodAsk& ask) {
  std::lock_guard<std::mutex> lock(remembered_mu_);
  if (auto it = by_uid_.find(ask.uid); it != by_uid_.end()) remembered_.erase(it->second);
  remembered_.push_front(ask);
  by_uid_[ask.uid] = remembered_.begin();
  while (remembered_.size() > std::max<size_t>(1, options_.remembered_pods)) {
    by_uid_.erase(remembered_.back().uid);
    remembered_.pop_back();
  }
}

std::optional<PodAsk> SchedulerExtender::Recall(const std::string& uid) {
  std::lock_guard<std::mutex> lock(remembered_mu_);
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return std::nullopt;
  return *it->second;
}

ExtenderFilterResult SchedulerExtender::Filter(const ExtenderArgs& args) {
  ExtenderFilterResult out;
  out.node_cache_capable = args.node_cache_capable;
  const PodAsk ask = ReadPodAsk(args.pod);
  if (!ask.accel()) {
    PassAll(args, &out);
    return out;
  }
  Remember(ask);
  auto unresolvable = [&](const std::string& node, const std::string& why) {
    out.failed_and_unresolvable_nodes[node] = kReasonPrefix + why;
  };
  if (!ask.refused.empty()) {
    for (const std::string& node : args.node_names) unresolvable(node, ask.refused);
    return out;
  }
  host_.ReadView([&](const FleetView& view) {
    std::string why;
    const std::optional<placement::PlacementRequest> request = PodPlacementRequest(ask, view, options_.mig_shapes, &why);
    if (!request) {
      for (const std::string& node : args.node_names) unresolvable(node, why);
      return;
    }
    const ScheduleOptions so = Options();
    // Nodes the fleet can judge now; the others fail here, whatever the pod asks.
    std::vector<size_t> judged, at;  // view indexes, and their places in args
    for (size_t k = 0; k < args.node_names.size(); ++k) {
      const std::string& node = args.node_names[k];
      const int i = view.IndexOf(node);
      if (i < 0) {
        unresolvable(node, "not an accel fleet host");
        continue;
      }
      const HostEntry& e = view.hosts()[i];
      const RankRow& row = view.rows()[i];
      if (!row.enabled) {
        unresolvable(node, std::string("the fleet host's state is ") + HostAdminStateName(e.record.state));
        continue;
      }
      if (so.now_unix > row.stale_after_unix) {
        unresolvable(node, "stale: no heartbeat from its agent");
        continue;
      }
      if (!HasAllowedGpu(view.hardware()[row.hardware], *request->gpu)) {
        unresolvable(node, "no " + ask.gpu_resource + " GPU here" +
                               (ask.models.empty() ? "" : " of model " + JoinStrings(ask.models, "|")));
        continue;
      }
      judged.push_back(static_cast<size_t>(i));
      at.push_back(k);
    }
    const std::vector<HostVerdict> verdicts = JudgeHosts(view, *request, so, judged);
    for (size_t j = 0; j < verdicts.size(); ++j) {
      const size_t k = at[j];
      if (verdicts[j].fits) Pass(args, k, &out);
      else out.failed_nodes[args.node_names[k]] = kReasonPrefix + verdicts[j].reason;
    }
  });
  return out;
}

std::vector<HostPriority> SchedulerExtender::Prioritize(const ExtenderArgs& args) {
  std::vector<HostPriority> out;
  for (const std::string& node : args.node_names) out.push_back({node, 0});
  const PodAsk ask = ReadPodAsk(args.pod);
  if (!ask.accel()) return out;
  Remember(ask);
  if (!ask.refused.empty()) return out;
  host_.ReadView([&](const FleetView& view) {
    std::string why;
    const std::optional<placement::PlacementRequest> request = PodPlacementRequest(ask, view, options_.mig_shapes, &why);
    if (!request) return;
    std::vector<size_t> judged, at;
    for (size_t k = 0; k < args.node_names.size(); ++k)
      if (const int i = view.IndexOf(args.node_names[k]); i >= 0) {
        judged.push_back(static_cast<size_t>(i));
        at.push_back(k);
      }
    const std::vector<HostVerdict> verdicts = JudgeHosts(view, *request, Options(), judged);
    for (size_t j = 0; j < verdicts.size(); ++j)
      if (verdicts[j].fits) out[at[j]].score = (verdicts[j].score * kMaxExtenderPriority + 50) / 100;
  });
  return out;
}

std::string SchedulerExtender::AskOf(const ExtenderBindingArgs& args, PodAsk* ask) {
  const std::string pod = "pod " + args.pod_namespace + "/" + args.pod_name;
  if (std::optional<PodAsk> seen = Recall(args.pod_uid)) {
    *ask = *seen;
  } else if (options_.read_pod) {
    std::optional<nlohmann::json> object;
    try {
      object = options_.read_pod(args.pod_namespace, args.pod_name);
    } catch (const std::exception& e) {
      return "cannot read " + pod + " from the API server: " + e.what();
    }
    if (!object) return pod + " is gone";
    try {
      *ask = ReadPodAsk(*object);
    } catch (const InputError& e) {
      return "cannot read " + pod + ": " + e.what();
    }
  } else {
    return pod + " (uid " + args.pod_uid +
           ") was not seen by this replica's filter or prioritize, and it cannot read pods from the API server";
  }
  if (ask->uid != args.pod_uid) return pod + " is now another pod (uid " + ask->uid + ", not " + args.pod_uid + ")";
  if (ask->ns != args.pod_namespace || ask->name != args.pod_name)
    return "pod uid " + args.pod_uid + " is " + ask->ns + "/" + ask->name + ", not " + args.pod_namespace + "/" + args.pod_name;
  return "";
}

std::string SchedulerExtender::CreateBinding(const ExtenderBindingArgs& args, bool* release) {
  *release = true;
  std::string error;
  try {
    options_.bind({args.pod_namespace, args.pod_name, args.pod_uid, args.node});
    return "";
  } catch (const std::exception& e) {
    error = e.what();
  }
  // A Binding that failed may still have bound the pod: an earlier try whose answer was lost
  // (the API server then answers Conflict). Only the pod itself tells.
  if (options_.read_pod) {
    try {
      const std::optional<nlohmann::json> pod = options_.read_pod(args.pod_namespace, args.pod_name);
      if (pod && StringAt(*pod, "metadata", "uid") == args.pod_uid && StringAt(*pod, "spec", "nodeName") == args.node)
        return "";
    } catch (const std::exception& e) {
      *release = false;  // not known: keep the claim (ReleaseGonePods settles it later)
      error += "; and the pod cannot be read to see whether it is bound: " + std::string(e.what());
    }
  }
  return "cannot bind pod " + args.pod_namespace + "/" + args.pod_name + " to node " + args.node + ": " + error;
}

std::string SchedulerExtender::Bind(const ExtenderBindingArgs& args) {
  if (!options_.bind)
    return "accel fleet serve has no API server access to bind pods: start it with --kubeconfig FILE or "
           "--in-cluster, or leave bindVerb out of the scheduler's extender config (kube-scheduler then binds, and "
           "accel claims nothing)";
  // One bind of a pod at a time (kube-scheduler retries a bind whose answer was lost).
  {
    std::unique_lock<std::mutex> lock(binding_mu_);
    binding_cv_.wait(lock, [&] { return !binding_.count(args.pod_uid); });
    binding_.insert(args.pod_uid);
  }
  struct Done {
    SchedulerExtender* self;
    const std::string& uid;
    ~Done() {
      std::lock_guard<std::mutex> lock(self->binding_mu_);
      self->binding_.erase(uid);
      self->binding_cv_.notify_all();
    }
  } done{this, args.pod_uid};

  PodAsk ask;
  if (std::string why = AskOf(args, &ask); !why.empty()) return why;
  bool release = true;
  if (!ask.accel()) return CreateBinding(args, &release);  // not accel's: nothing to claim
  if (!ask.refused.empty()) return "pod " + ask.ns + "/" + ask.name + ": " + ask.refused;

  // The claim (a store connection is held for it, not for the API server's answer).
  std::string error, claim_id;
  host_.WithStore([&](FleetStore& store) {
    // A bind retried after its claim: the pod's claim on the node is the claim.
    for (const Claim& c : store.ListClaims(args.node))
      if (IsClaimOf(c, ask.flavor(), ask.uid)) claim_id = c.id;
    if (!claim_id.empty()) return;
    int round = 0;
    PlaceOutcome outcome = PlaceInFleet(&store, [&]() -> ScheduleResult {
      if (round++ > 0) host_.CatchUp(store);
      ScheduleResult result;
      host_.ReadView([&](const FleetView& view) {
        const HostEntry* e = view.Find(args.node);
        if (e == nullptr) {
          result.why_not.push_back({"not in the fleet", 1, args.node + ": not an accel fleet host"});
          return;
        }
        std::string why;
        const std::optional<placement::PlacementRequest> request =
            PodPlacementRequest(ask, view, options_.mig_shapes, &why);
        if (!request) {
          result.why_not.push_back({"GPUs", 1, args.node + ": " + why});
          return;
        }
        // The fleet narrowed to the one node kube-scheduler chose.
        FleetView one;
        one.set_taken_at(view.taken_at());
        one.Upsert(*e);
        result = Schedule(one, *request, Options());
      });
      for (InstanceDecision& d : result.instances) d.chosen.placement.notes.push_back(PodUidNote(ask.uid));
      return result;
    }, kBindRounds);
    if (!outcome.placed) {
      error = "pod " + ask.ns + "/" + ask.name + " does not fit on node " + args.node + " now: " +
              JoinStrings(DescribeCauses(outcome.why_not), "; ");
      if (outcome.lost_race) host_.AfterWrite(store, nullptr);
      return;
    }
    claim_id = outcome.claim_ids.at(0);
    host_.AfterWrite(store, &outcome);
  });
  if (!error.empty()) return error;
  error = CreateBinding(args, &release);
  if (error.empty()) return "";
  if (!release) return error + " (claim " + claim_id + " kept)";
  host_.WithStore([&](FleetStore& store) {
    store.Release(claim_id);
    host_.AfterWrite(store, nullptr);
  });
  return error + " (claim " + claim_id + " released)";
}

int SchedulerExtender::ReleaseGonePods() {
  if (!options_.read_pod) return 0;
  std::vector<Claim> claims;
  host_.WithStore([&](FleetStore& store) { claims = store.ListClaims(); });
  // The API server is asked without holding a store connection.
  std::vector<std::string> gone;
  for (const Claim& c : claims) {
    if (c.flavor.rfind("pod/", 0) != 0) continue;
    const std::string uid = UidOfClaim(c);
    const size_t slash = c.flavor.find('/', 4);
    if (uid.empty() || slash == std::string::npos) continue;  // not an extender's claim
    const std::string ns = c.flavor.substr(4, slash - 4), name = c.flavor.substr(slash + 1);
    std::optional<nlohmann::json> pod;
    try {
      pod = options_.read_pod(ns, name);
    } catch (const std::exception&) {
      continue;  // not known now: next time
    }
    bool is_gone = !pod || StringAt(*pod, "metadata", "uid") != uid;
    if (!is_gone) {
      const std::string phase = StringAt(*pod, "status", "phase");
      const std::string node = StringAt(*pod, "spec", "nodeName");
      is_gone = phase == "Succeeded" || phase == "Failed" || (!node.empty() && node != c.host);
    }
    if (is_gone) gone.push_back(c.id);
  }
  int released = 0;
  if (gone.empty()) return 0;
  host_.WithStore([&](FleetStore& store) {
    for (const std::string& id : gone) released += store.Release(id) ? 1 : 0;
    host_.AfterWrite(store, nullptr);
  });
  return released;
}

}  // namespace accel::fleet
