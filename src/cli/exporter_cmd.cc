// accel exporter: accelerator telemetry on HTTP /metrics for Prometheus, drop-in for
// dcgm-exporter, AMD's device-metrics-exporter and the Gaudi exporter, plus the accel_* family.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "common/error.h"
#include "devices/backend.h"
#include "devices/open_backends.h"
#include "devices/topology_join.h"
#include "telemetry/collector.h"
#include "telemetry/http_server.h"
#include "telemetry/listen_address.h"
#include "telemetry/render_profile.h"
#include "telemetry/web_config.h"
#include "topology/sources.h"

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
  bool once = false;
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

telemetry::RenderOptions RenderOptionsFrom(const ExporterOptions& o) {
  telemetry::RenderOptions r = telemetry::RenderOptionsForProfile(o.profile, "--profile", "");
  r.accel = !o.no_accel_metrics;
  if (o.no_hostname || o.hostname_label == "none") {
    r.dcgm_hostname_label = "";
  } else if (o.hostname_label == "Hostname" || o.hostname_label == "hostname") {
    r.dcgm_hostname_label = o.hostname_label;
  } else {
    throw InputError("--hostname-label", "", "'" + o.hostname_label + "' is not a label name",
                     "use Hostname (dcgm-exporter releases), hostname (dcgm-exporter HEAD) or none");
  }
  return r;
}

bool SocketExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// Loads each enabled vendor's library; a vendor without one contributes no devices.
std::vector<std::unique_ptr<devices::DeviceBackend>> OpenBackends(const ExporterOptions& o) {
  devices::VendorLibraries libraries{o.nvml_library, o.rocm_smi_library, o.hlml_library};
  return devices::OpenBackends(SplitList(o.vendors), libraries, [](const std::string& line) {
    std::cerr << "accel exporter: " << line << "\n";
  });
}

/// NUMA nodes of the devices from the host topology; a host we cannot read only loses them.
std::vector<devices::DeviceIdentity> JoinedIdentities(const telemetry::Collector& collector,
                                                      const std::string& spec) {
  std::vector<devices::DeviceIdentity> ids = collector.identities();
  if (spec == "none" || ids.empty()) return ids;
  try {
    devices::JoinTopology(&ids, topology::LoadTopology(spec));
  } catch (const std::exception& e) {
    std::cerr << "accel exporter: warning: no NUMA nodes for devices: " << e.what() << "\n";
  }
  return ids;
}

/// Blocks until SIGINT or SIGTERM. The signals are blocked in every thread (set up before any
/// thread starts), so only this sigwait sees them.
void WaitForTermination(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "accel exporter: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ", stopping\n";
}

/// The exporter is long-running with a few threads that each allocate the same large buffers
/// (rendered text, gzip copies) over and over; glibc's defaults would keep a 64 MiB arena per
/// thread and hold freed big buffers in them. Two arenas and a fixed mmap threshold keep RSS at
/// what is live.
void TuneAllocatorForALongRunningExporter() {
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

int RunExporter(const ExporterOptions& o) {
  TuneAllocatorForALongRunningExporter();
  telemetry::CollectorOptions copts;
  telemetry::WebConfig web;
  telemetry::ListenAddress address;
  std::vector<std::unique_ptr<devices::DeviceBackend>> backends;
  try {
    copts.render = RenderOptionsFrom(o);
    copts.interval = telemetry::ParseDuration(o.interval, "--collect-interval");
    if (!o.stale_after.empty()) copts.stale_after = telemetry::ParseDuration(o.stale_after, "--stale-after");
    copts.pod_refresh_interval = telemetry::ParseDuration(o.pod_refresh, "--pod-refresh-interval");
    copts.hostname = telemetry::NodeName();
    if (!o.no_kubernetes && (o.kubernetes || SocketExists(o.pod_socket))) {
      copts.pod_resources_socket = o.pod_socket;
    }
    if (!o.once) {
      address = telemetry::ParseListenAddress(o.listen);
      web = telemetry::LoadWebConfig(o.web_config);
    }
    backends = OpenBackends(o);
  } catch (const InputError& e) {
    std::cerr << "accel exporter: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const devices::BackendError& e) {
    std::cerr << "accel exporter: " << e.what() << "\n";
    return kExitBadInput;
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto collector = std::make_unique<telemetry::Collector>(std::move(backends), copts);
  collector->SetIdentities(JoinedIdentities(*collector, o.topology));
  collector->Start();
  if (o.once) {
    // Rates (GPM activity, NVLink bandwidth) need a second reading.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    collector->RefreshNow();
    std::cout << *collector->exposition();
    std::cout.flush();
    if (!collector->Stop()) _exit(kExitOk);  // a vendor call is still hung: leave it behind
    return kExitOk;
  }

  telemetry::Collector* c = collector.get();
  telemetry::MetricsServer server(
      web, [c] { return c->exposition(); }, [] { return true; });
  try {
    server.Start(address);
  } catch (const std::exception& e) {
    std::cerr << "accel exporter: " << e.what() << "\n";
    if (!collector->Stop()) _exit(kExitBadInput);
    return kExitBadInput;
  }
  telemetry::ListenAddress bound = address;
  bound.port = server.port();
  std::cerr << "accel exporter: serving /metrics on " << telemetry::FormatListenAddress(bound)
            << (web.tls.enabled ? " (TLS)" : "") << ", " << collector->identities().size()
            << " device(s), every " << copts.interval.count() << " ms\n";
  WaitForTermination(signals);
  server.Stop();
  if (!collector->Stop()) {
    std::cerr << "accel exporter: a vendor library call is still hung; exiting without it\n";
    _exit(kExitOk);
  }
  return kExitOk;
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
      "  accel exporter --once                           # print one scrape and exit\n\n"
      "Pods: when the kubelet's pod-resources socket exists (or with -k), series of devices held\n"
      "by pods carry namespace/pod/container labels; accel_pod_device_info maps them.\n"
      "Exit status: 0 stopped by SIGTERM/SIGINT; 2 bad flags, web config or vendor library.");
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
  cmd->add_flag("--once", o->once, "collect once, print the exposition to stdout and exit");
  cmd->callback([o, exit_code] { *exit_code = RunExporter(*o); });
}

}  // namespace accel::cli
