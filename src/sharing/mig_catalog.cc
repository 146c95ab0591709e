// The MIG catalog data. The nine models of ../shared/reference/mig-profiles.json are transcribed
// from it (tests/sharing/mig_geometry_test.cc checks them against the JSON field by field);
// GB200, B300, GB300 and RTX PRO 6000 Blackwell were added for NVIDIA's default mig-parted
// config (mig-parted deployments/systemd/config-default.yaml = the GPU Operator's
// default-mig-parted-config), from the sources named at each model.
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
constexpr int kNvml1SliceRev1 = 0x7;   // 1g+me
constexpr int kNvml2SliceRev1 = 0x8;   // 2g+me
constexpr int kNvml1SliceRev2 = 0x9;   // 1g with twice the memory
constexpr int kNvml1SliceGfx = 0xA;    // 1g+gfx
constexpr int kNvml2SliceGfx = 0xB;    // 2g+gfx
constexpr int kNvml4SliceGfx = 0xC;    // 4g+gfx
constexpr int kNvml1SliceNoMe = 0xD;   // 1g-me
constexpr int kNvml2SliceNoMe = 0xE;   // 2g-me
constexpr int kNvml1SliceAllMe = 0xF;  // 1g+me.all
constexpr int kNvml2SliceAllMe = 0x10; // 2g+me.all

constexpr int kUnknown = -1;

// The engine attributes follow from the name ("+me", "+me.all", "+gfx", "-me"), so they are set
// in one place for every model.
void SetAttributes(MigProfile& p) {
  const std::optional<ProfileName> parsed = ParseProfileName(p.name);
  if (!parsed) return;  // every catalog name parses (MigGeometryCatalog.ProfilesAreWellFormed)
  for (const std::string& a : parsed->attributes) {
    if (a == "me") p.media_extension = true;
    if (a == "me.all") p.media_extension = p.all_media = true;
    if (a == "gfx") p.graphics = true;
  }
  for (const std::string& a : parsed->negated_attributes) {
    if (a == "me") p.no_media = true;
  }
}

MigProfile Profile(const char* name, int compute, int memory, int max_count, int id, int nvml,
                   std::vector<int> starts, double gib, bool confirmed) {
  MigProfile p;
  p.name = name;
  p.compute_slices = compute;
  p.memory_slices = memory;
  p.max_count = max_count;
  p.profile_id = id;
  p.nvml_profile = nvml;
  p.starts = std::move(starts);
  p.memory_gib = gib;
  p.confirmed = confirmed;
  SetAttributes(p);
  return p;
}

// Per-model values of the 8-slice template, in -lgip order:
// 1g, 1g+me, 1g (2 memory slices), 2g, 3g, 4g, 7g.
struct EightSliceData {
  std::array<const char*, 7> names;
  std::array<int, 7> ids;
  std::array<double, 7> gib;
  /// Placements (and IDs) seen on hardware for this model, not inferred from the family.
  bool confirmed;
  /// Other names per template position (MigProfile::other_names); empty for most models.
  std::array<std::vector<std::string>, 7> other_names = {};
};

std::vector<MigProfile> EightSliceProfiles(const EightSliceData& d) {
  struct Shape {
    int compute, memory, max_count, nvml;
    std::vector<int> starts;
  };
  const std::array<Shape, 7> shapes = {{
      {1, 1, 7, kNvml1Slice, {0, 1, 2, 3, 4, 5, 6}},
      {1, 1, 1, kNvml1SliceRev1, {0, 1, 2, 3, 4, 5, 6}},
      {1, 2, 4, kNvml1SliceRev2, {0, 2, 4, 6}},
      {2, 2, 3, kNvml2Slice, {0, 2, 4}},
      {3, 4, 2, kNvml3Slice, {0, 4}},
      {4, 4, 1, kNvml4Slice, {0}},
      {7, 8, 1, kNvml7Slice, {0}},
  }};
  std::vector<MigProfile> profiles;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    MigProfile p = Profile(d.names[i], s.compute, s.memory, s.max_count, d.ids[i], s.nvml,
                           s.starts, d.gib[i], d.confirmed && d.ids[i] != kUnknown);
    p.other_names = d.other_names[i];
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
      Profile("1g.6gb", 1, 1, 4, 14, kNvml1Slice, {0, 1, 2, 3}, 5.81, true),
      Profile("1g.6gb+me", 1, 1, 1, 21, kNvml1SliceRev1, {0, 1, 2, 3}, 5.81, true),
      Profile("2g.12gb", 2, 2, 2, 5, kNvml2Slice, {0, 2}, 11.69, true),
      Profile("2g.12gb+me", 2, 2, 1, 6, kNvml2SliceRev1, {0, 2}, 11.69, true),
      Profile("4g.24gb", 4, 4, 1, 0, kNvml4Slice, {0}, 23.44, true),
  };
  return m;
}

