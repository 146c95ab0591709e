#include "common/yaml_out.h"

#include <algorithm>
#include <string_view>

#include <cctype>

#include <yaml-cpp/yaml.h>

namespace accel {

namespace {

// Words YAML 1.1 (yes/no/on/off, y/n) or 1.2 (true/false/null) resolves to a bool or null.
bool IsReservedWord(const std::string& s) {
  static const char* const kWords[] = {"y", "n", "yes", "no", "true", "false", "on", "off", "null",
                                       "~"};
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : kWords) {
    if (lower == w) return true;
  }
  return false;
}

void Emit(YAML::Emitter& out, const nlohmann::ordered_json& v);

// A multi-line string that reads back exactly as a literal block ("|", clip chomping): it ends in
// exactly one newline, its first line does not start with a space (that would need an
// indentation indicator), and it has no control characters but newlines (no tabs). Files embedded
// in objects (a ConfigMap's config, a systemd unit in a KubeadmConfigTemplate) then stay
// readable instead of becoming one escaped line.
bool ReadsBackAsLiteral(const std::string& s) {
  if (s.size() < 2 || s.back() != '\n' || s[s.size() - 2] == '\n' || s[0] == ' ' || s[0] == '\n') return false;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) return false;
  }
  return true;
}

void EmitString(YAML::Emitter& out, const std::string& s) {
  if (ReadsBackAsLiteral(s)) {
    out << YAML::Literal << s;
    return;
  }
  // Control characters (a lone "\r", a tab at the end) would be written raw in a plain scalar and
  // read back changed; double quotes escape them.
  const bool control = std::any_of(s.begin(), s.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
  });
  // Also quoted: a leading YAML indicator (":9400", "*", "!x", "=" — YAML 1.1's value type, and
  // NCCL's exact-match lists start with "=="), which yaml-cpp writes plain but some readers take
  // for syntax.
  const bool indicator =
      !s.empty() && std::string_view("-?:,[]{}#&*!|>'\"%@`=").find(s.front()) != std::string_view::npos;
  if (control || indicator || YamlNeedsQuotes(s)) out << YAML::DoubleQuoted;
  out << s;  // yaml-cpp itself quotes strings with ": ", "#", control characters, ...
}

void EmitObject(YAML::Emitter& out, const nlohmann::ordered_json& v) {
  if (v.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;  // "{}" on the key's line
    return;
  }
  out << YAML::BeginMap;
  for (const auto& [key, item] : v.items()) {
    out << YAML::Key;
    EmitString(out, key);
    out << YAML::Value;
    Emit(out, item);
  }
  out << YAML::EndMap;
}

void EmitArray(YAML::Emitter& out, const nlohmann::ordered_json& v) {
  if (v.empty()) {
    out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;  // "[]" on the key's line
    return;
  }
  out << YAML::BeginSeq;
  for (const auto& item : v) Emit(out, item);
  out << YAML::EndSeq;
}

void Emit(YAML::Emitter& out, const nlohmann::ordered_json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: EmitObject(out, v); break;
    case nlohmann::json::value_t::array: EmitArray(out, v); break;
    case nlohmann::json::value_t::string: EmitString(out, v.get<std::string>()); break;
    case nlohmann::json::value_t::boolean: out << v.get<bool>(); break;
    // JSON's own text for numbers: the shortest form that reads back exactly (63.015, not
    // yaml-cpp's 63.015000000000001).
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: out << v.dump(); break;
    default: out << YAML::Null; break;  // null, and the binary/discarded kinds JSON text never has
  }
}

}  // namespace

bool YamlNeedsQuotes(const std::string& s) {
  if (s.empty() || IsReservedWord(s)) return true;
  // Anything that starts like a number (digits, sign, dot: ints, floats, .inf, 0x1f, base-60
  // 0000:18:00.0, CPU lists 0-3) is quoted: a few needless quotes beat a string read as a number.
  char c = s.front();
  return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.';
}

std::string ToYaml(const nlohmann::ordered_json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, value);
  std::string text = out.c_str();
  // yaml-cpp ends a trailing literal block with an extra blank line; one newline is enough.
  while (text.size() >= 2 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n') text.pop_back();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace accel
