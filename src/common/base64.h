// Base64 (RFC 4648 section 4: the standard alphabet with '+' and '/', '=' padding): the one
// encoder and decoder of accel, for HTTP Basic credentials (sent and checked), kubeconfig
// *-data fields and the payload of a service account token.
//
// Stateless free functions; safe to call from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace accel {

/// `bytes` in base64, padded with '=' to a multiple of 4 characters.
std::string EncodeBase64(std::string_view bytes);

/// How strictly DecodeBase64 reads.
enum class Base64Rules {
  /// Go's base64.StdEncoding: a multiple of 4 characters, '=' padding where due, nothing else
  /// (what an HTTP Basic Authorization header must hold).
  kStrict,
  /// What kubectl accepts in a kubeconfig: padding optional, white space (line breaks of a
  /// wrapped value) skipped.
  kLenient,
};

/// The bytes of `text`; nullopt when it is not base64 under `rules`: a character outside the
/// alphabet, data after '=', more than two '=', or a lone last character (6 bits, no byte).
/// Bits left over in the last character are dropped, as Go does.
std::optional<std::string> DecodeBase64(std::string_view text, Base64Rules rules);

}  // namespace accel
