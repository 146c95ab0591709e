// The exporter section as collector options: the one place `accel serve` and `accel exporter`
// turn their exporter settings into what the collector and renderers run with.
#include "agent/agent_internal.h"
#include "telemetry/render_profile.h"

namespace accel::agent::internal {

telemetry::CollectorOptions CollectorOptionsFor(const ExporterSection& exporter,
                                                const std::string& where) {
  telemetry::CollectorOptions copts;
  copts.render = telemetry::RenderOptionsForProfile(exporter.profile, where, "exporter.profile");
  copts.render.accel = exporter.accel_metrics;
  copts.render.dcgm_hostname_label = exporter.hostname_label;
  copts.interval = exporter.collect_interval;
  copts.stale_after = exporter.stale_after;
  copts.hostname = telemetry::NodeName();
  bool pods = exporter.pods == PodAttribution::kAlways ||
              (exporter.pods == PodAttribution::kAuto && PathExists(exporter.pod_resources_socket));
  if (pods) copts.pod_resources_socket = exporter.pod_resources_socket;
  copts.pod_refresh_interval = exporter.pod_refresh_interval;
  // A field selection reads what it lists, and only that, beyond the default set (the collector
  // derives the reads and event history it needs from it).
  copts.render.fields = exporter.fields;
  return copts;
}

}  // namespace accel::agent::internal
