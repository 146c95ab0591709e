// Layout rules of mig.md §1.5: (a) allowed starts, (b) disjoint memory slices, (c) max counts,
// (d) at most one "+me" instance (the GPU has one OFA; "+me.all" holds it too), and (e) on RTX
// PRO Blackwell a "+me.all" instance only beside "-me" ones (nvml.h: an _ALL_ME profile
// "prevents allocation of all but _NO_ME profiles"). The state space is tiny (≤ a few thousand layouts per model),
// so search is plain depth-first over (profile, start) items with a slice bit mask.
#include "sharing/mig_layout.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>

namespace accel::sharing {
namespace {

bool KnownProfile(const GpuModel& model, int profile) {
  return profile >= 0 && profile < static_cast<int>(model.profiles.size());
}

bool AllowedStart(const MigProfile& p, int start) {
  return std::find(p.starts.begin(), p.starts.end(), start) != p.starts.end();
}

// Slices an instance covers, clipped to the GPU; 0 for a start outside the GPU.
uint32_t InstanceMask(const GpuModel& model, const MigPlacement& at) {
  if (!KnownProfile(model, at.profile) || at.start < 0 || at.start >= model.memory_slices) return 0;
  const int size =
      std::min(model.profiles[at.profile].memory_slices, model.memory_slices - at.start);
  return SliceMask(at.start, size);
}

std::string At(const GpuModel& model, const MigPlacement& at) {
  return model.profiles[at.profile].name + " at slice " + std::to_string(at.start);
}

std::string SliceList(uint32_t mask) {
  std::string s;
  int count = 0;
  for (int i = 0; i < 32; ++i) {
    if (mask & (1u << i)) s += (count++ == 0 ? "" : ", ") + std::to_string(i);
  }
  return (count == 1 ? "memory slice " : "memory slices ") + s;
}

std::string StartList(const MigProfile& p) {
  std::string s;
  for (size_t i = 0; i < p.starts.size(); ++i) s += (i ? ", " : "") + std::to_string(p.starts[i]);
  return s;
}

// The (profile, start) items search walks, in enumeration order: start ascending, larger
// instances first (memory, then compute slices), then profile index.
std::vector<MigPlacement> SearchItems(const GpuModel& model, const std::vector<int>& profiles) {
  std::vector<MigPlacement> items;
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    const int pi = static_cast<int>(p);
    if (!profiles.empty() && std::find(profiles.begin(), profiles.end(), pi) == profiles.end()) {
      continue;
    }
    for (int s : model.profiles[p].starts) items.push_back({pi, s});
  }
  std::sort(items.begin(), items.end(), [&](const MigPlacement& a, const MigPlacement& b) {
    const MigProfile& pa = model.profiles[a.profile];
    const MigProfile& pb = model.profiles[b.profile];
    if (a.start != b.start) return a.start < b.start;
    if (pa.memory_slices != pb.memory_slices) return pa.memory_slices > pb.memory_slices;
    if (pa.compute_slices != pb.compute_slices) return pa.compute_slices > pb.compute_slices;
    return a.profile < b.profile;
  });
  return items;
}

// Depth-first search state shared by EnumerateLayouts and LayoutForCounts.
struct SearchState {
  MigLayout chosen;
  uint32_t used = 0;
  std::vector<int> counts;
  bool has_me = false;
  /// A "+me.all" instance is placed.
  bool has_all_media = false;
  /// An instance that is not "-me" is placed (it holds at least one media engine).
  bool has_media_user = false;

  void Add(const MigProfile& p) {
    has_me = has_me || p.media_extension;
    has_all_media = has_all_media || p.all_media;
    has_media_user = has_media_user || !p.no_media;
  }

