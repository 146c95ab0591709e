// PciAliasTable: Nova's [pci]alias definitions, the names a flavor's pci_passthrough:alias uses.
//
// A file holds a JSON or YAML list of alias objects, a single object, or the lines of a nova.conf
// [pci] section ("alias = {...}", one per line, as Nova's multi-valued option has them):
//   [{"name": "h100", "vendor_id": "10de", "product_id": "2330",
//     "device_type": "type-PCI", "numa_policy": "required"}, ...]
// Several entries with the same name are alternatives: a device matching any of them satisfies
// the alias (Nova's multi-spec alias); they must agree on numa_policy. Checks follow Nova's alias
// schema (4-digit hex ids, known device types and policies, no unknown fields) and add two of
// accel's own: vendor_id is required (without a Nova device_spec whitelist, an alias without
// one would match every PCI device) and names cannot hold ':' or ',' (pci_passthrough:alias
// could not name them). Immutable after loading; a const table may be shared across threads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "placement/request.h"

namespace accel::placement {

/// One alias name with all its device specs.
struct PciAlias {
  std::string name;                                    ///< as pci_passthrough:alias names it
  PciNumaPolicy numa_policy = PciNumaPolicy::kLegacy;  ///< the entries' numa_policy; legacy if unset
  std::vector<PciSpec> specs;                          ///< alternatives, in file order
};

class PciAliasTable {
 public:
  /// An empty table that came from no file (a flavor naming any alias is refused).
  PciAliasTable() = default;
  PciAliasTable(std::vector<PciAlias> aliases, std::string source)
      : aliases_(std::move(aliases)), source_(std::move(source)) {}

  /// The alias called `name` (exact, case-sensitive, as Nova compares), or nullptr.
  const PciAlias* Find(std::string_view name) const;
  /// Every alias, in order of first appearance in the file.
  const std::vector<PciAlias>& aliases() const { return aliases_; }
  /// The file (or other `where`) the table was read from; "" for a default-constructed table.
  const std::string& source() const { return source_; }
  bool empty() const { return aliases_.empty(); }

 private:
  std::vector<PciAlias> aliases_;
  std::string source_;
};

/// Reads an alias file (JSON, YAML or nova.conf lines). Returns the table; throws InputError
/// naming the file, the entry and field ("aliases.json: [2].vendor_id: ...") and the fix.
PciAliasTable LoadPciAliases(const std::string& path);

/// Same for text in memory; `where` names it in errors.
PciAliasTable ParsePciAliasText(std::string_view text, const std::string& where);

/// Same for an already parsed document (a list of alias objects or one object).
PciAliasTable ParsePciAliases(const nlohmann::json& doc, const std::string& where);

}  // namespace accel::placement
