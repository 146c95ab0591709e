// ListenAddress: where the exporter's HTTP server binds, parsed from a Go-style "host:port"
// flag value (dcgm-exporter's `-a :9400`, node_exporter's --web.listen-address).
//
// Stateless free functions; safe to call from any thread.
#pragma once

#include <string>

namespace accel::http {

/// A parsed listen address.
struct ListenAddress {
  /// IPv4 literal, IPv6 literal without brackets, or a host name; empty = every interface.
  std::string host;
  /// TCP port, 0..65535; 0 asks the kernel for an ephemeral port.
  int port = 0;
};

/// Parses ":9400", "0.0.0.0:9400", "127.0.0.1:0", "[::]:9400", "[::1]:9400", "localhost:9400".
/// An IPv6 literal must be bracketed; the port is required and decimal.
/// Returns the address; throws InputError (where: listen address "<text>") otherwise.
ListenAddress ParseListenAddress(const std::string& text);

/// The address written back the way it was given: ":9400", "[::1]:9400", "127.0.0.1:0".
std::string FormatListenAddress(const ListenAddress& address);

}  // namespace accel::http