  /// What Walk saves before adding an instance and restores after.
  struct Flags {
    uint32_t used;
    bool has_me, has_all_media, has_media_user;
  };
  void Restore(const Flags& f) {
    used = f.used;
    has_me = f.has_me;
    has_all_media = f.has_all_media;
    has_media_user = f.has_media_user;
  }
};

// Rule (e) for one more instance of `p`.
bool MediaEnginesAllow(const SearchState& st, const MigProfile& p) {
  if (p.all_media && st.has_media_user) return false;
  return !(st.has_all_media && !p.no_media);
}

bool Fits(const GpuModel& model, const SearchState& st, const MigPlacement& at) {
  const MigProfile& p = model.profiles[at.profile];
  if (at.start + p.memory_slices > model.memory_slices) return false;
  if (st.used & SliceMask(at.start, p.memory_slices)) return false;
  if (st.counts[at.profile] >= p.max_count) return false;
  if (p.media_extension && st.has_me) return false;
  return MediaEnginesAllow(st, p);
}

// Calls visit(state) for every layout reachable from `st` by adding items[from..] (pre-order);
// `allow(item)` prunes items. visit returns false to stop the search.
bool Walk(const GpuModel& model, const std::vector<MigPlacement>& items, size_t from,
          SearchState& st, const std::function<bool(const SearchState&)>& visit,
          const std::function<bool(const SearchState&, const MigPlacement&)>& allow) {
  if (!visit(st)) return false;
  for (size_t j = from; j < items.size(); ++j) {
    const MigPlacement& item = items[j];
    if (!Fits(model, st, item) || !allow(st, item)) continue;
    const MigProfile& p = model.profiles[item.profile];
    const SearchState::Flags before{st.used, st.has_me, st.has_all_media, st.has_media_user};
    st.chosen.push_back(item);
    st.used |= SliceMask(item.start, p.memory_slices);
    st.counts[item.profile]++;
    st.Add(p);
    const bool go_on = Walk(model, items, j + 1, st, visit, allow);
    st.chosen.pop_back();
    st.counts[item.profile]--;
    st.Restore(before);
    if (!go_on) return false;
  }
  return true;
}

SearchState StateOf(const GpuModel& model, const MigLayout& layout) {
  SearchState st;
  st.chosen = layout;
  st.used = UsedSlices(model, layout);
  st.counts = ProfileCounts(model, layout);
  for (const MigPlacement& at : layout) {
    if (KnownProfile(model, at.profile)) st.Add(model.profiles[at.profile]);
  }
  return st;
}

void AddPositionProblems(const GpuModel& model, const MigLayout& layout,
                         std::vector<LayoutProblem>& out) {
  for (size_t i = 0; i < layout.size(); ++i) {
    const MigPlacement& at = layout[i];
    const int idx = static_cast<int>(i);
    if (!KnownProfile(model, at.profile)) {
      out.push_back({LayoutProblem::Kind::kUnknownProfile, {idx},
                     "instance " + std::to_string(i) + ": profile index " +
                         std::to_string(at.profile) + " is not a profile of " + model.name +
                         " (0.." + std::to_string(model.profiles.size() - 1) + ")"});
      continue;
    }
    const MigProfile& p = model.profiles[at.profile];
    if (!AllowedStart(p, at.start)) {
      out.push_back({LayoutProblem::Kind::kBadPlacement, {idx},
                     At(model, at) + ": " + p.name + " may only start at memory slice " +
                         StartList(p) + " on " + model.name});
    }
  }
}

void AddOverlapProblems(const GpuModel& model, const MigLayout& layout,
                        std::vector<LayoutProblem>& out) {
  for (size_t i = 0; i < layout.size(); ++i) {
    for (size_t j = i + 1; j < layout.size(); ++j) {
      const uint32_t shared = InstanceMask(model, layout[i]) & InstanceMask(model, layout[j]);
      if (shared == 0) continue;
      out.push_back({LayoutProblem::Kind::kOverlap,
                     {static_cast<int>(i), static_cast<int>(j)},
                     At(model, layout[i]) + " overlaps " + At(model, layout[j]) + " (" +
                         SliceList(shared) + ")"});
    }
  }
}

void AddCountProblems(const GpuModel& model, const MigLayout& layout,
                      std::vector<LayoutProblem>& out) {
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    const MigProfile& profile = model.profiles[p];
    std::vector<int> instances;
    for (size_t i = 0; i < layout.size(); ++i) {
      if (layout[i].profile == static_cast<int>(p)) instances.push_back(static_cast<int>(i));
    }
    if (static_cast<int>(instances.size()) <= profile.max_count) continue;
    const std::string n = std::to_string(instances.size());
    instances.erase(instances.begin(), instances.begin() + profile.max_count);
    out.push_back({LayoutProblem::Kind::kOverCount, instances,
                   n + " instances of " + profile.name + " but " + model.name + " allows at most " +
                       std::to_string(profile.max_count)});
  }
  std::vector<int> me;
  std::string names;
  for (size_t i = 0; i < layout.size(); ++i) {
    if (!KnownProfile(model, layout[i].profile)) continue;
    if (!model.profiles[layout[i].profile].media_extension) continue;
    me.push_back(static_cast<int>(i));
    names += (names.empty() ? "" : ", ") + At(model, layout[i]);
  }
  if (me.size() > 1) {
    out.push_back({LayoutProblem::Kind::kMediaExtension, me,
                   std::to_string(me.size()) + " media-extension (+me) instances (" + names +
                       ") but a GPU has one set of media engines, so at most one +me instance"});
  }
}

