// MIG-profile requests through the fleet scheduler: shapes come from the MIG catalog, slices fit
// exactly where the catalog allows beside the slices already on a GPU, and a GPU holding slices
// is never given whole or as a time-slicing share.
#include "fleet/mig_request.h"

#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "common/error.h"
#include "fleet/scheduler.h"
#include "topology/sources.h"

namespace accel::fleet {
namespace mig_request_test {

FleetView H100Fleet() {
  topology::HostTopology t = topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json");
  t.hostname = kSharedHostname;
  FleetSnapshot snap;
  const std::string id = TopologyId(t);
  snap.topologies.emplace(id, std::make_shared<const topology::HostTopology>(std::move(t)));
  HostRecord r;
  r.name = "gpu-1";
  r.topology_id = id;
  snap.hosts.push_back(r);
  return FleetView::FromSnapshot(snap);
}

placement::PlacementRequest MigPod(const std::string& profile) {
  placement::PlacementRequest r = PodRequest("mig-" + profile, 1000, 1024, 1, 1000, {});
  r.gpu->mig_profile = profile;
  ResolveMigShapes(&*r.gpu, "test");
  return r;
}

TEST(MigRequest, ShapesComeFromTheCatalog) {
  placement::PlacementRequest r = MigPod("3g.40gb");
  ASSERT_FALSE(r.gpu->mig_shapes.empty());
  bool h100 = false;
  for (const placement::MigShape& s : r.gpu->mig_shapes)
    if (s.device_id == 0x2330) {
      h100 = true;
      EXPECT_EQ(s.gpu_slices, 8);
      EXPECT_EQ(s.memory_slices, 4);
      EXPECT_EQ(s.starts, (std::vector<int>{0, 4}));
    }
  EXPECT_TRUE(h100);
  placement::GpuRequest bad;
  bad.mig_profile = "9g.999gb";
  EXPECT_THROW(ResolveMigShapes(&bad, "test"), InputError);
  bad.mig_profile = "1g.10gb";
  bad.count = 2;
  EXPECT_THROW(ResolveMigShapes(&bad, "test"), InputError);
}

TEST(MigRequest, SlicesFillEachGpuExactlyAsTheCatalogAllows) {
  FleetView view = H100Fleet();
  ScheduleOptions o;
  std::map<std::string, int> per_gpu;
  // 3g.40gb: two per H100 (starts 0 and 4), 8 GPUs.
  for (int i = 0; i < 16; ++i) {
    const ScheduleResult r = Schedule(view, MigPod("3g.40gb"), o);
    ASSERT_TRUE(r.all_placed) << i;
    const placement::GpuPlacement& g = r.instances[0].chosen.placement.gpus.at(0);
    EXPECT_TRUE(g.mig_start == 0 || g.mig_start == 4) << g.mig_start;
    ++per_gpu[g.address];
    ASSERT_EQ(view.Apply(r.instances[0].chosen.host_index, r.instances[0].chosen.placement), "");
  }
  EXPECT_EQ(per_gpu.size(), 8u);
  for (const auto& [gpu, n] : per_gpu) EXPECT_EQ(n, 2) << gpu;
  ScheduleResult full = Schedule(view, MigPod("1g.10gb"), o);
  EXPECT_FALSE(full.all_placed) << "every memory slice is in a 3g.40gb instance";
  // Nor whole GPUs or shares beside MIG slices.
  EXPECT_FALSE(Schedule(view, PodRequest("whole", 1000, 1024, 1, 1000, {}), o).all_placed);
  EXPECT_FALSE(Schedule(view, PodRequest("share", 1000, 1024, 1, 100, {}), o).all_placed);
}

TEST(MigRequest, SmallSlicesPackOneGpuBeforeOpeningTheNextWhenTheMixWantsWholeGpus) {
  FleetView view = H100Fleet();
  ScheduleOptions o;
  // The mix the fleet expects: MIG slices and whole GPUs. (With the slice alone as the mix, the
  // seventh slice would open a second GPU rather than strand the first one's last memory slice.)
  auto mix = std::make_shared<WorkloadMix>();
  mix->entries.push_back(MixEntryOf(MigPod("1g.10gb")));
  mix->entries.push_back(MixEntryOf(PodRequest("whole", 1000, 1024, 1, 1000, {})));
  for (MixEntry& e : mix->entries) e.weight = 1;
  mix->Normalize();
  o.mix = mix;
  std::map<std::string, int> per_gpu;
  for (int i = 0; i < 7; ++i) {
    const ScheduleResult r = Schedule(view, MigPod("1g.10gb"), o);
    ASSERT_TRUE(r.all_placed);
    ++per_gpu[r.instances[0].chosen.placement.gpus.at(0).address];
    ASSERT_EQ(view.Apply(r.instances[0].chosen.host_index, r.instances[0].chosen.placement), "");
  }
  EXPECT_EQ(per_gpu.size(), 1u) << "seven 1g.10gb slices fill one H100; the other seven GPUs stay whole";
  const ScheduleResult whole = Schedule(view, PodRequest("whole", 1000, 1024, 7, 1000, {}), o);
  EXPECT_TRUE(whole.all_placed);
}

}  // namespace mig_request_test
}  // namespace accel::fleet
