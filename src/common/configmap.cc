#include "common/configmap.h"

#include <algorithm>

#include "common/error.h"
#include "common/strings.h"

namespace accel {

namespace {

std::string QuotedList(const std::vector<std::string>& keys) {
  std::vector<std::string> quoted;
  for (const std::string& k : keys) quoted.push_back("\"" + k + "\"");
  return JoinStrings(quoted, ", ");
}

}  // namespace

std::string ChooseConfigMapKey(const std::vector<std::string>& keys, const std::string& wanted,
                               const std::string& default_key, const std::string& what,
                               const std::string& where, const std::string& key_flag) {
  auto has = [&](const std::string& k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  const std::string pick = key_flag.empty() ? "" : "pick one with " + key_flag + " NAME";
  if (keys.empty()) {
    throw InputError(where, "data", what + " holds no data",
                     "the file belongs under data.\"" + default_key + "\"");
  }
  if (!wanted.empty()) {
    if (has(wanted)) return wanted;
    throw InputError(where, "data", what + " has no key \"" + wanted + "\"; its keys: " + QuotedList(keys),
                     pick);
  }
  if (has(default_key)) return default_key;
  if (keys.size() == 1) return keys.front();
  throw InputError(where, "data",
                   what + " has " + std::to_string(keys.size()) + " keys (" + QuotedList(keys) +
                       ") and none is \"" + default_key + "\"",
                   key_flag.empty() ? "put the file under data.\"" + default_key + "\""
                                    : "name the one to read: " + key_flag + " NAME");
}

}  // namespace accel
