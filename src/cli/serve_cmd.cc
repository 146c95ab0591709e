// accel serve: the node agent — exporter, device plugin, node labels and MIG manager in one
// process from one YAML file; SIGHUP reloads the file, SIGINT/SIGTERM stop gracefully.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include "agent/agent.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "common/strings.h"

namespace accel::cli {

namespace {

struct ServeOptions {
  std::string config;
  bool once = false;
  std::string nvml_library, rocm_smi_library, hlml_library, vendors;
  std::string kubeconfig;
  bool dra = false;
};

/// The file, with the command line's overrides on top.
agent::AgentConfig LoadConfig(const ServeOptions& o) {
  agent::AgentConfig c = agent::LoadAgentConfig(o.config);
  if (!o.nvml_library.empty()) c.nvml_library = o.nvml_library;
  if (!o.rocm_smi_library.empty()) c.rocm_smi_library = o.rocm_smi_library;
  if (!o.hlml_library.empty()) c.hlml_library = o.hlml_library;
  if (!o.vendors.empty()) c.vendors = SplitList(o.vendors);
  if (o.dra) c.dra.enabled = true;
  if (!o.kubeconfig.empty()) c.dra.kubeconfig = o.kubeconfig;
  return c;
}

void PrintSummary(const agent::AgentStatus& s) {
  std::cout << "devices: " << s.devices.size() << "\n";
  for (const auto& d : s.devices) {
    std::cout << "  " << d.id << "  " << d.model;
    if (d.is_mig()) std::cout << "  mig " << d.mig_profile;
    if (d.numa_node >= 0) std::cout << "  numa " << d.numa_node;
    std::cout << "\n";
  }
  std::cout << "resources: " << s.resources.size() << "\n";
  for (const auto& [name, count] : s.resources) std::cout << "  " << name << ": " << count << "\n";
  std::cout << "labels: " << s.labels.size() << "\n";
  for (const auto& [key, value] : s.labels) std::cout << "  " << key << "=" << value << "\n";
  size_t lines = s.exposition ? std::count(s.exposition->begin(), s.exposition->end(), '\n') : 0;
  std::cout << "metrics: " << lines << " lines\n";
  std::cout << "exporter: " << (s.exporter_port ? "port " + std::to_string(s.exporter_port) : "off")
            << "\n";
  std::cout << "device plugin: " << (s.device_plugin ? "serving" : "off") << "\n";
  std::cout << "dra: "
            << (s.dra ? s.dra_driver + ", " + std::to_string(s.dra_devices.size()) + " device(s)" : "off")
            << "\n";
  for (const auto& d : s.dra_devices) std::cout << "  " << d << "\n";
  for (const auto& m : s.mps) {
    std::cout << "mps: " << m.resource << ": "
              << (m.up ? "up, pid " + std::to_string(m.pid) : "down: " + m.error) << " ("
              << m.pipe_dir << ")\n";
    for (const auto& limit : m.limits) std::cout << "  " << limit << "\n";
  }
}

int RunServe(const ServeOptions& o) {
  DaemonSpec spec;
  spec.name = "accel serve";
  spec.load = [&o] { return LoadConfig(o); };
  if (o.once) spec.once = [](agent::Agent& agent) { PrintSummary(agent.status()); };
  return RunDaemon(spec);
}

}  // namespace

void RegisterServe(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the node agent: the exporter (/metrics), the Kubernetes device plugin (one resource\n"
      "per socket, NVIDIA k8s-device-plugin config: MIG strategies, time-slicing, MPS), node labels\n"
      "for node-feature-discovery and the MIG manager, from one YAML file (docs/node-agent.md).\n"
      "A node without accelerators still serves its topology labels and metrics.\n\n"
      "Examples:\n"
      "  accel serve                                     # defaults: every part, every vendor\n"
      "  accel serve --config /etc/accel/agent.yaml\n"
      "  accel serve --config examples/agent/time-slicing.yaml --once   # print what it serves\n"
      "  accel serve --config examples/agent/mps.yaml   # MPS: one control daemon per resource\n"
      "  accel serve --dra --kubeconfig ~/.kube/config  # DRA driver accel.io (docs/dra.md)\n"
      "  kill -HUP $(pidof accel)                        # reload the config file\n\n"
      "Signals: SIGHUP reloads the file (a bad file is logged and the running config kept);\n"
      "SIGINT/SIGTERM stop: device plugins withdraw their devices and remove their sockets.\n"
      "Exit status: 0 stopped by a signal (or --once done); 2 bad config, vendor library or\n"
      "listen address; 5 the system refused (port in use, socket): nothing was registered.");
  cmd->add_option("--config,-f", o->config, "agent YAML (see examples/agent/agent.yaml); none = defaults");
  cmd->add_flag("--once", o->once,
                "start, print devices, resources, labels and the metrics size, stop, exit");
  cmd->add_option("--nvml-library", o->nvml_library, "overrides libraries.nvml of the file");
  cmd->add_option("--rocm-smi-library", o->rocm_smi_library, "overrides libraries.rocmSmi");
  cmd->add_option("--hlml-library", o->hlml_library, "overrides libraries.hlml");
  cmd->add_option("--vendors", o->vendors, "overrides vendors: comma list of nvidia, amd, habana");
  cmd->add_flag("--dra", o->dra, "run the DRA driver (dra.enabled: true; docs/dra.md)");
  cmd->add_option("--kubeconfig", o->kubeconfig,
                  "kubeconfig for the DRA driver's API access (dra.kubeconfig); default: in-cluster");
  cmd->callback([o, exit_code] { *exit_code = RunServe(*o); });
}

}  // namespace accel::cli
