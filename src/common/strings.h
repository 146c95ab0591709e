// Small string helpers that several layers need the same way. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace accel {

/// `items` joined with `sep` between them ("" for none): {"a","b"}, ", " → "a, b".
std::string JoinStrings(const std::vector<std::string>& items, std::string_view sep);

/// Natural order of device and interface names: digit runs compare as numbers, so
/// "mlx5_2" < "mlx5_10" and "cpu9" < "cpu10"; otherwise byte order. A strict weak order.
bool NaturalLess(std::string_view a, std::string_view b);

/// Levenshtein distance (insertions, deletions, substitutions), ASCII letters compared without
/// case: EditDistance("hw:cpu_polcy", "hw:cpu_policy") == 1.
size_t EditDistance(std::string_view a, std::string_view b);

/// The candidate nearest to `word` by EditDistance, when that distance is at most
/// `max_distance` (the first of equals wins); empty otherwise. For "did you mean ...?" hints.
std::string_view ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates,
                              size_t max_distance);

/// The characters Trim removes by default: ASCII white space (space, \t, \n, \v, \f, \r).
inline constexpr std::string_view kAsciiSpace = " \t\n\v\f\r";

/// `s` without leading and trailing characters from `chars`: Trim("  a b \n") → "a b".
/// The result views `s`; it is empty when `s` holds only such characters. Protocols with their
/// own white space pass it (HTTP's OWS and Nova's extra specs: " \t").
std::string_view Trim(std::string_view s, std::string_view chars = kAsciiSpace);

/// The items of a `sep`-separated list, each trimmed of ASCII white space, empty items left out:
/// SplitList(" nvidia, amd,,habana ") → {"nvidia", "amd", "habana"}; "" → {}.
std::vector<std::string> SplitList(std::string_view text, char sep = ',');

/// `s` with every byte other than A-Z a-z 0-9 - _ . ~ written as %XX (RFC 3986 unreserved kept):
/// for a URL path segment or query value. PercentEncode("a b/c") == "a%20b%2Fc".
std::string PercentEncode(std::string_view s);

/// The reverse: %XX becomes its byte; `plus_is_space` also turns '+' into ' ' (form/query
/// encoding). A '%' not followed by two hex digits is kept as it is.
std::string PercentDecode(std::string_view s, bool plus_is_space = false);

/// True when `name` is a DNS-1123 label: 1-63 of a-z 0-9 '-', starting and ending with a letter
/// or digit (most Kubernetes object names, DRA device names, label values' shape).
bool IsDnsLabel(std::string_view name);

/// True when `name` is a DNS-1123 subdomain: at most 253 characters, dot-separated DNS labels
/// (node names, DRA driver names such as "accel.io", ResourceSlice names).
bool IsDnsSubdomain(std::string_view name);

/// `n` and the noun in its number: CountOf(1, "cell") == "1 cell", CountOf(3, "cell") == "3 cells",
/// CountOf(2, "switch", "switches") == "2 switches".
std::string CountOf(size_t n, std::string_view one, std::string_view many = {});

/// True for the ASCII digits 0-9 only (std::isdigit also depends on the C locale).
inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

/// `s` with ASCII A-Z turned into a-z; other bytes unchanged. AsciiLower("InfiniBand") == "infiniband".
std::string AsciiLower(std::string_view s);

/// `v` as four lower-case hex digits, the way PCI vendor and device ids are written (lspci,
/// sysfs, Nova, libvirt): Hex4(0x10de) == "10de", Hex4(0x15) == "0015".
std::string Hex4(uint16_t v);

/// `v` as sixteen lower-case hex digits: Hex16(255) == "00000000000000ff".
std::string Hex16(uint64_t v);

/// `value` as one POSIX shell word: single-quoted, a ' inside written '\''. ShellQuote("it's")
/// == "'it'\''s'"; safe for any bytes but NUL.
std::string ShellQuote(std::string_view value);

/// `text` as one "# ..." comment line (shell, YAML) ending in "\n": line breaks inside outside text
/// (a note, a warning) become spaces, so they cannot end the comment early.
std::string CommentLine(std::string_view text);

}  // namespace accel
