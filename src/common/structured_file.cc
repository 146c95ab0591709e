#include "common/structured_file.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "common/duplicate_keys.h"
#include "common/error.h"
#include "common/json_text.h"

namespace accel {

namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 100000;            // YAML aliases can multiply a small file
// Flavors and alias lists are a few KiB; hwloc XML of a large machine a few MiB.
constexpr uintmax_t kMaxFileBytes = 64u << 20;

std::string At(const std::string& where, int line0, int col0) {
  if (line0 < 0) return where;
  return where + ":" + std::to_string(line0 + 1) + ":" + std::to_string(col0 + 1);
}

// ---- which syntax ----

bool LooksLikeJson(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// ---- YAML ----

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "0", "17", "-3": decimal without leading zeros (so ids such as "0100" stay text).
bool IsPlainInteger(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  return IsDigits(s) && (s.size() == 1 || s.front() != '0');
}

// "1.5", "-2.0", "6.02e23": needs digits on both sides of the '.'.
bool IsPlainFloat(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  size_t dot = s.find('.');
  if (dot == std::string_view::npos) return false;
  std::string_view whole = s.substr(0, dot), rest = s.substr(dot + 1);
  size_t e = rest.find_first_of("eE");
  std::string_view frac = rest.substr(0, e);
  if (!IsPlainInteger(whole) || whole.front() == '-' || whole.front() == '+' || !IsDigits(frac)) return false;
  if (e == std::string_view::npos) return true;
  std::string_view exp = rest.substr(e + 1);
  if (!exp.empty() && (exp.front() == '-' || exp.front() == '+')) exp.remove_prefix(1);
  return IsDigits(exp);
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF). JSON text is
// checked by nlohmann; YAML bytes are checked here so that no caller meets a string it cannot
// write back out as JSON.
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

json ResolvePlainScalar(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsPlainInteger(s)) {
    std::string_view digits = s;
    if (digits.front() == '+') digits.remove_prefix(1);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return v;
    return s;  // beyond int64: keep the text rather than lose digits
  }
  if (IsPlainFloat(s)) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && std::abs(v) <= 1.7e308) return v;
  }
  return s;
}

// Builds the JSON tree straight from yaml-cpp's parse events (not through YAML::Node, whose
// LoadAll never returns on input such as `"",`). Keeps a path for messages, refuses duplicate and
// non-scalar keys, and bounds depth and alias expansion.
class YamlToJson : public YAML::EventHandler {
 public:
  // `line_offset`: added to every line (a document that starts at line 1 + line_offset of a file).
  YamlToJson(const std::string& where, int line_offset) : where_(where), line_offset_(line_offset) {}

