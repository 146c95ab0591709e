// The MIG catalog against the research data it was transcribed from, model lookup, and
// go-nvlib's profile-name grammar.
#include "sharing/mig_geometry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "support/shared_fixture.h"

namespace accel::sharing {
namespace mig_geometry_test {

const std::string kReference = test_support::SharedPath("reference/mig-profiles.json");

// Models added after the reference JSON was written, for NVIDIA's default mig-parted config
// (sources at each model in mig_catalog.cc); checked by AddedModelsAsPublished below.
const std::set<std::string> kAddedAfterReference = {"GB200-186GB", "B300-269GB", "GB300-278GB",
                                                    "RTX-PRO-6000-96GB"};

// "0x20B010DE (A100 SXM4 40GB)" → 0x20B010DE; "...=0x7" → 7.
uint32_t LeadingHex(const std::string& text) { return std::stoul(text, nullptr, 16); }
int TrailingHex(const std::string& text) {
  return static_cast<int>(std::stoul(text.substr(text.find('=') + 1), nullptr, 16));
}

// Read from a real H200's driver (docs/hardware-checks.md); they supersede the reference's
// unknown IDs and sizes and its "inferred" placements for that model.
struct Measured {
  int profile_id;
  double memory_gib;
};
const std::map<std::string, Measured>& MeasuredH200() {
  static const std::map<std::string, Measured> m = {
      {"1g.18gb", {19, 16.0}},  {"1g.18gb+me", {20, 16.0}}, {"1g.35gb", {15, 32.5}},
      {"2g.35gb", {14, 32.5}},  {"3g.71gb", {9, 69.75}},    {"4g.71gb", {5, 69.75}},
      {"7g.141gb", {0, 140.0}}};
  return m;
}

TEST(MigGeometryCatalog, MatchesReferenceJson) {
  ACCEL_REQUIRE_SHARED(kReference);
  std::ifstream in(kReference);
  const nlohmann::json ref = nlohmann::json::parse(in);
  std::set<std::string> seen;
  for (const auto& [name, gpu] : ref.at("gpus").items()) {
    SCOPED_TRACE(name);
    const GpuModel* model = FindGpuModel(name);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->name, name);
    seen.insert(name);
    EXPECT_EQ(model->memory_slices, gpu.at("memory_slices_total").get<int>());
    EXPECT_EQ(model->compute_slices, gpu.at("compute_slices_total").get<int>());
    EXPECT_EQ(model->min_driver, gpu.at("min_driver").get<std::string>());
    std::vector<uint32_t> pci;
    for (const auto& id : gpu.at("pci_device_ids")) {
      pci.push_back(LeadingHex(id.get<std::string>()));
    }
    EXPECT_EQ(model->pci_ids, pci);
    const auto& profiles = gpu.at("profiles");
    ASSERT_EQ(model->profiles.size(), profiles.size());
    for (size_t i = 0; i < profiles.size(); ++i) {
      const auto& want = profiles[i];
      const MigProfile& got = model->profiles[i];
      SCOPED_TRACE(got.name);
      EXPECT_EQ(got.name, want.at("name").get<std::string>());
      EXPECT_EQ(got.compute_slices, want.at("compute_slices").get<int>());
      EXPECT_EQ(got.memory_slices, want.at("memory_slices").get<int>());
      EXPECT_EQ(got.max_count, want.at("max_count").get<int>());
      EXPECT_EQ(got.nvml_profile, TrailingHex(want.at("nvml_profile_enum").get<std::string>()));
      const std::string kind = want.at("kind").get<std::string>();
      EXPECT_EQ(got.media_extension, kind.find("+me") != std::string::npos);
      const auto& id = want.at("profile_id");
      const bool inferred = !want.at("placements").is_array();
      const auto& placements = inferred ? want.at("placements_inferred") : want.at("placements");
      std::vector<int> starts;
      for (const auto& pl : placements) {
        starts.push_back(pl[0].get<int>());
        EXPECT_EQ(pl[1].get<int>(), got.memory_slices);
      }
      EXPECT_EQ(got.starts, starts);
      if (name == "H200-SXM5-141GB") {
        const Measured& m = MeasuredH200().at(got.name);
        EXPECT_EQ(got.profile_id, m.profile_id);
        EXPECT_DOUBLE_EQ(got.memory_gib, m.memory_gib);
        EXPECT_TRUE(got.confirmed);
        continue;
      }
      EXPECT_EQ(got.profile_id, id.is_number() ? id.get<int>() : -1);
      const auto& gib = want.at("memory_gib");
      EXPECT_DOUBLE_EQ(got.memory_gib, gib.is_number() ? gib.get<double>() : 0.0);
      EXPECT_EQ(got.confirmed, !inferred && id.is_number());
    }
  }
  for (const std::string& added : kAddedAfterReference) {
    EXPECT_TRUE(seen.insert(added).second) << added << " is in the reference now: check it there";
  }
  EXPECT_EQ(seen.size(), MigCatalog().size());
}

// The added models against what NVIDIA published: names and max counts as mig-parted's default
// config and the MIG user guide give them; RTX PRO 6000's IDs and GiB as its `nvidia-smi mig
// -lgip` prints them (bottlerocket-kernel-kit#300, container-engine-accelerators#564); GB200's
// first four IDs as mig-parted#227's listing. Nothing here was seen placed, so all unconfirmed.
TEST(MigGeometryCatalog, AddedModelsAsPublished) {
  struct Want {
    const char* name;
    int memory_slices;
    int max_count;
    int id;
    double gib;
    const char* attributes;
  };
  const std::map<std::string, std::vector<Want>> published = {
      {"RTX-PRO-6000-96GB",
       {{"1g.24gb", 1, 4, 14, 23.62, ""},
        {"1g.24gb+me", 1, 1, 21, 23.62, "+me"},
        {"1g.24gb+gfx", 1, 4, 47, 23.62, "+gfx"},
        {"1g.24gb+me.all", 1, 1, 65, 23.62, "+me.all"},
        {"1g.24gb-me", 1, 4, 67, 23.62, "-me"},
        {"2g.48gb", 2, 2, 5, 47.38, ""},
        {"2g.48gb+gfx", 2, 2, 35, 47.38, "+gfx"},
        {"2g.48gb+me.all", 2, 1, 64, 47.38, "+me.all"},
        {"2g.48gb-me", 2, 2, 66, 47.38, "-me"},
        {"4g.96gb", 4, 1, 0, 95.0, ""},
        {"4g.96gb+gfx", 4, 1, 32, 95.0, "+gfx"}}},
      {"GB200-186GB",
       {{"1g.23gb", 1, 7, 19, 22.0, ""},
        {"1g.23gb+me", 1, 1, 20, 22.0, "+me"},
        {"1g.47gb", 2, 4, 15, 45.5, ""},
        {"2g.47gb", 2, 3, 14, 45.5, ""},
        {"3g.93gb", 4, 2, -1, 0, ""},
        {"4g.93gb", 4, 1, -1, 0, ""},
        {"7g.186gb", 8, 1, -1, 0, ""}}},
      {"B300-269GB",
       {{"1g.34gb", 1, 7, -1, 0, ""},
        {"1g.34gb+me", 1, 1, -1, 0, "+me"},
        {"1g.67gb", 2, 4, -1, 0, ""},
        {"2g.67gb", 2, 3, -1, 0, ""},
        {"3g.135gb", 4, 2, -1, 0, ""},
        {"4g.135gb", 4, 1, -1, 0, ""},
        {"7g.269gb", 8, 1, -1, 0, ""}}},
      {"GB300-278GB",
       {{"1g.35gb", 1, 7, -1, 0, ""},
        {"1g.35gb+me", 1, 1, -1, 0, "+me"},
        {"1g.70gb", 2, 4, -1, 0, ""},
        {"2g.70gb", 2, 3, -1, 0, ""},
        {"3g.139gb", 4, 2, -1, 0, ""},
        {"4g.139gb", 4, 1, -1, 0, ""},
        {"7g.278gb", 8, 1, -1, 0, ""}}},
  };
  ASSERT_EQ(published.size(), kAddedAfterReference.size());
  for (const auto& [name, profiles] : published) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(kAddedAfterReference.count(name));
    const GpuModel* model = FindGpuModel(name);
    ASSERT_NE(model, nullptr);
    ASSERT_EQ(model->profiles.size(), profiles.size());
    for (size_t i = 0; i < profiles.size(); ++i) {
      const MigProfile& got = model->profiles[i];
      EXPECT_EQ(got.name, profiles[i].name);
      EXPECT_EQ(got.max_count, profiles[i].max_count) << got.name;
      EXPECT_EQ(got.profile_id, profiles[i].id) << got.name;
      EXPECT_DOUBLE_EQ(got.memory_gib, profiles[i].gib) << got.name;
      EXPECT_EQ(AttributeSuffix(got), profiles[i].attributes) << got.name;
      EXPECT_FALSE(got.confirmed) << got.name;
      // The published fraction of memory (1/8, 2/8, 4/8, full; 1/4, 1/2, full on RTX PRO).
      EXPECT_EQ(got.memory_slices, profiles[i].memory_slices) << got.name;
    }
  }
  const GpuModel& rtx = *FindGpuModel("RTX-PRO-6000-96GB");
  EXPECT_EQ(rtx.memory_slices, 4);
  EXPECT_EQ(rtx.compute_slices, 4);
  EXPECT_EQ(FindGpuModelByPciId(0x2BB510DE), &rtx);
  EXPECT_EQ(FindGpuModelByPciId(0x294110DE)->name, "GB200-186GB");
  EXPECT_EQ(FindGpuModelByPciId(0x318210DE)->name, "B300-269GB");
  EXPECT_EQ(FindGpuModelByPciId(0x31C210DE)->name, "GB300-278GB");
}

