// FakeKubelet: a real gRPC server on a unix socket that speaks the kubelet pod-resources API v1
// (List, GetAllocatableResources), with the answers and failures a test sets.
//
// Thread-safe: setters may be called from the test thread while gRPC threads serve calls, and
// while a child process (`accel exporter`) is polling the socket. The namespace is test_support,
// not testing, so that `testing::` inside namespace accel still means GoogleTest's.
#pragma once

#include <grpcpp/support/status_code_enum.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kube/pod_resources.h"

namespace accel::test_support {

class FakeKubelet {
 public:
  /// Starts serving on `socket_path` (a path, no "unix:" prefix; a stale socket file there is
  /// replaced). Throws std::runtime_error when the server cannot start.
  explicit FakeKubelet(std::string socket_path);
  /// Stops the server (see Stop()).
  ~FakeKubelet();

  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  /// What List answers from now on. Entries are grouped into pods by (namespace, pod) and into
  /// containers by name, in first-seen order. An entry with an empty `resource` only declares
  /// its container (a container holding no devices); an entry with a resource and no IDs is sent
  /// as a ContainerDevices with no device_ids.
  void SetPods(std::vector<kube::ContainerDevices> pods);

  /// What GetAllocatableResources answers (only `resource` and `device_ids` are used).
  void SetAllocatable(std::vector<kube::ContainerDevices> devices);

  /// The next `count` List calls fail with this status (after any delay), then answers resume.
  void FailNext(grpc::StatusCode code, std::string message, int count = 1);
  /// Every List call fails with this status until ClearFailure().
  void SetFailure(grpc::StatusCode code, std::string message);
  void ClearFailure();

  /// List waits this long before answering (cut short when the caller gives up or Stop() runs).
  void SetDelay(std::chrono::milliseconds delay);

  /// List calls received so far, answered or failed.
  uint64_t list_calls() const;

  /// Shuts the server down; gRPC removes the socket file (by path: stop the old server before a
  /// new FakeKubelet takes the same path). Pending calls are cancelled. Idempotent.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }

 private:
  class Service;
  std::string socket_path_;
  std::unique_ptr<Service> service_;
  struct Server;
  std::unique_ptr<Server> server_;
};

}  // namespace accel::test_support
