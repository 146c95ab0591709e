#include "kube/pod_resources.h"

#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "k8s/podresources/v1/api.grpc.pb.h"

namespace accel::kube {

namespace {

// A response for a node with hundreds of pods is well under 1 MiB; the default 4 MiB cap would
// only bite on a pathological node, and failing there would silently drop every attribution.
constexpr int kMaxResponseBytes = 64 << 20;

// After a kubelet restart the channel may sit in reconnect backoff (default up to 120 s); keep
// it short so the next refresh finds the new socket.
constexpr int kMaxReconnectBackoffMs = 1000;

std::string StripScheme(std::string path) {
  for (const char* scheme : {"unix://", "unix:"}) {
    size_t n = std::strlen(scheme);
    if (path.compare(0, n, scheme) == 0) return path.substr(n);
  }
  return path;
}

std::string Target(const std::string& path) {
  // "unix:///abs/path" for absolute paths; "unix:rel/path" is gRPC's form for relative ones.
  return (!path.empty() && path[0] == '/') ? "unix://" + path : "unix:" + path;
}

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN_CODE";
  }
}

// Checks the socket before dialing so a missing mount or a stopped kubelet reads as such, not
// as a gRPC UNAVAILABLE with a connect() error buried in its message.
bool CheckSocket(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "pod-resources socket path is empty";
    return false;
  }
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    *error = "pod-resources socket path " + path + " is longer than " +
             std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes";
    return false;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = errno == ENOENT ? "socket " + path + " does not exist"
                             : "socket " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISSOCK(st.st_mode)) {
    *error = "socket " + path + " is not a unix socket";
    return false;
  }
  return true;
}

void Flatten(const v1::ListPodResourcesResponse& response, std::vector<ContainerDevices>* out) {
  out->clear();
  for (const v1::PodResources& pod : response.pod_resources()) {
    for (const v1::ContainerResources& container : pod.containers()) {
      for (const v1::ContainerDevices& devices : container.devices()) {
        if (devices.device_ids().empty()) continue;
        out->push_back(ContainerDevices{
            pod.namespace_(), pod.name(), container.name(), devices.resource_name(),
            std::vector<std::string>(devices.device_ids().begin(), devices.device_ids().end())});
      }
    }
  }
}

}  // namespace

struct PodResourcesClient::Channel {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

PodResourcesClient::PodResourcesClient(std::string socket_path)
    : socket_path_(StripScheme(std::move(socket_path))) {}

PodResourcesClient::~PodResourcesClient() = default;

bool PodResourcesClient::List(std::chrono::milliseconds timeout,
                              std::vector<ContainerDevices>* out, std::string* error) {
  if (!CheckSocket(socket_path_, error)) return false;
  if (!channel_) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxResponseBytes);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
    auto channel = grpc::CreateCustomChannel(Target(socket_path_),
                                             grpc::InsecureChannelCredentials(), args);
    channel_ = std::make_unique<Channel>();
    channel_->channel = channel;
    channel_->stub = v1::PodResourcesLister::NewStub(channel);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  grpc::Status status = channel_->stub->List(&context, request, &response);
  if (!status.ok()) {
    *error = "kubelet pod-resources List on " + socket_path_ + ": " +
             StatusCodeName(status.error_code()) +
             (status.error_message().empty() ? "" : ": " + status.error_message());
    // A channel that failed to connect waits out its backoff before trying again; after a
    // kubelet restart a fresh channel reaches the new socket at once.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) channel_.reset();
    return false;
  }
  Flatten(response, out);
  return true;
}

}  // namespace accel::kube
