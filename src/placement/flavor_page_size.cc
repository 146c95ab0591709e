#include "placement/flavor_page_size.h"

#include <cmath>
#include <string>

#include "common/error.h"
#include "common/strings.h"

namespace accel::placement {

namespace {

constexpr uint64_t kMaxPageKib = uint64_t{1} << 40;  // far beyond any MMU's largest page

int PrefixExponent(char c) {
  switch (c) {
    case 'K':
      return 1;
    case 'M':
      return 2;
    case 'G':
      return 3;
    case 'T':
      return 4;
    case 'P':
      return 5;
    case 'E':
      return 6;
    case 'Z':
      return 7;
    case 'Y':
      return 8;
    case 'R':
      return 9;
    case 'Q':
      return 10;
    default:
      return -1;
  }
}

// strutils.string_to_bytes(text, 'IEC') / 1024: the regex (^[-+]?\d*\.?\d+)([KMGT...]i?)?(b|bit|B)$.
// Returns false when `text` does not match; *kib may be fractional or negative.
bool IecSizeToKib(std::string_view text, long double* kib) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  size_t number_start = i;
  while (i < text.size() && IsAsciiDigit(text[i])) ++i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    size_t frac_start = i;
    while (i < text.size() && IsAsciiDigit(text[i])) ++i;
    if (i == frac_start) return false;  // "\d*\.?\d+" needs a digit after the dot
  }
  std::string number(text.substr(number_start, i - number_start));
  if (number.empty() || number == ".") return false;
  int exponent = 0;
  if (i < text.size() && PrefixExponent(text[i]) > 0) {
    exponent = PrefixExponent(text[i++]);
    if (i < text.size() && text[i] == 'i') ++i;
  }
  std::string_view unit = text.substr(i);
  bool bits = unit == "b" || unit == "bit";
  if (!bits && unit != "B") return false;
  // Digits beyond what a page size could hold would only overflow std::stold.
  long double mantissa = number.size() > 40 ? 1e40L : std::stold(number);
  long double bytes = mantissa * std::pow(1024.0L, exponent);
  if (bits) bytes /= 8;
  bytes = std::ceil(bytes);  // return_int=True rounds up
  *kib = (negative ? -bytes : bytes) / 1024;
  return true;
}

[[noreturn]] void Invalid(std::string_view value, const std::string& where, const std::string& field,
                          const std::string& why) {
  throw InputError(where, field, "'" + std::string(value) + "' is not a page size" + why,
                   "use small, large, any, a size in KiB such as 2048, or a size with a unit and B: "
                   "2MB, 1GB, 2048KB, 1GiB; Nova: MemoryPageSizeInvalid");
}

}  // namespace

PageSizeRequest ParsePageSize(std::string_view value, const std::string& where, const std::string& field) {
  if (value == "small") return {PageSizeRequest::kSmall, 0};
  if (value == "large") return {PageSizeRequest::kLarge, 0};
  if (value == "any") return {PageSizeRequest::kAny, 0};
  long double kib = 0;
  bool all_digits = !value.empty();
  for (char c : value) all_digits = all_digits && IsAsciiDigit(c);
  if (all_digits) {
    if (value.size() > 15) Invalid(value, where, field, ": it is too large");
    kib = std::stold(std::string(value));
  } else if (!IecSizeToKib(value, &kib)) {
    bool unit_without_b = !value.empty() && PrefixExponent(value.back()) > 0;
    Invalid(value, where, field, unit_without_b ? ": Nova's size parser needs a B after the unit" : "");
  }
  if (kib <= 0) Invalid(value, where, field, ": it is not positive");
  if (kib != std::floor(kib)) Invalid(value, where, field, ": it is not a whole number of KiB");
  if (kib > static_cast<long double>(kMaxPageKib)) Invalid(value, where, field, ": it is too large");
  return {PageSizeRequest::kExplicit, static_cast<uint64_t>(kib)};
}

std::string PageSizeRequestText(const PageSizeRequest& request) {
  switch (request.kind) {
    case PageSizeRequest::kNone:
      return "";
    case PageSizeRequest::kSmall:
      return "small";
    case PageSizeRequest::kLarge:
      return "large";
    case PageSizeRequest::kAny:
      return "any";
    case PageSizeRequest::kExplicit:
      break;
  }
  uint64_t kib = request.size_kib;
  if (kib >= (1u << 20) && kib % (1u << 20) == 0) return std::to_string(kib >> 20) + " GiB";
  if (kib >= 1024 && kib % 1024 == 0) return std::to_string(kib >> 10) + " MiB";
  return std::to_string(kib) + " KiB";
}

}  // namespace accel::placement
