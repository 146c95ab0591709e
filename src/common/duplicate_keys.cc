#include "common/duplicate_keys.h"

namespace accel {

InputError DuplicateKeyError(const std::string& where, const std::string& key_path,
                             TextPosition first, TextPosition second, DocumentSyntax syntax) {
  std::string at = where;
  std::string problem = "key given twice";
  if (second.line > 0) {
    at += ":" + std::to_string(second.line) + ":" + std::to_string(second.column);
    if (first.line > 0 && first.line == second.line) {
      problem += " (both on line " + std::to_string(first.line) + ", columns " +
                 std::to_string(first.column) + " and " + std::to_string(second.column) + ")";
    } else if (first.line > 0) {
      problem += " (lines " + std::to_string(first.line) + " and " + std::to_string(second.line) + ")";
    }
  }
  const char* reader = syntax == DocumentSyntax::kYaml ? "YAML" : "JSON";
  return InputError(at, key_path, problem,
                    std::string("keep one: ") + reader + " keeps only the last, so the first would be ignored");
}

std::string KeyPathJoin(const std::string& path, std::string_view key) {
  std::string out = path;
  if (!out.empty()) out += '.';
  if (!key.empty() && key.find_first_of(".[\"") == std::string_view::npos) return out.append(key);
  out += '"';
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out += '"';
}

std::string KeyPathIndex(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

}  // namespace accel
