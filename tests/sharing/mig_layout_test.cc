// The layout rules on the worked examples of mig.md §1.5, enumeration counts (§1.6,
// docs/mig-layouts.md), and the printing helpers.
#include "sharing/mig_layout.h"

#include <gtest/gtest.h>

#include <set>

#include "sharing/mig_test_util.h"

namespace accel::sharing {
namespace mig_layout_test {

using Kind = LayoutProblem::Kind;
using test::Counts;
using test::Kinds;
using test::Layout;
using test::Model;
using test::Profiles;

const std::vector<std::string> kClassic40 = {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};

TEST(MigLayoutValidate, WorkedValidLayouts) {
  const GpuModel& m = Model("A100-SXM4-40GB");
  const std::vector<std::vector<std::string>> valid = {
      {"4g.20gb@0", "3g.20gb@4"},
      {"4g.20gb@0", "2g.10gb@4", "1g.5gb@6"},
      {"4g.20gb@0", "1g.5gb@4", "1g.5gb@5", "1g.5gb@6"},
      {"3g.20gb@0", "3g.20gb@4"},
      {"1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "3g.20gb@4"},
      {"2g.10gb@0", "1g.5gb@2", "1g.5gb@3", "3g.20gb@4"},
      {"1g.5gb@0", "1g.5gb@1", "2g.10gb@2", "3g.20gb@4"},
      {"2g.10gb@0", "2g.10gb@2", "2g.10gb@4", "1g.5gb@6"},
      {"2g.10gb@0", "2g.10gb@2", "2g.10gb@4", "1g.10gb@6"},
      {"2g.10gb@0", "2g.10gb@2", "1g.5gb@4", "1g.5gb@5", "1g.5gb@6"},
      {"4g.20gb@0", "1g.10gb@4", "1g.10gb@6"},
      {"4g.20gb@0", "2g.10gb@4", "1g.10gb@6"},
      {"3g.20gb@0", "1g.10gb@4", "1g.10gb@6"},
      {"1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "1g.5gb@4", "1g.5gb@5", "1g.5gb@6"},
      {"1g.5gb+me@3", "1g.5gb@0", "1g.10gb@6"},
      {"7g.40gb@0"},
  };
  for (const auto& items : valid) {
    EXPECT_TRUE(ValidateLayout(m, Layout(m, items)).empty()) << Describe(m, Layout(m, items));
  }
  EXPECT_TRUE(ValidateLayout(m, {}).empty());
}

TEST(MigLayoutValidate, WorkedInvalidLayoutsNameTheRule) {
  const GpuModel& m = Model("A100-SXM4-40GB");
  struct Case {
    std::vector<std::string> layout;
    std::multiset<Kind> kinds;
  };
  const std::vector<Case> cases = {
      // 3g+3g+1g: the two 3g take all 8 memory slices although only 6 SM slices are used.
      {{"3g.20gb@0", "3g.20gb@4", "1g.5gb@6"}, {Kind::kOverlap}},
      // 2g×3+1g×2: only slot 6 is left after three 2g; slot 7 is no 1g start.
      {{"2g.10gb@0", "2g.10gb@2", "2g.10gb@4", "1g.5gb@6", "1g.5gb@7"}, {Kind::kBadPlacement}},
      {{"2g.10gb@0", "2g.10gb@2", "2g.10gb@4", "1g.5gb@6", "1g.5gb@5"}, {Kind::kOverlap}},
      // 1g.10gb×4 + 1g: all 8 slices used.
      {{"1g.10gb@0", "1g.10gb@2", "1g.10gb@4", "1g.10gb@6", "1g.5gb@3"}, {Kind::kOverlap}},
      {{"7g.40gb@0", "1g.5gb@6"}, {Kind::kOverlap}},
      {{"4g.20gb@0", "4g.20gb@0"}, {Kind::kOverCount, Kind::kOverlap}},
      {{"3g.20gb@0", "3g.20gb@4", "3g.20gb@4"}, {Kind::kOverCount, Kind::kOverlap}},
      {{"2g.10gb@0", "2g.10gb@2", "2g.10gb@4", "2g.10gb@6"},
       {Kind::kBadPlacement, Kind::kOverCount}},
      {{"1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "1g.5gb@4", "1g.5gb@5", "1g.5gb@6",
        "1g.5gb@7"},
       {Kind::kBadPlacement, Kind::kOverCount}},
      {{"1g.5gb+me@0", "1g.5gb+me@1"}, {Kind::kOverCount, Kind::kMediaExtension}},
      {{"3g.20gb@2"}, {Kind::kBadPlacement}},
      {{"4g.20gb@4"}, {Kind::kBadPlacement}},
  };
  for (const Case& c : cases) {
    const MigLayout layout = Layout(m, c.layout);
    EXPECT_EQ(Kinds(ValidateLayout(m, layout)), c.kinds) << Describe(m, layout);
  }
  const auto unknown = ValidateLayout(m, {{42, 0}});
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].kind, Kind::kUnknownProfile);
}

TEST(MigLayoutValidate, MessagesNameProfilesAndSlices) {
  const GpuModel& h100 = Model("H100-SXM5-80GB");
  const auto overlap = ValidateLayout(h100, Layout(h100, {"3g.40gb@4", "1g.10gb@6"}));
  ASSERT_EQ(overlap.size(), 1u);
  EXPECT_EQ(overlap[0].message, "3g.40gb at slice 4 overlaps 1g.10gb at slice 6 (memory slice 6)");
  EXPECT_EQ(overlap[0].instances, (std::vector<int>{0, 1}));
  const auto bad = ValidateLayout(h100, Layout(h100, {"3g.40gb@2"}));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].message.find("0, 4"), std::string::npos) << bad[0].message;
  // A30: the +me profiles share the GPU's one OFA/JPEG, so 1g+me and 2g+me exclude each other.
  const GpuModel& a30 = Model("A30-24GB");
  const auto me = ValidateLayout(a30, Layout(a30, {"1g.6gb+me@0", "2g.12gb+me@2"}));
  ASSERT_EQ(me.size(), 1u);
  EXPECT_EQ(me[0].kind, Kind::kMediaExtension);
  EXPECT_NE(me[0].message.find("1g.6gb+me at slice 0"), std::string::npos);
  EXPECT_NE(me[0].message.find("2g.12gb+me at slice 2"), std::string::npos);
  const auto over = ValidateLayout(a30, Layout(a30, {"4g.24gb@0", "4g.24gb@0"}));
  EXPECT_EQ(Kinds(over), (std::multiset<Kind>{Kind::kOverCount, Kind::kOverlap}));
}

