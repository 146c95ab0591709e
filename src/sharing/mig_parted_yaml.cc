#include "sharing/mig_parted_yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "common/error.h"
#include "common/structured_file.h"

namespace accel::sharing::parted_detail {

namespace {

// Go's strconv.ParseUint(s, 0, 32): 0x / 0o / 0b / leading-0 octal / decimal; no sign.
std::optional<uint32_t> ParseUintBase0(std::string_view s) {
  int base = 10;
  if (s.size() > 1 && s[0] == '0') {
    char p = static_cast<char>(s[1] | 0x20);
    base = p == 'x' ? 16 : p == 'b' ? 2 : 8;
    s.remove_prefix(p == 'x' || p == 'b' || p == 'o' ? 2 : 1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'                     ? c - '0'
            : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                     : 99;
    if (d >= base) return std::nullopt;
    v = v * base + d;
    if (v > 0xFFFFFFFFu) return std::nullopt;
  }
  return static_cast<uint32_t>(v);
}

// Records where the first event of a document is, to tell a second document from stray text.
class DocumentProbe : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Saw(mark, false); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Saw(mark, true); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Saw(mark, true);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Saw(mark, true);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Saw(mark, true);
  }
  void OnMapEnd() override {}

  /// 1-based line of the first event; 1 when none had a position.
  int line() const { return line_; }
  /// Whether the document held a value (not just the null yaml-cpp reports for a stray token).
  bool saw_value() const { return saw_value_; }

 private:
  void Saw(const YAML::Mark& mark, bool value) {
    if (!seen_ && !mark.is_null()) line_ = mark.line + 1;
    seen_ = true;
    saw_value_ = saw_value_ || value;
  }
  bool seen_ = false, saw_value_ = false;
  int line_ = 1;
};

}  // namespace

// Not YAML::LoadAll: it loops forever on a stray ',' (yaml-cpp 0.7, jbeder/yaml-cpp#1040), so
// the text is read once into nodes and once more, event by event, for what follows.
YAML::Node LoadOneDocument(std::string_view yaml, const std::string& source, int line_offset) {
  std::string text(yaml);
  YAML::Node root = YAML::Load(text);
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentProbe first, rest;
  parser.HandleNextDocument(first);
  if (parser.HandleNextDocument(rest)) {
    std::string where = source + ":" + std::to_string(rest.line() + line_offset);
    if (rest.saw_value()) {
      throw InputError(where, "", "more than one YAML document",
                       "keep every named config under one `mig-configs:`");
    }
    throw InputError(where, "", "text after the end of the YAML document (a stray ',' or ']'?)");
  }
  // The common checks yaml-cpp's tree does not make: a key given twice (mig-parted, reading
  // YAML into JSON, would silently keep the last), text that is not UTF-8, alias bombs.
  CheckYamlText(text, source, line_offset + 1);
  return root;
}

// An empty value's mark is where the parser noticed it (often the next line), so the key's line
// (`fallback`) names it better.
int LineOf(const YAML::Node& node, int fallback) {
  if (node.IsNull()) return fallback;
  YAML::Mark mark = node.Mark();
  return mark.is_null() || mark.line < 0 ? fallback : mark.line + 1;
}

bool IsPlain(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() == "?";
}

// yaml.v2 (YAML 1.1) booleans, which is what mig-parted reads.
std::optional<bool> PlainBool(const YAML::Node& node) {
  if (!IsPlain(node)) return std::nullopt;
  static const std::set<std::string> kTrue = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                              "True", "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string> kFalse = {"n",     "N",     "no",  "No",  "NO", "false",
                                               "False", "FALSE", "off", "Off", "OFF"};
  if (kTrue.count(node.Scalar())) return true;
  if (kFalse.count(node.Scalar())) return false;
  return std::nullopt;
}

// Decimal only, without leading zeros: YAML 1.1 would read "010" as octal 8, so refusing it is
// safer than guessing.
std::optional<long long> PlainDecimal(const YAML::Node& node) {
  if (!IsPlain(node)) return std::nullopt;
  std::string_view s = node.Scalar();
  bool negative = !s.empty() && s.front() == '-';
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  if (s.empty() || s.size() > 12 || (s.size() > 1 && s.front() == '0')) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

std::optional<DeviceFilter> ParseDeviceFilter(std::string_view s) {
  if (std::count(s.begin(), s.end(), ':') > 1) return std::nullopt;
  size_t colon = s.find(':');
  std::optional<uint32_t> id = ParseUintBase0(s.substr(0, colon));
  if (!id) return std::nullopt;
  DeviceFilter filter{*id, std::nullopt};
  if (colon != std::string_view::npos) {
    std::optional<uint32_t> sub = ParseUintBase0(s.substr(colon + 1));
    if (!sub) return std::nullopt;
    filter.subsystem_id = *sub;
  }
  return filter;
}

// Names become CLI arguments and YAML keys we write back: printable UTF-8 only.
bool IsCleanName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) return false;
      ++i;
      continue;
    }
    size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x80 && cp < 0xA0))
      return false;
    i += len;
  }
  return true;
}

}  // namespace accel::sharing::parted_detail
