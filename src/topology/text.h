// A human summary of a HostTopology, for `accel topo -o text`.
//
// Written for a cloud operator deciding how to carve a host into accelerator flavors: per NUMA
// node its CPUs, cores, memory and hugepage pools and the accelerators and NICs local to it
// (with the vendor:device ids a Nova PCI alias needs), then the NUMA distance matrix and the
// devices whose node is unknown. SR-IOV VFs are collapsed into their PF's line.
// Pure function; safe from any thread.
#pragma once

#include <string>

#include "topology/host.h"

namespace accel::topology {

/// Returns the summary as lines ending in '\n'. Never fails.
std::string ToText(const HostTopology& host);

}  // namespace accel::topology
