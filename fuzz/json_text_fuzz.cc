// libFuzzer target: the common readers of JSON and YAML text on arbitrary bytes —
// ParseJsonText / ParseOrderedJsonText (duplicate keys, nesting bound, the scan that finds both
// lines of a duplicate), ParseStructuredText and LoadYamlText (the YAML checks), and the base64
// codec.
//
// Only accel::InputError may leave the readers. On top of that:
//   - a document ParseJsonText accepts is one nlohmann::json::parse accepts, and the same tree
//     (ParseOrderedJsonText: the same, in order);
//   - a key given twice is always reported with both positions (the scan must find them);
//   - base64 round-trips: DecodeBase64(EncodeBase64(bytes)) == bytes under both rules.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/base64.h"
#include "common/error.h"
#include "common/json_text.h"
#include "common/structured_file.h"
#include "common/yaml_config.h"

namespace {

bool IsDuplicate(const accel::InputError& e) { return e.problem().rfind("key given twice", 0) == 0; }

// A duplicate must name both places: "(lines A and B)" or "(both on line A, columns B and C)".
void CheckDuplicate(const accel::InputError& e) {
  if (!IsDuplicate(e)) return;
  if (e.problem().find("(lines ") == std::string::npos && e.problem().find("(both on line ") == std::string::npos)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  nlohmann::json strict;
  bool accepted = false;
  try {
    strict = accel::ParseJsonText(text, "fuzz.json");
    accepted = true;
  } catch (const accel::InputError& e) {
    CheckDuplicate(e);
  }
  if (accepted) {
    if (!nlohmann::json::accept(text) || nlohmann::json::parse(text) != strict) std::abort();
  }
  try {
    const nlohmann::ordered_json ordered = accel::ParseOrderedJsonText(text, "fuzz.json");
    if (!accepted || ordered != nlohmann::ordered_json::parse(text)) std::abort();
  } catch (const accel::InputError& e) {
    if (accepted) std::abort();
    CheckDuplicate(e);
  }

  try {
    accel::ParseStructuredText(text, "fuzz.yaml");
  } catch (const accel::InputError& e) {
    CheckDuplicate(e);
  }
  try {
    accel::LoadYamlText(text, "fuzz.yaml");
  } catch (const accel::InputError& e) {
    CheckDuplicate(e);
  }

  for (accel::Base64Rules rules : {accel::Base64Rules::kStrict, accel::Base64Rules::kLenient}) {
    if (accel::DecodeBase64(accel::EncodeBase64(text), rules) != text) std::abort();
    accel::DecodeBase64(text, rules);
  }
  return 0;
}