TEST(MigGeometryCatalog, ProfilesAreWellFormed) {
  for (const GpuModel& model : MigCatalog()) {
    SCOPED_TRACE(model.name);
    std::set<std::string> names;
    std::set<int> ids;
    int media = 0;
    for (const MigProfile& p : model.profiles) {
      EXPECT_TRUE(names.insert(p.name).second) << p.name;
      if (p.profile_id >= 0) {
        EXPECT_TRUE(ids.insert(p.profile_id).second) << p.name;
      }
      media += p.media_extension;
      EXPECT_FALSE(p.starts.empty());
      EXPECT_TRUE(std::is_sorted(p.starts.begin(), p.starts.end()));
      for (int s : p.starts) EXPECT_LE(s + p.memory_slices, model.memory_slices) << p.name;
      EXPECT_LE(p.compute_slices, model.compute_slices);
      std::string why;
      auto parsed = ParseProfileName(p.name, &why);
      ASSERT_TRUE(parsed) << p.name << ": " << why;
      EXPECT_EQ(parsed->gpu_slices, p.compute_slices);
      EXPECT_EQ(parsed->ToString(), p.name);
      EXPECT_EQ(FindProfile(model, p.name), &p - model.profiles.data());
    }
    EXPECT_GE(media, 1);
  }
}