  json TakeRoot() { return std::move(root_); }
  bool saw_node() const { return saw_node_; }
  const YAML::Mark& first_mark() const { return first_mark_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Add(nullptr, mark, anchor, 1); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) Fail(mark, "refers to an unknown anchor");
    Add(it->second.value, mark, YAML::NullAnchor, it->second.nodes);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!IsValidUtf8(value)) Fail(mark, "is not valid UTF-8 text", "save the file as UTF-8");
    // "?" marks a plain scalar; quoted ones are "!", explicit tags their tag.
    Add(tag == "?" ? ResolvePlainScalar(value) : json(value), mark, anchor, 1, &value);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(json::array(), mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(json::object(), mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    json value;
    YAML::Mark mark;
    YAML::anchor_t anchor;
    size_t nodes_at_open;  // nodes_ when the collection opened, to size it for its anchor
    bool has_key = false;  // maps: a key was read, its value is next
    std::string key = {};
    size_t index = 0;  // sequences: index of the next item
    std::map<std::string, YAML::Mark> key_marks = {};  // maps: where each key was
  };
  struct Anchored {
    json value;
    size_t nodes;
  };

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& problem,
                         const std::string& hint = "") const {
    throw InputError(At(where_, mark.line + line_offset_, mark.column), Path(), problem, hint);
  }

  std::string Path() const {
    std::string path;
    for (const Frame& f : stack_) {
      if (f.value.is_array()) {
        path = KeyPathIndex(path, f.index);
      } else if (f.has_key) {
        path = KeyPathJoin(path, f.key);
      }
    }
    return path;
  }

  void Count(const YAML::Mark& mark, size_t nodes) {
    nodes_ += nodes;
    if (nodes_ > kMaxNodes) {
      Fail(mark, "expands to more than " + std::to_string(kMaxNodes) + " values",
           "YAML aliases (*name) repeat whole subtrees; write the data out instead");
    }
  }

  void Saw(const YAML::Mark& mark) {
    if (!saw_node_) first_mark_ = mark;
    saw_node_ = true;
  }

  void CheckKeySlot(const YAML::Mark& mark) const {
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().has_key) {
      Fail(mark, "a key must be plain text, not a list, a mapping or an alias");
    }
  }

  void Open(json value, const YAML::Mark& mark, YAML::anchor_t anchor) {
    Saw(mark);
    CheckKeySlot(mark);
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) {
      Fail(mark, "nesting is deeper than " + std::to_string(kMaxDepth) + " levels",
           "flavors and alias lists are shallow; check the indentation");
    }
    Count(mark, 1);
    stack_.push_back({std::move(value), mark, anchor, nodes_});
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.value.is_object() && f.has_key) f.value[f.key] = nullptr;  // defensive: key without value
    size_t nodes = nodes_ - f.nodes_at_open + 1;
    Place(std::move(f.value), f.mark, f.anchor, nodes);
  }

  // A finished scalar, null or alias: a key when its map waits for one, else a value.
  void Add(json value, const YAML::Mark& mark, YAML::anchor_t anchor, size_t nodes,
           const std::string* text = nullptr) {
    Saw(mark);
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().has_key) {
      if (value.is_null()) Fail(mark, "a key is empty");
      if (!value.is_primitive()) Fail(mark, "a key must be plain text, not a list or a mapping");
      if (anchor != YAML::NullAnchor) anchors_[anchor] = {value, 1};
      Frame& map = stack_.back();
      std::string key = text ? *text : (value.is_string() ? value.get<std::string>() : value.dump());
      if (auto [first, inserted] = map.key_marks.emplace(key, mark); !inserted) {
        const YAML::Mark& was = first->second;
        throw DuplicateKeyError(where_, KeyPathJoin(Path(), key), {was.line + 1 + line_offset_, was.column + 1},
                                {mark.line + 1 + line_offset_, mark.column + 1}, DocumentSyntax::kYaml);
      }
      map.has_key = true;
      map.key = std::move(key);
      return;
    }
    Count(mark, nodes);
    Place(std::move(value), mark, anchor, nodes);
  }

  void Place(json value, const YAML::Mark& mark, YAML::anchor_t anchor, size_t nodes) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {value, nodes};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& parent = stack_.back();
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
      ++parent.index;
    } else {
      parent.value[parent.key] = std::move(value);
      parent.has_key = false;
    }
  }

  const std::string& where_;
  const int line_offset_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  json root_;
  size_t nodes_ = 0;
  bool saw_node_ = false;
  YAML::Mark first_mark_ = YAML::Mark::null_mark();
};

json ParseYaml(std::string_view text, const std::string& where, int first_line) {
  const int offset = first_line - 1;
  std::istringstream in{std::string(text)};
  try {
    YAML::Parser parser(in);
    YamlToJson document(where, offset);
    if (!parser.HandleNextDocument(document)) return nullptr;
    // A second document, or text the parser left behind, is an error, not something to drop.
    YamlToJson rest(where, offset);
    if (parser.HandleNextDocument(rest)) {
      const YAML::Mark& m = rest.first_mark();
      if (rest.saw_node()) {
        throw InputError(At(where, m.line + offset, m.column), "", "holds more than one YAML document ('---')",
                         "put several items in one list instead");
      }
      throw InputError(where, "", "has text after the end of the YAML document (a stray ',' or ']'?)");
    }
    return document.TakeRoot();
  } catch (const YAML::Exception& e) {
    throw InputError(At(where, e.mark.line < 0 ? -1 : e.mark.line + offset, e.mark.column), "",
                     "is not valid YAML: " + e.msg, "check indentation and quoting");
  }
}

}  // namespace

json ParseStructuredText(std::string_view text, const std::string& where) {
  return LooksLikeJson(text) ? ParseJsonText(text, where) : ParseYaml(text, where, 1);
}

void CheckYamlText(std::string_view text, const std::string& where, int first_line) {
  ParseYaml(text, where, first_line);
}

std::string ReadWholeFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path, "", "is a directory", "give the path of a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", std::string("cannot be opened: ") + std::strerror(errno));
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxFileBytes) {
    throw InputError(path, "",
                     "is " + std::to_string(size) +
                         " bytes, more than the 64 MiB an input file of accel can sensibly be");
  }
  // Read in chunks with the cap applied as we go: /dev/zero, a FIFO or a growing file has no
  // size to check up front.
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) {
      throw InputError(path, "", "holds more than the 64 MiB an input file of accel can sensibly be",
                       "give the path of a regular file");
    }
  }
  if (in.bad()) throw SystemError::FromErrno("cannot read", path, errno);
  return text;
}

json ReadStructuredFile(const std::string& path) { return ParseStructuredText(ReadWholeFile(path), path); }

}  // namespace accel
