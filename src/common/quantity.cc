#include "common/quantity.h"

#include "common/strings.h"

#include <cmath>
#include <limits>

namespace accel {

namespace {

using int128 = __int128;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// More digits than an int64 holds say nothing a kubelet config can mean; refusing them keeps the
// exact arithmetic below inside 128 bits.
constexpr size_t kMaxDigits = 24;

std::string Bad(std::string_view text, const std::string& why) {
  return "'" + std::string(text) + "' is not a quantity: " + why;
}

// The decimal exponent and power of 1024 of a suffix; false when it is none of them.
bool Suffix(std::string_view s, int* exp10, int* pow1024, std::string* error, std::string_view text) {
  static const struct {
    const char* name;
    int exp10, pow1024;
  } kSuffixes[] = {{"", 0, 0},  {"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0},  {"M", 6, 0},
                   {"G", 9, 0}, {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0}, {"Ki", 0, 1}, {"Mi", 0, 2},
                   {"Gi", 0, 3}, {"Ti", 0, 4}, {"Pi", 0, 5}, {"Ei", 0, 6}};
  for (const auto& k : kSuffixes) {
    if (s == k.name) {
      *exp10 = k.exp10;
      *pow1024 = k.pow1024;
      return true;
    }
  }
  if ((s[0] == 'e' || s[0] == 'E') && s.size() > 1) {
    size_t i = 1;
    bool negative = false;
    if (s[i] == '+' || s[i] == '-') negative = s[i++] == '-';
    if (i == s.size() || s.size() - i > 4) {
      *error = Bad(text, "the exponent after '" + std::string(1, s[0]) + "' must be an integer of at most 4 digits");
      return false;
    }
    int e = 0;
    for (; i < s.size(); ++i) {
      if (!IsAsciiDigit(s[i])) {
        *error = Bad(text, "unknown suffix '" + std::string(s) + "'");
        return false;
      }
      e = e * 10 + (s[i] - '0');
    }
    *exp10 = negative ? -e : e;
    *pow1024 = 0;
    return true;
  }
  std::string hint;
  if (s == "K") hint = "; use k (10^3) or Ki (2^10)";
  else if (s.size() == 2 && (s[1] == 'B' || s[1] == 'b')) hint = "; use " + std::string(1, s[0]) + " (decimal) or " + std::string(1, s[0] == 'k' ? 'K' : s[0]) + "i (binary)";
  else if (s.size() == 3 && s[1] == 'i' && (s[2] == 'B' || s[2] == 'b')) hint = "; drop the B: " + std::string(s.substr(0, 2));
  else if (s[0] == ' ') hint = "; write it without a space";
  else hint = "; suffixes are Ki Mi Gi Ti Pi Ei (binary), n u m k M G T P E (decimal) or e<N>";
  *error = Bad(text, "unknown suffix '" + std::string(s) + "'" + hint);
  return false;
}

}  // namespace

int64_t Quantity::Value() const {
  // ceil(milli / 1000) for either sign
  int64_t q = milli / 1000, r = milli % 1000;
  return r > 0 ? q + 1 : q;
}

std::optional<Quantity> ParseQuantity(std::string_view text, std::string* error) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  int128 mantissa = 0;
  size_t digits = 0, fraction_digits = 0;
  bool seen_point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!IsAsciiDigit(c)) break;
    if (mantissa == 0 && c == '0') {  // leading zeros carry no digits (fraction ones scale)
      if (seen_point) ++fraction_digits;
      continue;
    }
    if (++digits > kMaxDigits) {
      *error = Bad(text, "more than " + std::to_string(kMaxDigits) + " significant digits");
      return std::nullopt;
    }
    mantissa = mantissa * 10 + (c - '0');
    if (seen_point) ++fraction_digits;
  }
  const std::string_view number = text.substr(0, i);
  if (number.find_first_of("0123456789") == std::string_view::npos) {
    *error = text.empty() ? std::string("an empty string is not a quantity: write e.g. 100Mi, 500m or 2")
                          : Bad(text, "it must start with a number, e.g. 100Mi, 1.5Gi, 500m");
    return std::nullopt;
  }
  int exp10 = 0, pow1024 = 0;
  if (!Suffix(text.substr(i), &exp10, &pow1024, error, text)) return std::nullopt;
  if (mantissa == 0) return Quantity{0};
  const std::string too_large = Bad(text, "too large (at most about 9.2e15 units)");
  // milli = mantissa * 10^(exp10 + 3 - fraction_digits) * 1024^pow1024, rounded up.
  int scale = exp10 + 3 - static_cast<int>(fraction_digits);
  const long double approx = static_cast<long double>(mantissa) * std::pow(1024.0L, pow1024) * std::pow(10.0L, scale);
  if (approx > 9.3e18L) {
    *error = too_large;
    return std::nullopt;
  }
  // Rounded toward +infinity: up for positive values, and -floor(x) = ceil(-x) for negatives.
  // Nested roundings of integer divisions compose (ceil(ceil(a/b)/c) = ceil(a/bc)).
  auto divide10 = [negative](int128 v) { return negative ? v / 10 : (v + 9) / 10; };
  const int128 room = int128(1) << 116;  // mantissa * 1024^6 stays below 2^127
  while (mantissa >= room && scale < 0) {  // only for absurdly many fraction digits
    mantissa = divide10(mantissa);
    ++scale;
  }
  for (int k = 0; k < pow1024; ++k) mantissa *= 1024;
  for (; scale > 0; --scale) mantissa *= 10;  // approx bounds the result below 2^63
  for (; scale < 0 && mantissa > 0; ++scale) mantissa = divide10(mantissa);
  if (mantissa == 0) mantissa = negative ? 0 : 1;  // a positive value below 1m rounds up to 1m
  const int128 limit = kMax;
  if (mantissa > limit) {
    *error = too_large;
    return std::nullopt;
  }
  const int64_t milli = static_cast<int64_t>(mantissa);
  return Quantity{negative ? -milli : milli};
}

