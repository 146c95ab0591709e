// Where a HostTopology comes from: the one entry point every `--topology` option uses.
//
// A spec is "live" (this machine, via hwloc + sysfs), a directory holding a copy of a host's
// sys/ (and proc/) tree, read by the sysfs source (sysfs_source.h; "sysfs:DIR" names one
// explicitly), or a file, recognized by its content: accel's JSON (accel.host/v1, first
// non-blank character '{') or an hwloc XML export ('<').
// Functions are safe from any thread.
#pragma once

#include <string>

#include "topology/host.h"

namespace accel::topology {

/// Returns the topology named by `spec`: "live", "sysfs:DIR" or a directory DIR (LoadSysfsHost),
/// or the path of a JSON or hwloc XML file. Throws accel::InputError naming the file or
/// directory when it is missing, unreadable, of an unknown format, malformed, or describes an
/// inconsistent machine.
HostTopology LoadTopology(const std::string& spec);


}  // namespace accel::topology
