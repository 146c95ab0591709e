// Printing layouts for people: slot strings and "name@start" lists.
#include <string>

#include "sharing/mig_layout.h"

namespace accel::sharing {
namespace {

bool Known(const GpuModel& model, int profile) {
  return profile >= 0 && profile < static_cast<int>(model.profiles.size());
}

}  // namespace

std::string SlotString(const GpuModel& model, const MigLayout& layout) {
  std::string slots(static_cast<size_t>(model.memory_slices), '.');
  for (const MigPlacement& at : layout) {
    if (!Known(model, at.profile)) continue;
    const MigProfile& p = model.profiles[at.profile];
    char ch = static_cast<char>('0' + p.compute_slices);
    if (p.all_media) {
      ch = 'a';
    } else if (p.media_extension) {
      ch = 'm';
    } else if (p.graphics) {
      ch = 'g';
    } else if (p.no_media) {
      ch = 'n';
    } else if (p.compute_slices == 1 && p.memory_slices == 2) {
      ch = 'w';
    }
    for (int s = at.start; s < at.start + p.memory_slices && s < model.memory_slices; ++s) {
      if (s >= 0) slots[static_cast<size_t>(s)] = ch;
    }
  }
  return slots;
}

std::string Describe(const GpuModel& model, const MigLayout& layout) {
  if (layout.empty()) return "(no instances)";
  std::string s;
  for (const MigPlacement& at : Canonical(layout)) {
    if (!s.empty()) s += " + ";
    s += Known(model, at.profile) ? model.profiles[at.profile].name
                                  : "profile#" + std::to_string(at.profile);
    s += "@" + std::to_string(at.start);
  }
  return s;
}

}  // namespace accel::sharing
