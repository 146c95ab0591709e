#include "placement/pci_alias.h"

#include <cctype>
#include <optional>

#include "common/error.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "common/structured_file.h"

namespace accel::placement {

namespace {

using nlohmann::json;

const char kKnownKeys[] = "name, vendor_id, product_id, device_type, numa_policy, capability_type";

std::string Quote(const std::string& s) { return "'" + s + "'"; }

class EntryReader {
 public:
  EntryReader(const std::string& where, std::string prefix) : where_(where), prefix_(std::move(prefix)) {}

  [[noreturn]] void Fail(const std::string& key, const std::string& problem,
                         const std::string& hint = "") const {
    std::string field = prefix_;
    if (!key.empty()) field += (field.empty() ? "" : ".") + key;
    throw InputError(where_, field, problem, hint);
  }

  std::string Name(const json& entry) const {
    auto it = entry.find("name");
    if (it == entry.end()) Fail("name", "is missing", "every alias entry needs a name");
    if (!it->is_string()) Fail("name", "must be a string");
    std::string name(Trim(it->get<std::string>()));  // Nova strips the name
    if (name.empty()) Fail("name", "is empty", "give the name flavors use in pci_passthrough:alias");
    if (name.size() > 256) Fail("name", "is longer than 256 characters (Nova's limit)");
    for (char c : name) {
      if (c == ':' || c == ',') {
        Fail("name", Quote(name) + " contains '" + std::string(1, c) + "'",
             "pci_passthrough:alias is written name:count,name:count, so a name cannot hold ':' or ','");
      }
      if (static_cast<unsigned char>(c) < 0x20) Fail("name", "contains a control character");
    }
    return name;
  }

  // A PCI id: exactly 4 hex digits as Nova's schema wants ("10de"). YAML reads an unquoted 1002 as
  // a number; its digits are still the hex id the person wrote, so a 4-digit number is accepted.
  std::optional<uint16_t> HexId(const json& entry, const char* key, bool required) const {
    auto it = entry.find(key);
    if (it == entry.end()) {
      if (required) {
        Fail(key, "is missing",
             "without a vendor_id the alias would match every PCI device (bridges, NICs, disks)");
      }
      return std::nullopt;
    }
    std::string text;
    if (it->is_string()) {
      text = it->get<std::string>();
    } else if (it->is_number_unsigned() || it->is_number_integer()) {
      text = it->dump();
    } else {
      Fail(key, "must be a string of 4 hex digits, e.g. \"10de\"");
    }
    bool ok = text.size() == 4;
    for (char c : text) ok = ok && std::isxdigit(static_cast<unsigned char>(c));
    if (!ok) {
      Fail(key, Quote(text) + " is not 4 hex digits",
           "write the id as lspci -nn shows it, without 0x, e.g. \"10de\"; Nova: PciInvalidAlias");
    }
    return static_cast<uint16_t>(std::stoul(text, nullptr, 16));
  }

  std::string DeviceType(const json& entry) const {
    auto it = entry.find("device_type");
    if (it == entry.end()) return "";
    if (!it->is_string()) Fail("device_type", "must be a string");
    std::string type = it->get<std::string>();
    if (type == "type-PCI" || type == "type-PF" || type == "type-VF") return type;
    if (type == "vdpa") Fail("device_type", "'vdpa' devices are not supported by accel");
    Fail("device_type", Quote(type) + " is not a device type",
         "use type-PCI (a whole device), type-PF (an SR-IOV physical function) or type-VF "
         "(a virtual function); Nova: PciInvalidAlias");
  }

  PciNumaPolicy Policy(const json& entry) const {
    auto it = entry.find("numa_policy");
    if (it == entry.end()) return PciNumaPolicy::kLegacy;
    if (!it->is_string()) Fail("numa_policy", "must be a string");
    std::string p = it->get<std::string>();
    for (PciNumaPolicy policy : {PciNumaPolicy::kRequired, PciNumaPolicy::kLegacy, PciNumaPolicy::kPreferred,
                                 PciNumaPolicy::kSocket}) {
      if (p == PciNumaPolicyName(policy)) return policy;
    }
    Fail("numa_policy", Quote(p) + " is not a NUMA policy",
         "use required, legacy, preferred or socket; Nova: PciInvalidAlias");
  }

  void CheckKeys(const json& entry) const {
    for (const auto& [key, value] : entry.items()) {
      if (key == "name" || key == "vendor_id" || key == "product_id" || key == "device_type" ||
          key == "numa_policy") {
        continue;
      }
      if (key == "capability_type") {
        if (value != "pci") Fail(key, "must be \"pci\" (the only value Nova knows)");
        continue;
      }
      if (key == "resource_class" || key == "traits" || key == "live_migratable") {
        Fail(key, "is not supported by accel (it belongs to PCI in Placement)",
             "match devices by vendor_id and product_id");
      }
      Fail(key, "is not an alias field",
           std::string("known fields: ") + kKnownKeys + "; Nova: PciInvalidAlias");
    }
  }

