// libFuzzer target: arbitrary bytes as a PCI alias file (JSON, YAML or nova.conf lines), then a
// flavor that asks for one device of every alias it defines.
//
// Only accel::InputError may leave the parsers; anything else is a bug, and so is a table that
// breaks the invariants BuildRequest and the PCI matcher rely on.
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/pci_alias_fuzz.cc \
//     src/common/*.cc src/placement/{request,pci_alias,flavor*}.cc -lyaml-cpp -o pci_alias_fuzz
//   ./pci_alias_fuzz -max_len=4096 examples/flavors
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"

namespace {

using namespace accel::placement;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckTable(const PciAliasTable& table) {
  for (const PciAlias& a : table.aliases()) {
    Check(!a.name.empty() && a.name.find_first_of(":,") == std::string::npos);
    Check(!a.specs.empty() && table.Find(a.name) == &a);
    for (const PciSpec& s : a.specs) {
      Check(s.alias == a.name && s.vendor_id.has_value());
      Check(s.device_type.empty() || s.device_type == "type-PCI" || s.device_type == "type-PF" ||
            s.device_type == "type-VF");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    PciAliasTable table = ParsePciAliasText(text, "fuzz input");
    CheckTable(table);
    std::string wanted;
    for (const PciAlias& a : table.aliases()) wanted += (wanted.empty() ? "" : ",") + a.name + ":1";
    if (wanted.empty()) return 0;
    Flavor flavor{"fuzz", 4, 4096, {{"pci_passthrough:alias", wanted}}};
    try {
      PlacementRequest r = BuildRequest(flavor, table, "fuzz flavor");
      Check(r.pci.size() == table.aliases().size());
      for (size_t i = 0; i < r.pci.size(); ++i) {
        Check(r.pci[i].alias == table.aliases()[i].name && r.pci[i].count == 1);
        Check(r.pci[i].numa_policy == table.aliases()[i].numa_policy);
      }
    } catch (const accel::InputError&) {
      // Names Nova accepts but an extra spec value cannot carry (over 255 characters) end here.
    }
  } catch (const accel::InputError&) {
  }
  return 0;
}
