// FakeDevicePluginKubelet: the kubelet's side of the device plugin API v1beta1 for tests — a real
// Registration server on <dir>/kubelet.sock that, as the kubelet does, dials each registering
// plugin back inside Register, asks for its options, then keeps a ListAndWatch stream open and
// remembers the latest device list per resource. Tests call Allocate and GetPreferredAllocation
// through it and simulate a kubelet restart with Restart().
//
// Thread-safe: every member may be called from the test thread while gRPC and reader threads run.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/deviceplugin/v1beta1/api.pb.h"

namespace accel::test_support {

/// One device as the latest ListAndWatch message listed it.
struct ListedDevice {
  std::string id;
  /// "Healthy" or "Unhealthy".
  std::string health;
  /// NUMA node ids of Device.topology; empty when absent.
  std::vector<int64_t> numa_nodes;
};

/// What the kubelet knows of one registered resource (its newest registration).
struct RegisteredPlugin {
  /// Socket file name in the plugin directory.
  std::string endpoint;
  /// The answer of GetDevicePluginOptions during Register.
  bool preferred_allocation = false;
  /// The devices of the latest ListAndWatch message.
  std::vector<ListedDevice> devices;
  /// ListAndWatch messages received.
  int messages = 0;
  /// The plugin ended the ListAndWatch stream (or it broke).
  bool stream_ended = false;
  /// When Register was answered.
  std::chrono::steady_clock::time_point registered_at;

  /// The listed device with this id, or null.
  const ListedDevice* Find(const std::string& id) const;
  /// How many listed devices have health "Healthy".
  int healthy() const;
};

class FakeDevicePluginKubelet {
 public:
  /// Serves Registration on <dir>/kubelet.sock (dir must exist; a stale socket is replaced).
  /// Throws std::runtime_error when it cannot serve.
  explicit FakeDevicePluginKubelet(std::string dir);
  /// Stop().
  ~FakeDevicePluginKubelet();

  FakeDevicePluginKubelet(const FakeDevicePluginKubelet&) = delete;
  FakeDevicePluginKubelet& operator=(const FakeDevicePluginKubelet&) = delete;

  /// Waits until `resource` is registered and `predicate` holds for it. Returns false on timeout.
  bool WaitForResource(const std::string& resource,
                       const std::function<bool(const RegisteredPlugin&)>& predicate,
                       std::chrono::milliseconds timeout);
  /// A copy of what is known of `resource`; nullopt when it never registered (since Restart).
  std::optional<RegisteredPlugin> Resource(const std::string& resource) const;
  /// Successful registrations since construction (across restarts).
  int registrations() const;

  /// Allocate with one container request of `ids` on the plugin of `resource`; UNAVAILABLE when
  /// the resource is not registered.
  grpc::Status Allocate(const std::string& resource, const std::vector<std::string>& ids,
                        v1beta1::AllocateResponse* response);
  /// GetPreferredAllocation with one container request; `ids` gets container_responses[0].
  grpc::Status GetPreferredAllocation(const std::string& resource,
                                      const std::vector<std::string>& available,
                                      const std::vector<std::string>& must_include, int size,
                                      std::vector<std::string>* ids);

  /// Register answers `status` from now on (OK: registrations are accepted again).
  void SetRegisterStatus(grpc::Status status);

  /// A kubelet restart: stops serving and drops every plugin stream, deletes every socket in the
  /// directory (CleanupPluginDirectory), forgets the resources, and serves a fresh kubelet.sock.
  void Restart();
  /// Stops serving and ends every stream. Idempotent.
  void Stop();

  const std::string& dir() const { return dir_; }
  std::string socket_path() const { return dir_ + "/kubelet.sock"; }

 private:
  struct State;
  class Service;
  void Serve();
  void StopServing();

  std::string dir_;
  std::unique_ptr<State> state_;
  std::unique_ptr<Service> service_;
  struct Server;
  std::unique_ptr<Server> server_;
};

}  // namespace accel::test_support
