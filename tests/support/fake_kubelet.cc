#include "support/fake_kubelet.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "k8s/podresources/v1/api.grpc.pb.h"
#include "kube/unix_socket_server.h"

namespace accel::test_support {

namespace {

v1::ContainerResources* FindOrAddContainer(v1::ListPodResourcesResponse* response,
                                           const kube::ContainerDevices& entry) {
  v1::PodResources* pod = nullptr;
  for (v1::PodResources& p : *response->mutable_pod_resources()) {
    if (p.namespace_() == entry.namespace_name && p.name() == entry.pod) pod = &p;
  }
  if (pod == nullptr) {
    pod = response->add_pod_resources();
    pod->set_namespace_(entry.namespace_name);
    pod->set_name(entry.pod);
  }
  for (v1::ContainerResources& c : *pod->mutable_containers()) {
    if (c.name() == entry.container) return &c;
  }
  v1::ContainerResources* container = pod->add_containers();
  container->set_name(entry.container);
  return container;
}

void AddDevices(const kube::ContainerDevices& entry, v1::ContainerDevices* devices) {
  devices->set_resource_name(entry.resource);
  for (const std::string& id : entry.device_ids) devices->add_device_ids(id);
}

}  // namespace

class FakeKubelet::Service final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    list_calls_.fetch_add(1);
    WaitDelay(context);
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_next_count_ > 0) {
      --fail_next_count_;
      return fail_next_;
    }
    if (!failure_.ok()) return failure_;
    *response = list_;
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*,
                                       const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    *response = allocatable_;
    return grpc::Status::OK;
  }

  void SetPods(const std::vector<kube::ContainerDevices>& pods) {
    v1::ListPodResourcesResponse list;
    for (const kube::ContainerDevices& entry : pods) {
      v1::ContainerResources* container = FindOrAddContainer(&list, entry);
      if (!entry.resource.empty()) AddDevices(entry, container->add_devices());
    }
    std::lock_guard<std::mutex> lock(mu_);
    list_ = std::move(list);
  }

  void SetAllocatable(const std::vector<kube::ContainerDevices>& devices) {
    v1::AllocatableResourcesResponse allocatable;
    for (const kube::ContainerDevices& entry : devices) {
      AddDevices(entry, allocatable.add_devices());
    }
    std::lock_guard<std::mutex> lock(mu_);
    allocatable_ = std::move(allocatable);
  }

  void FailNext(grpc::Status status, int count) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = std::move(status);
    fail_next_count_ = std::max(count, 0);
  }

  void SetFailure(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = std::move(status);
  }

  void SetDelay(std::chrono::milliseconds delay) {
    std::lock_guard<std::mutex> lock(mu_);
    delay_ = delay;
  }

  void BeginStop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake_.notify_all();
  }

  uint64_t list_calls() const { return list_calls_.load(); }

 private:
  // Sleeps out the delay in short steps so a caller's deadline (the call is cancelled) or
  // Stop() ends it early instead of holding a server thread.
  void WaitDelay(grpc::ServerContext* context) {
    std::unique_lock<std::mutex> lock(mu_);
    auto until = std::chrono::steady_clock::now() + delay_;
    while (!stopping_ && !context->IsCancelled() && std::chrono::steady_clock::now() < until) {
      auto step = std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(5));
      wake_.wait_until(lock, step);
    }
  }

  mutable std::mutex mu_;
  std::condition_variable wake_;
  v1::ListPodResourcesResponse list_;
  v1::AllocatableResourcesResponse allocatable_;
  grpc::Status fail_next_;
  int fail_next_count_ = 0;
  grpc::Status failure_;
  std::chrono::milliseconds delay_{0};
  bool stopping_ = false;
  std::atomic<uint64_t> list_calls_{0};
};

struct FakeKubelet::Server {
  kube::UnixSocketServer server;
};

FakeKubelet::FakeKubelet(std::string socket_path)
    : socket_path_(std::move(socket_path)), service_(std::make_unique<Service>()) {
  server_ = std::make_unique<Server>(
      Server{kube::ServeOnUnixSocket(socket_path_, {service_.get()}, "the fake kubelet", "use a shorter temp dir")});
}

FakeKubelet::~FakeKubelet() { Stop(); }

void FakeKubelet::SetPods(std::vector<kube::ContainerDevices> pods) { service_->SetPods(pods); }

void FakeKubelet::SetAllocatable(std::vector<kube::ContainerDevices> devices) {
  service_->SetAllocatable(devices);
}

void FakeKubelet::FailNext(grpc::StatusCode code, std::string message, int count) {
  service_->FailNext(grpc::Status(code, std::move(message)), count);
}

void FakeKubelet::SetFailure(grpc::StatusCode code, std::string message) {
  service_->SetFailure(grpc::Status(code, std::move(message)));
}

void FakeKubelet::ClearFailure() { service_->SetFailure(grpc::Status::OK); }

void FakeKubelet::SetDelay(std::chrono::milliseconds delay) { service_->SetDelay(delay); }

uint64_t FakeKubelet::list_calls() const { return service_->list_calls(); }

void FakeKubelet::Stop() {
  if (!server_) return;
  service_->BeginStop();
  kube::StopUnixSocketServer(server_->server, std::chrono::seconds(1), /*remove_socket=*/false);
  server_.reset();
}

}  // namespace accel::test_support