// RTX PRO 6000 Blackwell (GB202, 96 GB GDDR7): four memory slices and four SM slices, like
// A30, plus Blackwell's engine variants: "+gfx" (graphics APIs inside the instance), "+me.all"
// (every media engine; only "-me" instances beside it) and "-me" (no media engine). Names, max
// counts and engine counts: MIG user guide, "RTX PRO 6000 Blackwell MIG Profiles" table; profile
// IDs and GiB: `nvidia-smi mig -lgip` on 0x2BB5 as posted in bottlerocket-kernel-kit#300 and
// GoogleCloudPlatform/container-engine-accelerators#564 (driver R580). Placements are inferred
// from the 1/4-1/2-full memory fractions (A30's 4-slice geometry) and have not been seen in an
// -lgipp listing: unconfirmed, checked against the driver at apply.
GpuModel RtxPro6000Model() {
  GpuModel m;
  m.name = "RTX-PRO-6000-96GB";
  m.aliases = {"RTX PRO 6000", "RTX PRO 6000 Blackwell", "RTX-PRO-6000",
               "NVIDIA RTX PRO 6000 Blackwell Server Edition",
               "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
               "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"};
  // 0x2BB5 Server Edition (mig-parted's device-filter); 0x2BB1 Workstation Edition (lspci). The
  // Workstation editions need `DisplayModeSelector --gpumode=compute` before MIG (user guide).
  m.pci_ids = {0x2BB510DE, 0x2BB110DE};
  m.memory_slices = 4;
  m.compute_slices = 4;
  m.min_driver = "R575 (>=575.51.03)";
  const std::vector<int> one = {0, 1, 2, 3}, two = {0, 2}, four = {0};
  m.profiles = {
      Profile("1g.24gb", 1, 1, 4, 14, kNvml1Slice, one, 23.62, false),
      Profile("1g.24gb+me", 1, 1, 1, 21, kNvml1SliceRev1, one, 23.62, false),
      Profile("1g.24gb+gfx", 1, 1, 4, 47, kNvml1SliceGfx, one, 23.62, false),
      Profile("1g.24gb+me.all", 1, 1, 1, 65, kNvml1SliceAllMe, one, 23.62, false),
      Profile("1g.24gb-me", 1, 1, 4, 67, kNvml1SliceNoMe, one, 23.62, false),
      Profile("2g.48gb", 2, 2, 2, 5, kNvml2Slice, two, 47.38, false),
      Profile("2g.48gb+gfx", 2, 2, 2, 35, kNvml2SliceGfx, two, 47.38, false),
      Profile("2g.48gb+me.all", 2, 2, 1, 64, kNvml2SliceAllMe, two, 47.38, false),
      Profile("2g.48gb-me", 2, 2, 2, 66, kNvml2SliceNoMe, two, 47.38, false),
      Profile("4g.96gb", 4, 4, 1, 0, kNvml4Slice, four, 95.0, false),
      Profile("4g.96gb+gfx", 4, 4, 1, 32, kNvml4SliceGfx, four, 95.0, false),
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
  // GB200 (HGX GB200 / GB200 NVL, 0x2941, 186 GB usable): names and max counts from the MIG user
  // guide's supported GPUs (186GB, 7 instances) and mig-parted's default config; IDs 19/20/15/14
  // and GiB of the first four from `nvidia-smi mig -lgip` on a production board
  // (NVIDIA/mig-parted#227); 3g/4g/7g IDs not seen. Early boards and drivers reported 1g.24gb
  // and 1g.24gb+me (gpu-operator#1303), and NVIDIA's default config also carries 3g.95gb,
  // 4g.95gb and 7g.189gb with no GPU named: the names the naming rule gives a 189 GB GB200
  // (clusters list nvidia.com/mig-7g.189gb on GB200 nodes). Those are kept as other names:
  // accepted, with a warning that mig-parted takes only the name the board's driver prints.
  EightSliceData gb200{
      {"1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"},
      {19, 20, 15, 14, kUnknown, kUnknown, kUnknown},
      {22.0, 22.0, 45.5, 45.5, 0, 0, 0},
      false};
  gb200.other_names = {{{"1g.24gb"}, {"1g.24gb+me"}, {}, {}, {"3g.95gb"}, {"4g.95gb"}, {"7g.189gb"}}};
  c.push_back(EightSliceModel("GB200-186GB", {"GB200", "HGX GB200", "NVIDIA GB200"}, {0x294110DE},
                              "R570 (>=570.133.20)", gb200));
  // B300 (B300 SXM6 AC, 0x3182, 288 GB HBM3e of which 269 GB usable) and GB300 (0x31C2, 278 GB):
  // names and max counts from mig-parted's default config (its all-balanced entries name the
  // device IDs), min drivers from the user guide's deployment considerations (v620). The
  // 8-slice structure, IDs and placements are inferred from the family: unconfirmed.
  c.push_back(EightSliceModel(
      "B300-269GB", {"B300", "B300 SXM6 AC", "NVIDIA B300 SXM6 AC"}, {0x318210DE},
      "R580 (>=580.82.07)",
      {{"1g.34gb", "1g.34gb+me", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"},
       unknown_ids,
       unknown_gib,
       false}));
  c.push_back(EightSliceModel(
      "GB300-278GB", {"GB300", "NVIDIA GB300"}, {0x31C210DE}, "R595 (>=595.58.03)",
      {{"1g.35gb", "1g.35gb+me", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"},
       unknown_ids,
       unknown_gib,
       false}));
  c.push_back(RtxPro6000Model());
  return c;
}

}  // namespace

const std::vector<GpuModel>& MigCatalog() {
  static const std::vector<GpuModel>* const catalog = new std::vector<GpuModel>(BuildCatalog());
  return *catalog;
}

}  // namespace accel::sharing
