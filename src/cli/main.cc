// accel: one binary, one subcommand per capability. See `accel --help`.
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "common/error.h"
#include "common/version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "accel tunes every layer between an AI workload and its accelerator: host topology,\n"
      "NUMA-aligned placement of Nova flavors with pinned CPUs, hugepages and PCI passthrough,\n"
      "the libvirt domain XML that realizes it, accelerator telemetry for Prometheus, and GPU\n"
      "sharing by MIG (plan and apply).\n\n"
      "Examples:\n"
      "  accel topo                                   # this host\n"
      "  accel topo --topology fixtures/hosts/hgx-h100.json -o json\n"
      "  accel place --topology fixtures/hosts/hgx-h100.json --flavor examples/flavors/gpu-1g.yaml \\\n"
      "              --aliases examples/flavors/aliases.json -o libvirt\n"
      "  accel exporter                               # GPU/HPU metrics on :9400/metrics\n"
      "  accel mig layouts --gpu H100-SXM5-80GB --maximal\n",
      "accel"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("accel ") + accel::kVersion);
  int exit_code = accel::kExitOk;
  accel::cli::RegisterTopo(app, &exit_code);
  accel::cli::RegisterPlace(app, &exit_code);
  accel::cli::RegisterClaims(app, &exit_code);
  accel::cli::RegisterExporter(app, &exit_code);
  accel::cli::RegisterMig(app, &exit_code);
  accel::cli::RegisterServe(app, &exit_code);
  accel::cli::RegisterFabric(app, &exit_code);
  accel::cli::RegisterDoctor(app, &exit_code);
  accel::cli::RegisterTune(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : accel::kExitBadInput;
  } catch (const accel::InputError& e) {
    std::cerr << "accel: " << e.what() << "\n";
    return accel::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "accel: internal error: " << e.what() << "\n";
    return 3;
  }
  return exit_code;
}
