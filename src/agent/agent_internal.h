// Pieces of the node agent shared by agent.cc and its helpers; not part of the interface.
#pragma once

#include "common/periodic_thread.h"

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "agent/agent_config.h"
#include "kube/node_labels.h"
#include "telemetry/collector.h"

namespace accel::agent::internal {

/// True when `path` names something that exists (a socket, a directory); false for "".
inline bool PathExists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::exists(path, ec);
}

using Log = std::function<void(const std::string&)>;

/// The collector's options for the exporter section: profiles and families, hostname label,
/// intervals, pod attribution (the socket is used when `pods` says so). `where` names the
/// config in errors ("agent.yaml", "accel exporter"). Throws InputError(where,
/// "exporter.profile", ...) on an unknown profile. on_event/on_reading are left empty.
telemetry::CollectorOptions CollectorOptionsFor(const ExporterSection& exporter,
                                                const std::string& where);


/// Applies mig.config (when mig.enabled and a config is named): writes the state file
/// "pending", plans and executes, then "success" or "failed". Never throws: a failure is
/// logged and the agent goes on with the GPUs as they are.
void ApplyMigConfig(const AgentConfig& config, const Log& log);

/// Rewrites the feature file every `interval` on its own thread (NFD may delete it, and an
/// operator may wipe the directory), as long as the file's directory exists: else one log line
/// per start and nothing is written. Thread-safe Stop; the destructor stops.
class LabelWriter {
 public:
  LabelWriter(std::string path, kube::Labels labels, std::chrono::milliseconds interval, Log log);
  ~LabelWriter();
  /// Writes once now (so the labels exist when Start returns), then starts the thread.
  void Start();
  void Stop();

 private:
  void WriteOnce();

  std::string path_;
  kube::Labels labels_;
  std::chrono::milliseconds interval_;
  Log log_;
  bool directory_missing_logged_ = false;
  bool error_logged_ = false;
  PeriodicThread thread_;
};

}  // namespace accel::agent::internal
