#include "support/fake_dra_kubelet.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "k8s/dra-health/v1/api.grpc.pb.h"
#include "k8s/dra-health/v1alpha1/api.grpc.pb.h"
#include "k8s/dra/v1/api.grpc.pb.h"
#include "k8s/dra/v1beta1/api.grpc.pb.h"
#include "k8s/pluginregistration/v1/api.grpc.pb.h"

namespace accel::test_support {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

namespace {

constexpr std::chrono::seconds kDialTimeout{5};
constexpr std::chrono::seconds kCallTimeout{10};

std::chrono::system_clock::time_point In(std::chrono::seconds d) {
  return std::chrono::system_clock::now() + d;
}

std::shared_ptr<grpc::Channel> Dial(const std::string& socket) {
  return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
}

/// (device, inode, change time) of the file at `path`, to notice a socket re-created at the same
/// path (the real kubelet sees the create event; a file system may reuse the inode number).
std::tuple<uint64_t, uint64_t, int64_t> FileId(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, 0, 0};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

template <typename Stub, typename Request, typename Response>
grpc::Status CallPrepare(const std::shared_ptr<grpc::Channel>& channel,
                         const std::vector<dra::ClaimRef>& claims,
                         std::map<std::string, dra::PrepareResult>* results) {
  auto stub = Stub::NewStub(channel);
  Request request;
  for (const dra::ClaimRef& c : claims) {
    auto* claim = request.add_claims();
    claim->set_namespace_(c.namespace_);
    claim->set_uid(c.uid);
    claim->set_name(c.name);
  }
  Response response;
  grpc::ClientContext context;
  context.set_deadline(In(kCallTimeout));
  grpc::Status status = stub->NodePrepareResources(&context, request, &response);
  if (!status.ok()) return status;
  results->clear();
  for (const auto& [uid, answer] : response.claims()) {
    dra::PrepareResult result;
    result.error = answer.error();
    for (const auto& d : answer.devices()) {
      dra::PreparedDevice device;
      device.request_names.assign(d.request_names().begin(), d.request_names().end());
      device.pool_name = d.pool_name();
      device.device_name = d.device_name();
      device.cdi_device_ids.assign(d.cdi_device_ids().begin(), d.cdi_device_ids().end());
      result.devices.push_back(std::move(device));
    }
    (*results)[uid] = std::move(result);
  }
  return status;
}

template <typename Stub, typename Request, typename Response>
grpc::Status CallUnprepare(const std::shared_ptr<grpc::Channel>& channel,
                           const std::vector<dra::ClaimRef>& claims,
                           std::map<std::string, std::string>* errors) {
  auto stub = Stub::NewStub(channel);
  Request request;
  for (const dra::ClaimRef& c : claims) {
    auto* claim = request.add_claims();
    claim->set_namespace_(c.namespace_);
    claim->set_uid(c.uid);
    claim->set_name(c.name);
  }
  Response response;
  grpc::ClientContext context;
  context.set_deadline(In(kCallTimeout));
  grpc::Status status = stub->NodeUnprepareResources(&context, request, &response);
  if (!status.ok()) return status;
  errors->clear();
  for (const auto& [uid, answer] : response.claims()) (*errors)[uid] = answer.error();
  return status;
}

dra::DeviceHealthState State(int health) {
  switch (health) {
    case 1:
      return dra::DeviceHealthState::kHealthy;
    case 2:
      return dra::DeviceHealthState::kUnhealthy;
    default:
      return dra::DeviceHealthState::kUnknown;
  }
}

DraHealthMessage Decode(const ::v1::NodeWatchResourcesResponse& message) {
  DraHealthMessage out;
  for (const ::v1::DeviceHealth& d : message.devices()) {
    out.devices.push_back({d.device().pool_name(), d.device().device_name(), State(d.health()),
                           d.last_updated_time(), d.message()});
  }
  return out;
}

DraHealthMessage Decode(const ::v1alpha1::NodeWatchResourcesResponse& message) {
  DraHealthMessage out;
  for (const ::v1alpha1::DeviceHealth& d : message.devices()) {
    out.devices.push_back({d.device().pool_name(), d.device().device_name(), State(d.health()),
                           d.last_updated_time(), ""});
  }
  return out;
}

}  // namespace

const dra::DeviceHealthEntry* DraHealthMessage::Find(const std::string& pool,
                                                      const std::string& device) const {
  for (const dra::DeviceHealthEntry& e : devices) {
    if (e.pool_name == pool && e.device_name == device) return &e;
  }
  return nullptr;
}

/// One open NodeWatchResources stream and what it received.
struct HealthStream {
  grpc::ClientContext context;
  std::thread reader;
  std::vector<DraHealthMessage> messages;  // guarded by State::mu
  bool ended = false;                      // guarded by State::mu
  grpc::Status status;                     // guarded by State::mu; valid once ended
};

struct FakeDraKubelet::State {
  mutable std::mutex mu;
  std::condition_variable changed;
  std::optional<DraPluginInfo> plugin;
  std::shared_ptr<grpc::Channel> endpoint;  ///< the registered plugin's DRA socket
  int registrations = 0;
  std::string last_error;
  /// Registration sockets registered, with the file identity they had then.
  std::map<std::string, std::tuple<uint64_t, uint64_t, int64_t>> seen;
  std::unique_ptr<HealthStream> stream;

