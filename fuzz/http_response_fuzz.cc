// The answer of a service `accel fleet --server` talks to: whatever bytes come back must end in
// a response or a SystemError, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "http/client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  try {
    accel::http::ParseHttpResponse(raw, "fuzz input");
  } catch (const accel::SystemError&) {
  }
  return 0;
}
