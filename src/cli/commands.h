// Subcommands of the accel binary. Each Register* adds one subcommand (with its flags and help)
// to the app; the callback it installs sets *exit_code. Commands print results to stdout and
// errors to stderr, one line each: "accel <cmd>: <file>: <field>: <problem> (<hint>)".
#pragma once

#include <CLI/CLI.hpp>

namespace accel::cli {

void RegisterTopo(CLI::App& app, int* exit_code);     ///< accel topo
void RegisterPlace(CLI::App& app, int* exit_code);    ///< accel place
void RegisterClaims(CLI::App& app, int* exit_code);   ///< accel claims, accel release
void RegisterExporter(CLI::App& app, int* exit_code); ///< accel exporter
void RegisterMig(CLI::App& app, int* exit_code);      ///< accel mig ...
void RegisterServe(CLI::App& app, int* exit_code);    ///< accel serve (node agent)
void RegisterFabric(CLI::App& app, int* exit_code);   ///< accel fabric matrix|pairs|...
void RegisterDoctor(CLI::App& app, int* exit_code);   ///< accel doctor
void RegisterTune(CLI::App& app, int* exit_code);     ///< accel tune plan
void RegisterFleet(CLI::App& app, int* exit_code);    ///< accel fleet host|place|capacity|...
void RegisterCluster(CLI::App& app, int* exit_code);  ///< accel cluster plan
void RegisterDra(CLI::App& app, int* exit_code);      ///< accel dra slices|claim

/// `accel mig apply`, added under the `mig` subcommand by RegisterMig.
void RegisterMigApply(CLI::App* mig, int* exit_code);

/// `accel cluster check` (cluster_check_cmd.cc) and `accel cluster pods` (cluster_pods_cmd.cc),
/// added under `cluster` by RegisterCluster.
void RegisterClusterCheck(CLI::App* cluster, int* exit_code);
void RegisterClusterPods(CLI::App* cluster, int* exit_code);

/// `accel fleet serve`, added under `fleet` by RegisterFleet.
void RegisterFleetServe(CLI::App* fleet, int* exit_code);
void RegisterFleetReplay(CLI::App* fleet, int* exit_code);  ///< accel fleet replay

/// `accel fabric env|pod|topo-xml|netconf`, added under `fabric` by RegisterFabric.
void RegisterFabricOutputs(CLI::App* fabric, int* exit_code);

}  // namespace accel::cli
