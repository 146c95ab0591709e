#include "common/json_text.h"

#include <utility>
#include <vector>

#include "common/duplicate_keys.h"
#include "common/error.h"

namespace accel {

namespace {

// One step of a path into a document: a key of an object or an index of an array.
struct PathStep {
  bool is_key;
  std::string key;
  size_t index;
};

std::string PathText(const std::vector<PathStep>& steps) {
  std::string path;
  for (const PathStep& s : steps) path = s.is_key ? KeyPathJoin(path, s.key) : KeyPathIndex(path, s.index);
  return path;
}

// 1-based line and column of byte `offset` of `text`.
TextPosition PositionOfByte(std::string_view text, size_t offset) {
  TextPosition p{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

// Where key `key` of the object at `object_path` occurs in `text`, at most twice: a small scan
// that follows the nesting of objects and arrays. Runs only once a duplicate has been found, on
// text nlohmann has already read up to the second occurrence, so it may assume the syntax is
// right up to there.
std::vector<TextPosition> FindKeyOccurrences(std::string_view text, const std::vector<PathStep>& object_path,
                                             const std::string& key) {
  struct Frame {
    bool object;
    bool expect_key = true;  // objects: the next string is a key
    std::string key = {};    // objects: the current key
    size_t index = 0;        // arrays: the current index
  };
  std::vector<Frame> stack;
  std::vector<TextPosition> found;
  auto at_target = [&]() {
    if (stack.size() != object_path.size() + 1 || !stack.back().object) return false;
    for (size_t i = 0; i < object_path.size(); ++i) {
      const Frame& f = stack[i];
      const PathStep& s = object_path[i];
      if (f.object != s.is_key || (f.object ? f.key != s.key : f.index != s.index)) return false;
    }
    return true;
  };
  size_t i = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (i < text.size() && found.size() < 2) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      stack.push_back({c == '{'});
      ++i;
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      ++i;
    } else if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object) {
          stack.back().expect_key = true;
        } else {
          ++stack.back().index;
        }
      }
      ++i;
    } else if (c == '"') {
      size_t end = i + 1;
      bool escaped = false;
      while (end < text.size() && (escaped || text[end] != '"')) {
        escaped = !escaped && text[end] == '\\';
        ++end;
      }
      std::string_view token = text.substr(i, end + 1 - i);
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& top = stack.back();
        top.expect_key = false;
        if (token.find('\\') == std::string_view::npos) {
          top.key = std::string(token.substr(1, token.size() - 2));
        } else {
          nlohmann::json decoded = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
          top.key = decoded.is_string() ? decoded.get<std::string>() : std::string(token);
        }
        if (top.key == key && at_target()) found.push_back(PositionOfByte(text, i));
      }
      i = end + 1;
    } else {
      ++i;  // white space, ':' and the characters of numbers and literals
    }
  }
  return found;
}

// Builds the tree from nlohmann's SAX events, as its own DOM parser does, and refuses a key an
// object already has (nlohmann's parser would overwrite it) and nesting beyond kMaxJsonDepth.
template <class Json>
class StrictBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  StrictBuilder(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  Json TakeRoot() { return std::move(root_); }

  bool null() { return Put(nullptr); }
  bool boolean(bool v) { return Put(v); }
  bool number_integer(number_integer_t v) { return Put(v); }
  bool number_unsigned(number_unsigned_t v) { return Put(v); }
  bool number_float(number_float_t v, const string_t&) { return Put(v); }
  // The lexer clears its buffer before the next token, so the string can be moved out.
  bool string(string_t& v) { return Put(std::move(v)); }
  bool binary(binary_t& v) { return Put(std::move(v)); }

  bool start_object(std::size_t) { return Open(Json::value_t::object); }
  bool start_array(std::size_t) { return Open(Json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(string_t& k) {
    auto& members = *stack_.back()->template get_ptr<typename Json::object_t*>();
    auto [it, inserted] = members.emplace(k, Json());
    if (!inserted) ThrowDuplicate(k);
    member_ = &it->second;
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string&, const Exception& e) {
    // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 12: what";
    // the position goes into `where`, so keep only "what".
    const std::string what = e.what();
    const size_t colon = what.find(": ");
    const TextPosition p = PositionOfByte(text_, position > 0 ? position - 1 : 0);
    throw InputError(where_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.column), "",
                     "is not valid JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  }

 private:
  template <class Value>
  bool Put(Value&& v) {
    Place(std::forward<Value>(v));
    return true;
  }

  template <class Value>
  Json* Place(Value&& v) {
    if (stack_.empty()) {
      root_ = Json(std::forward<Value>(v));
      return &root_;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      auto& items = *top.template get_ptr<typename Json::array_t*>();
      items.emplace_back(std::forward<Value>(v));
      return &items.back();
    }
    *member_ = Json(std::forward<Value>(v));
    return member_;
  }

  bool Open(typename Json::value_t type) {
    if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      throw InputError(where_, PathText(PathOf(stack_.size())),
                       "nesting is deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                       "no document accel reads is nested that deep; check the brackets");
    }
    stack_.push_back(Place(type));
    return true;
  }

  bool Close() {
    stack_.pop_back();
    return true;
  }

  // The path of stack_[levels - 1] (the innermost open collection for levels == stack_.size()),
  // found by where each collection sits in its parent: built only for an error.
  std::vector<PathStep> PathOf(size_t levels) const {
    std::vector<PathStep> steps;
    for (size_t i = 1; i < levels; ++i) {
      const Json& parent = *stack_[i - 1];
      const Json* child = stack_[i];
      if (parent.is_array()) {
        const auto& items = *parent.template get_ptr<const typename Json::array_t*>();
        for (size_t k = 0; k < items.size(); ++k) {
          if (&items[k] == child) steps.push_back({false, "", k});
        }
      } else {
        for (const auto& [name, value] : *parent.template get_ptr<const typename Json::object_t*>()) {
          if (&value == child) steps.push_back({true, name, 0});
        }
      }
    }
    return steps;
  }

  [[noreturn]] void ThrowDuplicate(const std::string& key) const {
    const std::vector<PathStep> object_path = PathOf(stack_.size());
    std::vector<PathStep> key_path = object_path;
    key_path.push_back({true, key, 0});
    const std::vector<TextPosition> found = FindKeyOccurrences(text_, object_path, key);
    const TextPosition first = found.size() == 2 ? found[0] : TextPosition{};
    const TextPosition second = found.size() == 2 ? found[1] : TextPosition{};
    throw DuplicateKeyError(where_, PathText(key_path), first, second, DocumentSyntax::kJson);
  }

  std::string_view text_;
  const std::string& where_;
  Json root_;
  std::vector<Json*> stack_;
  Json* member_ = nullptr;  // the value slot of the key just read
};

template <class Json>
Json ParseStrictJson(std::string_view text, const std::string& where) {
  StrictBuilder<Json> builder(text, where);
  try {
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error (those come through parse_error): a value nlohmann cannot hold.
    const std::string what = e.what();
    const size_t end = what.find("] ");
    throw InputError(where, "", "is not valid JSON: " + (end == std::string::npos ? what : what.substr(end + 2)));
  }
  return builder.TakeRoot();
}

}  // namespace

nlohmann::json ParseJsonText(std::string_view text, const std::string& where) {
  return ParseStrictJson<nlohmann::json>(text, where);
}

nlohmann::ordered_json ParseOrderedJsonText(std::string_view text, const std::string& where) {
  return ParseStrictJson<nlohmann::ordered_json>(text, where);
}

}  // namespace accel
