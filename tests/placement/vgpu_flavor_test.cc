// vGPU flavors: resources:VGPU with accel:vgpu_type is a share of one GPU of the type's model,
// its framebuffer's fraction; placed by the engine beside the guest's NUMA cells when it has
// them, and validated.
#include <gtest/gtest.h>

#include "common/error.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "topology/sources.h"

namespace accel::placement {
namespace vgpu_flavor_test {

using Specs = std::vector<std::pair<std::string, std::string>>;

PlacementRequest Build(Specs specs, int vcpus = 4) {
  return BuildRequest(Flavor{"vgpu", vcpus, 8192, std::move(specs)}, PciAliasTable{}, "flavor.yaml");
}

std::string ErrorOf(Specs specs) {
  try {
    Build(std::move(specs));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(VgpuFlavor, TypeNamesTheShareAndTheModel) {
  PlacementRequest r = Build({{"resources:VGPU", "1"}, {"accel:vgpu_type", "A100-10C"}});
  ASSERT_TRUE(r.gpu.has_value());
  EXPECT_EQ(r.gpu->count, 1);
  EXPECT_EQ(r.gpu->milli, 250);
  EXPECT_EQ(r.gpu->models, std::vector<std::string>{"A100"});
  r = Build({{"resources1:VGPU", "1"}, {"accel:vgpu_type", "NVIDIA H100-20C"}});
  EXPECT_EQ(r.gpu->milli, 250);
  EXPECT_EQ(r.gpu->models, std::vector<std::string>{"H100"});
  EXPECT_EQ(Build({{"resources:VGPU", "1"}, {"accel:vgpu_type", "GRID A100D-80C"}}).gpu->milli, 1000);
  EXPECT_EQ(Build({{"resources:VGPU", "1"}, {"accel:vgpu_type", "T4-4Q"}}).gpu->milli, 250);
  EXPECT_FALSE(Build({}).gpu.has_value());
}

TEST(VgpuFlavor, BadSpecsSayWhatToWrite) {
  EXPECT_NE(ErrorOf({{"resources:VGPU", "1"}}).find("accel:vgpu_type"), std::string::npos);
  EXPECT_NE(ErrorOf({{"resources:VGPU", "2"}, {"accel:vgpu_type", "A100-10C"}}).find("one vGPU"), std::string::npos);
  EXPECT_NE(ErrorOf({{"resources:VGPU", "1"}, {"accel:vgpu_type", "Z9-10C"}}).find("known families"), std::string::npos);
  EXPECT_NE(ErrorOf({{"resources:VGPU", "1"}, {"accel:vgpu_type", "A100-50C"}}).find("40 GB"), std::string::npos);
  EXPECT_NE(ErrorOf({{"resources:VGPU", "1"}, {"accel:vgpu_type", "A100"}}).find("not a vGPU type"), std::string::npos);
  EXPECT_NE(ErrorOf({{"accel:vgpu_type", "A100-10C"}}).find("no vGPU"), std::string::npos);
  EXPECT_NE(ErrorOf({{"accel:gpu", "1"}}).find("not an accel: extra spec"), std::string::npos);
}

TEST(VgpuFlavor, FourQuarterH100sShareAGpuTheFifthTakesTheNext) {
  const topology::HostTopology host =
      topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json");
  for (bool numa : {false, true}) {
    Specs specs = {{"resources:VGPU", "1"}, {"accel:vgpu_type", "H100-20C"}};
    if (numa) specs.push_back({"hw:cpu_policy", "dedicated"});
    const PlacementRequest req = Build(specs);
    HostUsage usage;
    std::map<std::string, int> per_gpu;
    for (int i = 0; i < 5; ++i) {
      const PlaceResult r = Place(host, usage, HostPolicy{}, req);
      ASSERT_TRUE(r.fits()) << (r.no_fit.reasons.empty() ? "" : r.no_fit.reasons.front());
      ASSERT_EQ(r.placement->gpus.size(), 1u);
      EXPECT_EQ(r.placement->gpus[0].milli, 250);
      EXPECT_EQ(Validate(host, usage, HostPolicy{}, req, *r.placement), "");
      if (numa) {
        ASSERT_EQ(r.placement->cells.size(), 1u);
        EXPECT_EQ(r.placement->gpus[0].numa_node, r.placement->cells[0].host_node) << "the vGPU beside the cell";
      }
      ++per_gpu[r.placement->gpus[0].address];
      ASSERT_EQ(usage.Apply(*r.placement), "");
    }
    EXPECT_EQ(per_gpu.size(), 2u) << "four quarters fill one GPU before the next";
  }
}

}  // namespace vgpu_flavor_test
}  // namespace accel::placement
