// Running a parser of untrusted input in a child process.
//
// Debian 12's libhwloc 2.9 crashes (SIGSEGV inside hwloc_insert_object_by_parent) on some
// malformed XML, which accel's fuzzer found within seconds. accel must never crash on bad input,
// so the XML is imported in a fork()ed child that sends the result back as accel JSON; a child
// that dies becomes an InputError. Call only from a single-threaded process (the CLI and the
// tests are): after fork() only the calling thread exists in the child.
#pragma once

#include <functional>
#include <string>

#include "topology/host.h"

namespace accel::topology {

/// Runs parse() in a child process and returns its HostTopology. An InputError thrown by parse
/// is rethrown here with the same message; a child that crashes or exits oddly becomes an
/// InputError naming `where` and the signal. Throws InputError when fork or pipe fail.
HostTopology RunIsolated(const std::function<HostTopology()>& parse, const std::string& where);

}  // namespace accel::topology
