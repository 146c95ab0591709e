// MIG geometry: the GPU instance profiles of every MIG-capable GPU model accel knows, and where
// on the GPU each profile may sit.
//
// A MIG GPU is a row of memory slices (8, or 4 on A30). A GPU instance (GI) of a profile covers
// `memory_slices` consecutive slices starting at one of the profile's allowed starts; two GIs may
// not overlap. The data comes from ../shared/reference/mig-profiles.json (NVIDIA's MIG user
// guide, nvidia-smi -lgip/-lgipp listings); values not seen on hardware are marked unconfirmed
// and are checked against the driver (nvmlDeviceGetGpuInstancePossiblePlacements_v2) before use.
//
// The catalog is immutable static data: every function here is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace accel::sharing {

/// One GPU-instance profile of one GPU model.
struct MigProfile {
  /// Name as nvidia-smi and mig-parted spell it on this model: "1g.10gb", "1g.10gb+me".
  /// Names are NOT unique across models ("1g.10gb" is 1 memory slice on H100-80GB, 2 on
  /// A100-40GB).
  std::string name;
  /// SM slices (the "g" number), 1..7.
  int compute_slices = 0;
  /// Memory slices one instance covers, 1..8.
  int memory_slices = 0;
  /// Most instances of this profile on one GPU (nvidia-smi "Instances Total").
  int max_count = 0;
  /// Per-model GI profile ID (nvmlGpuInstanceProfileInfo_t.id, `nvidia-smi mig -cgi ID`);
  /// -1 when unknown. Not portable: 14 is 2g on A100 but 1g on A30.
  int profile_id = -1;
  /// NVML_GPU_INSTANCE_PROFILE_* enum value passed to nvmlDeviceGetGpuInstanceProfileInfo.
  int nvml_profile = -1;
  /// "+me" or "+me.all": the instance holds the GPU's only optical-flow accelerator (OFA, and
  /// on Ampere/Hopper its JPEG decoder); at most one such instance per GPU.
  bool media_extension = false;
  /// Allowed first memory slices, ascending.
  std::vector<int> starts;
  /// nvidia-smi "Memory GiB" column; 0 when unknown.
  double memory_gib = 0;
  /// False when the profile ID or placements were inferred rather than seen on hardware.
  bool confirmed = true;
  /// "+me.all" (NVML_GPU_INSTANCE_PROFILE_*_ALL_ME, RTX PRO Blackwell): the instance takes every
  /// media engine of the GPU, so only "-me" instances may sit beside it (nvml.h: it "prevents
  /// allocation of all but _NO_ME profiles"). Implies media_extension.
  bool all_media = false;
  /// "-me" (NVML_GPU_INSTANCE_PROFILE_*_NO_ME): the instance has no media engine at all.
  bool no_media = false;
  /// "+gfx" (NVML_GPU_INSTANCE_PROFILE_*_GFX, RTX PRO Blackwell): graphics APIs work inside it.
  bool graphics = false;
  /// Other names of this same GPU-instance profile: what boards or drivers reporting a slightly
  /// different memory size call it (GB200: "7g.189gb" for 7g.186gb). Accepted by FindProfile;
  /// `accel mig validate` warns when a config relies on one, because mig-parted accepts only the
  /// name the GPU's own driver prints.
  std::vector<std::string> other_names;
};

/// One MIG-capable GPU model.
struct GpuModel {
  /// Canonical name, e.g. "A100-SXM4-40GB", "H100-SXM5-80GB", "A30-24GB".
  std::string name;
  /// Other names that select this model: SKUs sharing the geometry ("A100-PCIE-40GB",
  /// "A800-40GB") and NVML product names ("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3").
  std::vector<std::string> aliases;
  /// PCI ids as mig-parted's device-filter writes them: (device << 16) | vendor, 0x20B010DE.
  std::vector<uint32_t> pci_ids;
  /// Memory slices on the GPU: 8, or 4 on A30.
  int memory_slices = 8;
  /// SM slices usable in MIG mode: 7, or 4 on A30.
  int compute_slices = 7;
  /// Profiles in nvidia-smi -lgip order (largest ID first is NOT implied).
  std::vector<MigProfile> profiles;
  /// Minimum driver, e.g. "R525 (>=525.85.12)".
  std::string min_driver;
};