// RTX PRO 6000 Blackwell: a +me.all instance takes every media engine, so only -me instances may
// sit beside it (nvml.h); it also holds the OFA, like +me, so never two of those.
TEST(MigLayoutValidate, BlackwellMediaEngineRules) {
  const GpuModel& m = Model("RTX-PRO-6000-96GB");
  const std::vector<std::vector<std::string>> valid = {
      {"1g.24gb+me.all@0", "1g.24gb-me@1", "2g.48gb-me@2"},
      {"2g.48gb+me.all@0", "1g.24gb-me@2", "1g.24gb-me@3"},
      {"1g.24gb+gfx@0", "1g.24gb+gfx@1", "2g.48gb@2"},
      {"1g.24gb+me@0", "1g.24gb@1", "1g.24gb+gfx@2", "1g.24gb-me@3"},
      {"2g.48gb+gfx@0", "2g.48gb-me@2"},
      {"4g.96gb+gfx@0"},
  };
  for (const auto& items : valid) {
    EXPECT_TRUE(ValidateLayout(m, Layout(m, items)).empty()) << Describe(m, Layout(m, items));
  }
  struct Case {
    std::vector<std::string> layout;
    std::multiset<Kind> kinds;
  };
  const std::vector<Case> cases = {
      {{"1g.24gb+me.all@0", "1g.24gb@1"}, {Kind::kAllMedia}},
      {{"2g.48gb+me.all@2", "1g.24gb+gfx@0", "1g.24gb-me@1"}, {Kind::kAllMedia}},
      {{"1g.24gb+me@0", "2g.48gb+me.all@2"}, {Kind::kMediaExtension, Kind::kAllMedia}},
      {{"1g.24gb+me.all@0", "2g.48gb+me.all@2"},
       {Kind::kMediaExtension, Kind::kAllMedia, Kind::kAllMedia}},
      {{"2g.48gb@1"}, {Kind::kBadPlacement}},
      {{"4g.96gb@0", "4g.96gb+gfx@0"}, {Kind::kOverlap}},
  };
  for (const Case& c : cases) {
    const MigLayout layout = Layout(m, c.layout);
    EXPECT_EQ(Kinds(ValidateLayout(m, layout)), c.kinds) << Describe(m, layout);
  }
  const auto all = ValidateLayout(m, Layout(m, {"1g.24gb+me.all@0", "1g.24gb@1", "2g.48gb-me@2"}));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].instances, (std::vector<int>{0, 1}));
  EXPECT_NE(all[0].message.find("1g.24gb+me.all at slice 0 takes every media engine"), std::string::npos)
      << all[0].message;
  EXPECT_NE(all[0].message.find("not 1g.24gb at slice 1"), std::string::npos) << all[0].message;
  EXPECT_FALSE(CanAdd(m, Layout(m, {"1g.24gb+me.all@0"}), *FindProfile(m, "1g.24gb"), 1));
  EXPECT_TRUE(CanAdd(m, Layout(m, {"1g.24gb+me.all@0"}), *FindProfile(m, "1g.24gb-me"), 1));
  EXPECT_FALSE(CanAdd(m, Layout(m, {"1g.24gb+gfx@3"}), *FindProfile(m, "2g.48gb+me.all"), 0));
}

