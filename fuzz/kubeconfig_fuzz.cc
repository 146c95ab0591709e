// libFuzzer target: arbitrary bytes as a kubeconfig (`accel serve --kubeconfig FILE`), read with
// and without an explicit context. Only accel::InputError may leave ParseKubeconfig; the parser
// reads no other file (certificate, key and token paths are only resolved), so no input is
// skipped. A config that parses must name an http(s) server and a KubeClient must accept it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "kubeapi/client.h"
#include "kubeapi/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* context : {"", "other"}) {
    try {
      const accel::kubeapi::KubeConfig c = accel::kubeapi::ParseKubeconfig(text, "kubeconfig", "/base", context);
      if (c.server.rfind("http://", 0) != 0 && c.server.rfind("https://", 0) != 0) std::abort();
      accel::kubeapi::KubeClient client(c);  // constructing contacts nothing
      (void)client.config();
    } catch (const accel::InputError&) {
    }
  }
  return 0;
}
