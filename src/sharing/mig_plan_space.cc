// Builds the planner's option classes (see mig_plan_space.h). The costly part, filtering a
// model's ≤ 2,318 layouts for one class, is a few mask operations per layout.
#include "sharing/mig_plan_space.h"

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace accel::sharing::plan_internal {
namespace {

EnumerateOptions WithEmpty() {
  EnumerateOptions options;
  options.include_empty = true;
  return options;
}

std::unique_ptr<ModelTable> BuildTable(const GpuModel& model) {
  auto t = std::make_unique<ModelTable>();
  t->model = &model;
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    for (int s : model.profiles[p].starts) t->items.push_back({static_cast<int>(p), s});
  }
  // No catalog model comes close; one that did would only be kept as it is, never planned.
  if (t->items.size() > 64) return t;
  const size_t profiles = model.profiles.size();
  for (const MigLayout& layout : EnumerateLayouts(model, WithEmpty())) {
    uint64_t mask = 0;
    std::vector<int> counts = ProfileCounts(model, layout);
    for (const MigPlacement& at : layout) mask |= uint64_t{1} << t->ItemOf(at);
    t->index.emplace(mask, static_cast<int>(t->masks.size()));
    t->masks.push_back(mask);
    t->free.push_back(FreeScore(model, layout));
    for (size_t p = 0; p < profiles; ++p) t->counts.push_back(static_cast<uint8_t>(counts[p]));
  }
  return t;
}

// Per model, for one demand: the supply group of every layout and which groups dominate which.
struct Groups {
  std::vector<int> row;                      // profile → demand row or -1
  std::vector<int> of_layout;                // layout → group
  std::vector<std::vector<int>> supply;      // group → instances per row
  std::vector<std::vector<int>> dominators;  // group → groups with ≥ supply in every row
};

Groups GroupLayouts(const ModelTable& t, const DemandRows& rows) {
  Groups g;
  g.row = RowOfProfile(*t.model, rows);
  const size_t profiles = t.model->profiles.size();
  std::map<std::vector<int>, int> ids;
  for (size_t l = 0; l < t.masks.size(); ++l) {
    std::vector<int> s(rows.names.size(), 0);
    for (size_t p = 0; p < profiles; ++p) {
      if (g.row[p] >= 0) s[static_cast<size_t>(g.row[p])] += t.counts[l * profiles + p];
    }
    auto [it, fresh] = ids.emplace(s, static_cast<int>(g.supply.size()));
    if (fresh) g.supply.push_back(std::move(s));
    g.of_layout.push_back(it->second);
  }
  g.dominators.resize(g.supply.size());
  for (size_t a = 0; a < g.supply.size(); ++a) {
    for (size_t b = 0; b < g.supply.size(); ++b) {
      if (a != b && std::equal(g.supply[a].begin(), g.supply[a].end(), g.supply[b].begin(),
                               [](int x, int y) { return x <= y; })) {
        g.dominators[a].push_back(static_cast<int>(b));
      }
    }
  }
  return g;
}

// The class a GPU belongs to, as far as planning can tell GPUs apart.
struct ClassKey {
  const GpuModel* model;
  bool mig_enabled, reconfigurable;
  uint64_t current, busy;
  int own;  // fleet index for GPUs whose layout the table does not know; -1 otherwise
  auto operator<=>(const ClassKey&) const = default;
};

bool AtMost(const std::vector<int>& a, const int* b) {
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r] > b[r]) return false;
  }
  return true;
}

// Fills the options of one class (keep already added): per group, the best allowed layout.
void AddChangedOptions(const ModelTable& t, const Groups& g, const FleetGpu& gpu, uint64_t current,
                       uint64_t busy, int rows, OptionClass& k, std::vector<int>& layouts) {
  uint64_t undemanded_idle = 0;
  for (size_t i = 0; i < t.items.size(); ++i) {
    if ((current >> i & 1) && !(busy >> i & 1) && g.row[static_cast<size_t>(t.items[i].profile)] < 0) {
      undemanded_idle |= uint64_t{1} << i;
    }
  }
  // Per group, the best layout by: idle undemanded instances kept (they go only where demanded
  // instances need the space), free score, existing instances kept in place, fewest created.
  using Key = std::tuple<int, int, int, int>;
  std::vector<int> best(g.supply.size(), -1);
  std::vector<Key> best_key(g.supply.size());
  for (size_t l = 0; l < t.masks.size(); ++l) {
    const uint64_t m = t.masks[l];
    if ((m & busy) != busy || m == current || (!gpu.mig_enabled && m == 0)) continue;
    const int grp = g.of_layout[l];
    const Key key{std::popcount(m & undemanded_idle), t.free[l], std::popcount(m & current),
                  -std::popcount(m & ~current)};
    if (best[grp] < 0 || key > best_key[grp]) best[grp] = static_cast<int>(l), best_key[grp] = key;
  }
  for (size_t grp = 0; grp < best.size(); ++grp) {
    if (best[grp] < 0 || AtMost(g.supply[grp], k.Supply(0, rows))) continue;
    bool dominated = false;  // another option supplies as much, leaves as much, creates no more
    for (int q : g.dominators[grp]) {
      dominated = dominated || (best[q] >= 0 && std::get<1>(best_key[q]) >= std::get<1>(best_key[grp]) &&
                                std::get<3>(best_key[q]) >= std::get<3>(best_key[grp]));
    }
    if (dominated) continue;
    k.supply.insert(k.supply.end(), g.supply[grp].begin(), g.supply[grp].end());
    k.free.push_back(std::get<1>(best_key[grp]));
    k.created.push_back(-std::get<3>(best_key[grp]));
    layouts.push_back(best[grp]);
    k.options++;
  }
}

}  // namespace

