// DevicePluginServer: serve first, then Register (the kubelet dials back inside Register).
#include "kube/plugin_server.h"

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <stdexcept>

#include "common/error.h"
#include "k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "kube/plugin_service.h"
#include "kube/unix_socket_server.h"

namespace accel::kube {

namespace {

// The kubelet's own dial timeout inside Register is 10 s; ours covers it.
constexpr std::chrono::seconds kRegisterDeadline{10};
// How long Stop lets open ListAndWatch streams send their empty list, and in-flight calls end.
constexpr std::chrono::milliseconds kStopGrace{1000};

grpc::Status Register(const std::string& kubelet_socket, const PluginResource& resource) {
  auto channel = grpc::CreateChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(resource.socket_name);
  request.set_resource_name(resource.name);
  *request.mutable_options() = PluginService::Options();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRegisterDeadline);
  v1beta1::Empty reply;
  return stub->Register(&context, request, &reply);
}

}  // namespace

struct DevicePluginServer::Impl {
  PluginResource resource;
  PluginNode node;
  /// Serialises Start and Stop.
  std::mutex lifecycle_mu;
  /// Guards service (read by NotifyHealthChanged while Start waits on the kubelet).
  std::mutex service_mu;
  std::shared_ptr<PluginService> service;
  UnixSocketServer server;

  std::string plugin_dir() const {
    return node.config != nullptr ? node.config->plugin_dir : PluginConfig().plugin_dir;
  }
  std::string socket_path() const { return plugin_dir() + "/" + resource.socket_name; }

  // Needs lifecycle_mu.
  void StopLocked() {
    if (!server.server) return;
    std::shared_ptr<PluginService> old;
    {
      std::lock_guard<std::mutex> lock(service_mu);
      old = std::move(service);
    }
    if (old) old->EndStreams(kStopGrace);
    StopUnixSocketServer(server, kStopGrace);
  }
};

DevicePluginServer::DevicePluginServer(PluginResource resource, PluginNode node)
    : impl_(std::make_unique<Impl>()) {
  impl_->resource = std::move(resource);
  impl_->node = node;
}

DevicePluginServer::~DevicePluginServer() { Stop(); }

void DevicePluginServer::Start() {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  impl_->StopLocked();
  auto service = std::make_shared<PluginService>(&impl_->resource, impl_->node);
  impl_->server = ServeOnUnixSocket(impl_->socket_path(), {service.get()}, "the device plugin", "choose a shorter pluginDir");
  {
    std::lock_guard<std::mutex> lock(impl_->service_mu);
    impl_->service = service;
  }
  // Register runs on this thread, which is none of the server's: the synchronous server polls
  // with its own threads, so the kubelet's GetDevicePluginOptions call inside Register is
  // answered while we wait here.
  const std::string kubelet = impl_->plugin_dir() + "/kubelet.sock";
  grpc::Status status = Register(kubelet, impl_->resource);
  if (!status.ok()) {
    impl_->StopLocked();
    throw SystemError("cannot register " + impl_->resource.name + " with", kubelet,
                      status.error_message(), "is the kubelet running?");
  }
}

void DevicePluginServer::Stop() {
  std::lock_guard<std::mutex> lifecycle(impl_->lifecycle_mu);
  impl_->StopLocked();
}

void DevicePluginServer::NotifyHealthChanged() {
  std::shared_ptr<PluginService> service;
  {
    std::lock_guard<std::mutex> lock(impl_->service_mu);
    service = impl_->service;
  }
  if (service) service->NotifyHealthChanged();
}

const PluginResource& DevicePluginServer::resource() const { return impl_->resource; }

std::string DevicePluginServer::socket_path() const { return impl_->socket_path(); }

}  // namespace accel::kube
