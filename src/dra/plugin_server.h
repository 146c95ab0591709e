// DraPluginServer: accel's DRA driver as the kubelet sees it — gRPC on two unix sockets.
//
//   <registry_dir>/<driver>-reg.sock   pluginregistration.Registration (the kubelet's plugin
//                                      watcher finds it, calls GetInfo, then
//                                      NotifyRegistrationStatus)
//   <plugin_dir>/dra.sock              k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and
//                                      k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin
//                                      (NodePrepareResources / NodeUnprepareResources), and the
//                                      device health streams v1.DRAResourceHealth and
//                                      v1alpha1.DRAResourceHealth (NodeWatchResources)
//
// Claims are prepared by a ClaimHandler (claim_types.h); this class only speaks the wire: every
// requested claim uid gets an entry in the answer, a handler failure (or a malformed claim) is
// that claim's error and never fails the call or another claim.
//
// Health: each NodeWatchResources message is the complete device list (the kubelet marks a
// device missing from a message Unknown once its status is older than its timeout). A stream
// sends the current list at once, again after every SetHealth that changed something, and
// (health_resend_interval) periodically so the kubelet's timeout never lapses.
//
// If the registration or DRA socket disappears while serving (the kubelet cleaning its
// directories), CheckSockets re-creates it, so the plugin watcher registers the driver again;
// a background thread calls it every socket_check_interval.
//
// Thread-safety: every member may be called from any thread; gRPC handlers run on gRPC's
// threads. The ClaimHandler may be called concurrently (from different gRPC calls).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dra/claim_types.h"
#include "k8s/dra-health/v1/api.pb.h"
#include "k8s/dra-health/v1alpha1/api.pb.h"
#include "k8s/dra/v1/api.pb.h"
#include "k8s/dra/v1beta1/api.pb.h"
#include "k8s/pluginregistration/v1/api.pb.h"

namespace accel::dra {

/// The PluginInfo.type of a DRA driver.
inline constexpr char kDraPluginType[] = "DRAPlugin";
/// The DRA service versions accel serves, as GetInfo lists them (newest first: the kubelet
/// uses the first it supports).
inline constexpr char kDraServiceV1[] = "v1.DRAPlugin";
inline constexpr char kDraServiceV1beta1[] = "v1beta1.DRAPlugin";

struct DraPluginOptions {
  /// The driver name: PluginInfo.name, the `driver` of ResourceSlices and allocation results.
  std::string driver_name = "accel.io";
  /// The kubelet's plugin watcher directory.
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  /// Where the DRA socket lives; "" means /var/lib/kubelet/plugins/<driver_name>.
  std::string plugin_dir;
  /// How often the background thread checks that both sockets still exist; 0: never (tests
  /// call CheckSockets themselves).
  std::chrono::milliseconds socket_check_interval{5000};
  /// How often open health streams resend the unchanged list; 0: only on change.
  std::chrono::milliseconds health_resend_interval{10000};
  /// Receives one line per event worth a log line (registration verdicts, sockets re-created,
  /// claims that failed); may be empty.
  std::function<void(const std::string&)> log;

  /// plugin_dir, or its default for driver_name.
  std::string PluginDir() const;
  /// <registry_dir>/<driver_name>-reg.sock
  std::string RegistrationSocket() const;
  /// <PluginDir()>/dra.sock: the endpoint GetInfo answers.
  std::string DraSocket() const;
};

class DraPluginServer {
 public:
  /// `handler` is not owned and must outlive the server (or at least its Stop).
  DraPluginServer(DraPluginOptions options, ClaimHandler* handler);
  ~DraPluginServer();  ///< Stop()

  DraPluginServer(const DraPluginServer&) = delete;
  DraPluginServer& operator=(const DraPluginServer&) = delete;

  /// Creates the directories, removes stale sockets, serves the DRA socket and then the
  /// registration socket (so the kubelet never finds a driver whose endpoint is not up yet), and
  /// starts the socket checker. Restarts when already running. Throws SystemError naming the
  /// socket (or directory) when it cannot create or listen; nothing is left serving then.
  void Start();
  /// Ends open health streams (they return OK), stops serving, removes both sockets; the
  /// registration socket goes first, so the kubelet deregisters before the endpoint vanishes.
  /// Idempotent.
  void Stop();
  /// When running: re-creates a socket that no longer exists (or was replaced by another file).
  /// Returns how many were re-created (0, 1 or 2). Throws SystemError when re-listening fails
  /// (the background checker logs it and retries on its next round instead).
  int CheckSockets();

  /// Replaces the health of every device (the complete list, any order; devices are keyed by
  /// pool and device name). Open streams send the whole new list when the device set, a health
  /// or a message changed; a newer last_updated_time alone is kept and rides along with the next
  /// message (a resend or a change). Callable before Start (the first stream sends it).
  void SetHealth(std::vector<DeviceHealthEntry> devices);
  /// The current list, as the last SetHealth gave it.
  std::vector<DeviceHealthEntry> health() const;

  bool running() const;
  /// The kubelet's last NotifyRegistrationStatus said registered (false before any, and after
  /// Stop or a socket re-creation until the kubelet answers again).
  bool registered() const;
  /// The error of the kubelet's last refusal; "" when it never refused or has since accepted.
  std::string registration_error() const;
  /// NotifyRegistrationStatus calls received (accepted or not) since construction.
  int registration_notifications() const;
  /// Sockets re-created by CheckSockets since construction.
  int socket_recreations() const;
  /// Health streams open now.
  int open_health_streams() const;

  const DraPluginOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Conversions between the wire messages and claim_types.h. Exposed for tests; the service uses
// these. Both DRA versions have the same shape.

/// The claim as the kubelet named it (fields copied as they are, even empty).
ClaimRef ClaimFromProto(const k8s::io::kubelet::pkg::apis::dra::v1::Claim& claim);
ClaimRef ClaimFromProto(const k8s::io::kubelet::pkg::apis::dra::v1beta1::Claim& claim);
/// Why the kubelet's claim cannot be served ("claim has no uid" …), or "" when it is well formed.
std::string ValidateClaim(const ClaimRef& claim);
/// Writes `result` (devices, or only the error when there is one) into `out`.
void PrepareResultToProto(const PrepareResult& result,
                          k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse* out);
void PrepareResultToProto(
    const PrepareResult& result,
    k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourceResponse* out);
/// One device's health in each health API version (v1alpha1 has no message).
void HealthToProto(const DeviceHealthEntry& entry, ::v1::DeviceHealth* out);
void HealthToProto(const DeviceHealthEntry& entry, ::v1alpha1::DeviceHealth* out);
/// The registration answer for `options`.
pluginregistration::PluginInfo PluginInfoFor(const DraPluginOptions& options);

/// The whole NodePrepareResources answer: the handler's result for every claim of `request`,
/// keyed by uid (a claim listed twice is prepared once; a malformed one is not handed to the
/// handler and gets ValidateClaim's error; a handler that throws gets the exception's text).
void PrepareClaims(ClaimHandler& handler,
                   const k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest& request,
                   k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse* response);
void PrepareClaims(
    ClaimHandler& handler,
    const k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesRequest& request,
    k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourcesResponse* response);
/// The whole NodeUnprepareResources answer, with the same rules.
void UnprepareClaims(
    ClaimHandler& handler,
    const k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest& request,
    k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse* response);
void UnprepareClaims(
    ClaimHandler& handler,
    const k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesRequest& request,
    k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse* response);

}  // namespace accel::dra
