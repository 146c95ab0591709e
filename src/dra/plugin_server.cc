// DraPluginServer: two gRPC servers (registration, DRA+health), each on its own unix socket so
// either can be re-created alone; a checker thread that notices deleted sockets.
#include "dra/plugin_server.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <tuple>

#include "common/error.h"
#include "common/periodic_thread.h"
#include "k8s/dra-health/v1/api.grpc.pb.h"
#include "k8s/dra-health/v1alpha1/api.grpc.pb.h"
#include "k8s/dra/v1/api.grpc.pb.h"
#include "k8s/dra/v1beta1/api.grpc.pb.h"
#include "k8s/pluginregistration/v1/api.grpc.pb.h"
#include "kube/unix_socket_server.h"

namespace accel::dra {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

namespace {

// How often a waiting health stream looks whether the kubelet went away (the sync API has no
// cancellation callback).
constexpr std::chrono::milliseconds kCancelPoll{100};
// How long Stop lets open health streams end and in-flight calls finish.
constexpr std::chrono::milliseconds kStopGrace{1000};

// The services as the raw pointers kube::ServeOnUnixSocket registers (the vectors keep them alive).
std::vector<grpc::Service*> Raw(const std::vector<std::unique_ptr<grpc::Service>>& services) {
  std::vector<grpc::Service*> out;
  for (const auto& s : services) out.push_back(s.get());
  return out;
}

template <typename Claim>
ClaimRef ClaimFromProtoT(const Claim& claim) {
  ClaimRef ref;
  ref.namespace_ = claim.namespace_();
  ref.uid = claim.uid();
  ref.name = claim.name();
  return ref;
}

template <typename Response>
void PrepareResultToProtoT(const PrepareResult& result, Response* out) {
  out->Clear();
  if (!result.error.empty()) {
    // The kubelet ignores devices next to an error; sending none keeps the answer unambiguous.
    out->set_error(result.error);
    return;
  }
  for (const PreparedDevice& d : result.devices) {
    auto* device = out->add_devices();
    for (const std::string& r : d.request_names) device->add_request_names(r);
    device->set_pool_name(d.pool_name);
    device->set_device_name(d.device_name);
    for (const std::string& id : d.cdi_device_ids) device->add_cdi_device_ids(id);
  }
}

std::string Describe(const ClaimRef& claim) {
  return "claim " + claim.namespace_ + "/" + claim.name + " (uid " + claim.uid + ")";
}

template <typename Request, typename Response>
void PrepareClaimsT(ClaimHandler& handler, const Request& request, Response* response) {
  auto& answers = *response->mutable_claims();
  for (const auto& c : request.claims()) {
    ClaimRef ref = ClaimFromProto(c);
    if (answers.find(ref.uid) != answers.end()) continue;  // listed twice: prepared once
    PrepareResult result;
    result.error = ValidateClaim(ref);
    if (result.error.empty()) {
      // ClaimHandler promises not to throw; a bug there must still cost only this claim.
      try {
        result = handler.Prepare(ref);
      } catch (const std::exception& e) {
        result = PrepareResult{};
        result.error = "preparing " + Describe(ref) + ": " + e.what();
      } catch (...) {
        result = PrepareResult{};
        result.error = "preparing " + Describe(ref) + ": unknown exception";
      }
    }
    PrepareResultToProto(result, &answers[ref.uid]);
  }
}

template <typename Request, typename Response>
void UnprepareClaimsT(ClaimHandler& handler, const Request& request, Response* response) {
  auto& answers = *response->mutable_claims();
  for (const auto& c : request.claims()) {
    ClaimRef ref = ClaimFromProto(c);
    if (answers.find(ref.uid) != answers.end()) continue;
    std::string error = ValidateClaim(ref);
    if (error.empty()) {
      try {
        error = handler.Unprepare(ref);
      } catch (const std::exception& e) {
        error = "unpreparing " + Describe(ref) + ": " + e.what();
      } catch (...) {
        error = "unpreparing " + Describe(ref) + ": unknown exception";
      }
    }
    answers[ref.uid].set_error(error);
  }
}

template <typename Enum>
Enum HealthEnum(DeviceHealthState state) {
  switch (state) {
    case DeviceHealthState::kHealthy:
      return static_cast<Enum>(1);  // HEALTHY in both versions
    case DeviceHealthState::kUnhealthy:
      return static_cast<Enum>(2);  // UNHEALTHY
    case DeviceHealthState::kUnknown:
      break;
  }
  return static_cast<Enum>(0);  // UNKNOWN
}

auto HealthKey(const DeviceHealthEntry& e) { return std::tie(e.pool_name, e.device_name); }

/// What the kubelet acts on: the device set, each health and message. A new timestamp alone is
/// not news (it rides along with the next message).
bool SameHealth(const std::vector<DeviceHealthEntry>& a, const std::vector<DeviceHealthEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (HealthKey(a[i]) != HealthKey(b[i]) || a[i].health != b[i].health ||
        a[i].message != b[i].message) {
      return false;
    }
  }
  return true;
}

}  // namespace

