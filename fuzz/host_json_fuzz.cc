// libFuzzer target: HostFromJson on arbitrary bytes must return a host that passes
// CheckInvariants and round-trips exactly, or throw accel::InputError; nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "topology/host.h"
#include "topology/host_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  accel::topology::HostTopology host;
  try {
    host = accel::topology::HostFromJson(text, "fuzz.json");
  } catch (const accel::InputError&) {
    return 0;
  }
  if (!accel::topology::CheckInvariants(host).empty()) std::abort();
  std::string once = accel::topology::ToJson(host);
  try {
    if (accel::topology::ToJson(accel::topology::HostFromJson(once, "again.json")) != once)
      std::abort();
  } catch (const accel::InputError&) {
    std::abort();  // our own output must read back
  }
  return 0;
}
