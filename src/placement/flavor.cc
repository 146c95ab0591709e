// Reading flavors from YAML/JSON (accel's form, openstack CLI output, compute API bodies).
// BuildRequest lives in flavor_request.cc.
#include "placement/flavor.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "placement/flavor_keys.h"

namespace accel::placement {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxRamMib = uint64_t{1} << 40;  // 1 EiB; keeps KiB arithmetic in range

// Keys of `openstack flavor show -f json`, `openstack flavor list --long -f json` and the
// compute API that carry nothing placement needs. Lower case; any key holding ':' is also ignored.
const std::set<std::string> kIgnoredFlavorKeys = {
    "id",          "disk",      "swap",      "ephemeral", "rxtx_factor", "rxtx factor",
    "description", "is_public", "is public", "disabled",  "links",       "access_project_ids",
};

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// 1 to 18 decimal digits: fits uint64_t.
bool IsSmallDecimal(const std::string& s) {
  return !s.empty() && s.size() < 19 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A value as a short JSON text for messages (never throws, even on bytes that are not UTF-8).
std::string Show(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// A scalar as the text Nova would store in extra_specs (they are strings there).
bool ScalarText(const json& v, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
  } else if (v.is_boolean()) {
    *out = v.get<bool>() ? "true" : "false";
  } else if (v.is_number()) {
    *out = v.dump();
  } else {
    return false;
  }
  return true;
}

class FlavorReader {
 public:
  FlavorReader(const std::string& where, std::string prefix) : where_(where), prefix_(std::move(prefix)) {}

  Flavor Read(const json& obj) const {
    if (!obj.is_object()) {
      throw InputError(where_, prefix_.empty() ? "(top level)" : prefix_,
                       "must be a flavor object {name, vcpus, ram, extra_specs}");
    }
    std::map<std::string, const json*> fields = Fields(obj);
    Flavor f;
    f.name = Name(fields);
    f.vcpus = static_cast<int>(Whole(fields, "vcpus", kMaxFlavorVcpus, "the number of guest vCPUs"));
    f.ram_mib = Whole(fields, "ram", kMaxRamMib, "guest memory in MiB, e.g. 131072 for 128 GiB");
    f.extra_specs = ExtraSpecs(fields);
    return f;
  }

 private:
  [[noreturn]] void Fail(const std::string& key, const std::string& problem,
                         const std::string& hint = "") const {
    throw InputError(where_, Join(prefix_, key), problem, hint);
  }

  // The meaningful fields by lower-case name ("Name", "VCPUs", "RAM" of `flavor list --long`).
  std::map<std::string, const json*> Fields(const json& obj) const {
    std::map<std::string, const json*> fields;
    for (const auto& [key, value] : obj.items()) {
      std::string lower = AsciiLower(key);
      if (lower == "name" || lower == "vcpus" || lower == "ram" || lower == "extra_specs" ||
          lower == "properties") {
        if (!fields.emplace(lower, &value).second) Fail(key, "is given twice (letter case differs)");
        continue;
      }
      if (kIgnoredFlavorKeys.count(lower) || key.find(':') != std::string::npos) continue;
      Fail(key, "is not a flavor field",
           "accel reads name, vcpus, ram (MiB) and extra_specs (or properties); check the spelling");
    }
    return fields;
  }

  std::string Name(const std::map<std::string, const json*>& fields) const {
    auto it = fields.find("name");
    if (it == fields.end()) Fail("name", "is missing", "every flavor needs a name");
    if (!it->second->is_string()) Fail("name", "must be a string");
    std::string name = it->second->get<std::string>();
    if (name.empty()) Fail("name", "is empty");
    if (name.size() > 255) Fail("name", "is longer than 255 characters (Nova's limit)");
    return name;
  }

  uint64_t Whole(const std::map<std::string, const json*>& fields, const char* key, uint64_t max,
                 const char* meaning) const {
    auto it = fields.find(key);
    if (it == fields.end()) Fail(key, "is missing", std::string("give ") + meaning);
    const json& v = *it->second;
    uint64_t n = 0;
    if (v.is_number_unsigned()) {
      n = v.get<uint64_t>();
    } else if (v.is_number_integer()) {
      if (v.get<int64_t>() < 1) Fail(key, "must be at least 1, not " + Show(v));
      n = static_cast<uint64_t>(v.get<int64_t>());
    } else if (v.is_string() && IsSmallDecimal(v.get_ref<const std::string&>())) {
      n = std::stoull(v.get_ref<const std::string&>());  // a quoted "16" in YAML
    } else {
      Fail(key, "must be a whole number, not " + Show(v), std::string("give ") + meaning);
    }
    if (n < 1) Fail(key, "must be at least 1, not 0");
    if (n > max) Fail(key, std::to_string(n) + " is more than accel handles (" + std::to_string(max) + ")");
    return n;
  }

  std::vector<std::pair<std::string, std::string>> ExtraSpecs(
      const std::map<std::string, const json*>& fields) const {
    auto specs = fields.find("extra_specs");
    auto props = fields.find("properties");
    if (specs != fields.end() && props != fields.end()) {
      Fail("properties", "is given together with extra_specs", "keep one of them");
    }
    if (specs == fields.end()) specs = props;
    if (specs == fields.end() || specs->second->is_null()) return {};
    const std::string key = specs->first;
    const json& v = *specs->second;
    if (v.is_string()) return ParseOpenStackProperties(v.get<std::string>(), where_, Join(prefix_, key));
    if (!v.is_object()) Fail(key, "must be a mapping of extra spec keys to values");
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [spec, value] : v.items()) {
      std::string text;
      if (!ScalarText(value, &text)) {
        Fail(Join(key, spec),
             value.is_null() ? "has no value" : "must be a single value, not a list or mapping",
             "extra spec values are text such as \"dedicated\" or \"2\"");
      }
      std::string problem = ExtraSpecShapeProblem(spec, text);
      if (!problem.empty()) Fail(Join(key, spec), problem);
      out.emplace_back(spec, std::move(text));
    }
    return out;
  }

  const std::string& where_;
  std::string prefix_;
};

bool IsExtraSpecKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.' ||
         c == ' ';
}

