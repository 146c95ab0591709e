#include "fleet/labels.h"

#include <cctype>

#include "common/error.h"

namespace accel::fleet {

namespace {

constexpr const char* kSyntaxHint =
    "labels are key=value as in Kubernetes: key [prefix/]name, name and value up to 63 of "
    "A-Z a-z 0-9 - _ . starting and ending with a letter or digit, e.g. az=rack-3";

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// name or value part: empty allowed only when allow_empty.
bool ValidNamePart(const std::string& s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  if (s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool ValidPrefix(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty() || part.size() > 63 || !IsAlnum(part.front()) || !IsAlnum(part.back())) return false;
    for (char c : part)
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
        return false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return true;
}

void CheckKey(const std::string& key, const std::string& text, const std::string& where) {
  const size_t slash = key.find('/');
  bool ok = slash == std::string::npos
                ? ValidNamePart(key, false)
                : ValidPrefix(key.substr(0, slash)) && ValidNamePart(key.substr(slash + 1), false);
  if (!ok) throw InputError(where, "", "'" + text + "': bad label key '" + key + "'", kSyntaxHint);
}

void CheckValue(const std::string& value, const std::string& text, const std::string& where) {
  if (!ValidNamePart(value, true))
    throw InputError(where, "", "'" + text + "': bad label value '" + value + "'", kSyntaxHint);
}

}  // namespace

std::pair<std::string, std::string> ParseLabel(const std::string& text, const std::string& where) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError(where, "", "'" + text + "' is not key=value", kSyntaxHint);
  std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  CheckKey(key, text, where);
  CheckValue(value, text, where);
  return {key, value};
}

bool LabelRequirement::Matches(const Labels& labels) const {
  auto it = labels.find(key);
  switch (op) {
    case kEquals: return it != labels.end() && it->second == value;
    case kNotEquals: return it == labels.end() || it->second != value;
    case kExists: return it != labels.end();
    case kNotExists: return it == labels.end();
  }
  return false;
}

std::string LabelRequirement::ToString() const {
  switch (op) {
    case kEquals: return key + "=" + value;
    case kNotEquals: return key + "!=" + value;
    case kExists: return key;
    case kNotExists: return "!" + key;
  }
  return key;
}

LabelRequirement ParseRequirement(const std::string& text, const std::string& where) {
  LabelRequirement r;
  if (const size_t ne = text.find("!="); ne != std::string::npos) {
    r.op = LabelRequirement::kNotEquals;
    r.key = text.substr(0, ne);
    r.value = text.substr(ne + 2);
  } else if (const size_t eq = text.find('='); eq != std::string::npos) {
    r.op = LabelRequirement::kEquals;
    r.key = text.substr(0, eq);
    r.value = text.substr(eq + 1);
  } else if (!text.empty() && text[0] == '!') {
    r.op = LabelRequirement::kNotExists;
    r.key = text.substr(1);
  } else {
    r.op = LabelRequirement::kExists;
    r.key = text;
  }
  CheckKey(r.key, text, where);
  CheckValue(r.value, text, where);
  return r;
}

bool MatchesAll(const std::vector<LabelRequirement>& reqs, const Labels& labels) {
  for (const LabelRequirement& r : reqs)
    if (!r.Matches(labels)) return false;
  return true;
}

}  // namespace accel::fleet