// ---- Conversions ---------------------------------------------------------------------------

ClaimRef ClaimFromProto(const drav1::Claim& claim) { return ClaimFromProtoT(claim); }
ClaimRef ClaimFromProto(const drav1beta1::Claim& claim) { return ClaimFromProtoT(claim); }

std::string ValidateClaim(const ClaimRef& claim) {
  std::vector<std::string> missing;
  if (claim.uid.empty()) missing.push_back("uid");
  if (claim.namespace_.empty()) missing.push_back("namespace");
  if (claim.name.empty()) missing.push_back("name");
  if (missing.empty()) return "";
  std::string fields;
  for (const std::string& m : missing) fields += (fields.empty() ? "" : ", ") + m;
  return "malformed claim from the kubelet: no " + fields + " (namespace, uid and name are required)";
}

void PrepareResultToProto(const PrepareResult& result, drav1::NodePrepareResourceResponse* out) {
  PrepareResultToProtoT(result, out);
}
void PrepareResultToProto(const PrepareResult& result,
                          drav1beta1::NodePrepareResourceResponse* out) {
  PrepareResultToProtoT(result, out);
}

void HealthToProto(const DeviceHealthEntry& entry, ::v1::DeviceHealth* out) {
  out->mutable_device()->set_pool_name(entry.pool_name);
  out->mutable_device()->set_device_name(entry.device_name);
  out->set_health(HealthEnum<::v1::HealthStatus>(entry.health));
  out->set_last_updated_time(entry.last_updated_time);
  out->set_message(entry.message);
}

void HealthToProto(const DeviceHealthEntry& entry, ::v1alpha1::DeviceHealth* out) {
  out->mutable_device()->set_pool_name(entry.pool_name);
  out->mutable_device()->set_device_name(entry.device_name);
  out->set_health(HealthEnum<::v1alpha1::HealthStatus>(entry.health));
  out->set_last_updated_time(entry.last_updated_time);
}

pluginregistration::PluginInfo PluginInfoFor(const DraPluginOptions& options) {
  pluginregistration::PluginInfo info;
  info.set_type(kDraPluginType);
  info.set_name(options.driver_name);
  info.set_endpoint(options.DraSocket());
  info.add_supported_versions(kDraServiceV1);
  info.add_supported_versions(kDraServiceV1beta1);
  return info;
}

void PrepareClaims(ClaimHandler& handler, const drav1::NodePrepareResourcesRequest& request,
                   drav1::NodePrepareResourcesResponse* response) {
  PrepareClaimsT(handler, request, response);
}
void PrepareClaims(ClaimHandler& handler, const drav1beta1::NodePrepareResourcesRequest& request,
                   drav1beta1::NodePrepareResourcesResponse* response) {
  PrepareClaimsT(handler, request, response);
}
void UnprepareClaims(ClaimHandler& handler, const drav1::NodeUnprepareResourcesRequest& request,
                     drav1::NodeUnprepareResourcesResponse* response) {
  UnprepareClaimsT(handler, request, response);
}
void UnprepareClaims(ClaimHandler& handler,
                     const drav1beta1::NodeUnprepareResourcesRequest& request,
                     drav1beta1::NodeUnprepareResourcesResponse* response) {
  UnprepareClaimsT(handler, request, response);
}

// ---- Options -------------------------------------------------------------------------------

