// Choosing the instances that stay, and turning a choice into ordered steps.
#include <algorithm>
#include <map>

#include "sharing/mig_apply_internal.h"

namespace accel::sharing {

namespace {

// Idle instances beyond this many are not considered for keeping (2^12 subsets at most; an
// 8-slice GPU holds at most 7 instances).
constexpr size_t kMaxSearchedCandidates = 12;

std::string Name(const GpuModel& model, const HaveInstance& h) {
  std::string name = h.profile ? model.profiles[*h.profile].name
                               : "profile id " + std::to_string(h.info.profile_id);
  return "GPU instance " + std::to_string(h.info.id) + " (" + name + "@" +
         std::to_string(h.info.start) + ")";
}

// Hands the wanted CI layouts of each profile to the kept instances (exact matches first, busy
// ones before idle ones), then to the created ones. Returns the number of exact matches, or -1
// when a busy instance gets no exact match.
int Assign(const std::vector<HaveInstance>& have, const std::vector<size_t>& kept,
           const std::vector<WantedInstance>& wanted, const MigLayout& created,
           std::vector<std::vector<int>>* kept_cis, std::vector<std::vector<int>>* created_cis) {
  std::map<int, std::vector<std::vector<int>>> pool;
  for (const WantedInstance& w : wanted) pool[w.profile].push_back(w.cis);
  std::vector<std::optional<std::vector<int>>> got(kept.size());
  int exact = 0;
  for (bool busy_pass : {true, false}) {
    for (size_t k = 0; k < kept.size(); ++k) {
      const HaveInstance& h = have[kept[k]];
      if (h.info.busy != busy_pass) continue;
      auto& options = pool[*h.profile];
      auto same = std::find(options.begin(), options.end(), h.cis);
      if (same == options.end()) {
        if (busy_pass) return -1;
        continue;
      }
      got[k] = *same;
      options.erase(same);
      ++exact;
    }
  }
  if (kept_cis) kept_cis->clear();
  for (size_t k = 0; k < kept.size(); ++k) {
    auto& options = pool[*have[kept[k]].profile];
    if (!got[k]) {
      got[k] = options.front();
      options.erase(options.begin());
    }
    if (kept_cis) kept_cis->push_back(*got[k]);
  }
  if (created_cis) {
    created_cis->clear();
    for (const MigPlacement& p : created) {
      created_cis->push_back(pool[p.profile].front());
      pool[p.profile].erase(pool[p.profile].begin());
    }
  }
  return exact;
}

MigLayout Minus(MigLayout all, const MigLayout& part) {
  for (const MigPlacement& p : part) {
    auto at = std::find(all.begin(), all.end(), p);
    if (at != all.end()) all.erase(at);
  }
  return all;
}

// "memory slice 6" or "memory slices 4-7".
std::string SliceText(int start, int size) {
  if (size == 1) return "memory slice " + std::to_string(start);
  return "memory slices " + std::to_string(start) + "-" + std::to_string(start + size - 1);
}

// "compute instance (3c)" or "3 compute instances (1c+1c+1c)".
std::string CiText(const std::vector<int>& cis) {
  std::string sizes;
  for (int s : cis) sizes += (sizes.empty() ? "" : "+") + std::to_string(s) + "c";
  return (cis.size() == 1 ? "compute instance"
                          : std::to_string(cis.size()) + " compute instances") +
         " (" + sizes + ")";
}

struct Candidate {
  std::vector<size_t> kept;
  int exact = 0;
};

}  // namespace

Choice ChooseKept(const GpuModel& model, const std::vector<int>& counts,
                  const std::vector<HaveInstance>& have,
                  const std::vector<WantedInstance>& wanted) {
  Choice choice;
  std::vector<size_t> busy, idle;
  for (size_t i = 0; i < have.size(); ++i) {
    const HaveInstance& h = have[i];
    bool wanted_profile = h.profile && counts[*h.profile] > 0;
    if (h.info.busy && !wanted_profile) {
      choice.error = "busy " + Name(model, h) + " would have to be destroyed";
      return choice;
    }
    if (h.info.busy)
      busy.push_back(i);
    else if (wanted_profile && idle.size() < kMaxSearchedCandidates)
      idle.push_back(i);
  }
  if (Assign(have, busy, wanted, {}, nullptr, nullptr) < 0) {
    choice.error =
        "a busy GPU instance would have to be destroyed or have its compute instances "
        "changed (busy: ";
    for (size_t b : busy) choice.error += Name(model, have[b]) + " ";
    choice.error.back() = ')';
    return choice;
  }
  std::vector<Candidate> candidates;
  for (unsigned mask = 0; mask < (1u << idle.size()); ++mask) {
    Candidate c{busy, 0};
    for (size_t i = 0; i < idle.size(); ++i) {
      if (mask & (1u << i)) c.kept.push_back(idle[i]);
    }
    std::vector<int> kept_counts(counts.size(), 0);
    bool fits = true;
    for (size_t k : c.kept)
      fits = fits && ++kept_counts[*have[k].profile] <= counts[*have[k].profile];
    if (!fits) continue;
    c.exact = Assign(have, c.kept, wanted, {}, nullptr, nullptr);
    candidates.push_back(std::move(c));
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.kept.size() != b.kept.size() ? a.kept.size() > b.kept.size() : a.exact > b.exact;
  });
  for (const Candidate& c : candidates) {
    MigLayout keep;
    for (size_t k : c.kept) keep.push_back({*have[k].profile, have[k].info.start});
    keep = Canonical(keep);
    if (!ValidateLayout(model, keep).empty()) continue;
    std::optional<MigLayout> target = LayoutForCounts(model, counts, keep);
    if (!target) continue;
    choice.kept = c.kept;
    choice.target = Canonical(*target);
    choice.created = Minus(choice.target, keep);
    Assign(have, choice.kept, wanted, choice.created, &choice.kept_cis, &choice.created_cis);
    return choice;
  }
  if (std::string why = CountsProblem(model, counts); !why.empty()) {
    choice.error = "the requested instances do not fit on a " + model.name + ": " + why;
  } else {
    choice.error = "the busy GPU instances leave no room for the requested layout";
  }
  return choice;
}

