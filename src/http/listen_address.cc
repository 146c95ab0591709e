#include "http/listen_address.h"

#include <arpa/inet.h>

#include <cctype>

#include "common/error.h"

namespace accel::http {
namespace {

constexpr char kHint[] = "use HOST:PORT, e.g. :9400, 0.0.0.0:9400, [::1]:9400, localhost:9400";

bool IsIpv4(const std::string& s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool IsIpv6(const std::string& s) {
  in6_addr a;
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
bool IsHostName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t label = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-') return false;
      label = 0;
    } else if (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-') {
      ++label;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

ListenAddress ParseListenAddress(const std::string& text) {
  const std::string where = "listen address \"" + text + "\"";
  auto fail = [&](const std::string& problem) { return InputError(where, "", problem, kHint); };

  size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw fail("has no port");
  ListenAddress address;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);

  if (!host.empty() && host.front() == '[') {
    if (host.back() != ']' || !IsIpv6(host.substr(1, host.size() - 2))) {
      throw fail("\"" + host + "\" is not a bracketed IPv6 address");
    }
    address.host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    throw fail("an IPv6 address must be written in brackets");
  } else if (!host.empty() && !IsIpv4(host) && !IsHostName(host)) {
    throw fail("\"" + host + "\" is neither an IP address nor a host name");
  } else {
    address.host = host;
  }

  if (port.empty() || port.size() > 5) throw fail("port must be a number from 0 to 65535");
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      throw fail("port must be a number from 0 to 65535");
    }
  }
  address.port = std::stoi(port);
  if (address.port > 65535) throw fail("port must be a number from 0 to 65535");
  return address;
}

std::string FormatListenAddress(const ListenAddress& address) {
  const bool v6 = address.host.find(':') != std::string::npos;
  return (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
}

}  // namespace accel::http
