#include "common/structured_file.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace accel {

namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr size_t kMaxNodes = 1000000;              // YAML aliases can multiply a small file
constexpr uintmax_t kMaxFileBytes = 16u << 20;     // flavors and alias lists are a few KiB

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

// ---- JSON ----

// A path into the document being parsed, kept by the parse callback so that a duplicate key can
// be reported by its field path ("extra_specs.hw:numa_nodes").
class JsonPathTracker {
 public:
  JsonPathTracker(const std::string& where) : where_(where) {}

  bool OnEvent(int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) {
      throw InputError(where_, Path(), "nesting is deeper than " + std::to_string(kMaxDepth) + " levels",
                       "flavors and alias lists are shallow; check the brackets");
    }
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({true}); break;
      case json::parse_event_t::array_start: frames_.push_back({false}); break;
      case json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        Frame& top = frames_.back();
        if (!top.keys.insert(key).second) {
          top.key = key;
          throw InputError(where_, Path(), "key appears twice in the same object",
                           "keep one; a later value would silently replace the first");
        }
        top.key = key;
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        Advance();
        break;
      case json::parse_event_t::value: Advance(); break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys = {};
    std::string key = {};
    size_t index = 0;
  };

  void Advance() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.object) {
        if (!f.key.empty()) path += (path.empty() ? "" : ".") + f.key;
      } else {
        path += "[" + std::to_string(f.index) + "]";
      }
    }
    return path;
  }

  const std::string& where_;
  std::vector<Frame> frames_;
};

std::pair<int, int> LineColumnOfByte(std::string_view text, size_t byte) {
  int line = 0, col = 0;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 0;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// nlohmann's message is "[json.exception.parse_error.101] parse error at line 3, column 7: what";
// the position goes into `where`, so keep only "what".
std::string JsonProblem(const std::string& what) {
  size_t colon = what.find(": ");
  return "JSON syntax error: " + (colon == std::string::npos ? what : what.substr(colon + 2));
}

json ParseJson(std::string_view text, const std::string& where) {
  JsonPathTracker tracker(where);
  json::parser_callback_t callback = [&tracker](int depth, json::parse_event_t event, json& parsed) {
    return tracker.OnEvent(depth, event, parsed);
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based: the byte where the lexer stopped.
    auto [line, col] = LineColumnOfByte(text, e.byte > 0 ? e.byte - 1 : 0);
    throw InputError(At(where, line, col), "", JsonProblem(e.what()));
  } catch (const json::exception& e) {
    throw InputError(where, "", JsonProblem(e.what()));
  }
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
  if (!IsPlainInteger(whole) || whole.front() == '-' || whole.front() == '+' || !IsDigits(frac))
    return false;
  if (e == std::string_view::npos) return true;
  std::string_view exp = rest.substr(e + 1);
  if (!exp.empty() && (exp.front() == '-' || exp.front() == '+')) exp.remove_prefix(1);
  return IsDigits(exp);
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

class YamlConverter {
 public:
  explicit YamlConverter(const std::string& where) : where_(where) {}

  json Convert(const YAML::Node& node, int depth, const std::string& path) {
    if (++nodes_ > kMaxNodes) {
      Fail(node, path, "expands to more than " + std::to_string(kMaxNodes) + " values",
           "YAML aliases (*name) repeat whole subtrees; write the data out instead");
    }
    if (depth > kMaxDepth) {
      Fail(node, path, "nesting is deeper than " + std::to_string(kMaxDepth) + " levels",
           "flavors and alias lists are shallow; check the indentation");
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null: return nullptr;
      case YAML::NodeType::Scalar:
        return node.Tag() == "?" ? ResolvePlainScalar(node.Scalar()) : json(node.Scalar());
      case YAML::NodeType::Sequence: {
        json out = json::array();
        size_t i = 0;
        for (const YAML::Node& item : node) {
          out.push_back(Convert(item, depth + 1, path + "[" + std::to_string(i) + "]"));
          ++i;
        }
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& kv : node) {
          const YAML::Node& key_node = kv.first;
          if (!key_node.IsScalar()) {
            Fail(key_node, path, "a key must be plain text, not a list or a mapping");
          }
          std::string key = key_node.Scalar();
          std::string child = path.empty() ? key : path + "." + key;
          if (out.contains(key)) {
            Fail(key_node, child, "key appears twice in the same mapping",
                 "keep one; a later value would silently replace the first");
          }
          out[key] = Convert(kv.second, depth + 1, child);
        }
        return out;
      }
    }
    return nullptr;
  }

 private:
  [[noreturn]] void Fail(const YAML::Node& node, const std::string& path, const std::string& problem,
                         const std::string& hint = "") const {
    YAML::Mark mark = node.Mark();
    throw InputError(At(where_, mark.line, mark.column), path, problem, hint);
  }

  const std::string& where_;
  size_t nodes_ = 0;
};

json ParseYaml(std::string_view text, const std::string& where) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(At(where, e.mark.line, e.mark.column), "", "YAML syntax error: " + e.msg);
  }
  if (docs.empty()) return nullptr;
  if (docs.size() > 1) {
    throw InputError(At(where, docs[1].Mark().line, docs[1].Mark().column), "",
                     "holds " + std::to_string(docs.size()) + " YAML documents ('---')",
                     "put several items in one list instead");
  }
  try {
    return YamlConverter(where).Convert(docs[0], 0, "");
  } catch (const YAML::Exception& e) {
    throw InputError(At(where, e.mark.line, e.mark.column), "", "YAML error: " + e.msg);
  }
}

}  // namespace

json ParseStructuredText(std::string_view text, const std::string& where) {
  return LooksLikeJson(text) ? ParseJson(text, where) : ParseYaml(text, where);
}

std::string ReadWholeFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path, "", "is a directory", "give the path of a YAML or JSON file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", std::string("cannot be opened: ") + std::strerror(errno));
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxFileBytes) {
    throw InputError(path, "", "is " + std::to_string(size) + " bytes, more than the 16 MiB a "
                     "flavor or alias file can sensibly be");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path, "", std::string("cannot be read: ") + std::strerror(errno));
  return text.str();
}

json ReadStructuredFile(const std::string& path) {
  return ParseStructuredText(ReadWholeFile(path), path);
}

}  // namespace accel