  template <typename Stub, typename Request, typename Response>
  void Read(const std::shared_ptr<grpc::Channel>& channel, HealthStream* stream) {
    auto stub = Stub::NewStub(channel);
    auto reader = stub->NodeWatchResources(&stream->context, Request());
    Response message;
    while (reader->Read(&message)) {
      std::lock_guard<std::mutex> lock(mu);
      stream->messages.push_back(Decode(message));
      changed.notify_all();
    }
    grpc::Status status = reader->Finish();
    std::lock_guard<std::mutex> lock(mu);
    stream->ended = true;
    stream->status = status;
    changed.notify_all();
  }
};

FakeDraKubelet::FakeDraKubelet(std::string registry_dir)
    : registry_dir_(std::move(registry_dir)), state_(std::make_unique<State>()) {}

FakeDraKubelet::~FakeDraKubelet() { StopWatchingHealth(); }

std::string FakeDraKubelet::Register(const std::string& registration_socket) {
  auto fail = [this](std::string reason) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->last_error = reason;
    return reason;
  };
  auto registration = pluginregistration::Registration::NewStub(Dial(registration_socket));
  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext context;
    context.set_deadline(In(kCallTimeout));
    grpc::Status status = registration->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    if (!status.ok()) {
      return fail("GetInfo on " + registration_socket + ": " + status.error_message());
    }
  }
  DraPluginInfo plugin{registration_socket,
                       info.type(),
                       info.name(),
                       info.endpoint(),
                       {info.supported_versions().begin(), info.supported_versions().end()},
                       ""};
  // The kubelet's checks (pluginwatcher + the DRA plugin handler's ValidatePlugin).
  std::string reason;
  if (plugin.type != "DRAPlugin") {
    reason = "type is \"" + plugin.type + "\", not DRAPlugin";
  } else if (plugin.name.empty()) {
    reason = "no driver name";
  } else if (plugin.endpoint.empty() || plugin.endpoint[0] != '/') {
    reason = "endpoint \"" + plugin.endpoint + "\" is not an absolute socket path";
  } else {
    for (const std::string& v : plugin.supported_versions) {
      if (v == "v1.DRAPlugin" || v == "v1beta1.DRAPlugin") {
        plugin.chosen_version = v;
        break;
      }
    }
    if (plugin.chosen_version.empty()) reason = "none of the supported versions is known";
  }
  std::shared_ptr<grpc::Channel> endpoint;
  if (reason.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_socket(plugin.endpoint, ec)) {
      reason = "the endpoint " + plugin.endpoint + " is not a socket";
    }
  }
  if (reason.empty()) {
    endpoint = Dial(plugin.endpoint);
    if (!endpoint->WaitForConnected(In(kDialTimeout))) {
      reason = "cannot connect to the endpoint " + plugin.endpoint;
    }
  }
  pluginregistration::RegistrationStatus verdict;
  verdict.set_plugin_registered(reason.empty());
  verdict.set_error(reason);
  grpc::ClientContext context;
  context.set_deadline(In(kCallTimeout));
  pluginregistration::RegistrationStatusResponse ignored;
  grpc::Status status = registration->NotifyRegistrationStatus(&context, verdict, &ignored);
  if (!reason.empty()) return fail(reason);
  if (!status.ok()) {
    return fail("NotifyRegistrationStatus on " + registration_socket + ": " +
                status.error_message());
  }
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->plugin = std::move(plugin);
  state_->endpoint = std::move(endpoint);
  ++state_->registrations;
  state_->seen[registration_socket] = FileId(registration_socket);
  return "";
}

