// accel exporter: accelerator telemetry on HTTP /metrics for Prometheus, drop-in for
// dcgm-exporter, AMD's device-metrics-exporter and the Gaudi exporter, plus the accel_* family.
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "agent/agent_config.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "common/strings.h"
#include "kube/pod_resources.h"
#include "telemetry/collector.h"

namespace accel::cli {

namespace {

struct ExporterOptions {
  std::string listen = ":9400";
  std::string web_config;
  std::string profile = "auto";
  bool no_accel_metrics = false;
  std::string hostname_label = "Hostname";
  bool no_hostname = false;
  std::string interval = "5s";
  std::string stale_after;
  bool kubernetes = false;
  bool no_kubernetes = false;
  std::string pod_socket = kube::kDefaultPodResourcesSocket;
  std::string pod_refresh = "10s";
  std::string nvml_library, rocm_smi_library, hlml_library;
  std::string vendors = "nvidia,amd,habana";
  std::string topology = "live";
  std::string collectors;
  std::string amd_metrics_config;
  bool once = false;
};

/// The exporter as the agent runs it: only the exporter part, from the command line.
agent::AgentConfig ConfigFrom(const ExporterOptions& o) {
  agent::AgentConfig c;
  c.vendors = SplitList(o.vendors);
  c.nvml_library = o.nvml_library;
  c.rocm_smi_library = o.rocm_smi_library;
  c.hlml_library = o.hlml_library;
  c.topology = o.topology;
  c.device_plugin.enabled = false;
  c.labels.enabled = false;
  c.mig.enabled = false;
  agent::ExporterSection& e = c.exporter;
  e.enabled = !o.once;  // --once prints instead of listening
  e.listen = o.listen;
  e.web_config_file = o.web_config;
  e.profile = o.profile;
  e.accel_metrics = !o.no_accel_metrics;
  e.hostname_label = o.no_hostname ? "" : agent::HostnameLabel("--hostname-label", o.hostname_label, "");
  e.collect_interval = telemetry::ParseDuration(o.interval, "--collect-interval");
  if (!o.stale_after.empty()) e.stale_after = telemetry::ParseDuration(o.stale_after, "--stale-after");
  e.pods = o.no_kubernetes ? agent::PodAttribution::kNever
           : o.kubernetes  ? agent::PodAttribution::kAlways
                           : agent::PodAttribution::kAuto;
  e.pod_resources_socket = o.pod_socket;
  e.pod_refresh_interval = telemetry::ParseDuration(o.pod_refresh, "--pod-refresh-interval");
  e.collectors = o.collectors;
  e.amd_metrics_config = o.amd_metrics_config;
  agent::LoadFieldSelection(&e, "");
  return c;
}

int RunExporter(const ExporterOptions& o) {
  DaemonSpec spec;
  spec.name = "accel exporter";
  spec.load = [&o] { return ConfigFrom(o); };
  if (o.once) {
    spec.once = [](agent::Agent& agent) {
      // Rates (GPM activity, NVLink bandwidth) need a second reading.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::shared_ptr<const std::string> exposition = agent.CollectNow();
      if (exposition) std::cout << *exposition;
    };
  }
  return RunDaemon(spec);
}

}  // namespace

void RegisterExporter(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExporterOptions>();
  CLI::App* cmd = app.add_subcommand(
      "exporter",
      "Serve accelerator telemetry (NVIDIA via NVML, AMD via ROCm SMI, Gaudi via HLML) on HTTP\n"
      "/metrics in Prometheus text format. Vendor profiles keep existing dashboards working:\n"
      "dcgm (dcgm-exporter's DCGM_FI_* names and labels), amd (gpu_*), gaudi (habanalabs_*);\n"
      "the accel_* family covers every vendor with one label set. Devices are read in the\n"
      "background; a scrape serves the last complete pass, so a slow or hung driver call never\n"
      "blocks /metrics (the device shows accel_device_up 0 instead).\n\n"
      "Examples:\n"
      "  accel exporter                                  # :9400, every vendor found\n"
      "  accel exporter --web.listen-address 127.0.0.1:9400 --collect-interval 10s\n"
      "  accel exporter --web.config.file web.yml        # TLS / basic auth (docs/web-config.md)\n"
      "  accel exporter --profile dcgm --hostname-label hostname\n"
      "  accel exporter -f /etc/dcgm-exporter/dcp-metrics-included.csv   # dcgm-exporter's fields\n"
      "  accel exporter --amd-metrics-config /etc/metrics/config.json   # device-metrics-exporter's\n"
      "  accel exporter --once                           # print one scrape and exit\n\n"
      "Fields: without -f the dcgm profile prints dcgm-exporter's 25 defaults. -f takes the same\n"
      "counters CSV dcgm-exporter does (field, type, help; '#' comments; the ConfigMap you mount\n"
      "today) and serves exactly its fields with its types and HELP texts; a field accel cannot\n"
      "read is named in one warning at start. docs/metrics.md lists every field and its source.\n\n"
      "Pods: when the kubelet's pod-resources socket exists (or with -k), series of devices held\n"
      "by pods carry namespace/pod/container labels; accel_pod_device_info maps them.\n"
      "It is the node agent (accel serve) with only its exporter part: one daemon, one way to\n"
      "start, reload (SIGHUP re-reads the web config) and stop.\n"
      "Exit status: 0 stopped by SIGTERM/SIGINT; 2 bad flags, web config or vendor library;\n"
      "5 the system refused (port in use).");
  cmd->add_option("--web.listen-address,-a,--address", o->listen,
                  "address to listen on: [host]:port, e.g. :9400, 127.0.0.1:9400, [::]:9400")
      ->capture_default_str();
  cmd->add_option("--web.config.file,--web-config-file", o->web_config,
                  "exporter-toolkit web config (TLS, basic auth); see docs/web-config.md");
  cmd->add_option("--profile", o->profile,
                  "vendor compatibility profiles: auto (each vendor's own), none, or a comma "
                  "list of dcgm, amd, gaudi")
      ->capture_default_str();
  cmd->add_flag("--no-accel-metrics", o->no_accel_metrics, "leave out the accel_* family");
  cmd->add_option("--hostname-label", o->hostname_label,
                  "dcgm profile's node label: Hostname (released dcgm-exporter), hostname "
                  "(dcgm-exporter HEAD) or none")
      ->capture_default_str();
  cmd->add_flag("--no-hostname", o->no_hostname, "same as --hostname-label none");
  cmd->add_option("-c,--collect-interval", o->interval,
                  "time between collection passes: 500ms, 5s, 1m; a bare number is milliseconds")
      ->capture_default_str();
  cmd->add_option("--stale-after", o->stale_after,
                  "report a device stale (accel_device_up 0) when its newest reading is older "
                  "(default 3 x collect interval)");
  cmd->add_flag("-k,--kubernetes", o->kubernetes,
                "attribute devices to pods even if the socket is missing at start");
  cmd->add_flag("--no-kubernetes", o->no_kubernetes, "never ask the kubelet for pods");
  cmd->add_option("--pod-resources-socket,--pod-resources-kubelet-socket", o->pod_socket,
                  "kubelet pod-resources socket")
      ->capture_default_str();
  cmd->add_option("--pod-refresh-interval", o->pod_refresh, "time between kubelet List calls")
      ->capture_default_str();
  cmd->add_option("--nvml-library", o->nvml_library,
                  "path of libnvidia-ml.so.1 when it is off the loader's search path");
  cmd->add_option("--rocm-smi-library", o->rocm_smi_library, "path of librocm_smi64.so");
  cmd->add_option("--hlml-library", o->hlml_library, "path of libhlml.so");
  cmd->add_option("--vendors", o->vendors, "vendors to look for: comma list of nvidia, amd, habana")
      ->capture_default_str();
  cmd->add_option("--topology,-t", o->topology,
                  "host topology for the numa_node label: live, an hwloc XML or accel host JSON "
                  "file, or none")
      ->capture_default_str();
  cmd->add_option("-f,--collectors", o->collectors,
                  "dcgm-exporter counters CSV: serve exactly the DCGM fields it lists (same file "
                  "as dcgm-exporter's -f; env DCGM_EXPORTER_COLLECTORS)")
      ->envname("DCGM_EXPORTER_COLLECTORS");
  cmd->add_option("--amd-metrics-config", o->amd_metrics_config,
                  "AMD device-metrics-exporter config.json (or its ConfigMap): serve its "
                  "GPUConfig.Fields with its MetricsFieldPrefix");
  cmd->add_flag("--once", o->once, "collect once, print the exposition to stdout and exit");
  cmd->callback([o, exit_code] { *exit_code = RunExporter(*o); });
}

}  // namespace accel::cli
