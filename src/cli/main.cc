// accel: one binary, one subcommand per capability, grouped by layer. See `accel --help`.
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit_code.h"
#include "cli/help.h"
#include "common/error.h"
#include "common/version.h"

namespace {

/// Where each top-level subcommand sits in `accel --help`, and its one-line summary there.
struct CommandEntry {
  const char* name;
  const char* group;
  const char* summary;
};

constexpr CommandEntry kCommands[] = {
    {"topo", "Host and compute", "Show the host's topology: NUMA nodes, CPUs, hugepages, PCI devices"},
    {"place", "Host and compute", "Fit a Nova flavor on a host: pinned CPUs, hugepages, PCI, libvirt XML"},
    {"claims", "Host and compute", "List the placements held in the claim store"},
    {"release", "Host and compute", "Release a claim by its ID"},
    {"tune", "Host and compute", "Plan a hypervisor's kernel command line, hugepages and CPU sets"},
    {"serve", "Kubernetes node", "Run the node agent: device plugin, labels, MIG manager, exporter"},
    {"dra", "Kubernetes node", "What the DRA driver publishes here and what a claim gets (no cluster)"},
    {"mig", "Kubernetes node", "MIG geometry, layouts, mig-parted configs, fleet plans, apply"},
    {"fabric", "Multi-node training", "Pair GPUs with RDMA NICs; NCCL settings, pods, network configs"},
    {"doctor", "Multi-node training", "Say what on this host blocks GPUDirect RDMA, training or flavors"},
    {"exporter", "Monitoring", "Serve NVIDIA, AMD and Gaudi metrics for Prometheus (/metrics)"},
    {"fleet", "Platform", "Place flavors across the fleet: hosts, claims (SQLite/PostgreSQL), capacity"},
    {"cluster", "Platform", "Node groups on tuned flavors: guest layout and kubelet config per group"},
};

/// "accel mig validate": the program and the subcommands parsed so far.
std::string CommandPath(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* sub = &app;;) {
    std::vector<const CLI::App*> parsed = sub->get_subcommands({});
    const CLI::App* next = nullptr;
    for (const CLI::App* candidate : parsed) {
      if (candidate->parsed()) next = candidate;
    }
    if (next == nullptr) return path;
    path += " " + next->get_name();
    sub = next;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "accel tunes every layer between an AI workload and its accelerator (NVIDIA and AMD GPUs,\n"
      "Intel Gaudi HPUs) for on-premises AI clouds. `accel COMMAND --help` explains a command,\n"
      "its flags and exit codes, with examples.",
      "accel"};
  std::map<std::string, std::string> summaries;
  for (const CommandEntry& c : kCommands) summaries[c.name] = c.summary;
  // Set before the subcommands exist, so every level of the tree inherits it.
  app.formatter(std::make_shared<accel::cli::SummaryFormatter>(summaries));
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("accel ") + accel::kVersion);
  int exit_code = accel::kExitOk;
  accel::cli::RegisterTopo(app, &exit_code);
  accel::cli::RegisterPlace(app, &exit_code);
  accel::cli::RegisterClaims(app, &exit_code);
  accel::cli::RegisterTune(app, &exit_code);
  accel::cli::RegisterServe(app, &exit_code);
  accel::cli::RegisterDra(app, &exit_code);
  accel::cli::RegisterMig(app, &exit_code);
  accel::cli::RegisterFabric(app, &exit_code);
  accel::cli::RegisterDoctor(app, &exit_code);
  accel::cli::RegisterExporter(app, &exit_code);
  accel::cli::RegisterFleet(app, &exit_code);
  accel::cli::RegisterCluster(app, &exit_code);
  for (const CommandEntry& c : kCommands) app.get_subcommand(c.name)->group(c.group);
  // After the subcommands exist: a subcommand copies its parent's footer when it is created.
  app.footer(
      "Exit status (every command): 0 done; 1 the answer is no (does not fit, invalid config);\n"
      "2 bad input (file, flag, field: nothing changed); 3 internal error (a bug: please report);\n"
      "5 the system refused (permission, disk, port, socket). `accel doctor` adds 4: checks failed.\n\n"
      "Start here:\n"
      "  accel topo                                    # this host as accel sees it\n"
      "  accel doctor                                  # what blocks GPUDirect RDMA here\n"
      "  accel place --help                            # fit a flavor, with examples");
  // Errors a command did not handle itself end here, printed as "accel <command>: <error>".
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : accel::kExitBadInput;
  } catch (const std::exception& e) {
    int code = accel::cli::ExitCodeFor(e);
    std::cerr << CommandPath(app) << ": " << (code == accel::kExitInternal ? "internal error: " : "")
              << e.what() << "\n";
    return code;
  }
  return exit_code;
}
