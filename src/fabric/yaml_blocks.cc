#include "fabric/yaml_blocks.h"

#include <yaml-cpp/yaml.h>

#include "common/yaml_out.h"

namespace accel::fabric {

namespace {

// A literal block keeps every character of such a string: its indentation is detected from
// the first line (so that line must not start with a blank) and the default "clip" chomping
// keeps exactly one final newline.
bool FitsLiteralBlock(const std::string& s) {
  if (s.size() < 2 || s.back() != '\n' || s[s.size() - 2] == '\n') return false;
  if (s.front() == ' ' || s.front() == '\t' || s.front() == '\n') return false;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) return false;  // controls need escapes
  }
  return true;
}

void Emit(YAML::Emitter& out, const nlohmann::ordered_json& v);

void EmitString(YAML::Emitter& out, const std::string& s) {
  if (FitsLiteralBlock(s)) {
    out << YAML::Literal << s;
    return;
  }
  // '=' first also quoted: YAML 1.1 gives a lone "=" the "value" type, and NCCL's exact-match
  // lists (NCCL_IB_HCA==mlx5_0) start with one; quoting costs nothing and no reader guesses.
  if (YamlNeedsQuotes(s) || s.front() == '=') out << YAML::DoubleQuoted;
  out << s;
}

void Emit(YAML::Emitter& out, const nlohmann::ordered_json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, item] : v.items()) {
        out << YAML::Key;
        if (YamlNeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      return;
    case nlohmann::json::value_t::array:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : v) Emit(out, item);
      out << YAML::EndSeq;
      return;
    case nlohmann::json::value_t::string:
      EmitString(out, v.get<std::string>());
      return;
    case nlohmann::json::value_t::boolean:
      out << v.get<bool>();
      return;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      out << v.dump();
      return;
    default:
      out << YAML::Null;
      return;
  }
}

}  // namespace

std::string ToYamlWithBlocks(const nlohmann::ordered_json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, value);
  std::string text = out.c_str();
  // yaml-cpp ends a trailing literal block with an extra blank line; one newline is enough.
  while (text.size() >= 2 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n')
    text.pop_back();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace accel::fabric
