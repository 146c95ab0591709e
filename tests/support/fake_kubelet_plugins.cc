#include "support/fake_kubelet_plugins.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "kube/unix_socket_server.h"

namespace accel::test_support {

namespace {

// The kubelet dials a registering plugin with this timeout (client.go).
constexpr std::chrono::seconds kDialTimeout{10};
constexpr std::chrono::seconds kCallTimeout{5};

std::chrono::system_clock::time_point In(std::chrono::seconds d) {
  return std::chrono::system_clock::now() + d;
}

std::vector<ListedDevice> Listed(const v1beta1::ListAndWatchResponse& message) {
  std::vector<ListedDevice> out;
  for (const v1beta1::Device& d : message.devices()) {
    ListedDevice device{d.id(), d.health(), {}};
    for (const v1beta1::NUMANode& n : d.topology().nodes()) device.numa_nodes.push_back(n.id());
    out.push_back(std::move(device));
  }
  return out;
}

}  // namespace

const ListedDevice* RegisteredPlugin::Find(const std::string& id) const {
  for (const ListedDevice& d : devices) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

int RegisteredPlugin::healthy() const {
  int n = 0;
  for (const ListedDevice& d : devices) n += d.health == "Healthy" ? 1 : 0;
  return n;
}

// One registered plugin: the connection back to it and its ListAndWatch reader.
struct Endpoint {
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
  grpc::ClientContext stream_context;
  std::thread reader;
  RegisteredPlugin plugin;  // guarded by State::mu
};

struct FakeDevicePluginKubelet::State {
  std::string dir;
  mutable std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, std::shared_ptr<Endpoint>> resources;
  grpc::Status register_status;
  int registrations = 0;

  std::shared_ptr<Endpoint> Find(const std::string& resource) const {
    std::lock_guard<std::mutex> lock(mu);
    auto it = resources.find(resource);
    return it == resources.end() ? nullptr : it->second;
  }

  void Read(Endpoint* endpoint) {
    auto reader = endpoint->stub->ListAndWatch(&endpoint->stream_context, v1beta1::Empty());
    v1beta1::ListAndWatchResponse message;
    while (reader->Read(&message)) {
      std::lock_guard<std::mutex> lock(mu);
      endpoint->plugin.devices = Listed(message);
      ++endpoint->plugin.messages;
      changed.notify_all();
    }
    reader->Finish();
    std::lock_guard<std::mutex> lock(mu);
    endpoint->plugin.stream_ended = true;
    changed.notify_all();
  }

  // Cancels and joins every reader; the map is emptied.
  void DropAll() {
    std::map<std::string, std::shared_ptr<Endpoint>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu);
      dropped.swap(resources);
    }
    for (auto& [name, endpoint] : dropped) {
      endpoint->stream_context.TryCancel();
      if (endpoint->reader.joinable()) endpoint->reader.join();
    }
  }
};

// Register as the kubelet handles it (plugin/v1beta1/server.go + handler.go).
class FakeDevicePluginKubelet::Service final : public v1beta1::Registration::Service {
 public:
  explicit Service(State* state) : state_(state) {}

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!state_->register_status.ok()) return state_->register_status;
    }
    if (request->version() != "v1beta1") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "unsupported version " + request->version());
    }
    const std::string& name = request->resource_name();
    if (name.find('/') == std::string::npos || name.rfind("kubernetes.io/", 0) == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "invalid extended resource name " + name);
    }
    auto endpoint = std::make_shared<Endpoint>();
    endpoint->plugin.endpoint = request->endpoint();
    auto channel = grpc::CreateChannel("unix:" + state_->dir + "/" + request->endpoint(),
                                       grpc::InsecureChannelCredentials());
    endpoint->stub = v1beta1::DevicePlugin::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(In(kDialTimeout));
    context.set_wait_for_ready(true);  // the kubelet dials blocking
    v1beta1::DevicePluginOptions options;
    grpc::Status status = endpoint->stub->GetDevicePluginOptions(&context, {}, &options);
    if (!status.ok()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "cannot reach the plugin: " + status.error_message());
    }
    endpoint->plugin.preferred_allocation = options.get_preferred_allocation_available();
    endpoint->plugin.registered_at = std::chrono::steady_clock::now();
    std::shared_ptr<Endpoint> replaced;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      replaced = std::exchange(state_->resources[name], endpoint);
      ++state_->registrations;
      endpoint->reader = std::thread([state = state_, e = endpoint.get()] { state->Read(e); });
      state_->changed.notify_all();
    }
    if (replaced) {  // the newest plugin wins
      replaced->stream_context.TryCancel();
      if (replaced->reader.joinable()) replaced->reader.join();
    }
    return grpc::Status::OK;
  }

 private:
  State* state_;
};

