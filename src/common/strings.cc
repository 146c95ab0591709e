#include "common/strings.h"

#include <cctype>

namespace accel {

std::string JoinStrings(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

namespace {

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The digit run starting at `at`, without leading zeros (one zero stays).
std::string_view DigitRun(std::string_view s, size_t at, size_t* end) {
  size_t e = at;
  while (e < s.size() && IsDigit(s[e])) ++e;
  *end = e;
  size_t start = at;
  while (start + 1 < e && s[start] == '0') ++start;
  return s.substr(start, e - start);
}

}  // namespace

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (IsDigit(a[i]) && IsDigit(b[j])) {
      size_t ei = 0, ej = 0;
      std::string_view na = DigitRun(a, i, &ei), nb = DigitRun(b, j, &ej);
      if (na.size() != nb.size()) return na.size() < nb.size();  // no overflow on long runs
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace accel