std::string FormatBinaryQuantity(int64_t units) {
  if (units == 0) return "0";
  static const char* kSuffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const bool negative = units < 0;
  uint64_t v = negative ? 0 - static_cast<uint64_t>(units) : static_cast<uint64_t>(units);
  int suffix = -1;
  while (suffix < 5 && v % 1024 == 0) {
    v /= 1024;
    ++suffix;
  }
  return (negative ? "-" : "") + std::to_string(v) + (suffix >= 0 ? kSuffixes[suffix] : "");
}

std::optional<int64_t> ParseGoDuration(std::string_view text, std::string* error) {
  auto bad = [&](const std::string& why) -> std::optional<int64_t> {
    *error = "'" + std::string(text) + "' is not a duration: " + why;
    return std::nullopt;
  };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (text.substr(i) == "0") return int64_t{0};
  if (i == text.size()) return bad("it is empty");
  long double total = 0;
  while (i < text.size()) {
    const size_t start = i;
    long double value = 0, scale = 1;
    bool point = false, any = false;
    for (; i < text.size() && (IsAsciiDigit(text[i]) || (text[i] == '.' && !point)); ++i) {
      if (text[i] == '.') {
        point = true;
        continue;
      }
      any = true;
      if (point) scale /= 10;
      value = value * 10 + (text[i] - '0') ;
    }
    if (!any) return bad("expected a number at '" + std::string(text.substr(start)) + "'");
    if (point) value *= scale;
    size_t unit_start = i;
    while (i < text.size() && !IsAsciiDigit(text[i]) && text[i] != '.') ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    long double ns = 0;
    if (unit == "ns") ns = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") ns = 1e3;
    else if (unit == "ms") ns = 1e6;
    else if (unit == "s") ns = 1e9;
    else if (unit == "m") ns = 60e9;
    else if (unit == "h") ns = 3600e9;
    else if (unit.empty()) return bad("a unit is missing after '" + std::string(text.substr(start, i - start)) + "'");
    else return bad("unknown unit '" + std::string(unit) + "'");
    total += value * ns;
    if (total > 9.2e18L) return bad("longer than Go's limit of about 292 years");
  }
  const int64_t ns = static_cast<int64_t>(std::llround(static_cast<double>(total)));
  return negative ? -ns : ns;
}

}  // namespace accel
