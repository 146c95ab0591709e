// FleetView's rank rows and interned state ids against the entries they summarize: after every
// random Apply, Upsert (changed or new host) and Remove, each row says what its HostEntry says,
// and two hosts share a state id exactly when they share a usage_key.
#include "fleet/fleet_view.h"

#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "fleet/fleet_test_util.h"
#include "placement/engine.h"

namespace accel::fleet {
namespace fleet_view_test {

using testing::Chance;
using testing::FleetShape;
using testing::RandomFillerShape;
using testing::RandomFleet;
using testing::RequestOf;
using testing::TestFleet;
using testing::Uniform;

// Checks every row of `view` against its entry; returns the number of distinct states.
size_t ExpectRowsMatchEntries(const FleetView& view, const std::string& context) {
  EXPECT_EQ(view.rows().size(), view.hosts().size()) << context;
  std::map<std::string, uint32_t> id_of_key;
  std::map<uint32_t, std::string> key_of_id;
  for (size_t i = 0; i < view.hosts().size() && i < view.rows().size(); ++i) {
    const HostEntry& e = view.hosts()[i];
    const RankRow& row = view.rows()[i];
    const std::string ctx = context + e.record.name + ": ";
    if (i > 0) {
      EXPECT_LT(view.hosts()[i - 1].record.name, e.record.name) << ctx << "hosts out of name order";
    }
    EXPECT_EQ(view.IndexOf(e.record.name), static_cast<int>(i)) << ctx;
    if (row.hardware >= view.hardware().size()) {
      ADD_FAILURE() << ctx << "hardware id out of range";
      continue;
    }
    const HardwareInfo& hw = view.hardware()[row.hardware];
    EXPECT_EQ(hw.topology.get(), e.hardware.get()) << ctx;
    EXPECT_EQ(row.enabled, e.record.state == HostAdminState::kEnabled) << ctx;
    for (int64_t now : {int64_t{0}, testing::kSnapshotTime, testing::kSnapshotTime + 400, testing::kSnapshotTime + 5000})
      EXPECT_EQ(now > row.stale_after_unix, IsStale(e.record, now)) << ctx << "now " << now;
    EXPECT_EQ(row.free_accelerators, e.summary.free_accelerators) << ctx;
    EXPECT_EQ(row.free_pinnable_cpus, e.summary.free_pinnable_cpus) << ctx;
    EXPECT_EQ(row.partly_used_node, e.summary.has_partly_used_node) << ctx;
    EXPECT_EQ(row.idle, e.summary.idle) << ctx;
    uint64_t mask = 0;
    for (size_t j = 0; j < hw.accelerators.size() && j < 64; ++j)
      if (!e.usage.devices.count(hw.accelerators[j]->address)) mask |= uint64_t{1} << j;
    EXPECT_EQ(row.free_accelerator_mask, mask) << ctx;
    EXPECT_EQ(__builtin_popcountll(mask), e.summary.free_accelerators) << ctx;
    // RowOf (what Schedule computes for its working copies) agrees, except for the state id.
    RankRow copy = view.RowOf(e);
    EXPECT_EQ(copy.state, kNoState) << ctx;
    copy.state = row.state;
    EXPECT_EQ(std::tie(copy.free_accelerator_mask, copy.name_hash, copy.stale_after_unix, copy.free_accelerators,
                       copy.free_pinnable_cpus, copy.state, copy.hardware, copy.enabled, copy.partly_used_node, copy.idle),
              std::tie(row.free_accelerator_mask, row.name_hash, row.stale_after_unix, row.free_accelerators,
                       row.free_pinnable_cpus, row.state, row.hardware, row.enabled, row.partly_used_node, row.idle))
        << ctx;
    EXPECT_NE(row.state, kNoState) << ctx;
    EXPECT_LT(row.state, view.state_id_bound()) << ctx;
    auto [by_key, new_key] = id_of_key.emplace(e.usage_key, row.state);
    EXPECT_EQ(by_key->second, row.state) << ctx << "one usage_key, two state ids";
    auto [by_id, new_id] = key_of_id.emplace(row.state, e.usage_key);
    EXPECT_EQ(by_id->second, e.usage_key) << ctx << "one state id, two usage_keys";
  }
  return id_of_key.size();
}

TEST(FleetViewRows, FollowEveryChange) {
  int applied = 0, upserted = 0, added = 0, removed = 0, shared_states = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    FleetShape shape;
    shape.hosts = Uniform(rng, 2, 12);
    TestFleet fleet = RandomFleet(rng, shape);
    FleetView view = FleetView::FromSnapshot(fleet.snapshot);
    size_t most_hosts = view.hosts().size();
    const std::string context = "seed " + std::to_string(seed) + ": ";
    const size_t states = ExpectRowsMatchEntries(view, context + "snapshot: ");
    if (states < view.hosts().size()) ++shared_states;
    for (int step = 0; step < 40 && !view.hosts().empty(); ++step) {
      const std::string ctx = context + "step " + std::to_string(step) + ": ";
      const size_t i = static_cast<size_t>(Uniform(rng, 0, static_cast<int>(view.hosts().size()) - 1));
      const HostEntry& e = view.hosts()[i];
      const int op = Uniform(rng, 1, 100);
      if (op <= 50) {  // a claim made on this view (a scheduler's own placement)
        const testing::Sku& sku = *fleet.sku.at(e.record.name);
        placement::PlaceResult fit =
            placement::Place(*e.hardware, e.usage, e.record.policy, RequestOf(RandomFillerShape(rng, sku)));
        if (!fit.fits()) continue;
        placement::Placement p = *fit.placement;
        p.host = e.record.name;
        ASSERT_EQ(view.Apply(i, p), "") << ctx;
        ++applied;
      } else if (op <= 70) {  // the store's version of the host: claims released, state changed
        HostRecord record = e.record;
        record.state = Chance(rng, 70) ? HostAdminState::kEnabled : HostAdminState::kMaintenance;
        if (Chance(rng, 50)) {
          record.heartbeat_at = testing::kSnapshotTime - Uniform(rng, 0, 1000);
          record.stale_after_s = 300;
        }
        ++record.generation;
        view.Upsert(MakeHostEntry(record, e.hardware, {}));
        ++upserted;
      } else if (op <= 85) {  // a new host with another host's hardware and usage
        HostEntry copy = e;
        copy.record.name = "n" + std::to_string(step) + "-" + e.record.name;
        fleet.sku[copy.record.name] = fleet.sku.at(e.record.name);
        view.Upsert(std::move(copy));
        ++added;
      } else {
        view.Remove(e.record.name);
        ++removed;
      }
      most_hosts = std::max(most_hosts, view.hosts().size());
      ExpectRowsMatchEntries(view, ctx);
      // Ids of states no host holds are reused: the bound never exceeds the most hosts held + 1.
      EXPECT_LE(view.state_id_bound(), most_hosts + 1) << ctx;
    }
    FleetView copy = view;  // a copy is a view of its own
    ExpectRowsMatchEntries(copy, context + "copy: ");
  }
  EXPECT_GT(applied, 1000);
  EXPECT_GT(upserted, 500);
  EXPECT_GT(added, 300);
  EXPECT_GT(removed, 300);
  EXPECT_GT(shared_states, 20) << "the generator should give some hosts the same state";
}

}  // namespace
}  // namespace accel::fleet
