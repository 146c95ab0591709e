// The fleet service's API bodies (POST /api/v1/place, /capacity, /filter, /release): any bytes
// must get an answer (400 for bad input), never an exception out of Handle or a crash. The
// service runs once per process on a SQLite store with two hosts of the repo fixtures.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "fleet/fleet_store.h"
#include "fleet/service.h"
#include "topology/sources.h"

namespace {

accel::fleet::FleetService* Service() {
  static std::unique_ptr<accel::fleet::FleetService> service = [] {
    char dir[] = "/tmp/accel-fleet-fuzz-XXXXXX";
    const std::string url = std::string("sqlite:") + mkdtemp(dir) + "/fleet.db";
    auto store = accel::fleet::FleetStore::Open(url);
    for (const char* name : {"hgx-h100", "gaudi2-8hpu"}) {
      accel::fleet::HostSpec spec;
      spec.name = name;
      spec.topology = accel::topology::LoadTopology(std::string(ACCEL_FUZZ_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
      spec.set_labels = {{"az", "a"}};
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
  static const char* const kPaths[] = {"/api/v1/place", "/api/v1/capacity", "/api/v1/filter", "/api/v1/release"};
  // The first byte picks the route; the rest is the body.
  const std::string path = kPaths[data[0] % 4];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  accel::fleet::ServiceReply r = Service()->Handle({"POST", path, "", body});
  if (r.status >= 500 && r.status != 503) abort();  // 503: the store; anything else is a bug
  return 0;
}
