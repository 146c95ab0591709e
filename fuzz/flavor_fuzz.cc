// libFuzzer target: arbitrary bytes as a flavor file (YAML or JSON), then BuildRequest.
//
// Only accel::InputError may leave the parsers; anything else (another exception, a crash, a
// sanitizer report) is a bug. For every request that is built, the invariants downstream code
// relies on are checked and a violation aborts.
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/flavor_fuzz.cc \
//     src/common/*.cc src/placement/{request,pci_alias,flavor*}.cc -lyaml-cpp -o flavor_fuzz
//   ./flavor_fuzz -max_len=4096 examples/flavors
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/error.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"

namespace {

using namespace accel::placement;

const PciAliasTable& Aliases() {
  static const PciAliasTable table = ParsePciAliasText(R"([
    {"name": "h100", "vendor_id": "10de", "product_id": "2330", "numa_policy": "required"},
    {"name": "vf", "vendor_id": "15b3", "product_id": "101e", "device_type": "type-VF"},
    {"name": "vf", "vendor_id": "15b3", "product_id": "1021", "device_type": "type-VF"}
  ])",
                                                       "fuzz aliases");
  return table;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

// Cells, when present, split vCPUs 0..vcpus-1 exactly once and add up to the memory.
void CheckInvariants(const Flavor& f, const PlacementRequest& r) {
  Check(r.vcpus == f.vcpus && r.vcpus >= 1 && r.memory_mib == f.ram_mib && r.flavor == f.name);
  Check(r.extra_specs == f.extra_specs);
  if (!r.cells.empty()) {
    accel::CpuSet seen;
    uint64_t memory = 0;
    for (const GuestCell& c : r.cells) {
      Check(!c.dedicated_vcpus.Intersects(c.shared_vcpus));
      accel::CpuSet cell = c.dedicated_vcpus.Union(c.shared_vcpus);
      Check(!cell.Empty() && !cell.Intersects(seen));
      seen = seen.Union(cell);
      Check(c.memory_mib >= 1);
      memory += c.memory_mib;
      if (r.cpu_policy == CpuPolicy::kDedicated) Check(c.shared_vcpus.Empty());
      if (r.cpu_policy == CpuPolicy::kShared) Check(c.dedicated_vcpus.Empty());
    }
    Check(seen.Count() == r.vcpus && seen.First() == 0 && seen.Contains(r.vcpus - 1));
    Check(memory == r.memory_mib);
  } else {
    Check(r.cpu_policy == CpuPolicy::kShared && r.page_size.kind == PageSizeRequest::kNone);
  }
  if (r.page_size.kind == PageSizeRequest::kExplicit) Check(r.page_size.size_kib >= 1);
  for (const PciRequest& p : r.pci) Check(p.count >= 1 && !p.specs.empty());
  const GuestCpuTopology& t = r.guest_topology;
  Check((t.sockets == 0 && t.cores == 0 && t.threads == 0) || t.sockets * t.cores * t.threads == r.vcpus);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const Flavor& f : ParseFlavorText(text, "fuzz input")) {
      try {
        CheckInvariants(f, BuildRequest(f, Aliases(), "fuzz input"));
      } catch (const accel::InputError&) {
        // a refused flavor; the next one in a list is still tried
      }
    }
  } catch (const accel::InputError&) {
  }
  return 0;
}
