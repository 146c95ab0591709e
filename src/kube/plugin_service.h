// PluginService: the DevicePlugin gRPC service of one resource (what the kubelet calls on the
// plugin's socket). Internal to DevicePluginServer.
//
// Thread-safety: handlers run on gRPC's threads; NotifyHealthChanged and EndStreams may be
// called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "kube/plugin_server.h"
#include "kube/resources.h"

namespace accel::kube {

class PluginService final : public v1beta1::DevicePlugin::Service {
 public:
  /// `resource` and everything `node` points to must outlive the service.
  PluginService(const PluginResource* resource, PluginNode node);

  /// What the plugin supports: preferred allocation, no PreStartContainer.
  static v1beta1::DevicePluginOptions Options();
  /// The resource's full device list with current health and NUMA topology.
  v1beta1::ListAndWatchResponse DeviceList() const;

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* options) override;
  /// Sends the list at once and again after each NotifyHealthChanged; after EndStreams sends an
  /// empty list and returns OK. Returns CANCELLED when the kubelet goes away.
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  /// One answer per container request; never an error.
  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  /// One response per container request; INVALID_ARGUMENT with AllocationError's message for a
  /// request the plugin refuses (the kubelet shows it in the pod's admission error).
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override;

  void NotifyHealthChanged();
  /// Makes every ListAndWatch stream (and any later one) send an empty list and end; waits up
  /// to `grace` for open streams to have done so.
  void EndStreams(std::chrono::milliseconds grace);

 private:
  const PluginResource* resource_;
  PluginNode node_;

  std::mutex mu_;
  std::condition_variable changed_;
  /// Bumped by NotifyHealthChanged; each stream sends when it differs from what it sent.
  uint64_t generation_ = 0;
  bool ending_ = false;
  int open_streams_ = 0;
};

}  // namespace accel::kube
