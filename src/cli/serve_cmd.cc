// accel serve: the node agent — exporter, device plugin, node labels and MIG manager in one
// process from one YAML file; SIGHUP reloads the file, SIGINT/SIGTERM stop gracefully.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "agent/agent.h"
#include "cli/commands.h"
#include "common/error.h"
#include "devices/backend.h"

namespace accel::cli {

namespace {

struct ServeOptions {
  std::string config;
  bool once = false;
  std::string nvml_library, rocm_smi_library, hlml_library, vendors;
};

/// The file, with the command line's overrides on top.
agent::AgentConfig LoadConfig(const ServeOptions& o) {
  agent::AgentConfig c = agent::LoadAgentConfig(o.config);
  if (!o.nvml_library.empty()) c.nvml_library = o.nvml_library;
  if (!o.rocm_smi_library.empty()) c.rocm_smi_library = o.rocm_smi_library;
  if (!o.hlml_library.empty()) c.hlml_library = o.hlml_library;
  if (!o.vendors.empty()) {
    c.vendors.clear();
    std::stringstream in(o.vendors);
    for (std::string v; std::getline(in, v, ',');) {
      if (!v.empty()) c.vendors.push_back(v);
    }
  }
  return c;
}

void Log(const std::string& line) { std::cerr << "accel serve: " << line << "\n"; }

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
}

/// Waits for signals and acts on them until SIGINT/SIGTERM.
void SignalLoop(const sigset_t& signals, agent::Agent* agent, const ServeOptions& o) {
  for (;;) {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != SIGHUP) {
      Log(std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", stopping");
      return;
    }
    Log("SIGHUP, reloading " + (o.config.empty() ? std::string("(defaults)") : o.config));
    try {
      agent->Reload(LoadConfig(o));
      Log("reloaded");
    } catch (const std::exception& e) {
      Log(std::string("reload failed, keeping the previous config: ") + e.what());
    }
  }
}

int RunServe(const ServeOptions& o) {
  // Long-running, several threads allocating the same big buffers: see `accel exporter`.
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  agent::AgentConfig config;
  try {
    config = LoadConfig(o);
  } catch (const InputError& e) {
    Log(e.what());
    return kExitBadInput;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  auto agent = std::make_unique<agent::Agent>(Log);
  try {
    agent->Start(config);
  } catch (const std::exception& e) {  // InputError, BackendError, cannot listen
    Log(e.what());
    return kExitBadInput;
  }
  if (o.once) {
    PrintSummary(agent->status());
    std::cout.flush();
  } else {
    SignalLoop(signals, agent.get(), o);
  }
  if (!agent->Stop()) {
    agent.release();  // a vendor call is still hung: leave it behind
    _exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace

void RegisterServe(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the node agent: the exporter (/metrics), the Kubernetes device plugin (one resource\n"
      "per socket, NVIDIA k8s-device-plugin config: MIG strategies, time-slicing), node labels\n"
      "for node-feature-discovery and the MIG manager, from one YAML file (docs/node-agent.md).\n"
      "A node without accelerators still serves its topology labels and metrics.\n\n"
      "Examples:\n"
      "  accel serve                                     # defaults: every part, every vendor\n"
      "  accel serve --config /etc/accel/agent.yaml\n"
      "  accel serve --config examples/agent/time-slicing.yaml --once   # print what it serves\n"
      "  kill -HUP $(pidof accel)                        # reload the config file\n\n"
      "Signals: SIGHUP reloads the file (a bad file is logged and the running config kept);\n"
      "SIGINT/SIGTERM stop: device plugins withdraw their devices and remove their sockets.\n"
      "Exit status: 0 stopped by a signal (or --once done); 2 bad config, vendor library or\n"
      "listen address (nothing was registered).");
  cmd->add_option("--config,-f", o->config, "agent YAML (see examples/agent/agent.yaml); none = defaults");
  cmd->add_flag("--once", o->once,
                "start, print devices, resources, labels and the metrics size, stop, exit");
  cmd->add_option("--nvml-library", o->nvml_library, "overrides libraries.nvml of the file");
  cmd->add_option("--rocm-smi-library", o->rocm_smi_library, "overrides libraries.rocmSmi");
  cmd->add_option("--hlml-library", o->hlml_library, "overrides libraries.hlml");
  cmd->add_option("--vendors", o->vendors, "overrides vendors: comma list of nvidia, amd, habana");
  cmd->callback([o, exit_code] { *exit_code = RunServe(*o); });
}

}  // namespace accel::cli
