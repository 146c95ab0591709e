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

std::string_view Trim(std::string_view s, std::string_view chars) {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    size_t end = text.find(sep);
    std::string_view item = Trim(text.substr(0, end));
    if (!item.empty()) out.emplace_back(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
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
