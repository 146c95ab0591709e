#include "kube/plugin_service.h"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "kube/allocate.h"
#include "kube/preferred_allocation.h"

namespace accel::kube {

namespace {

// How often a waiting ListAndWatch looks whether the kubelet went away (the sync API has no
// cancellation callback).
constexpr std::chrono::milliseconds kCancelPoll{100};

void ToProto(const ContainerAllocation& in, v1beta1::ContainerAllocateResponse* out) {
  for (const auto& [key, value] : in.envs) (*out->mutable_envs())[key] = value;
  for (const auto& [key, value] : in.annotations) (*out->mutable_annotations())[key] = value;
  for (const MountSpec& m : in.mounts) {
    v1beta1::Mount* mount = out->add_mounts();
    mount->set_container_path(m.container_path);
    mount->set_host_path(m.host_path);
    mount->set_read_only(m.read_only);
  }
  for (const DeviceNodeSpec& d : in.devices) {
    v1beta1::DeviceSpec* spec = out->add_devices();
    spec->set_container_path(d.container_path);
    spec->set_host_path(d.host_path);
    spec->set_permissions(d.permissions);
  }
  for (const std::string& name : in.cdi_devices) out->add_cdi_devices()->set_name(name);
}

// NCCL_SOCKET_IFNAME's exact-match form, as fabric/training_env.h writes it: "eth0" alone would
// also match eth01 and eth0.100.
std::string ExactIfname(const std::string& ifname) {
  if (ifname.empty() || ifname.front() == '=' || ifname.front() == '^') return ifname;
  return "=" + ifname;
}

// The config's `nccl:` env for a container given `ids` (already checked by AllocateContainer).
// NCCL_IB_HCA lists the HCAs paired with the allocated units' physical GPUs (a MIG device or a
// replica counts as its GPU), each once, in pair order (the GPUs' PCI order, the order the
// pairing and CUDA_DEVICE_ORDER=PCI_BUS_ID use), with NCCL's exact-match '=' prefix so mlx5_1
// does not also select mlx5_10. Gaudi (HCCL) does not read NCCL's variables.
void AddNcclEnv(const PluginResource& resource, const PluginNode& node,
                const std::vector<std::string>& ids, ContainerAllocation* out) {
  const NcclWiring& nccl = node.config->nccl;
  if (!nccl.enabled() || resource.vendor == devices::Vendor::kHabana) return;
  if (!nccl.socket_ifname.empty())
    out->envs["NCCL_SOCKET_IFNAME"] = ExactIfname(nccl.socket_ifname);
  if (!nccl.ib_hca || node.nccl_hcas == nullptr) return;
  const std::unordered_set<std::string> wanted(ids.begin(), ids.end());
  std::set<std::string> gpus;  // canonical addresses sort in PCI order
  for (const AdvertisedDevice& a : resource.devices) {
    if (!wanted.count(a.id) || a.device >= node.devices->size()) continue;
    const std::string& address = (*node.devices)[a.device].pci_address;
    if (!address.empty()) gpus.insert(address);
  }
  std::vector<std::string> hcas;
  for (const std::string& gpu : gpus) {
    auto it = node.nccl_hcas->find(gpu);
    if (it == node.nccl_hcas->end() || it->second.empty()) continue;
    if (std::find(hcas.begin(), hcas.end(), it->second) == hcas.end()) hcas.push_back(it->second);
  }
  // A GPU without a usable NIC adds nothing; with none at all NCCL keeps its own choice.
  if (hcas.empty()) return;
  std::string value = "=";
  for (size_t i = 0; i < hcas.size(); ++i) value += (i ? "," : "") + hcas[i];
  out->envs["NCCL_IB_HCA"] = value;
}

}  // namespace

PluginService::PluginService(const PluginResource* resource, PluginNode node)
    : resource_(resource), node_(node) {}

v1beta1::DevicePluginOptions PluginService::Options() {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(false);
  options.set_get_preferred_allocation_available(true);
  return options;
}

v1beta1::ListAndWatchResponse PluginService::DeviceList() const {
  v1beta1::ListAndWatchResponse list;
  for (const AdvertisedDevice& a : resource_->devices) {
    v1beta1::Device* device = list.add_devices();
    device->set_id(a.id);
    bool healthy = node_.health == nullptr || node_.health->healthy(a.device);
    device->set_health(healthy ? "Healthy" : "Unhealthy");
    if (node_.devices != nullptr && a.device < node_.devices->size()) {
      int numa = (*node_.devices)[a.device].numa_node;
      if (numa >= 0) device->mutable_topology()->add_nodes()->set_id(numa);
    }
  }
  return list;
}

grpc::Status PluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* options) {
  *options = Options();
  return grpc::Status::OK;
}

grpc::Status PluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  std::unique_lock<std::mutex> lock(mu_);
  ++open_streams_;
  struct Closed {  // counts the stream out on every return path
    PluginService* service;
    ~Closed() {
      --service->open_streams_;
      service->changed_.notify_all();
    }
  } closed{this};
  bool sent_any = false;
  uint64_t sent = 0;
  while (!ending_) {
    if (!sent_any || sent != generation_) {
      sent = generation_;
      sent_any = true;
      lock.unlock();
      bool written = writer->Write(DeviceList());
      lock.lock();
      if (!written) return grpc::Status(grpc::StatusCode::CANCELLED, "kubelet went away");
      continue;
    }
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    changed_.wait_for(lock, kCancelPoll);
  }
  // An empty list drops the resource's capacity at once instead of after the kubelet's grace.
  lock.unlock();
  writer->Write(v1beta1::ListAndWatchResponse());
  lock.lock();
  return grpc::Status::OK;
}

grpc::Status PluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  for (const v1beta1::ContainerPreferredAllocationRequest& c : request->container_requests()) {
    std::vector<std::string> available(c.available_deviceids().begin(),
                                       c.available_deviceids().end());
    std::vector<std::string> required(c.must_include_deviceids().begin(),
                                      c.must_include_deviceids().end());
    v1beta1::ContainerPreferredAllocationResponse* answer = response->add_container_responses();
    for (const std::string& id :
         PreferredAllocation(*resource_, node_, available, required, c.allocation_size())) {
      answer->add_deviceids(id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status PluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) {
  if (node_.devices == nullptr || node_.config == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "plugin has no node devices");
  }
  for (const v1beta1::ContainerAllocateRequest& c : request->container_requests()) {
    std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
    try {
      ContainerAllocation allocation =
          AllocateContainer(*resource_, *node_.devices, *node_.config, ids);
      AddNcclEnv(*resource_, node_, ids, &allocation);
      ToProto(allocation, response->add_container_responses());
    } catch (const AllocationError& e) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.what());
    } catch (const std::exception& e) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "allocating " + resource_->name + ": " + e.what());
    }
  }
  return grpc::Status::OK;
}

grpc::Status PluginService::PreStartContainer(grpc::ServerContext*,
                                              const v1beta1::PreStartContainerRequest*,
                                              v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

void PluginService::NotifyHealthChanged() {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  changed_.notify_all();
}

void PluginService::EndStreams(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  ending_ = true;
  changed_.notify_all();
  changed_.wait_for(lock, grace, [&] { return open_streams_ == 0; });
}

}  // namespace accel::kube
