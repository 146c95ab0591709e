// The agent's fleet: block: parsed strictly, and the publisher adds its host, heartbeats, follows
// a hardware change, rejoins a store that lost the host, and survives a store it cannot reach.
#include "agent/fleet_publisher.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/agent_config.h"
#include "common/error.h"
#include "fleet/fleet_store.h"
#include "fleet/host_record.h"
#include "topology/sources.h"

namespace accel::agent {
namespace fleet_publisher_test {

namespace fs = std::filesystem;

const std::string kHosts = std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/";

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/accel-fleet-agent-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(AgentFleetConfig, ParsesTheBlock) {
  AgentConfig c = ParseAgentConfig(R"(
fleet:
  enabled: true
  store: sqlite:/tmp/x.db
  name: gpu-7
  labels: {az: rack-3, gpu: h100}
  heartbeat: 10s
  staleAfter: 1m
)", "agent.yaml");
  EXPECT_TRUE(c.fleet.enabled);
  EXPECT_EQ(c.fleet.store, "sqlite:/tmp/x.db");
  EXPECT_EQ(c.fleet.name, "gpu-7");
  EXPECT_EQ(c.fleet.labels.at("az"), "rack-3");
  EXPECT_EQ(c.fleet.heartbeat, std::chrono::seconds(10));
  EXPECT_EQ(c.fleet.stale_after, std::chrono::minutes(1));
  EXPECT_FALSE(ParseAgentConfig("", "agent.yaml").fleet.enabled);  // off by default
}

TEST(AgentFleetConfig, RefusesBadValuesNamingTheField) {
  struct Case {
    const char* yaml;
    const char* field;
  } cases[] = {
      {"fleet: {enabled: true, labels: {\"bad key!\": x}}", "fleet.labels"},
      {"fleet: {enabled: true, store: \"mysql://x\"}", "fleet.store"},
      {"fleet: {enabled: true, heartbeat: 100ms}", "fleet.heartbeat"},
      {"fleet: {enabled: true, nme: x}", "fleet.nme"},
      {"fleet: {enabled: true, policyFile: /nonexistent/policy.yaml}", "policy.yaml"},
  };
  for (const Case& c : cases) {
    try {
      ParseAgentConfig(c.yaml, "agent.yaml");
      ADD_FAILURE() << "expected InputError for " << c.yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << c.yaml << " -> " << e.what();
    }
  }
}

TEST(FleetPublisher, PublishesHeartbeatsAndFollowsAHardwareChange) {
  TempDir dir;
  const std::string topo = dir.path() + "/host.json";
  fs::copy_file(kHosts + "hgx-h100.json", topo);
  const std::string url = "sqlite:" + dir.path() + "/fleet.db";
  FleetSection section;
  section.enabled = true;
  section.store = url;
  section.name = "agent-1";
  section.labels = {{"az", "rack-3"}};
  section.heartbeat = std::chrono::seconds(10);
  std::vector<std::string> lines;
  internal::FleetPublisher pub(section, topo, topology::LoadTopology(topo),
                               [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(pub.Tick());
  auto store = fleet::FleetStore::Open(url);
  std::optional<fleet::HostRecord> h = store->GetHost("agent-1");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->labels.at("az"), "rack-3");
  EXPECT_EQ(h->stale_after_s, 30);  // 3 x heartbeat
  ASSERT_TRUE(h->heartbeat_at.has_value());
  const std::string first_hw = h->topology_id;
  const int64_t generation = h->generation;

  ASSERT_TRUE(pub.Tick());  // same hardware: a heartbeat only, no new generation
  EXPECT_EQ(store->GetHost("agent-1")->generation, generation);

  fs::copy_file(kHosts + "hgx-h200.json", topo, fs::copy_options::overwrite_existing);
  ASSERT_TRUE(pub.Tick());  // new hardware: the host is updated
  h = store->GetHost("agent-1");
  EXPECT_NE(h->topology_id, first_hw);
  EXPECT_GT(h->generation, generation);

  ASSERT_TRUE(store->RemoveHost("agent-1", false));
  ASSERT_TRUE(pub.Tick());  // the operator removed it: the agent joins again
  EXPECT_TRUE(store->GetHost("agent-1").has_value());
}

TEST(FleetPublisher, AnUnreachableStoreIsLoggedOnceAndRetried) {
  TempDir dir;
  const std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "x";
  FleetSection section;
  section.enabled = true;
  section.store = "sqlite:" + blocker + "/sub/fleet.db";  // a directory that cannot be made
  section.name = "agent-2";
  std::vector<std::string> lines;
  internal::FleetPublisher pub(section, "none", topology::LoadTopology(kHosts + "hgx-h100.json"),
                               [&](const std::string& l) { lines.push_back(l); });
  EXPECT_FALSE(pub.Tick());
  EXPECT_FALSE(pub.Tick());
  ASSERT_EQ(lines.size(), 1u);  // one line per outage, not per heartbeat
  EXPECT_NE(lines[0].find("cannot publish"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace accel::agent