TEST(MigGeometryFind, NamesAliasesAndNvmlProductNames) {
  const std::map<std::string, std::string> cases = {
      {"A100-SXM4-40GB", "A100-SXM4-40GB"},    {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"nvidia a100-pcie-40gb", "A100-SXM4-40GB"}, {"NVIDIA A100 80GB PCIe", "A100-80GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"},  {"NVIDIA A30", "A30-24GB"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"}, {"h100-80gb", "H100-SXM5-80GB"},
      {"H100-SXM5-80GB", "H100-SXM5-80GB"},    {"NVIDIA H100 PCIe", "H100-SXM5-80GB"},
      {"NVIDIA H100 NVL", "H100-NVL-94GB"},    {"NVIDIA H200", "H200-SXM5-141GB"},
      {"NVIDIA GH200 480GB", "GH200-96GB"},    {"NVIDIA B200", "B200-180GB"},
      {"GH200-144GB", "GH200-144GB"},          {"0x233010DE", "H100-SXM5-80GB"},
      {"0x2330", "H100-SXM5-80GB"},            {"0x20b7", "A30-24GB"},
      {"0x234810de", "GH200-144GB"},           {"0x2901", "B200-180GB"},
      {"NVIDIA GB200", "GB200-186GB"},          {"NVIDIA B300 SXM6 AC", "B300-269GB"},
      {"GB300", "GB300-278GB"},                {"0x2BB5", "RTX-PRO-6000-96GB"},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-96GB"},
      {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-96GB"},
  };
  for (const auto& [query, want] : cases) {
    const GpuModel* model = FindGpuModel(query);
    ASSERT_NE(model, nullptr) << query;
    EXPECT_EQ(model->name, want) << query;
  }
  for (const char* unknown : {"", "NVIDIA", "H100", "Tesla V100-SXM2-16GB", "0x1DB610DE", "0x"}) {
    EXPECT_EQ(FindGpuModel(unknown), nullptr) << unknown;
  }
  EXPECT_EQ(FindGpuModelByPciId(0x20B010DE)->name, "A100-SXM4-40GB");
  EXPECT_EQ(FindGpuModelByPciId(0x20B0), nullptr);
}

TEST(MigGeometryFind, NoTwoModelsShareANameOrPciId) {
  std::map<uint32_t, std::string> pci;
  for (const GpuModel& model : MigCatalog()) {
    EXPECT_EQ(FindGpuModel(model.name), &model);
    for (const std::string& alias : model.aliases) EXPECT_EQ(FindGpuModel(alias), &model) << alias;
    for (uint32_t id : model.pci_ids) EXPECT_TRUE(pci.emplace(id, model.name).second) << id;
  }
}

TEST(MigGeometryFind, ProfileNamesAreModelSpecific) {
  const GpuModel& a100 = *FindGpuModel("A100-SXM4-40GB");
  const GpuModel& h100 = *FindGpuModel("H100-SXM5-80GB");
  const GpuModel& a30 = *FindGpuModel("A30-24GB");
  EXPECT_EQ(a100.profiles[*FindProfile(a100, "1g.10gb")].memory_slices, 2);
  EXPECT_EQ(h100.profiles[*FindProfile(h100, "1g.10gb")].memory_slices, 1);
  EXPECT_EQ(FindProfile(h100, "1g.10gb.me"), FindProfile(h100, "1g.10gb+me"));
  EXPECT_TRUE(h100.profiles[*FindProfile(h100, "1g.10gb.me")].media_extension);
  EXPECT_FALSE(FindProfile(h100, "1g.5gb"));
  EXPECT_FALSE(FindProfile(a100, "1c.3g.20gb"));
  EXPECT_EQ(a100.profiles[*FindProfileById(a100, 14)].name, "2g.10gb");
  EXPECT_EQ(a30.profiles[*FindProfileById(a30, 14)].name, "1g.6gb");
  EXPECT_FALSE(FindProfileById(a30, 19));
  EXPECT_FALSE(FindProfileById(*FindGpuModel("B200-180GB"), -1));
}

TEST(MigGeometryFind, BlackwellAttributesAndTheirConfigNameSpellings) {
  const GpuModel& rtx = *FindGpuModel("RTX-PRO-6000-96GB");
  auto at = [&](const char* name) -> const MigProfile& { return rtx.profiles.at(*FindProfile(rtx, name)); };
  EXPECT_TRUE(at("1g.24gb+me.all").all_media);
  EXPECT_TRUE(at("1g.24gb+me.all").media_extension);
  EXPECT_TRUE(at("2g.48gb-me").no_media);
  EXPECT_TRUE(at("4g.96gb+gfx").graphics);
  EXPECT_TRUE(at("1g.24gb+me").media_extension);
  EXPECT_FALSE(at("1g.24gb+me").all_media);
  const MigProfile& plain = at("2g.48gb");
  EXPECT_FALSE(plain.media_extension || plain.all_media || plain.no_media || plain.graphics);
  // mig-parted's config names spell '+' as '.': all-1g.24gb.me.all, all-4g.96gb.gfx.
  EXPECT_EQ(FindProfile(rtx, "1g.24gb.me.all"), FindProfile(rtx, "1g.24gb+me.all"));
  EXPECT_EQ(FindProfile(rtx, "4g.96gb.gfx"), FindProfile(rtx, "4g.96gb+gfx"));
  EXPECT_EQ(FindProfile(rtx, "1g.24gb.me"), FindProfile(rtx, "1g.24gb+me"));
  EXPECT_NE(FindProfile(rtx, "1g.24gb.me"), FindProfile(rtx, "1g.24gb.me.all"));
  EXPECT_FALSE(FindProfile(rtx, "1g.24gb+gfx,me"));
  EXPECT_FALSE(FindProfile(rtx, "1g.24gb+me.al"));
  EXPECT_EQ(AttributeSuffix(at("1g.24gb-me")), "-me");
  EXPECT_EQ(AttributeSuffix(plain), "");
}

TEST(MigGeometryFind, OtherNamesSelectTheSameProfile) {
  const GpuModel& gb200 = *FindGpuModel("GB200-186GB");
  for (const auto& [other, printed] : std::vector<std::pair<std::string, std::string>>{
           {"7g.189gb", "7g.186gb"}, {"3g.95gb", "3g.93gb"}, {"4g.95gb", "4g.93gb"},
           {"1g.24gb", "1g.23gb"}, {"1g.24gb+me", "1g.23gb+me"}, {"1g.24gb.me", "1g.23gb+me"}}) {
    auto p = FindProfile(gb200, other);
    ASSERT_TRUE(p) << other;
    EXPECT_EQ(gb200.profiles[*p].name, printed) << other;
    EXPECT_TRUE(IsOtherName(gb200.profiles[*p], other)) << other;
    EXPECT_FALSE(IsOtherName(gb200.profiles[*p], printed)) << other;
  }
  // Other names never shadow a profile's own name on another model.
  const GpuModel& nvl = *FindGpuModel("H100-NVL-94GB");
  EXPECT_EQ(nvl.profiles[*FindProfile(nvl, "1g.24gb")].memory_slices, 2);
}

TEST(MigGeometryProfileName, ParsesGoNvlibGrammar) {
  auto p = ParseProfileName("1c.3g.40gb");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->compute_slices, 1);
  EXPECT_EQ(p->gpu_slices, 3);
  EXPECT_EQ(p->memory_gb, 40);
  EXPECT_EQ(p->GpuInstanceName(), "3g.40gb");
  EXPECT_EQ(p->ToString(), "1c.3g.40gb");
  EXPECT_EQ(ParseProfileName("3c.3g.40gb")->ToString(), "3g.40gb");
  auto me = ParseProfileName("1g.10gb+me");
  ASSERT_TRUE(me);
  EXPECT_EQ(me->attributes, std::vector<std::string>{"me"});
  EXPECT_EQ(me->GpuInstanceName(), "1g.10gb+me");
  auto multi = ParseProfileName("1g.24gb+me.all,gfx");
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->attributes, (std::vector<std::string>{"me.all", "gfx"}));
  EXPECT_EQ(multi->ToString(), "1g.24gb+me.all,gfx");
  auto neg = ParseProfileName("2g.48gb-me");
  ASSERT_TRUE(neg);
  EXPECT_EQ(neg->negated_attributes, std::vector<std::string>{"me"});
  EXPECT_EQ(neg->ToString(), "2g.48gb-me");
}

TEST(MigGeometryProfileName, RejectsMalformedNames) {
  for (const char* bad :
       {"", "1g", "1g.5", "g.5gb", "1x.5gb", "1g.5gb.", "1c.2c.3g.5gb", "1g.5gb+", "1g.5gb+me,me",
        "1g.5gb+me,", "1g.5gb+1me", "1g.5gb+.me", "1g.5gb+me.", "1g.5gb+m e", "1g.5gb+me-gfx",
        "0g.5gb", "4c.3g.20gb", " 1g.5gb", "1g.5gb ", "1g.05gbx", "+me"}) {
    std::string why;
    EXPECT_FALSE(ParseProfileName(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

}  // namespace
}  // namespace accel::sharing
