// Property tests on the fixture hosts: random flavors claimed until the host is full. Every
// placement must validate, and usage must equal the sum of live placements.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "placement/engine.h"
#include "placement/test_hosts.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::placement {
namespace engine_fixture_test {

class EngineOnFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineOnFixtures, RandomFlavorsUntilFullAreAllValid) {
  // "shared:" names a real machine's hwloc XML from ../shared/fixtures/hwloc.
  const bool shared = GetParam().rfind("shared:", 0) == 0;
  const std::string path = shared ? test_support::SharedPath("fixtures/hwloc/" + GetParam().substr(7))
                                  : std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + GetParam() + ".json";
  if (shared) ACCEL_REQUIRE_SHARED(path);
  const topology::HostTopology host = topology::LoadTopology(path);
  std::mt19937 rng(std::hash<std::string>{}(GetParam()));
  int placed = 0, refused = 0;
  for (int round = 0; round < 6; ++round) {
    HostUsage usage;
    HostPolicy policy;
    policy.strategy = round % 2 ? Strategy::kSpread : Strategy::kPack;
    std::vector<Placement> live;
    for (int i = 0; i < 150; ++i) {
      PlacementRequest req = testing::RandomRequest(rng);
      PlaceResult r = Place(host, usage, policy, req);
      if (!r.fits()) {
        ++refused;
        ASSERT_FALSE(r.no_fit.reasons.empty());
        continue;
      }
      ++placed;
      ASSERT_EQ(Validate(host, usage, policy, req, *r.placement), "") << GetParam() << " request " << i;
      ASSERT_EQ(usage.Apply(*r.placement), "");
      live.push_back(*r.placement);
      if (i % 7 == 0) {
        usage.Release(live.front());
        live.erase(live.begin());
      }
    }
    HostUsage rebuilt;
    for (const Placement& p : live) ASSERT_EQ(rebuilt.Apply(p), "");
    EXPECT_EQ(rebuilt.devices, usage.devices);
  }
  // Small hosts (a trimmed DGX-2 has 4 CPUs) fit little; each host must still see both answers.
  EXPECT_GT(placed, 0);
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineOnFixtures,
                         ::testing::Values("hgx-h100", "hgx-h200", "epyc-nps4-mi300x", "gaudi2-8hpu", "devbox",
                                           "shared:nvidiaDGX2.xml", "shared:192em64t-24n8c2t.xml",
                                           "shared:24em64t-2n6c2t-pci.xml", "shared:64intel64-heteromem.xml",
                                           "shared:16amd64-8n2c-cpusets.xml"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace accel::placement