/// Every model accel knows: A100-SXM4-40GB, A100-80GB, A30-24GB, H100-SXM5-80GB, H100-NVL-94GB,
/// H200-SXM5-141GB, GH200-96GB, GH200-144GB, B200-180GB, GB200-186GB, B300-269GB, GB300-278GB,
/// RTX-PRO-6000-96GB. Static; never empty.
const std::vector<GpuModel>& MigCatalog();

/// The model whose name or alias equals `name` (ASCII case-insensitive; "NVIDIA " prefix,
/// spaces and dashes are not significant, so "NVIDIA H100 80GB HBM3", "h100-80gb" and
/// "H100-SXM5-80GB" all select the H100 80GB), or whose PCI id is `name` ("0x233010DE" or
/// "0x2330"). Returns nullptr when none matches; the pointer lives as long as the program.
const GpuModel* FindGpuModel(std::string_view name);

/// The model with this PCI id ((device << 16) | vendor); nullptr when none.
const GpuModel* FindGpuModelByPciId(uint32_t pci_id);

/// Index into model.profiles of the profile named `name`: its name as nvidia-smi prints it, or
/// one of its other_names; the attribute may also be written the way mig-parted config names
/// write it ("1g.10gb.me", "1g.24gb.me.all", "4g.96gb.gfx" for "+me", "+me.all", "+gfx").
/// nullopt when the model has no such profile.
std::optional<int> FindProfile(const GpuModel& model, std::string_view name);

/// Whether `name` selects `profile` only through one of its other_names (after the same
/// spelling rules as FindProfile), i.e. not by the name nvidia-smi prints on this model.
bool IsOtherName(const MigProfile& profile, std::string_view name);

/// The profile names of `model` as nvidia-smi prints them, catalog order, joined with ", " (for
/// "its profiles: ..." hints).
std::string ProfileNameList(const GpuModel& model);

/// The attributes of a profile as go-nvlib spells them after its size, e.g. "+me", "+me.all",
/// "+gfx", "-me"; "" for a plain profile. From the profile's name, so the printed form is
/// always the one nvidia-smi uses.
std::string AttributeSuffix(const MigProfile& profile);

/// Index into model.profiles of the profile with GI profile ID `profile_id`; nullopt if none.
std::optional<int> FindProfileById(const GpuModel& model, int profile_id);

/// A parsed profile string in go-nvlib's grammar: `[<C>c.]<G>g.<GB>gb[+attr,...|-attr,...]`.
struct ProfileName {
  /// Compute slices of the compute instance; equals gpu_slices for a whole-GI profile.
  int compute_slices = 0;
  /// SM slices of the GPU instance (the "g" number).
  int gpu_slices = 0;
  /// The "gb" number.
  int memory_gb = 0;
  /// Attributes after '+' ("me", "me.all", "gfx"), in the order written.
  std::vector<std::string> attributes;
  /// Attributes after '-' ("me").
  std::vector<std::string> negated_attributes;

  /// The GI profile name this refers to: "3g.40gb" for "1c.3g.40gb", "1g.10gb+me" kept as is.
  std::string GpuInstanceName() const;
  /// Canonical spelling: C == G prints without the "<C>c." prefix.
  std::string ToString() const;
};

/// Parses `text` with go-nvlib's rules (attributes non-empty, unique, alphanumerics and dots,
/// not starting with a digit or a dot, not ending with a dot; not both '+' and '-').
/// Returns nullopt and sets *why (when non-null) to the reason on failure.
std::optional<ProfileName> ParseProfileName(std::string_view text, std::string* why = nullptr);

/// Bit mask of the memory slices [start, start + size): bit i = slice i.
inline uint32_t SliceMask(int start, int size) { return ((1u << size) - 1u) << start; }

}  // namespace accel::sharing