struct FakeDevicePluginKubelet::Server {
  kube::UnixSocketServer server;
};

FakeDevicePluginKubelet::FakeDevicePluginKubelet(std::string dir)
    : dir_(std::move(dir)), state_(std::make_unique<State>()) {
  state_->dir = dir_;
  service_ = std::make_unique<Service>(state_.get());
  Serve();
}

FakeDevicePluginKubelet::~FakeDevicePluginKubelet() { Stop(); }

void FakeDevicePluginKubelet::Serve() {
  server_ = std::make_unique<Server>(
      Server{kube::ServeOnUnixSocket(socket_path(), {service_.get()}, "the fake kubelet", "use a shorter temp dir")});
}

void FakeDevicePluginKubelet::StopServing() {
  if (!server_) return;
  kube::StopUnixSocketServer(server_->server, std::chrono::seconds(1), /*remove_socket=*/false);
  server_.reset();
}

bool FakeDevicePluginKubelet::WaitForResource(
    const std::string& resource, const std::function<bool(const RegisteredPlugin&)>& predicate,
    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->changed.wait_for(lock, timeout, [&] {
    auto it = state_->resources.find(resource);
    return it != state_->resources.end() && predicate(it->second->plugin);
  });
}

std::optional<RegisteredPlugin> FakeDevicePluginKubelet::Resource(
    const std::string& resource) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->resources.find(resource);
  if (it == state_->resources.end()) return std::nullopt;
  return it->second->plugin;
}

int FakeDevicePluginKubelet::registrations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->registrations;
}

grpc::Status FakeDevicePluginKubelet::Allocate(const std::string& resource,
                                               const std::vector<std::string>& ids,
                                               v1beta1::AllocateResponse* response) {
  std::shared_ptr<Endpoint> endpoint = state_->Find(resource);
  if (!endpoint) return grpc::Status(grpc::StatusCode::UNAVAILABLE, resource + " not registered");
  v1beta1::AllocateRequest request;
  v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
  for (const std::string& id : ids) container->add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(In(kCallTimeout));
  return endpoint->stub->Allocate(&context, request, response);
}

grpc::Status FakeDevicePluginKubelet::GetPreferredAllocation(
    const std::string& resource, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size, std::vector<std::string>* ids) {
  std::shared_ptr<Endpoint> endpoint = state_->Find(resource);
  if (!endpoint) return grpc::Status(grpc::StatusCode::UNAVAILABLE, resource + " not registered");
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container = request.add_container_requests();
  for (const std::string& id : available) container->add_available_deviceids(id);
  for (const std::string& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  grpc::ClientContext context;
  context.set_deadline(In(kCallTimeout));
  v1beta1::PreferredAllocationResponse response;
  grpc::Status status = endpoint->stub->GetPreferredAllocation(&context, request, &response);
  ids->clear();
  if (status.ok() && response.container_responses_size() > 0) {
    for (const std::string& id : response.container_responses(0).deviceids()) ids->push_back(id);
  }
  return status;
}

void FakeDevicePluginKubelet::SetRegisterStatus(grpc::Status status) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->register_status = std::move(status);
}

void FakeDevicePluginKubelet::Restart() {
  StopServing();
  state_->DropAll();
  // CleanupPluginDirectory: sockets go, directories and regular files (checkpoint) stay.
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    if (entry.symlink_status(error).type() == std::filesystem::file_type::socket) {
      std::filesystem::remove(entry.path(), error);
    }
  }
  Serve();
}

void FakeDevicePluginKubelet::Stop() {
  StopServing();
  state_->DropAll();
}

}  // namespace accel::test_support
