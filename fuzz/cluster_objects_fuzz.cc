// libFuzzer: cluster::ParseKubernetesObjects, what `accel cluster check --objects FILE` reads
// (kubectl get -o yaml output, List objects, YAML streams): objects with apiVersion and kind, or
// InputError; never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/check.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    for (const auto& o : accel::cluster::ParseKubernetesObjects(
             std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input"))
      if (!o.contains("apiVersion") || !o.contains("kind")) __builtin_trap();
  } catch (const accel::InputError&) {
  }
  return 0;
}