std::string DraPluginOptions::PluginDir() const {
  return plugin_dir.empty() ? "/var/lib/kubelet/plugins/" + driver_name : plugin_dir;
}
std::string DraPluginOptions::RegistrationSocket() const {
  return registry_dir + "/" + driver_name + "-reg.sock";
}
std::string DraPluginOptions::DraSocket() const { return PluginDir() + "/dra.sock"; }

// ---- Server --------------------------------------------------------------------------------

namespace plugin_server_internal {

/// Everything the gRPC services share with the server (a named namespace, not an anonymous one:
/// DraPluginServer::Impl derives from it).
struct Core {
  DraPluginOptions options;
  ClaimHandler* handler = nullptr;

  /// Serialises Start, Stop and CheckSockets. Never held by gRPC handlers.
  std::mutex lifecycle_mu;
  bool running = false;  ///< guarded by lifecycle_mu (and read under state_mu, see below)
  kube::UnixSocketServer registration_server;  ///< guarded by lifecycle_mu
  kube::UnixSocketServer dra_server;           ///< guarded by lifecycle_mu
  /// The services of the current servers (a service belongs to one server; each listen makes
  /// new ones).
  std::vector<std::unique_ptr<grpc::Service>> registration_services;  ///< lifecycle_mu
  std::vector<std::unique_ptr<grpc::Service>> dra_services;           ///< lifecycle_mu
  PeriodicThread checker;

  /// Guards everything below; handlers take it.
  mutable std::mutex state_mu;
  std::condition_variable health_changed;
  bool is_running = false;  ///< running, readable without lifecycle_mu
  bool registered = false;
  std::string registration_error;
  int notifications = 0;
  int recreations = 0;
  std::vector<DeviceHealthEntry> health;  ///< sorted by (pool, device)
  uint64_t health_generation = 0;         ///< bumped when `health` changes in a way that matters
  bool ending = false;                    ///< Stop in progress: streams return
  int open_streams = 0;

  void Log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  void ListenRegistration();
  void ListenDra();
  void StopLocked();
  int CheckSocketsLocked();

  template <typename Response>
  grpc::Status ServeHealth(grpc::ServerContext* context, grpc::ServerWriter<Response>* writer);
};

}  // namespace plugin_server_internal

struct DraPluginServer::Impl : plugin_server_internal::Core {};

using plugin_server_internal::Core;

namespace {

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  explicit RegistrationService(Core* impl) : impl_(impl) {}
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    *info = PluginInfoFor(impl_->options);
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    {
      std::lock_guard<std::mutex> lock(impl_->state_mu);
      ++impl_->notifications;
      impl_->registered = status->plugin_registered();
      impl_->registration_error = status->plugin_registered() ? "" : status->error();
    }
    if (status->plugin_registered()) {
      impl_->Log("dra: the kubelet registered driver " + impl_->options.driver_name);
    } else {
      impl_->Log("dra: the kubelet refused driver " + impl_->options.driver_name + ": " +
                 status->error());
    }
    return grpc::Status::OK;
  }

 private:
  Core* impl_;
};

template <typename Response>
void LogFailures(const Core& impl, const char* what, const Response& response) {
  if (!impl.options.log) return;
  for (const auto& [uid, answer] : response.claims()) {
    if (!answer.error().empty()) impl.Log(std::string("dra: ") + what + " " + uid + ": " + answer.error());
  }
}

template <typename Base, typename PrepareRequest, typename PrepareResponse,
          typename UnprepareRequest, typename UnprepareResponse>
class DraService final : public Base {
 public:
  explicit DraService(Core* impl) : impl_(impl) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*, const PrepareRequest* request,
                                    PrepareResponse* response) override {
    PrepareClaims(*impl_->handler, *request, response);
    LogFailures(*impl_, "prepare", *response);
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const UnprepareRequest* request,
                                      UnprepareResponse* response) override {
    UnprepareClaims(*impl_->handler, *request, response);
    LogFailures(*impl_, "unprepare", *response);
    return grpc::Status::OK;
  }

 private:
  Core* impl_;
};

using DraServiceV1 =
    DraService<drav1::DRAPlugin::Service, drav1::NodePrepareResourcesRequest,
               drav1::NodePrepareResourcesResponse, drav1::NodeUnprepareResourcesRequest,
               drav1::NodeUnprepareResourcesResponse>;
