// libFuzzer target: arbitrary bytes as `accel exporter` flag values that accel parses itself:
// --web.listen-address (ParseListenAddress) and the durations (ParseDuration).
// Only accel::InputError may leave them; an accepted address must format back and re-parse to
// the same value, and an accepted duration must be positive.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "telemetry/collector.h"
#include "http/listen_address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    accel::http::ListenAddress a = accel::http::ParseListenAddress(text);
    accel::http::ListenAddress b =
        accel::http::ParseListenAddress(accel::http::FormatListenAddress(a));
    if (a.host != b.host || a.port != b.port || a.port < 0 || a.port > 65535) std::abort();
  } catch (const accel::InputError&) {
  }
  try {
    if (accel::telemetry::ParseDuration(text, "--collect-interval").count() <= 0) std::abort();
  } catch (const accel::InputError&) {
  }
  return 0;
}
