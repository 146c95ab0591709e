// FakeDraKubelet: the kubelet's side of DRA for tests — its plugin watcher (finds registration
// sockets in a plugins_registry directory, calls GetInfo, validates the answer as the kubelet's
// DRA plugin handler does, dials the endpoint, answers NotifyRegistrationStatus) and its DRA
// manager (NodePrepareResources / NodeUnprepareResources through v1 or v1beta1, a
// NodeWatchResources stream through v1 or v1alpha1 whose messages it keeps).
//
// It speaks only the wire (the .proto files) and converts answers into claim_types.h structs
// itself, so a test checks the driver's encoding, not a shared helper.
//
// Thread-safe: every member may be called from the test thread while the health reader runs.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dra/claim_types.h"

namespace accel::test_support {

/// The DRA service version a Prepare/Unprepare goes through.
enum class DraVersion {
  kV1,       ///< /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/...
  kV1beta1,  ///< /k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/...
};

/// The health API version a WatchHealth stream goes through.
enum class DraHealthVersion {
  kV1,        ///< /v1.DRAResourceHealth/NodeWatchResources
  kV1alpha1,  ///< /v1alpha1.DRAResourceHealth/NodeWatchResources (no message field)
};

/// What the kubelet learnt from a driver's registration socket (GetInfo, verbatim).
struct DraPluginInfo {
  /// The registration socket it dialed.
  std::string registration_socket;
  std::string type;                             ///< PluginInfo.type
  std::string name;                             ///< PluginInfo.name: the driver name
  std::string endpoint;                         ///< PluginInfo.endpoint: the DRA socket
  std::vector<std::string> supported_versions;  ///< PluginInfo.supported_versions, in order
  /// The version the kubelet picked: the first of supported_versions it knows
  /// ("v1.DRAPlugin" or "v1beta1.DRAPlugin").
  std::string chosen_version;
};

/// One NodeWatchResources message, decoded.
struct DraHealthMessage {
  std::vector<dra::DeviceHealthEntry> devices;
  /// The entry of this device, or null.
  const dra::DeviceHealthEntry* Find(const std::string& pool, const std::string& device) const;
};

class FakeDraKubelet {
 public:
  /// `registry_dir` is the plugins_registry directory Scan looks in; "" when the test only
  /// calls Register with a socket path. Starts nothing.
  explicit FakeDraKubelet(std::string registry_dir = "");
  /// StopWatchingHealth().
  ~FakeDraKubelet();

  FakeDraKubelet(const FakeDraKubelet&) = delete;
  FakeDraKubelet& operator=(const FakeDraKubelet&) = delete;

  /// The plugin watcher's handshake with one registration socket: GetInfo; validation (type
  /// "DRAPlugin", a non-empty name, an absolute endpoint, at least one known version); a dial
  /// of the endpoint (it must be a socket and accept a connection within a few seconds); then
  /// NotifyRegistrationStatus(true), or (false, reason) when validation or the dial failed.
  /// Returns "" when registered, else the reason (a transport error included). A successful
  /// registration replaces the known plugin.
  std::string Register(const std::string& registration_socket);
  /// One pass of the plugin watcher: registers every socket in the registry directory not
  /// registered yet — a new path, or a file re-created at a known path. Returns how many
  /// registered successfully; failures are in last_error().
  int Scan();

  /// The plugin of the last successful registration; nullopt before any.
  std::optional<DraPluginInfo> plugin() const;
  /// Successful registrations since construction.
  int registrations() const;
  /// The reason of the last failed registration; "" when none failed.
  std::string last_error() const;

  /// NodePrepareResources for `claims` through `version` on the registered endpoint.
  /// `results` gets the response map decoded (uid → devices or error). Returns the gRPC status;
  /// FAILED_PRECONDITION when nothing is registered.
  grpc::Status Prepare(const std::vector<dra::ClaimRef>& claims, DraVersion version,
                       std::map<std::string, dra::PrepareResult>* results);
  /// NodeUnprepareResources likewise; `errors` gets uid → error ("" on success).
  grpc::Status Unprepare(const std::vector<dra::ClaimRef>& claims, DraVersion version,
                         std::map<std::string, std::string>* errors);

  /// Opens a NodeWatchResources stream on the registered endpoint (ending a previous one) and
  /// keeps every message it receives, from a reader thread. Returns false when nothing is
  /// registered.
  bool WatchHealth(DraHealthVersion version = DraHealthVersion::kV1);
  /// Waits until at least `count` messages arrived on the current stream. False on timeout
  /// (or when the stream ended with fewer).
  bool WaitForHealthMessages(size_t count, std::chrono::milliseconds timeout);
  /// The messages of the current stream, in arrival order.
  std::vector<DraHealthMessage> health_messages() const;
  /// Waits until the current stream ended; its final status, or nullopt on timeout or when no
  /// stream was opened.
  std::optional<grpc::Status> WaitForHealthEnd(std::chrono::milliseconds timeout);
  /// Cancels the current stream and joins the reader. Idempotent.
  void StopWatchingHealth();

  const std::string& registry_dir() const { return registry_dir_; }

 private:
  struct State;
  std::string registry_dir_;
  std::unique_ptr<State> state_;
};

}  // namespace accel::test_support
