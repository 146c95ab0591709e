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

namespace accel::sharing {
namespace {

const std::string kReference = ACCEL_SHARED_DIR "/reference/mig-profiles.json";

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
  if (!std::filesystem::exists(kReference)) GTEST_SKIP() << kReference << " not present";
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
  EXPECT_EQ(seen.size(), MigCatalog().size());
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
