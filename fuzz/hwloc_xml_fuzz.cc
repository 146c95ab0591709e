// libFuzzer target: the hwloc XML source (v3 downgrade, hwloc's importer, our reader) on
// arbitrary bytes must return a consistent host or throw accel::InputError; nothing else.
// It goes through the in-memory path, so no files are written.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "topology/host.h"
#include "topology/host_json.h"
#include "topology/hwloc_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;  // hwloc's importer is linear; big inputs only slow the run
  std::string xml(reinterpret_cast<const char*>(data), size);
  accel::topology::DowngradeHwlocXml(xml);  // must not crash on its own either
  accel::topology::HostTopology host;
  try {
    host = accel::topology::LoadHwlocXmlText(xml, "fuzz.xml", "fuzz");
  } catch (const accel::InputError&) {
    return 0;
  }
  if (!accel::topology::CheckInvariants(host).empty()) std::abort();
  std::string json = accel::topology::ToJson(host);
  if (accel::topology::ToJson(accel::topology::HostFromJson(json, "fuzz.json")) != json)
    std::abort();
  return 0;
}