using DraServiceV1beta1 = DraService<drav1beta1::DRAPlugin::Service,
                                     drav1beta1::NodePrepareResourcesRequest,
                                     drav1beta1::NodePrepareResourcesResponse,
                                     drav1beta1::NodeUnprepareResourcesRequest,
                                     drav1beta1::NodeUnprepareResourcesResponse>;

template <typename Base, typename Request, typename Response>
class HealthService final : public Base {
 public:
  explicit HealthService(Core* impl) : impl_(impl) {}
  grpc::Status NodeWatchResources(grpc::ServerContext* context, const Request*,
                                  grpc::ServerWriter<Response>* writer) override {
    return impl_->ServeHealth(context, writer);
  }

 private:
  Core* impl_;
};

using HealthServiceV1 = HealthService<::v1::DRAResourceHealth::Service,
                                      ::v1::NodeWatchResourcesRequest,
                                      ::v1::NodeWatchResourcesResponse>;
using HealthServiceV1alpha1 = HealthService<::v1alpha1::DRAResourceHealth::Service,
                                            ::v1alpha1::NodeWatchResourcesRequest,
                                            ::v1alpha1::NodeWatchResourcesResponse>;

}  // namespace

template <typename Response>
grpc::Status Core::ServeHealth(grpc::ServerContext* context, grpc::ServerWriter<Response>* writer) {
  std::unique_lock<std::mutex> lock(state_mu);
  if (ending) return grpc::Status::OK;
  ++open_streams;
  struct Closed {  // counts the stream out on every return path
    Core* impl;
    ~Closed() {
      --impl->open_streams;
      impl->health_changed.notify_all();
    }
  } closed{this};
  const auto resend = options.health_resend_interval;
  bool sent_any = false;
  uint64_t sent = 0;
  auto sent_at = std::chrono::steady_clock::now();
  while (!ending) {
    const auto now = std::chrono::steady_clock::now();
    const bool due = resend.count() > 0 && now - sent_at >= resend;
    if (!sent_any || sent != health_generation || due) {
      Response message;
      for (const DeviceHealthEntry& e : health) HealthToProto(e, message.add_devices());
      sent = health_generation;
      sent_any = true;
      sent_at = now;
      lock.unlock();
      const bool written = writer->Write(message);
      lock.lock();
      if (!written) return grpc::Status(grpc::StatusCode::CANCELLED, "kubelet went away");
      continue;
    }
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(kCancelPoll);
    if (resend.count() > 0) wait = std::min(wait, sent_at + resend - now);
    health_changed.wait_for(lock, wait);
  }
  return grpc::Status::OK;
}

void Core::ListenDra() {
  std::vector<std::unique_ptr<grpc::Service>> services;
  services.push_back(std::make_unique<DraServiceV1>(this));
  services.push_back(std::make_unique<DraServiceV1beta1>(this));
  services.push_back(std::make_unique<HealthServiceV1>(this));
  services.push_back(std::make_unique<HealthServiceV1alpha1>(this));
  dra_server = kube::ServeOnUnixSocket(options.DraSocket(), Raw(services), "the DRA service", "choose a shorter directory");
  dra_services = std::move(services);
}

void Core::ListenRegistration() {
  std::vector<std::unique_ptr<grpc::Service>> services;
  services.push_back(std::make_unique<RegistrationService>(this));
  registration_server = kube::ServeOnUnixSocket(options.RegistrationSocket(), Raw(services), "the DRA registration",
                                          "choose a shorter directory");
  registration_services = std::move(services);
  std::lock_guard<std::mutex> lock(state_mu);
  // A fresh socket is a fresh registration: the kubelet's next verdict decides.
  registered = false;
}

void Core::StopLocked() {
  {
    std::unique_lock<std::mutex> lock(state_mu);
    ending = true;
    health_changed.notify_all();
    health_changed.wait_for(lock, kStopGrace, [this] { return open_streams == 0; });
  }
  // Registration first: the kubelet deregisters the driver before its endpoint goes away.
  kube::StopUnixSocketServer(registration_server, kStopGrace);
  kube::StopUnixSocketServer(dra_server, kStopGrace);
  registration_server = {};
  dra_server = {};
  registration_services.clear();
  dra_services.clear();
  running = false;
  std::lock_guard<std::mutex> lock(state_mu);
  is_running = false;
  registered = false;
}

