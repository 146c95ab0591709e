// Why a set of instance counts cannot be placed on a GPU, in words a person can act on: the
// simple rules first (max count, media engines, memory), then the placement search, with a
// concrete conflict from a greedy placement when no layout exists.
#include <algorithm>
#include <string>

#include "sharing/mig_layout.h"

namespace accel::sharing {
namespace {

std::string CountsText(const GpuModel& model, const std::vector<int>& counts) {
  std::string out;
  for (size_t p = 0; p < counts.size(); ++p) {
    if (counts[p] == 0) continue;
    out += (out.empty() ? "" : " + ") + std::to_string(counts[p]) + " x " + model.profiles[p].name;
  }
  return out;
}

// A layout that places the instances largest first at the first free allowed start (or, when
// none is free, at the first allowed start anyway), so that ValidateLayout can name a concrete
// conflict for a person.
MigLayout GreedyLayout(const GpuModel& model, const std::vector<int>& counts) {
  std::vector<int> order;
  for (size_t p = 0; p < counts.size(); ++p) order.push_back(static_cast<int>(p));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return model.profiles[a].memory_slices > model.profiles[b].memory_slices;
  });
  MigLayout layout;
  uint32_t used = 0;
  for (int p : order) {
    const MigProfile& profile = model.profiles[p];
    for (int k = 0; k < counts[p] && !profile.starts.empty(); ++k) {
      int start = profile.starts.front();
      for (int s : profile.starts) {
        if ((used & SliceMask(s, profile.memory_slices)) == 0) {
          start = s;
          break;
        }
      }
      used |= SliceMask(start, profile.memory_slices);
      layout.push_back({p, start});
    }
  }
  return layout;
}

}  // namespace

std::string CountsProblem(const GpuModel& model, const std::vector<int>& counts) {
  if (counts.size() != model.profiles.size()) {
    return "instance counts for " + std::to_string(counts.size()) + " profiles, but " + model.name +
           " has " + std::to_string(model.profiles.size());
  }
  int media = 0, memory = 0, all_media = 0, media_users = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    const MigProfile& profile = model.profiles[p];
    if (counts[p] > profile.max_count) {
      return std::to_string(counts[p]) + " x " + profile.name + " exceeds the " +
             std::to_string(profile.max_count) + " that fit on one " + model.name;
    }
    if (profile.media_extension) media += counts[p];
    if (profile.all_media) all_media += counts[p];
    if (!profile.no_media) media_users += counts[p];
    memory += counts[p] * profile.memory_slices;
  }
  std::string asked = CountsText(model, counts);
  if (media > 1) {
    return asked + " has " + std::to_string(media) +
           " media-extension (+me) instances; a GPU has engines for only one";
  }
  if (all_media > 0 && media_users > all_media) {
    return asked + ": a +me.all instance takes every media engine, so only -me instances may "
                   "sit beside it";
  }
  if (memory > model.memory_slices) {
    return asked + " needs " + std::to_string(memory) + " memory slices; " + model.name + " has " +
           std::to_string(model.memory_slices);
  }
  if (LayoutForCounts(model, counts)) return "";
  std::string why = "no placement of " + asked + " exists on " + model.name;
  std::vector<LayoutProblem> problems = ValidateLayout(model, GreedyLayout(model, counts));
  if (!problems.empty()) why += " (e.g. " + problems.front().message + ")";
  return why;
}

}  // namespace accel::sharing