void AddAllMediaProblems(const GpuModel& model, const MigLayout& layout,
                         std::vector<LayoutProblem>& out) {
  for (size_t i = 0; i < layout.size(); ++i) {
    if (!KnownProfile(model, layout[i].profile)) continue;
    if (!model.profiles[layout[i].profile].all_media) continue;
    std::vector<int> involved = {static_cast<int>(i)};
    std::string names;
    for (size_t j = 0; j < layout.size(); ++j) {
      if (j == i || !KnownProfile(model, layout[j].profile)) continue;
      if (model.profiles[layout[j].profile].no_media) continue;
      involved.push_back(static_cast<int>(j));
      names += (names.empty() ? "" : ", ") + At(model, layout[j]);
    }
    if (involved.size() == 1) continue;
    out.push_back({LayoutProblem::Kind::kAllMedia, involved,
                   At(model, layout[i]) + " takes every media engine of the GPU, so only -me "
                                          "instances may sit beside it, not " + names});
  }
}

}  // namespace

MigLayout Canonical(MigLayout layout) {
  std::sort(layout.begin(), layout.end(), [](const MigPlacement& a, const MigPlacement& b) {
    return a.start != b.start ? a.start < b.start : a.profile < b.profile;
  });
  return layout;
}

std::vector<LayoutProblem> ValidateLayout(const GpuModel& model, const MigLayout& layout) {
  std::vector<LayoutProblem> problems;
  AddPositionProblems(model, layout, problems);
  AddOverlapProblems(model, layout, problems);
  AddCountProblems(model, layout, problems);
  AddAllMediaProblems(model, layout, problems);
  return problems;
}

uint32_t UsedSlices(const GpuModel& model, const MigLayout& layout) {
  uint32_t used = 0;
  for (const MigPlacement& at : layout) used |= InstanceMask(model, at);
  return used;
}

std::vector<int> ProfileCounts(const GpuModel& model, const MigLayout& layout) {
  std::vector<int> counts(model.profiles.size(), 0);
  for (const MigPlacement& at : layout) {
    if (KnownProfile(model, at.profile)) counts[at.profile]++;
  }
  return counts;
}

bool CanAdd(const GpuModel& model, const MigLayout& layout, int profile, int start) {
  if (!KnownProfile(model, profile) || !AllowedStart(model.profiles[profile], start)) return false;
  return Fits(model, StateOf(model, layout), {profile, start});
}

bool IsMaximal(const GpuModel& model, const MigLayout& layout, const std::vector<int>& profiles) {
  const SearchState st = StateOf(model, layout);
  for (const MigPlacement& item : SearchItems(model, profiles)) {
    if (Fits(model, st, item)) return false;
  }
  return true;
}

int FreeScore(const GpuModel& model, const MigLayout& layout) {
  const SearchState st = StateOf(model, layout);
  int best = 0;
  for (const MigPlacement& item : SearchItems(model, {})) {
    if (Fits(model, st, item)) best = std::max(best, model.profiles[item.profile].memory_slices);
  }
  return best;
}

std::vector<MigLayout> EnumerateLayouts(const GpuModel& model, const EnumerateOptions& options) {
  const std::vector<MigPlacement> items = SearchItems(model, options.profiles);
  std::vector<MigLayout> out;
  SearchState st;
  st.counts.assign(model.profiles.size(), 0);
  const auto visit = [&](const SearchState& s) {
    if (s.chosen.empty() && !options.include_empty) return true;
    if (options.maximal_only) {
      for (const MigPlacement& item : items) {
        if (Fits(model, s, item)) return true;
      }
    }
    out.push_back(s.chosen);
    return true;
  };
  Walk(model, items, 0, st, visit, [](const SearchState&, const MigPlacement&) { return true; });
  return out;
}

std::optional<MigLayout> LayoutForCounts(const GpuModel& model, const std::vector<int>& counts,
                                         const MigLayout& keep) {
  if (counts.size() != model.profiles.size() || !ValidateLayout(model, keep).empty()) {
    return std::nullopt;
  }
  SearchState st = StateOf(model, keep);
  int missing = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    if (counts[p] < st.counts[p]) return std::nullopt;
    missing += counts[p] - st.counts[p];
  }
  std::vector<int> wanted;
  for (size_t p = 0; p < counts.size(); ++p) {
    if (counts[p] > st.counts[p]) wanted.push_back(static_cast<int>(p));
  }
  std::optional<MigLayout> best;
  std::pair<int, int> best_score{-1, -1};
  const size_t kept = keep.size();
  const std::vector<MigPlacement> all_items = SearchItems(model, {});
  const auto visit = [&](const SearchState& s) {
    if (static_cast<int>(s.chosen.size() - kept) != missing) return true;
    std::pair<int, int> score{0, 0};
    for (const MigPlacement& item : all_items) {
      if (!Fits(model, s, item)) continue;
      score.first = std::max(score.first, model.profiles[item.profile].memory_slices);
      score.second++;
    }
    if (score > best_score) {
      best_score = score;
      best = Canonical(s.chosen);
    }
    return true;
  };
  const auto allow = [&](const SearchState& s, const MigPlacement& item) {
    return s.counts[item.profile] < counts[item.profile];
  };
  Walk(model, SearchItems(model, wanted), 0, st, visit, allow);
  return best;
}

}  // namespace accel::sharing