int Core::CheckSocketsLocked() {
  if (!running) return 0;
  int recreated = 0;
  // A socket that is gone or replaced (the kubelet cleans its plugin directories when it
  // restarts) is served again; the file now there is not ours to remove.
  if (kube::SocketFileIdOf(options.DraSocket()) != dra_server.id || dra_server.id.none()) {
    kube::StopUnixSocketServer(dra_server, kStopGrace, /*remove_socket=*/false);
    dra_services.clear();
    ListenDra();
    ++recreated;
    Log("dra: re-created the DRA socket " + options.DraSocket() + " (it was removed)");
  }
  if (kube::SocketFileIdOf(options.RegistrationSocket()) != registration_server.id || registration_server.id.none()) {
    kube::StopUnixSocketServer(registration_server, kStopGrace, /*remove_socket=*/false);
    registration_services.clear();
    ListenRegistration();
    ++recreated;
    Log("dra: re-created the registration socket " + options.RegistrationSocket() +
        " (it was removed); the kubelet registers the driver again");
  }
  if (recreated > 0) {
    std::lock_guard<std::mutex> lock(state_mu);
    recreations += recreated;
  }
  return recreated;
}

DraPluginServer::DraPluginServer(DraPluginOptions options, ClaimHandler* handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->handler = handler;
}

DraPluginServer::~DraPluginServer() { Stop(); }

void DraPluginServer::Start() {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  impl_->checker.Stop();
  impl_->StopLocked();
  for (const std::string& dir : {impl_->options.registry_dir, impl_->options.PluginDir()}) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      throw SystemError("cannot create the DRA socket directory", dir, ec.message(),
                        "check the dra: directories in agent.yaml and that accel runs as root");
    }
  }
  {
    std::lock_guard<std::mutex> lock(impl_->state_mu);
    impl_->ending = false;
  }
  // The endpoint first: the kubelet dials it right after GetInfo.
  impl_->ListenDra();
  try {
    impl_->ListenRegistration();
  } catch (...) {
    impl_->running = true;  // so StopLocked tears the DRA server down
    impl_->StopLocked();
    throw;
  }
  impl_->running = true;
  {
    std::lock_guard<std::mutex> lock(impl_->state_mu);
    impl_->is_running = true;
  }
  if (impl_->options.socket_check_interval.count() > 0) {
    Impl* impl = impl_.get();
    impl_->checker.Start(impl_->options.socket_check_interval, [impl] {
      // try_lock: Stop holds the lock while it joins this thread.
      std::unique_lock<std::mutex> lock(impl->lifecycle_mu, std::try_to_lock);
      if (!lock.owns_lock()) return;
      try {
        impl->CheckSocketsLocked();
      } catch (const std::exception& e) {
        impl->Log(std::string("dra: ") + e.what() + "; retrying");
      }
    });
  }
}

void DraPluginServer::Stop() {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  impl_->checker.Stop();
  if (!impl_->running && !impl_->dra_server.server && !impl_->registration_server.server) return;
  impl_->StopLocked();
}

int DraPluginServer::CheckSockets() {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  return impl_->CheckSocketsLocked();
}

void DraPluginServer::SetHealth(std::vector<DeviceHealthEntry> devices) {
  std::sort(devices.begin(), devices.end(),
            [](const DeviceHealthEntry& a, const DeviceHealthEntry& b) {
              return HealthKey(a) < HealthKey(b);
            });
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  const bool changed = !SameHealth(impl_->health, devices);
  impl_->health = std::move(devices);
  if (changed) {
    ++impl_->health_generation;
    impl_->health_changed.notify_all();
  }
}

std::vector<DeviceHealthEntry> DraPluginServer::health() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->health;
}

bool DraPluginServer::running() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->is_running;
}

bool DraPluginServer::registered() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->registered;
}

std::string DraPluginServer::registration_error() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->registration_error;
}

int DraPluginServer::registration_notifications() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->notifications;
}

int DraPluginServer::socket_recreations() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->recreations;
}

int DraPluginServer::open_health_streams() const {
  std::lock_guard<std::mutex> lock(impl_->state_mu);
  return impl_->open_streams;
}

const DraPluginOptions& DraPluginServer::options() const { return impl_->options; }

}  // namespace accel::dra
