// The JSON form of a HostTopology: schema "accel.host/v1", documented in docs/schemas.md.
//
// The writer lays the document out exactly as the schema's example (keys in documented order,
// 2-space indentation, one line per package, hugepage pool and PCI device group, a trailing
// newline), so ToJson(HostFromJson(ToJson(h))) == ToJson(h) byte for byte.
// Both functions are pure; safe from any thread.
#pragma once

#include <string>

#include "topology/host.h"

namespace accel::topology {

/// The schema string this module reads and writes.
inline constexpr const char* kHostSchema = "accel.host/v1";

/// Returns `host` as an accel.host/v1 document. Optional fields are written only when they
/// differ from their default; link_gbps is printed so that it reads back to the same double.
std::string ToJson(const HostTopology& host);

/// Parses an accel.host/v1 document and checks it with CheckInvariants.
/// `where` names the input (a file name) in errors.
/// Returns the host on success; throws accel::InputError naming `where` and the field path
/// (e.g. "numa_nodes[1].cpus") on malformed JSON, a wrong schema, a missing, mistyped or
/// unknown key, or a violated invariant. Never throws anything else.
HostTopology HostFromJson(const std::string& text, const std::string& where);

}  // namespace accel::topology