TEST(MigLayoutValidate, WorkedMultisetsThroughLayoutForCounts) {
  const GpuModel& m = Model("A100-SXM4-40GB");
  using C = std::vector<std::pair<std::string, int>>;
  const std::vector<C> feasible = {
      {{"4g.20gb", 1}, {"3g.20gb", 1}}, {{"3g.20gb", 1}, {"1g.5gb", 4}},
      {{"3g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 2}}, {{"2g.10gb", 3}, {"1g.10gb", 1}},
      {{"4g.20gb", 1}, {"1g.10gb", 2}}, {{"3g.20gb", 1}, {"1g.10gb", 2}}, {{"1g.5gb", 7}}};
  for (const C& c : feasible) {
    auto layout = LayoutForCounts(m, Counts(m, c));
    ASSERT_TRUE(layout) << c.size();
    EXPECT_TRUE(ValidateLayout(m, *layout).empty());
  }
  // 3g+2g+1g+1g exists only with the 3g at slice 4.
  auto l = LayoutForCounts(m, Counts(m, {{"3g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 2}}));
  EXPECT_EQ(SlotString(m, *l).substr(4), "3333");
  const std::vector<C> infeasible = {
      {{"3g.20gb", 2}, {"1g.5gb", 1}}, {{"2g.10gb", 3}, {"1g.5gb", 2}},
      {{"1g.10gb", 4}, {"1g.5gb", 1}}, {{"7g.40gb", 1}, {"1g.5gb", 1}}, {{"4g.20gb", 2}},
      {{"3g.20gb", 3}}, {{"2g.10gb", 4}}, {{"1g.5gb", 8}}, {{"1g.5gb+me", 2}}};
  for (const C& c : infeasible) EXPECT_FALSE(LayoutForCounts(m, Counts(m, c))) << c[0].first;
}

// mig.md §1.6 / issue 4: 19, 78, 239 maximal placed layouts on the 8-slice family.
TEST(MigLayoutEnumerate, CountsPerProfileSet) {
  struct Row {
    std::vector<std::string> profiles;
    size_t placed, maximal, multisets, maximal_multisets;
  };
  const std::vector<std::pair<std::string, Row>> rows = {
      {"A100-SXM4-40GB", {kClassic40, 297, 19, 37, 14}},
      {"A100-SXM4-40GB",
       {{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}, 722, 78, 77, 38}},
      {"A100-SXM4-40GB", {{}, 2318, 239, 127, 64}},
      {"H100-SXM5-80GB", {{}, 2318, 239, 127, 64}},
      {"B200-180GB", {{}, 2318, 239, 127, 64}},
      {"GB200-186GB", {{}, 2318, 239, 127, 64}},
      {"B300-269GB", {{}, 2318, 239, 127, 64}},
      {"GB300-278GB", {{}, 2318, 239, 127, 64}},
      {"A30-24GB", {{"1g.6gb", "2g.12gb", "4g.24gb"}, 25, 5, 9, 4}},
      {"A30-24GB", {{}, 75, 17, 19, 8}},
      // docs/mig-layouts.md: RTX PRO 6000 Blackwell.
      {"RTX-PRO-6000-96GB", {{"1g.24gb", "2g.48gb", "4g.96gb"}, 25, 5, 9, 4}},
      {"RTX-PRO-6000-96GB",
       {{"1g.24gb", "1g.24gb+gfx", "2g.48gb", "2g.48gb+gfx", "4g.96gb", "4g.96gb+gfx"}, 122, 38, 31, 16}},
      {"RTX-PRO-6000-96GB",
       {{"1g.24gb+me.all", "1g.24gb-me", "2g.48gb+me.all", "2g.48gb-me"}, 74, 16, 18, 7}},
      {"RTX-PRO-6000-96GB", {{}, 716, 302, 114, 64}},
  };
  for (const auto& [name, row] : rows) {
    const GpuModel& m = Model(name);
    EnumerateOptions options;
    options.profiles = Profiles(m, row.profiles);
    const auto placed = EnumerateLayouts(m, options);
    options.maximal_only = true;
    const auto maximal = EnumerateLayouts(m, options);
    std::set<std::vector<int>> multisets, maximal_multisets;
    for (const MigLayout& l : placed) multisets.insert(ProfileCounts(m, l));
    for (const MigLayout& l : maximal) maximal_multisets.insert(ProfileCounts(m, l));
    SCOPED_TRACE(name + " with " + std::to_string(options.profiles.size()) + " profiles");
    EXPECT_EQ(placed.size(), row.placed);
    EXPECT_EQ(maximal.size(), row.maximal);
    EXPECT_EQ(multisets.size(), row.multisets);
    EXPECT_EQ(maximal_multisets.size(), row.maximal_multisets);
  }
}

TEST(MigLayoutEnumerate, NineteenClassicA100Layouts) {
  const GpuModel& m = Model("A100-SXM4-40GB");
  EnumerateOptions options;
  options.profiles = Profiles(m, kClassic40);
  options.maximal_only = true;
  std::vector<std::string> slots;
  for (const MigLayout& l : EnumerateLayouts(m, options)) slots.push_back(SlotString(m, l));
  const std::vector<std::string> want = {
      "77777777", "44443333", "4444221.", "4444111.", "33333333", "3333221.", "3333111.",
      "22223333", "2222221.", "2222111.", "22113333", "2211221.", "2211111.", "11223333",
      "1122221.", "1122111.", "11113333", "1111221.", "1111111."};
  EXPECT_EQ(slots, want);  // also pins the enumeration order
}

TEST(MigLayoutEnumerate, OptionsAndCanonicalOrder) {
  const GpuModel& a30 = Model("A30-24GB");
  EnumerateOptions options;
  options.include_empty = true;
  const auto all = EnumerateLayouts(a30, options);
  ASSERT_EQ(all.size(), 76u);
  EXPECT_TRUE(all.front().empty());
  for (const MigLayout& l : all) EXPECT_EQ(Canonical(l), l);
  options.profiles = Profiles(a30, {"4g.24gb"});
  EXPECT_EQ(EnumerateLayouts(a30, options).size(), 2u);  // empty and 4g
}

TEST(MigLayoutPrint, SlotStringAndDescribe) {
  const GpuModel& h100 = Model("H100-SXM5-80GB");
  const MigLayout a = Layout(h100, {"1g.10gb@6", "2g.20gb@4", "4g.40gb@0"});
  EXPECT_EQ(SlotString(h100, a), "4444221.");
  EXPECT_EQ(Describe(h100, a), "4g.40gb@0 + 2g.20gb@4 + 1g.10gb@6");
  const MigLayout b =
      Layout(h100, {"1g.20gb@0", "2g.20gb@2", "1g.10gb@4", "1g.10gb@5", "1g.10gb+me@6"});
  EXPECT_EQ(SlotString(h100, b), "ww2211m.");
  EXPECT_EQ(Canonical(a), Layout(h100, {"4g.40gb@0", "2g.20gb@4", "1g.10gb@6"}));
  EXPECT_EQ(SlotString(Model("A30-24GB"), {}), "....");
  const GpuModel& rtx = Model("RTX-PRO-6000-96GB");
  EXPECT_EQ(SlotString(rtx, Layout(rtx, {"1g.24gb+me.all@0", "1g.24gb-me@1", "2g.48gb-me@2"})), "annn");
  EXPECT_EQ(SlotString(rtx, Layout(rtx, {"1g.24gb+gfx@0", "1g.24gb+me@1", "2g.48gb@2"})), "gm22");
}

TEST(MigLayoutScore, FreeScoreAndMaximality) {
  const GpuModel& m = Model("A100-SXM4-40GB");
  EXPECT_EQ(FreeScore(m, {}), 8);
  EXPECT_EQ(FreeScore(m, Layout(m, {"1g.5gb@6"})), 4);
  EXPECT_EQ(FreeScore(m, Layout(m, {"1g.5gb@0", "1g.5gb@6"})), 2);
  EXPECT_EQ(FreeScore(m, Layout(m, {"3g.20gb@0", "3g.20gb@4"})), 0);
  EXPECT_TRUE(IsMaximal(m, Layout(m, {"4g.20gb@0", "2g.10gb@4", "1g.5gb@6"})));
  EXPECT_FALSE(IsMaximal(m, Layout(m, {"4g.20gb@0", "2g.10gb@4"})));
  // Maximal with respect to the allowed profiles: no 2g starts at 6.
  EXPECT_TRUE(IsMaximal(m, Layout(m, {"4g.20gb@0", "2g.10gb@4"}), Profiles(m, {"2g.10gb"})));
  EXPECT_FALSE(CanAdd(m, Layout(m, {"1g.5gb+me@0"}), *FindProfile(m, "1g.5gb+me"), 1));
  EXPECT_TRUE(CanAdd(m, Layout(m, {"1g.5gb+me@0"}), *FindProfile(m, "1g.5gb"), 1));
  EXPECT_FALSE(CanAdd(m, {}, *FindProfile(m, "1g.5gb"), 7));
  EXPECT_FALSE(CanAdd(m, {}, 99, 0));
}

TEST(MigLayoutForCounts, PrefersSlotsThatKeepLargeProfilesOpen) {
  const GpuModel& m = Model("A100-SXM4-40GB");
  auto one = LayoutForCounts(m, Counts(m, {{"1g.5gb", 1}}));
  ASSERT_TRUE(one);
  EXPECT_EQ(SlotString(m, *one), "......1.");
  auto two = LayoutForCounts(m, Counts(m, {{"2g.10gb", 1}, {"1g.5gb", 1}}));
  EXPECT_EQ(SlotString(m, *two), "....221.");
  const MigLayout keep = Layout(m, {"1g.5gb@0"});
  auto kept = LayoutForCounts(m, Counts(m, {{"1g.5gb", 2}, {"3g.20gb", 1}}), keep);
  ASSERT_TRUE(kept);
  EXPECT_EQ(SlotString(m, *kept), "11..3333");
  EXPECT_FALSE(LayoutForCounts(m, Counts(m, {{"4g.20gb", 1}}), keep));
  EXPECT_FALSE(LayoutForCounts(m, Counts(m, {}), keep));  // fewer than keep holds
  EXPECT_FALSE(LayoutForCounts(m, {1, 2}));               // wrong size
  EXPECT_EQ(LayoutForCounts(m, Counts(m, {})), MigLayout{});
}

}  // namespace
}  // namespace accel::sharing