int FakeDraKubelet::Scan() {
  if (registry_dir_.empty()) return 0;
  std::vector<std::string> sockets;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(registry_dir_, ec)) {
    std::error_code type_ec;
    if (!entry.is_socket(type_ec)) continue;
    const std::string path = entry.path().string();
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->seen.find(path);
    if (it == state_->seen.end() || it->second != FileId(path)) sockets.push_back(path);
  }
  int registered = 0;
  for (const std::string& path : sockets) registered += Register(path).empty() ? 1 : 0;
  return registered;
}

std::optional<DraPluginInfo> FakeDraKubelet::plugin() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->plugin;
}

int FakeDraKubelet::registrations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->registrations;
}

std::string FakeDraKubelet::last_error() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->last_error;
}

grpc::Status FakeDraKubelet::Prepare(const std::vector<dra::ClaimRef>& claims,
                                     DraVersion version,
                                     std::map<std::string, dra::PrepareResult>* results) {
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    channel = state_->endpoint;
  }
  if (!channel) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "no DRA plugin");
  if (version == DraVersion::kV1) {
    return CallPrepare<drav1::DRAPlugin, drav1::NodePrepareResourcesRequest,
                       drav1::NodePrepareResourcesResponse>(channel, claims, results);
  }
  return CallPrepare<drav1beta1::DRAPlugin, drav1beta1::NodePrepareResourcesRequest,
                     drav1beta1::NodePrepareResourcesResponse>(channel, claims, results);
}

grpc::Status FakeDraKubelet::Unprepare(const std::vector<dra::ClaimRef>& claims,
                                       DraVersion version,
                                       std::map<std::string, std::string>* errors) {
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    channel = state_->endpoint;
  }
  if (!channel) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "no DRA plugin");
  if (version == DraVersion::kV1) {
    return CallUnprepare<drav1::DRAPlugin, drav1::NodeUnprepareResourcesRequest,
                         drav1::NodeUnprepareResourcesResponse>(channel, claims, errors);
  }
  return CallUnprepare<drav1beta1::DRAPlugin, drav1beta1::NodeUnprepareResourcesRequest,
                       drav1beta1::NodeUnprepareResourcesResponse>(channel, claims, errors);
}

bool FakeDraKubelet::WatchHealth(DraHealthVersion version) {
  StopWatchingHealth();
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    channel = state_->endpoint;
  }
  if (!channel) return false;
  auto stream = std::make_unique<HealthStream>();
  HealthStream* raw = stream.get();
  State* state = state_.get();
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stream = std::move(stream);
  }
  if (version == DraHealthVersion::kV1) {
    raw->reader = std::thread([state, channel, raw] {
      state->Read<::v1::DRAResourceHealth, ::v1::NodeWatchResourcesRequest,
                  ::v1::NodeWatchResourcesResponse>(channel, raw);
    });
  } else {
    raw->reader = std::thread([state, channel, raw] {
      state->Read<::v1alpha1::DRAResourceHealth, ::v1alpha1::NodeWatchResourcesRequest,
                  ::v1alpha1::NodeWatchResourcesResponse>(channel, raw);
    });
  }
  return true;
}

bool FakeDraKubelet::WaitForHealthMessages(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->changed.wait_for(lock, timeout, [&] {
    const HealthStream* s = state_->stream.get();
    return s != nullptr && (s->messages.size() >= count || s->ended);
  }) && state_->stream->messages.size() >= count;
}

std::vector<DraHealthMessage> FakeDraKubelet::health_messages() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stream ? state_->stream->messages : std::vector<DraHealthMessage>{};
}

std::optional<grpc::Status> FakeDraKubelet::WaitForHealthEnd(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (!state_->stream) return std::nullopt;
  if (!state_->changed.wait_for(lock, timeout, [&] { return state_->stream->ended; })) {
    return std::nullopt;
  }
  return state_->stream->status;
}

void FakeDraKubelet::StopWatchingHealth() {
  std::unique_ptr<HealthStream> stream;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    stream = std::move(state_->stream);
  }
  if (!stream) return;
  stream->context.TryCancel();
  if (stream->reader.joinable()) stream->reader.join();
}

}  // namespace accel::test_support
