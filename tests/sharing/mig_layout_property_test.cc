// Cross-checks of the layout code against independent oracles: a bitmask brute force over all
// subsets of (profile, start) items, a slot-by-slot recursion, and thousands of random layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <random>
#include <set>

#include "sharing/mig_layout.h"
#include "sharing/mig_test_util.h"

namespace accel::sharing {
namespace mig_layout_property_test {

using test::Model;
using test::Profiles;

struct Item {
  MigPlacement at;
  uint32_t mask;
};

std::vector<Item> Items(const GpuModel& m, const std::vector<int>& profiles) {
  std::vector<Item> items;
  for (int p : profiles) {
    for (int s : m.profiles[p].starts) {
      items.push_back({{p, s}, SliceMask(s, m.profiles[p].memory_slices)});
    }
  }
  return items;
}

std::vector<int> AllProfiles(const GpuModel& m) {
  std::vector<int> all(m.profiles.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return all;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The rules of mig.md §1.5, written out again without the library: the media-engine rules from
// the profile names alone ("+me"/"+me.all" hold the one OFA; "+me.all" only beside "-me").
bool RulesHold(const GpuModel& m, const std::vector<const Item*>& chosen) {
  uint32_t used = 0;
  std::map<int, int> counts;
  int ofa = 0, all_media = 0, with_media = 0;
  for (const Item* it : chosen) {
    if (used & it->mask) return false;
    used |= it->mask;
    const MigProfile& p = m.profiles[it->at.profile];
    if (++counts[it->at.profile] > p.max_count) return false;
    const bool all = EndsWith(p.name, "+me.all");
    ofa += EndsWith(p.name, "+me") || all;
    all_media += all;
    with_media += !EndsWith(p.name, "-me");
  }
  return ofa <= 1 && (all_media == 0 || with_media == 1);
}

MigLayout ToLayout(const std::vector<const Item*>& chosen) {
  MigLayout l;
  for (const Item* it : chosen) l.push_back(it->at);
  return Canonical(l);
}

// Every subset of items (2^n), valid ones and maximal ones among them.
void BruteForce(const GpuModel& m, const std::vector<Item>& items, std::set<MigLayout>* valid,
                std::set<MigLayout>* maximal) {
  const uint32_t n = static_cast<uint32_t>(items.size());
  std::vector<bool> ok(size_t{1} << n);
  for (uint32_t set = 0; set < (1u << n); ++set) {
    std::vector<const Item*> chosen;
    for (uint32_t i = 0; i < n; ++i) {
      if (set & (1u << i)) chosen.push_back(&items[i]);
    }
    ok[set] = RulesHold(m, chosen);
  }
  for (uint32_t set = 1; set < (1u << n); ++set) {
    if (!ok[set]) continue;
    std::vector<const Item*> chosen;
    bool extendable = false;
    for (uint32_t i = 0; i < n; ++i) {
      if (set & (1u << i)) chosen.push_back(&items[i]);
      else if (ok[set | (1u << i)]) extendable = true;
    }
    valid->insert(ToLayout(chosen));
    if (!extendable) maximal->insert(ToLayout(chosen));
  }
}

std::set<MigLayout> Enumerated(const GpuModel& m, const std::vector<int>& profiles, bool maximal) {
  EnumerateOptions options;
  options.profiles = profiles;
  options.maximal_only = maximal;
  const auto list = EnumerateLayouts(m, options);
  std::set<MigLayout> set(list.begin(), list.end());
  EXPECT_EQ(set.size(), list.size()) << "duplicates in the enumeration";
  return set;
}

TEST(MigLayoutBruteForce, SmallCasesMatchEveryItemSubset) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"A100-SXM4-40GB", {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {"A100-SXM4-40GB", {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {"H100-SXM5-80GB", {"1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"A30-24GB", {"1g.6gb", "2g.12gb", "4g.24gb"}},
      {"A30-24GB", {"1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"}},
      {"RTX-PRO-6000-96GB",
       {"1g.24gb", "1g.24gb+me.all", "1g.24gb-me", "2g.48gb-me", "2g.48gb+me.all", "4g.96gb"}},
      {"RTX-PRO-6000-96GB", {"1g.24gb+me", "1g.24gb+gfx", "2g.48gb+gfx", "2g.48gb-me", "4g.96gb+gfx"}},
  };
  for (const auto& [name, names] : cases) {
    const GpuModel& m = Model(name);
    const std::vector<int> profiles = Profiles(m, names);
    std::set<MigLayout> valid, maximal;
    BruteForce(m, Items(m, profiles), &valid, &maximal);
    SCOPED_TRACE(name + " with " + std::to_string(names.size()) + " profiles");
    EXPECT_EQ(Enumerated(m, profiles, false), valid);
    EXPECT_EQ(Enumerated(m, profiles, true), maximal);
  }
}

// Slot by slot: leave slot i free or start one item there. Reaches each set of disjoint items
// once, so it also covers the 25-item case (all A100 profiles) that 2^25 subsets make slow.
void SlotWalk(const GpuModel& m, const std::vector<Item>& items, int slot,
              std::vector<const Item*>& chosen, std::set<MigLayout>* valid,
              std::set<MigLayout>* maximal) {
  if (slot >= m.memory_slices) {
    if (chosen.empty() || !RulesHold(m, chosen)) return;
    valid->insert(ToLayout(chosen));
    for (const Item& extra : items) {
      chosen.push_back(&extra);
      const bool grows = RulesHold(m, chosen);
      chosen.pop_back();
      if (grows) return;
    }
    maximal->insert(ToLayout(chosen));
    return;
  }
  SlotWalk(m, items, slot + 1, chosen, valid, maximal);
  for (const Item& it : items) {
    if (it.at.start != slot) continue;
    chosen.push_back(&it);
    SlotWalk(m, items, slot + std::popcount(it.mask), chosen, valid, maximal);
    chosen.pop_back();
  }
}

TEST(MigLayoutBruteForce, EveryModelMatchesSlotWalk) {
  for (const GpuModel& m : MigCatalog()) {
    SCOPED_TRACE(m.name);
    std::set<MigLayout> valid, maximal;
    std::vector<const Item*> chosen;
    SlotWalk(m, Items(m, AllProfiles(m)), 0, chosen, &valid, &maximal);
    EXPECT_EQ(Enumerated(m, {}, false), valid);
    EXPECT_EQ(Enumerated(m, {}, true), maximal);
  }
}

TEST(MigLayoutProperty, RandomLayoutsValidIffEnumerated) {
  std::mt19937 rng(20240404);
  for (const char* name : {"A100-SXM4-40GB", "H100-SXM5-80GB", "A30-24GB", "RTX-PRO-6000-96GB"}) {
    const GpuModel& m = Model(name);
    EnumerateOptions options;
    options.include_empty = true;
    const auto list = EnumerateLayouts(m, options);
    const std::set<MigLayout> all(list.begin(), list.end());
    int valid_seen = 0;
    for (int round = 0; round < 4000; ++round) {
      MigLayout l;
      const int size = static_cast<int>(rng() % 6);
      for (int i = 0; i < size; ++i) {
        const int p = static_cast<int>(rng() % m.profiles.size());
        const auto& starts = m.profiles[p].starts;
        const int start = rng() % 6 == 0 ? static_cast<int>(rng() % m.memory_slices)
                                         : starts[rng() % starts.size()];
        l.push_back({p, start});
      }
      const auto problems = ValidateLayout(m, l);
      valid_seen += problems.empty();
      ASSERT_EQ(problems.empty(), all.count(Canonical(l)) == 1) << Describe(m, l);
      // Each kind is reported exactly when its rule, checked here independently, is broken.
      bool bad_start = false, overlap = false, over = false;
      std::vector<int> counts(m.profiles.size(), 0);
      int media = 0, all_media = 0, with_media = 0;
      for (size_t i = 0; i < l.size(); ++i) {
        const MigProfile& p = m.profiles[l[i].profile];
        bad_start |= std::count(p.starts.begin(), p.starts.end(), l[i].start) == 0;
        over |= ++counts[l[i].profile] > p.max_count;
        media += p.media_extension;
        all_media += EndsWith(p.name, "+me.all");
        with_media += !EndsWith(p.name, "-me");
        for (size_t j = 0; j < i; ++j) {
          const int a0 = l[i].start, a1 = a0 + p.memory_slices;
          const int b0 = l[j].start, b1 = b0 + m.profiles[l[j].profile].memory_slices;
          overlap |= std::max(a0, b0) < std::min({a1, b1, m.memory_slices});
        }
      }
      const auto kinds = test::Kinds(problems);
      EXPECT_EQ(kinds.count(LayoutProblem::Kind::kBadPlacement) > 0, bad_start);
      EXPECT_EQ(kinds.count(LayoutProblem::Kind::kOverlap) > 0, overlap);
      EXPECT_EQ(kinds.count(LayoutProblem::Kind::kOverCount) > 0, over);
      EXPECT_EQ(kinds.count(LayoutProblem::Kind::kMediaExtension) > 0, media > 1);
      EXPECT_EQ(kinds.count(LayoutProblem::Kind::kAllMedia) > 0, all_media > 0 && with_media > 1);
      for (const LayoutProblem& p : problems) EXPECT_FALSE(p.message.empty());
    }
    EXPECT_GT(valid_seen, 300) << name;  // the test must see both outcomes often
  }
}

TEST(MigLayoutProperty, CanAddIsMaximalAndFreeScoreAgreeWithValidate) {
  for (const char* name : {"A100-SXM4-40GB", "A30-24GB", "RTX-PRO-6000-96GB"}) {
    const GpuModel& m = Model(name);
    EnumerateOptions options;
    options.include_empty = true;
    for (const MigLayout& l : EnumerateLayouts(m, options)) {
      bool any = false;
      int best = 0;
      for (int p = 0; p < static_cast<int>(m.profiles.size()); ++p) {
        for (int s = 0; s < m.memory_slices; ++s) {
          MigLayout grown = l;
          grown.push_back({p, s});
          const bool ok = ValidateLayout(m, grown).empty();
          ASSERT_EQ(CanAdd(m, l, p, s), ok)
              << Describe(m, l) << " + " << m.profiles[p].name << "@" << s;
          any |= ok;
          if (ok) best = std::max(best, m.profiles[p].memory_slices);
        }
      }
      EXPECT_EQ(IsMaximal(m, l), !any) << Describe(m, l);
      EXPECT_EQ(FreeScore(m, l), best) << Describe(m, l);
    }
  }
}

bool Contains(const MigLayout& layout, const MigLayout& keep) {
  return std::all_of(keep.begin(), keep.end(), [&](const MigPlacement& k) {
    return std::find(layout.begin(), layout.end(), k) != layout.end();
  });
}

TEST(MigLayoutProperty, LayoutForCountsIsValidExactAndBest) {
  std::mt19937 rng(7);
  for (const char* name : {"A100-SXM4-40GB", "A30-24GB", "RTX-PRO-6000-96GB"}) {
    const GpuModel& m = Model(name);
    const auto all = EnumerateLayouts(m, {});
    std::map<std::vector<int>, std::vector<MigLayout>> by_counts;
    for (const MigLayout& l : all) by_counts[ProfileCounts(m, l)].push_back(l);
    for (const MigLayout& target : all) {
      MigLayout keep;
      for (const MigPlacement& at : target) {
        if (rng() % 3 == 0) keep.push_back(at);
      }
      const std::vector<int> counts = ProfileCounts(m, target);
      const auto got = LayoutForCounts(m, counts, keep);
      ASSERT_TRUE(got) << Describe(m, target) << " keeping " << Describe(m, keep);
      EXPECT_TRUE(ValidateLayout(m, *got).empty());
      EXPECT_EQ(ProfileCounts(m, *got), counts);
      EXPECT_TRUE(Contains(*got, keep));
      EXPECT_EQ(Canonical(*got), *got);
      int best = 0;
      for (const MigLayout& other : by_counts[counts]) {
        if (Contains(other, keep)) best = std::max(best, FreeScore(m, other));
      }
      EXPECT_EQ(FreeScore(m, *got), best) << Describe(m, *got);
    }
    // Random count vectors: a layout exists exactly when the multiset is feasible.
    for (int round = 0; round < 300; ++round) {
      std::vector<int> counts(m.profiles.size());
      for (int& c : counts) c = rng() % 4 == 0 ? static_cast<int>(rng() % 4) : 0;
      const bool feasible = by_counts.count(counts) == 1 ||
                            std::all_of(counts.begin(), counts.end(), [](int c) { return c == 0; });
      EXPECT_EQ(LayoutForCounts(m, counts).has_value(), feasible);
    }
  }
}

}  // namespace
}  // namespace accel::sharing