std::vector<MigApplyStep> BuildSteps(const PlanInput& input, bool enable, size_t position,
                                     const std::function<std::string(const HaveInstance&)>& label) {
  std::vector<MigApplyStep> steps;
  auto add = [&](MigApplyStep step) {
    step.gpu = position;
    steps.push_back(std::move(step));
    return static_cast<int>(steps.size() - 1);
  };
  using Kind = MigApplyStep::Kind;
  if (enable && !input.mig_on) add({Kind::kEnableMig, 0, {}, -1, 0, 0, 0, {}, "enable MIG mode"});

  // Which existing instances go, and which kept ones get new compute instances.
  const Choice& choice = input.choice;
  std::vector<bool> goes(input.have.size(), true);
  std::vector<std::optional<std::vector<int>>> new_cis(input.have.size());
  for (size_t k = 0; k < choice.kept.size(); ++k) {
    goes[choice.kept[k]] = false;
    if (choice.kept_cis[k] != input.have[choice.kept[k]].cis)
      new_cis[choice.kept[k]] = choice.kept_cis[k];
  }
  for (size_t i = 0; i < input.have.size(); ++i) {
    const HaveInstance& h = input.have[i];
    if ((goes[i] || new_cis[i]) && !h.cis.empty()) {
      add({Kind::kDestroyComputeInstances, 0, h.info.id, -1, h.info.profile_id, h.info.start,
           h.info.size, h.cis, "destroy the " + CiText(h.cis) + " of " + label(h)});
    }
  }
  for (size_t i = 0; i < input.have.size(); ++i) {
    const HaveInstance& h = input.have[i];
    if (goes[i]) {
      add({Kind::kDestroyGpuInstance,
           0,
           h.info.id,
           -1,
           h.info.profile_id,
           h.info.start,
           h.info.size,
           {},
           "destroy " + label(h)});
    }
  }

  // Largest first, then by start: with explicit placements any order works; this one also
  // matches what the driver itself needs when it chooses placements.
  std::vector<size_t> order(choice.created.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const GpuModel* model = input.model;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int sa = model->profiles[choice.created[a].profile].memory_slices;
    int sb = model->profiles[choice.created[b].profile].memory_slices;
    return sa != sb ? sa > sb : choice.created[a].start < choice.created[b].start;
  });
  std::vector<std::pair<int, size_t>> made;  // step index, created index
  for (size_t c : order) {
    const MigPlacement& p = choice.created[c];
    const MigProfile& profile = model->profiles[p.profile];
    unsigned id = *input.driver_ids[p.profile];
    made.emplace_back(add({Kind::kCreateGpuInstance,
                           0,
                           {},
                           -1,
                           id,
                           p.start,
                           profile.memory_slices,
                           {},
                           "create GPU instance " + profile.name + " at " +
                               SliceText(p.start, profile.memory_slices) + " (profile id " +
                               std::to_string(id) + ")"}),
                      c);
  }
  for (auto [step, c] : made) {
    const MigPlacement& p = choice.created[c];
    add({Kind::kCreateComputeInstances,
         0,
         {},
         step,
         steps[step].profile_id,
         p.start,
         steps[step].size,
         choice.created_cis[c],
         "create " + CiText(choice.created_cis[c]) + " in the new " +
             model->profiles[p.profile].name + "@" + std::to_string(p.start)});
  }
  for (size_t i = 0; i < input.have.size(); ++i) {
    const HaveInstance& h = input.have[i];
    if (new_cis[i] && !new_cis[i]->empty()) {
      add({Kind::kCreateComputeInstances, 0, h.info.id, -1, h.info.profile_id, h.info.start,
           h.info.size, *new_cis[i], "create " + CiText(*new_cis[i]) + " in " + label(h)});
    }
  }
  if (!enable && input.mig_on) add({Kind::kDisableMig, 0, {}, -1, 0, 0, 0, {}, "disable MIG mode"});
  return steps;
}

}  // namespace accel::sharing
