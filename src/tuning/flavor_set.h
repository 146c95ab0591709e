// The flavors a host is tuned (or checked) for, as a person hands them over: one file, or a
// directory of flavor files next to the PCI alias table they use (examples/flavors/ is one).
// Plain functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "placement/flavor.h"
#include "placement/pci_alias.h"

namespace accel::tuning {

/// Flavors and the aliases their pci_passthrough:alias names resolve against.
struct FlavorSet {
  std::vector<placement::Flavor> flavors;  ///< in file order; files of a directory by name
  placement::PciAliasTable aliases;        ///< empty when no alias file was found or given
};

/// Reads `flavors_path`: a flavor file (placement::LoadFlavors), or a directory whose
/// *.yaml, *.yml and *.json files are read in name order, except files named aliases*: those
/// are PCI alias tables, and the first one is used when `aliases_path` is empty. A non-empty
/// `aliases_path` is loaded with placement::LoadPciAliases.
/// Throws accel::InputError naming the file: unreadable or malformed files, a flavor name
/// defined twice, or a directory without flavor files.
FlavorSet LoadFlavorSet(const std::string& flavors_path, const std::string& aliases_path);

}  // namespace accel::tuning