int ModelTable::ItemOf(const MigPlacement& at) const {
  auto it = std::find(items.begin(), items.end(), at);
  return it == items.end() ? -1 : static_cast<int>(it - items.begin());
}

MigLayout ModelTable::LayoutOf(int layout) const {
  MigLayout out;
  for (uint64_t m = masks[static_cast<size_t>(layout)]; m; m &= m - 1) {
    out.push_back(items[static_cast<size_t>(std::countr_zero(m))]);
  }
  return Canonical(std::move(out));
}

const ModelTable& TableFor(const GpuModel& model) {
  static std::mutex mu;
  static std::map<const GpuModel*, std::unique_ptr<ModelTable>> tables;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<ModelTable>& t = tables[&model];
  if (!t) t = BuildTable(model);
  return *t;
}

namespace {

// Masks of a GPU's current and busy instances; false when the table does not know the layout.
bool MaskGpu(const ModelTable& t, const FleetGpu& gpu, uint64_t* current, uint64_t* busy) {
  *current = *busy = 0;
  if (!gpu.mig_enabled) return true;
  for (const ExistingInstance& e : gpu.instances) {
    const int item = t.ItemOf(e.placement);
    if (item < 0) return false;
    *current |= uint64_t{1} << item;
    if (e.busy) *busy |= uint64_t{1} << item;
  }
  return t.index.count(*current) > 0;
}

}  // namespace

PlanSpace BuildSpace(const Fleet& fleet, const DemandRows& rows) {
  PlanSpace space;
  space.problem.want = rows.want;
  const int nrows = static_cast<int>(rows.names.size());
  std::map<const GpuModel*, Groups> groups;
  std::map<ClassKey, size_t> class_of;
  for (size_t i = 0; i < fleet.gpus.size(); ++i) {
    const FleetGpu& gpu = fleet.gpus[i];
    const ModelTable& t = TableFor(*gpu.model);
    auto [git, gfresh] = groups.try_emplace(gpu.model);
    if (gfresh) git->second = GroupLayouts(t, rows);
    const Groups& g = git->second;
    uint64_t current = 0, busy = 0;
    const bool known = MaskGpu(t, gpu, &current, &busy);
    const ClassKey key{gpu.model, gpu.mig_enabled, Reconfigurable(gpu), current, busy,
                       known ? -1 : static_cast<int>(i)};
    auto [it, fresh] = class_of.emplace(key, space.problem.classes.size());
    if (fresh) {
      OptionClass k;
      k.options = 1;
      k.supply.assign(static_cast<size_t>(nrows), 0);
      const MigLayout now = CurrentLayout(gpu);
      for (const MigPlacement& at : now) {
        const int r = g.row[static_cast<size_t>(at.profile)];
        if (r >= 0) k.supply[static_cast<size_t>(r)]++;
      }
      k.free.push_back(GpuFreeScore(gpu, now));
      k.created.push_back(0);
      std::vector<int> layouts{-1};
      if (known && Reconfigurable(gpu)) AddChangedOptions(t, g, gpu, current, busy, nrows, k, layouts);
      space.problem.classes.push_back(std::move(k));
      space.class_gpus.emplace_back();
      space.class_table.push_back(&t);
      space.option_layout.push_back(std::move(layouts));
    }
    space.problem.classes[it->second].gpus++;
    space.class_gpus[it->second].push_back(static_cast<int>(i));
  }
  for (const std::string& name : rows.names) {
    int slices = 0;
    for (const auto& [model, g] : groups) {
      std::optional<int> p = FindProfile(*model, name);
      const int here = p ? model->profiles[static_cast<size_t>(*p)].memory_slices : 0;
      if (here > 0 && (slices == 0 || here < slices)) slices = here;
    }
    space.row_slices.push_back(std::max(slices, 1));
  }
  return space;
}

std::vector<MigLayout> Targets(const Fleet& fleet, const PlanSpace& space, const Assignment& a) {
  std::vector<MigLayout> targets(fleet.gpus.size());
  for (size_t c = 0; c < space.class_gpus.size(); ++c) {
    const std::vector<int>& gpus = space.class_gpus[c];
    size_t next = 0;
    for (size_t o = 1; o < a[c].size(); ++o) {
      for (int n = 0; n < a[c][o]; ++n) {
        targets[static_cast<size_t>(gpus[next++])] =
            space.class_table[c]->LayoutOf(space.option_layout[c][o]);
      }
    }
    for (; next < gpus.size(); ++next) {
      targets[static_cast<size_t>(gpus[next])] = CurrentLayout(fleet.gpus[static_cast<size_t>(gpus[next])]);
    }
  }
  return targets;
}

}  // namespace accel::sharing::plan_internal