 private:
  const std::string& where_;
  std::string prefix_;
};

// Adds one alias object to `aliases` (merging same-name entries as Nova does).
void AddEntry(const json& entry, const std::string& where, const std::string& prefix,
              std::vector<PciAlias>* aliases) {
  EntryReader r(where, prefix);
  if (!entry.is_object()) {
    r.Fail("", "must be an object like {\"name\": \"h100\", \"vendor_id\": \"10de\", ...}");
  }
  r.CheckKeys(entry);
  std::string name = r.Name(entry);
  PciSpec spec;
  spec.alias = name;
  spec.vendor_id = r.HexId(entry, "vendor_id", true);
  spec.product_id = r.HexId(entry, "product_id", false);
  spec.device_type = r.DeviceType(entry);
  PciNumaPolicy policy = r.Policy(entry);
  for (PciAlias& a : *aliases) {
    if (a.name != name) continue;
    if (a.numa_policy != policy) {
      r.Fail("numa_policy",
             std::string("is ") + PciNumaPolicyName(policy) + " but an earlier entry of alias " +
                 Quote(name) + " says " + PciNumaPolicyName(a.numa_policy),
             "entries sharing a name must agree on numa_policy, and an entry without one means "
             "legacy; Nova: PciInvalidAlias (NUMA policy mismatch)");
    }
    a.specs.push_back(std::move(spec));
    return;
  }
  aliases->push_back({name, policy, {std::move(spec)}});
}

// ---- nova.conf lines ----

bool IsSectionHeader(std::string_view line) {
  if (line.size() < 3 || line.front() != '[' || line.back() != ']') return false;
  for (char c : line.substr(1, line.size() - 2))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

bool IsAliasAssignment(std::string_view line) {
  if (line.substr(0, 5) != "alias") return false;
  line.remove_prefix(5);
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return !line.empty() && line.front() == '=';
}

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line(text.substr(pos, nl - pos));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    pos = nl + 1;
  }
  return lines;
}

// The first line that is neither blank nor a comment decides whether the text is nova.conf.
bool LooksLikeNovaConf(std::string_view text) {
  for (const std::string& raw : Lines(text)) {
    std::string line(Trim(raw));
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    return IsSectionHeader(line) || IsAliasAssignment(line);
  }
  return false;
}

std::vector<PciAlias> ParseNovaConf(std::string_view text, const std::string& where) {
  std::vector<PciAlias> aliases;
  std::vector<std::string> lines = Lines(text);
  std::string section = "pci";  // bare "alias =" lines without a header count as [pci]
  size_t entries = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line(Trim(lines[i]));
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (IsSectionHeader(line)) {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    if (section != "pci" || !IsAliasAssignment(line)) continue;
    std::string value(Trim(std::string_view(line).substr(line.find('=') + 1)));
    size_t first = i;
    // oslo.config continues a value on the following indented lines.
    while (i + 1 < lines.size() && !lines[i + 1].empty() &&
           (lines[i + 1][0] == ' ' || lines[i + 1][0] == '\t') && !Trim(lines[i + 1]).empty()) {
      value += " " + std::string(Trim(lines[++i]));
    }
    // oslo.config drops one pair of quotes around a value.
    if (value.size() >= 2 && (value[0] == '\'' || value[0] == '"') && value.back() == value[0]) {
      value = value.substr(1, value.size() - 2);
    }
    std::string at = where + ":" + std::to_string(first + 1);
    json doc;
    try {
      doc = ParseJsonText(value, at);
    } catch (const InputError& e) {
      // Positions inside the value (its continuation lines joined) are not the file's: name the
      // line the alias starts at.
      throw InputError(at, e.field().empty() ? "alias" : "alias." + e.field(), e.problem(),
                       e.hint().empty() ? "write alias = {\"name\": \"h100\", \"vendor_id\": \"10de\", ...}" : e.hint());
    }
    const json items = doc.is_array() ? doc : json::array({doc});
    for (const json& item : items) {
      AddEntry(item, at, "[" + std::to_string(entries++) + "]", &aliases);
    }
  }
  return aliases;
}

}  // namespace

const PciAlias* PciAliasTable::Find(std::string_view name) const {
  for (const PciAlias& a : aliases_)
    if (a.name == name) return &a;
  return nullptr;
}

PciAliasTable ParsePciAliases(const json& doc, const std::string& where) {
  std::vector<PciAlias> aliases;
  if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) AddEntry(doc[i], where, "[" + std::to_string(i) + "]", &aliases);
  } else if (doc.is_object()) {
    AddEntry(doc, where, "", &aliases);
  } else {
    throw InputError(where, "", doc.is_null() ? "is empty" : "must be a list of alias objects",
                     "write [{\"name\": \"h100\", \"vendor_id\": \"10de\", \"product_id\": \"2330\"}]");
  }
  return PciAliasTable(std::move(aliases), where);
}

PciAliasTable ParsePciAliasText(std::string_view text, const std::string& where) {
  if (LooksLikeNovaConf(text)) return PciAliasTable(ParseNovaConf(text, where), where);
  return ParsePciAliases(ParseStructuredText(text, where), where);
}

PciAliasTable LoadPciAliases(const std::string& path) { return ParsePciAliasText(ReadWholeFile(path), path); }

}  // namespace accel::placement
