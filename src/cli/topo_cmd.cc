// accel topo: show a host's topology (this machine, an hwloc XML export or accel's JSON).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/error.h"
#include "topology/host_json.h"
#include "topology/sources.h"
#include "topology/text.h"

namespace accel::cli {

namespace {

struct TopoOptions {
  std::string topology = "live";
  std::string output = "text";
};

int RunTopo(const TopoOptions& opts) {
  try {
    topology::HostTopology host = topology::LoadTopology(opts.topology);
    std::cout << (opts.output == "json" ? topology::ToJson(host) : topology::ToText(host));
    std::cout.flush();
    return kExitOk;
  } catch (const InputError& e) {
    std::cerr << "accel topo: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace

void RegisterTopo(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "topo",
      "Show a host's topology: packages, NUMA nodes (CPUs, SMT siblings, memory, hugepages,\n"
      "distances) and the PCI tree with GPUs, HPUs, NVSwitches and NICs classified.\n\n"
      "Examples:\n"
      "  accel topo                                    # this machine, human summary\n"
      "  accel topo -o json > host.json                # save it for `accel place --topology`\n"
      "  accel topo --topology lstopo-export.xml       # an hwloc XML export (lstopo host.xml)\n"
      "  accel topo --topology host.json -o text       # summarize a saved host\n"
      "  accel topo --topology sysfs:/mnt/copy         # a copied /sys tree (DIR/sys/...)\n\n"
      "Exit status: 0 shown; 2 bad input (missing, unreadable or malformed file).");
  cmd->add_option("--topology,-t", opts->topology,
                  "'live' (this machine), an hwloc XML file, accel host JSON "
                  "(accel.host/v1, docs/schemas.md), or a directory holding sys/ (sysfs:DIR)")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "output format: text (summary) or json (accel.host/v1)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunTopo(*opts); });
}

}  // namespace accel::cli
