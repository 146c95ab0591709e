// PodResourcesClient: a client of the kubelet pod-resources API v1 (gRPC on a unix socket).
//
// Used to attribute devices to the pods that hold them. One client per exporter; List() may be
// called from one thread at a time (the collector's pod-refresh thread). The channel reconnects
// by itself, so a kubelet restart (new socket inode) is picked up on the next call.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace accel::kube {

/// The kubelet's default socket.
inline constexpr const char* kDefaultPodResourcesSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

/// One container's devices of one extended resource, flattened from ListPodResourcesResponse.
struct ContainerDevices {
  std::string namespace_name;           ///< pod namespace
  std::string pod;                      ///< pod name
  std::string container;                ///< container name
  std::string resource;                 ///< resource_name, e.g. "nvidia.com/gpu"
  std::vector<std::string> device_ids;  ///< device IDs as the device plugin named them
};

class PodResourcesClient {
 public:
  /// socket_path: filesystem path of the kubelet socket (no "unix://" prefix needed; one is
  /// accepted). Does not connect yet.
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();

  /// Calls List with a deadline of `timeout`. On success returns true and replaces *out with
  /// every (container, resource) that has device IDs. On failure returns false, leaves *out
  /// untouched and sets *error to a one-line reason ("socket /x does not exist", the gRPC status).
  bool List(std::chrono::milliseconds timeout, std::vector<ContainerDevices>* out,
            std::string* error);

  const std::string& socket_path() const { return socket_path_; }

 private:
  struct Channel;
  std::string socket_path_;
  std::unique_ptr<Channel> channel_;
};

}  // namespace accel::kube
