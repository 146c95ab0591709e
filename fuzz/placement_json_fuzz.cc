// libFuzzer target: ReadPlacementJson (what the fleet's claim store reads back from a database row
// that any client of that database could have written) on arbitrary bytes must return a
// placement that writes and reads back byte for byte, or throw accel::InputError; nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "placement/placement_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  accel::placement::Placement p;
  try {
    p = accel::placement::ReadPlacementJson(text, "fuzz.json");
  } catch (const accel::InputError&) {
    return 0;
  }
  const std::string once = accel::placement::WritePlacementJson(p);
  try {
    if (accel::placement::WritePlacementJson(accel::placement::ReadPlacementJson(once, "again.json")) != once)
      std::abort();
  } catch (const accel::InputError&) {
    std::abort();  // our own output must read back
  }
  return 0;
}
