// MIG layouts: a set of GPU instances with explicit placements on one GPU; the validator that
// says why a layout is impossible, and the enumerator of every possible layout.
//
// Stateless free functions over immutable catalog data; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sharing/mig_geometry.h"

namespace accel::sharing {

/// One GPU instance placed on a GPU.
struct MigPlacement {
  /// Index into GpuModel::profiles.
  int profile = 0;
  /// First memory slice (nvmlGpuInstancePlacement_t.start).
  int start = 0;

  bool operator==(const MigPlacement&) const = default;
  auto operator<=>(const MigPlacement&) const = default;
};

/// The GPU instances of one GPU. Canonical order: by start, then profile (see Canonical).
using MigLayout = std::vector<MigPlacement>;

/// Sorts by (start, profile) so equal layouts compare equal.
MigLayout Canonical(MigLayout layout);

/// Why a layout is invalid; one entry per violated rule.
struct LayoutProblem {
  enum class Kind {
    kUnknownProfile,     ///< profile index out of range for the model
    kBadPlacement,       ///< start not among the profile's allowed starts (or past the end)
    kOverlap,            ///< two instances share a memory slice
    kOverCount,          ///< more instances of a profile than its max_count
    kMediaExtension,     ///< more than one "+me"/"+me.all" instance (one OFA per GPU)
    kAllMedia,           ///< a "+me.all" instance beside one that is not "-me"
  };
  Kind kind = Kind::kOverlap;
  /// Indices into the layout of the instances involved: the one instance (kUnknownProfile,
  /// kBadPlacement), the overlapping pair (kOverlap), those beyond max_count (kOverCount), every
  /// "+me" instance (kMediaExtension), the "+me.all" instance and every instance beside it that
  /// is not "-me" (kAllMedia).
  std::vector<int> instances;
  /// A sentence for a person, naming profiles and slices, e.g.
  /// "3g.40gb at slice 4 overlaps 1g.10gb at slice 6 (memory slice 6)".
  std::string message;
};

/// Every rule `layout` breaks on `model`; empty when the layout is valid.
std::vector<LayoutProblem> ValidateLayout(const GpuModel& model, const MigLayout& layout);

/// Memory slices the layout covers (bit i = slice i). Assumes a valid layout.
uint32_t UsedSlices(const GpuModel& model, const MigLayout& layout);

/// Whether an instance of `profile` fits at `start` next to the valid `layout` (free slices,
/// count and media-engine rules).
bool CanAdd(const GpuModel& model, const MigLayout& layout, int profile, int start);

/// Whether no instance of any profile (among `profiles`, empty = all) can be added.
bool IsMaximal(const GpuModel& model, const MigLayout& layout,
               const std::vector<int>& profiles = {});

/// What to enumerate.
struct EnumerateOptions {
  /// Profile indices allowed in layouts; empty = every profile of the model.
  std::vector<int> profiles;
  /// Only layouts to which no allowed profile can be added.
  bool maximal_only = false;
  /// Include the empty layout (MIG on, no instances).
  bool include_empty = false;
};

/// Every valid placed layout of `model` under `options`, each canonical, in a stable order
/// (depth-first by start, larger instances first). At most a few thousand per model.
std::vector<MigLayout> EnumerateLayouts(const GpuModel& model, const EnumerateOptions& options = {});

/// One character per memory slice: the compute-slice digit of the profile covering it, '.' when
/// free, except that a "+me" profile prints 'm', "+me.all" 'a', "+gfx" 'g', "-me" 'n', and a 1g
/// profile with two memory slices 'w'; e.g. "4444221." for 4g@0 + 2g@4 + 1g@6, "ww2211m." for
/// 1g.20gb@0 + 2g@2 + 1g@4,5 + 1g+me@6, "annn" for 1g.24gb+me.all@0 + 1g.24gb-me@1 +
/// 2g.48gb-me@2 on an RTX PRO 6000.
/// For a person reading a layout; not parsed back.
std::string SlotString(const GpuModel& model, const MigLayout& layout);

/// "4g.40gb@0 + 2g.20gb@4 + 1g.10gb@6": profile names with starts, canonical order;
/// "(no instances)" for the empty layout.
std::string Describe(const GpuModel& model, const MigLayout& layout);

/// A placed layout with exactly these instance counts (profile index → count, size =
/// model.profiles.size()) that contains every placement of `keep` (a valid layout), chosen to
/// leave the largest profiles placeable afterwards: highest FreeScore, then most (profile,
/// start) placements still addable (so a lone 1g goes to slice 6, not 0, keeping 4g@0 open);
/// remaining ties by enumeration order, so the result is deterministic. Returns nullopt when no
/// such layout exists (also when `counts` has the wrong size or `keep` is invalid).
std::optional<MigLayout> LayoutForCounts(const GpuModel& model, const std::vector<int>& counts,
                                         const MigLayout& keep = {});

/// Why no GPU of `model` can hold instances in these counts (profile index → count), as a
/// sentence: a count over its max_count, two +me instances, a +me.all instance beside one that
/// is not -me, more memory slices than the GPU has, or no placement (with an example conflict);
/// "" when LayoutForCounts finds a layout. Counts of the wrong size are a problem too.
std::string CountsProblem(const GpuModel& model, const std::vector<int>& counts);

/// How useful the free slices next to a valid `layout` are: the memory slices of the largest
/// profile that could still be added (0 when maximal). Higher is better.
int FreeScore(const GpuModel& model, const MigLayout& layout);

/// Profile index → count of a layout (size = model.profiles.size()).
std::vector<int> ProfileCounts(const GpuModel& model, const MigLayout& layout);

}  // namespace accel::sharing
