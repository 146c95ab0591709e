// The MIG catalog data, transcribed from ../shared/reference/mig-profiles.json and mig.md §1.4
// (tests/sharing/mig_geometry_test.cc checks it against the JSON field by field).
//
// Every 8-memory-slice part shares one structure (1g, 1g+me, 1g with two memory slices, 2g, 3g,
// 4g, 7g with the same placements), so those models are built from one template; only names,
// IDs, GiB and what was seen on hardware differ.
#include <array>

#include "sharing/mig_geometry.h"

namespace accel::sharing {
namespace {

// NVML_GPU_INSTANCE_PROFILE_* values (nvml.h).
constexpr int kNvml1Slice = 0x0;
constexpr int kNvml2Slice = 0x1;
constexpr int kNvml3Slice = 0x2;
constexpr int kNvml4Slice = 0x3;
constexpr int kNvml7Slice = 0x4;
constexpr int kNvml1SliceRev1 = 0x7;  // 1g+me
constexpr int kNvml2SliceRev1 = 0x8;  // 2g+me
constexpr int kNvml1SliceRev2 = 0x9;  // 1g with twice the memory

constexpr int kUnknown = -1;

// Per-model values of the 8-slice template, in -lgip order:
// 1g, 1g+me, 1g (2 memory slices), 2g, 3g, 4g, 7g.
struct EightSliceData {
  std::array<const char*, 7> names;
  std::array<int, 7> ids;
  std::array<double, 7> gib;
  /// Placements (and IDs) seen on hardware for this model, not inferred from the family.
  bool confirmed;
};

std::vector<MigProfile> EightSliceProfiles(const EightSliceData& d) {
  struct Shape {
    int compute, memory, max_count, nvml;
    bool me;
    std::vector<int> starts;
  };
  const std::array<Shape, 7> shapes = {{
      {1, 1, 7, kNvml1Slice, false, {0, 1, 2, 3, 4, 5, 6}},
      {1, 1, 1, kNvml1SliceRev1, true, {0, 1, 2, 3, 4, 5, 6}},
      {1, 2, 4, kNvml1SliceRev2, false, {0, 2, 4, 6}},
      {2, 2, 3, kNvml2Slice, false, {0, 2, 4}},
      {3, 4, 2, kNvml3Slice, false, {0, 4}},
      {4, 4, 1, kNvml4Slice, false, {0}},
      {7, 8, 1, kNvml7Slice, false, {0}},
  }};
  std::vector<MigProfile> profiles;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    MigProfile p;
    p.name = d.names[i];
    p.compute_slices = s.compute;
    p.memory_slices = s.memory;
    p.max_count = s.max_count;
    p.profile_id = d.ids[i];
    p.nvml_profile = s.nvml;
    p.media_extension = s.me;
    p.starts = s.starts;
    p.memory_gib = d.gib[i];
    p.confirmed = d.confirmed && d.ids[i] != kUnknown;
    profiles.push_back(std::move(p));
  }
  return profiles;
}

GpuModel EightSliceModel(std::string name, std::vector<std::string> aliases,
                         std::vector<uint32_t> pci_ids, std::string min_driver,
                         const EightSliceData& data) {
  GpuModel m;
  m.name = std::move(name);
  m.aliases = std::move(aliases);
  m.pci_ids = std::move(pci_ids);
  m.memory_slices = 8;
  m.compute_slices = 7;
  m.profiles = EightSliceProfiles(data);
  m.min_driver = std::move(min_driver);
  return m;
}

GpuModel A30Model() {
  GpuModel m;
  m.name = "A30-24GB";
  m.aliases = {"A30", "NVIDIA A30", "A30-PCIE-24GB"};
  m.pci_ids = {0x20B710DE};
  m.memory_slices = 4;
  m.compute_slices = 4;
  m.min_driver = "R460 (>=460.73.01); 1g.6gb+me needs R470+; 2g.12gb+me needs R525+";
  m.profiles = {
      {"1g.6gb", 1, 1, 4, 14, kNvml1Slice, false, {0, 1, 2, 3}, 5.81, true},
      {"1g.6gb+me", 1, 1, 1, 21, kNvml1SliceRev1, true, {0, 1, 2, 3}, 5.81, true},
      {"2g.12gb", 2, 2, 2, 5, kNvml2Slice, false, {0, 2}, 11.69, true},
      {"2g.12gb+me", 2, 2, 1, 6, kNvml2SliceRev1, true, {0, 2}, 11.69, true},
      {"4g.24gb", 4, 4, 1, 0, kNvml4Slice, false, {0}, 23.44, true},
  };
  return m;
}

std::vector<GpuModel> BuildCatalog() {
  const std::array<int, 7> hopper_ids = {19, 20, 15, 14, 9, 5, 0};
  const std::array<int, 7> unknown_ids = {kUnknown, kUnknown, kUnknown, kUnknown,
                                          kUnknown, kUnknown, kUnknown};
  const std::array<double, 7> unknown_gib = {0, 0, 0, 0, 0, 0, 0};
  std::vector<GpuModel> c;
  c.push_back(EightSliceModel(
      "A100-SXM4-40GB",
      {"A100-40GB", "A100-PCIE-40GB", "A800-40GB", "NVIDIA A100-SXM4-40GB",
       "NVIDIA A100-PCIE-40GB", "NVIDIA A800 40GB PCIe"},
      {0x20B010DE, 0x20B110DE, 0x20F110DE, 0x20F610DE},
      "R450 (>=450.80.02); 1g.5gb+me needs R470+; 1g.10gb needs R525+",
      {{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
       hopper_ids,
       {4.75, 4.75, 9.62, 9.62, 19.5, 19.5, 39.25},
       true}));
  c.push_back(EightSliceModel(
      "A100-80GB",
      {"A100-SXM4-80GB", "A100-PCIE-80GB", "A800-80GB", "NVIDIA A100-SXM4-80GB",
       "NVIDIA A100 80GB PCIe", "NVIDIA A800-SXM4-80GB", "NVIDIA A800 80GB PCIe"},
      {0x20B210DE, 0x20B510DE, 0x20F310DE, 0x20F510DE}, "R450 (>=450.80.02)",
      {{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
       hopper_ids,
       {9.5, 9.5, 19.5, 19.5, 39.25, 39.25, 78.75},
       true}));
  c.push_back(A30Model());
  c.push_back(EightSliceModel(
      "H100-SXM5-80GB",
      {"H100-80GB", "H100-PCIE-80GB", "H800-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe",
       "NVIDIA H800", "NVIDIA H800 PCIe"},
      {0x233010DE, 0x233110DE, 0x232210DE, 0x232410DE}, "R525 (>=525.85.12)",
      {{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
       hopper_ids,
       {9.75, 9.75, 19.62, 19.62, 39.5, 39.5, 79.25},
       true}));
  c.push_back(EightSliceModel(
      "H100-NVL-94GB",
      {"H100-94GB", "H100 NVL", "H800 NVL", "NVIDIA H100 NVL", "NVIDIA H800 NVL"},
      {0x232110DE, 0x233A10DE}, "R525 (>=525.85.12) (H100 row)",
      {{"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"},
       hopper_ids,
       {10.75, 10.75, 21.62, 21.62, 46.38, 46.38, 93.12},
       true}));
  // Measured on an H200 SXM (0x233510DE, driver 580.159.04, 2026-11-30) through NVML with MIG
  // mode off: nvmlDeviceGetGpuInstanceProfileInfo gave these IDs and memorySizeMB (16384,
  // 16384, 33280, 33280, 71424, 71424, 143360), and GetGpuInstancePossiblePlacements_v2 gave
  // exactly the placements of the eight-slice geometry. See docs/hardware-checks.md.
  c.push_back(EightSliceModel(
      "H200-SXM5-141GB", {"H200-141GB", "H200 NVL", "NVIDIA H200", "NVIDIA H200 NVL"},
      {0x233510DE, 0x233B10DE}, "R550 (>=550.90.07)",
      {{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
       hopper_ids,
       {16.0, 16.0, 32.5, 32.5, 69.75, 69.75, 140.0},
       true}));
  // H100 96GB, H20 and PG506 share these names in mig-parted's default config.
  c.push_back(EightSliceModel(
      "GH200-96GB",
      {"GH200", "H100-96GB", "H20-96GB", "PG506-96GB", "NVIDIA GH200 480GB",
       "NVIDIA GH200 96GB HBM3", "NVIDIA H100 96GB", "NVIDIA H20"},
      {0x234210DE, 0x233D10DE, 0x232910DE, 0x20B610DE},
      "R525+ (H100 row); H20 R535 (>=535.161.07)",
      {{"1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"},
       hopper_ids,
       {11.0, 11.0, 23.0, 23.0, 46.5, 46.5, 93.0},
       false}));
  c.push_back(EightSliceModel(
      "GH200-144GB", {"GH200-144G", "NVIDIA GH200 144G HBM3e"}, {0x234810DE}, "unconfirmed",
      {{"1g.18gb", "1g.18gb+me", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"},
       unknown_ids,
       unknown_gib,
       false}));
  c.push_back(EightSliceModel(
      "B200-180GB", {"B200", "NVIDIA B200"}, {0x290110DE}, "R570 (>=570.133.20)",
      {{"1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"},
       unknown_ids,
       unknown_gib,
       false}));
  return c;
}

}  // namespace

const std::vector<GpuModel>& MigCatalog() {
  static const std::vector<GpuModel>* const catalog = new std::vector<GpuModel>(BuildCatalog());
  return *catalog;
}

}  // namespace accel::sharing
