// JSON text in: the one JSON parser for what accel reads (host and placement JSON, DRA claims and
// checkpoints, CDI specs, answers of the Kubernetes API server and of accel fleet serve, JSON
// handed to ParseStructuredText).
//
// Stricter than nlohmann::json::parse in two ways:
//   - a key given twice in one object is an error (nlohmann keeps the last value): the
//     DuplicateKeyError of common/duplicate_keys.h, naming the key path and both lines;
//   - nesting deeper than kMaxJsonDepth is an error (no document of accel comes close; a
//     deeper one is garbage or an attack on the stack of whoever walks it).
// Otherwise it is nlohmann's parser (RFC 8259, UTF-8 checked, no comments), building the same
// tree at about the same speed.
//
// Stateless free functions; safe to call from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace accel {

/// The deepest nesting of objects and arrays accepted.
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text` as one JSON document; `where` names it in errors (a file, "<stdin>",
/// "ResourceClaim ns/name").
/// Throws InputError:
///   - "where:LINE:COL" and "is not valid JSON: <what nlohmann says>" for a syntax error (an
///     empty text included);
///   - DuplicateKeyError ("where:9:3: cells[0].pinning.4: key given twice (lines 7 and 9)");
///   - "nesting is deeper than 64 levels".
nlohmann::json ParseJsonText(std::string_view text, const std::string& where);

/// The same, keeping the keys of each object in document order (for documents written back out:
/// CDI specs, answers shown to a person).
nlohmann::ordered_json ParseOrderedJsonText(std::string_view text, const std::string& where);

}  // namespace accel
