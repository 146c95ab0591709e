// kube-scheduler's extender verbs (POST /scheduler/filter, /prioritize, /bind): any bytes must get
// an answer (400 with Error set for bad input), never an exception out of Handle or a crash. The
// bodies reach the protocol's readers (fleet/extender_types.h), the pod contract (fleet/pod_ask.h,
// kubelet/pod.h's reader) and JudgeHosts. The service runs once per process on a SQLite store with
// two hosts of the repo fixtures and no API server access (bind answers an error without claiming).
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fleet/fleet_store.h"
#include "fleet/service.h"
#include "topology/sources.h"

namespace {

accel::fleet::FleetService* Service() {
  static std::unique_ptr<accel::fleet::FleetService> service = [] {
    char dir[] = "/tmp/accel-extender-fuzz-XXXXXX";
    const std::string url = std::string("sqlite:") + mkdtemp(dir) + "/fleet.db";
    auto store = accel::fleet::FleetStore::Open(url);
    for (const char* name : {"hgx-h100", "epyc-nps4-mi300x"}) {
      accel::fleet::HostSpec spec;
      spec.name = name;
      spec.topology = accel::topology::LoadTopology(std::string(ACCEL_FUZZ_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
      store->AddHost(spec);
    }
    accel::fleet::ServiceOptions o;
    o.store_url = url;
    o.connections = 1;
    return std::make_unique<accel::fleet::FleetService>(o);
  }();
  return service.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kPaths[] = {"/scheduler/filter", "/scheduler/prioritize", "/scheduler/bind"};
  // The first byte picks the verb; the rest is the body.
  const std::string path = kPaths[data[0] % 3];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  accel::fleet::ServiceReply r = Service()->Handle({"POST", path, "", body});
  if (r.status >= 500 && r.status != 503) abort();  // 503: the store; anything else is a bug
  return 0;
}