// Whether text at `pos` is "key='" with a plausible key (the start of the next property).
bool PropertyStartsAt(std::string_view text, size_t pos) {
  size_t eq = text.find("='", pos);
  if (eq == std::string_view::npos || eq == pos) return false;
  for (size_t i = pos; i < eq; ++i)
    if (!IsExtraSpecKeyChar(text[i])) return false;
  return true;
}

size_t SkipSpaces(std::string_view text, size_t pos) {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n')) ++pos;
  return pos;
}

// The quote that closes a value starting at `from`: the first one followed by the end of the
// text or by ", key='" (values may themselves hold commas and quotes: hw:numa_cpus.0='0-3,8').
size_t ClosingQuote(std::string_view text, size_t from) {
  for (size_t q = text.find('\'', from); q != std::string_view::npos; q = text.find('\'', q + 1)) {
    size_t next = SkipSpaces(text, q + 1);
    if (next == text.size()) return q;
    if (text[next] == ',' && PropertyStartsAt(text, SkipSpaces(text, next + 1))) return q;
  }
  return std::string_view::npos;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseOpenStackProperties(std::string_view text,
                                                                          const std::string& where,
                                                                          const std::string& field) {
  auto fail = [&](const std::string& problem) {
    throw InputError(where, field, problem,
                     "expected the openstack client's form: hw:cpu_policy='dedicated', hw:numa_nodes='2'");
  };
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = SkipSpaces(text, 0);
  while (pos < text.size()) {
    if (!PropertyStartsAt(text, pos)) fail("'" + std::string(text.substr(pos, 40)) + "' is not key='value'");
    size_t eq = text.find("='", pos);
    std::string key(text.substr(pos, eq - pos));
    size_t value_start = eq + 2;
    size_t close = ClosingQuote(text, value_start);
    if (close == std::string_view::npos) fail("the value of " + key + " has no closing quote");
    std::string value(text.substr(value_start, close - value_start));
    std::string problem = ExtraSpecShapeProblem(key, value);
    if (!problem.empty()) fail(key + ": " + problem);
    out.emplace_back(std::move(key), std::move(value));
    pos = SkipSpaces(text, close + 1);
    if (pos < text.size() && text[pos] == ',') pos = SkipSpaces(text, pos + 1);
  }
  return out;
}

std::vector<Flavor> ParseFlavors(const json& doc, const std::string& where) {
  const json* list = &doc;
  std::string prefix;
  if (doc.is_object() && doc.size() == 1 && doc.contains("flavors")) {
    list = &doc["flavors"];
    prefix = "flavors";
  } else if (doc.is_object() && doc.size() == 1 && doc.contains("flavor")) {
    return {FlavorReader(where, "flavor").Read(doc["flavor"])};
  }
  if (doc.is_null()) throw InputError(where, "", "is empty", "write a flavor: name, vcpus, ram, extra_specs");
  if (!list->is_array()) return {FlavorReader(where, "").Read(doc)};
  if (list->empty()) throw InputError(where, prefix, "holds no flavors");
  std::vector<Flavor> flavors;
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string item = prefix + "[" + std::to_string(i) + "]";
    flavors.push_back(FlavorReader(where, item).Read((*list)[i]));
    if (!names.insert(flavors.back().name).second) {
      throw InputError(where, item + ".name", "flavor '" + flavors.back().name + "' appears twice",
                       "flavor names must be unique within a file");
    }
  }
  return flavors;
}

std::vector<Flavor> ParseFlavorText(std::string_view text, const std::string& where) {
  return ParseFlavors(ParseStructuredText(text, where), where);
}

std::vector<Flavor> LoadFlavors(const std::string& path) {
  return ParseFlavors(ReadStructuredFile(path), path);
}

Flavor LoadFlavor(const std::string& path) {
  std::vector<Flavor> flavors = LoadFlavors(path);
  if (flavors.size() != 1) {
    throw InputError(path, "", "holds " + std::to_string(flavors.size()) + " flavors where one is expected",
                     "put the flavor in a file of its own");
  }
  return flavors.front();
}

}  // namespace accel::placement
