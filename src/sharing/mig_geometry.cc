// Lookups over the MIG catalog (data in mig_catalog.cc) and go-nvlib's profile-name grammar.
#include "sharing/mig_geometry.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

namespace accel::sharing {
namespace {

constexpr uint32_t kNvidiaVendor = 0x10DE;

// Lower-case, without spaces, dashes, underscores and a leading "nvidia": the spelling-free
// key FindGpuModel compares.
std::string NormalizeModelName(std::string_view name) {
  std::string key;
  for (char ch : name) {
    if (ch == ' ' || ch == '-' || ch == '_' || ch == '\t') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (key.rfind("nvidia", 0) == 0) key.erase(0, 6);
  return key;
}

const std::map<std::string, const GpuModel*>& ModelsByKey() {
  static const auto* const index = [] {
    auto* m = new std::map<std::string, const GpuModel*>;
    for (const GpuModel& model : MigCatalog()) {
      m->emplace(NormalizeModelName(model.name), &model);
      for (const std::string& alias : model.aliases) m->emplace(NormalizeModelName(alias), &model);
    }
    return m;
  }();
  return *index;
}

// "0x233010DE" → 0x233010DE; "0x2330" → 0x233010DE. nullopt when `text` is no hex id.
std::optional<uint32_t> ParsePciId(std::string_view text) {
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return std::nullopt;
  text.remove_prefix(2);
  if (text.size() > 8) return std::nullopt;
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (text.size() <= 4) value = (value << 16) | kNvidiaVendor;
  return value;
}

// One "<N><suffix>" field of a profile name; nullopt unless N is a positive decimal number.
std::optional<int> ParseField(std::string_view field, std::string_view suffix) {
  if (field.size() <= suffix.size() || field.substr(field.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  field.remove_suffix(suffix.size());
  int value = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || end != field.data() + field.size() || value <= 0) return std::nullopt;
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  return parts;
}

// go-nvlib parseMigProfileAttributes. Returns "" when fine, else the reason.
std::string CheckAttributes(const std::vector<std::string_view>& attributes) {
  std::set<std::string_view> seen;
  for (std::string_view a : attributes) {
    if (a.empty()) return "empty attribute in list";
    if (!seen.insert(a).second) return "attribute '" + std::string(a) + "' given twice";
    if (std::isdigit(static_cast<unsigned char>(a.front()))) {
      return "attribute '" + std::string(a) + "' begins with a digit";
    }
    if (a.front() == '.' || a.back() == '.') {
      return "attribute '" + std::string(a) + "' begins or ends with a dot";
    }
    for (char ch : a) {
      if (ch != '.' && !std::isalnum(static_cast<unsigned char>(ch))) {
        return "attribute '" + std::string(a) + "' may hold only letters, digits and dots";
      }
    }
  }
  return "";
}

// mig-parted names configs after profiles with '+' written as '.' ("all-1g.10gb.me",
// "all-1g.24gb.me.all", "all-4g.96gb.gfx"); people paste those. The first '.' after the "gb"
// field becomes '+', so "1g.24gb.me.all" reads as "1g.24gb+me.all".
std::string CanonicalProfileSpelling(std::string_view name) {
  std::string s(name);
  const size_t gb = s.find("gb.");
  if (gb != std::string::npos && s.find_first_of("+-") == std::string::npos) s[gb + 2] = '+';
  return s;
}

std::optional<ProfileName> Fail(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return std::nullopt;
}

}  // namespace

const GpuModel* FindGpuModel(std::string_view name) {
  if (auto pci = ParsePciId(name)) return FindGpuModelByPciId(*pci);
  const auto& index = ModelsByKey();
  auto it = index.find(NormalizeModelName(name));
  return it == index.end() ? nullptr : it->second;
}

const GpuModel* FindGpuModelByPciId(uint32_t pci_id) {
  for (const GpuModel& model : MigCatalog()) {
    for (uint32_t id : model.pci_ids) {
      if (id == pci_id) return &model;
    }
  }
  return nullptr;
}

std::optional<int> FindProfile(const GpuModel& model, std::string_view name) {
  const std::string wanted = CanonicalProfileSpelling(name);
  for (size_t i = 0; i < model.profiles.size(); ++i) {
    if (model.profiles[i].name == wanted) return static_cast<int>(i);
  }
  for (size_t i = 0; i < model.profiles.size(); ++i) {
    if (IsOtherName(model.profiles[i], wanted)) return static_cast<int>(i);
  }
  return std::nullopt;
}

bool IsOtherName(const MigProfile& profile, std::string_view name) {
  const std::string wanted = CanonicalProfileSpelling(name);
  return std::find(profile.other_names.begin(), profile.other_names.end(), wanted) !=
         profile.other_names.end();
}

std::string AttributeSuffix(const MigProfile& profile) {
  const size_t sign = profile.name.find_first_of("+-");
  return sign == std::string::npos ? "" : profile.name.substr(sign);
}

std::optional<int> FindProfileById(const GpuModel& model, int profile_id) {
  if (profile_id < 0) return std::nullopt;
  for (size_t i = 0; i < model.profiles.size(); ++i) {
    if (model.profiles[i].profile_id == profile_id) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::string ProfileName::GpuInstanceName() const {
  ProfileName gi = *this;
  gi.compute_slices = gpu_slices;
  return gi.ToString();
}

std::string ProfileName::ToString() const {
  std::string s;
  if (compute_slices != gpu_slices) s = std::to_string(compute_slices) + "c.";
  s += std::to_string(gpu_slices) + "g." + std::to_string(memory_gb) + "gb";
  const auto append = [&s](char sign, const std::vector<std::string>& list) {
    for (size_t i = 0; i < list.size(); ++i) s += (i == 0 ? sign : ',') + list[i];
  };
  append('+', attributes);
  append('-', negated_attributes);
  return s;
}

std::optional<ProfileName> ParseProfileName(std::string_view text, std::string* why) {
  if (text.empty()) return Fail(why, "profile is the empty string");
  const size_t plus = text.find('+');
  const size_t minus = text.find('-');
  if (plus != std::string_view::npos && minus != std::string_view::npos) {
    return Fail(why, "profile '" + std::string(text) + "' has both '+' and '-' attributes");
  }
  const size_t sign = plus != std::string_view::npos ? plus : minus;
  ProfileName p;
  if (sign != std::string_view::npos) {
    std::vector<std::string_view> attrs = Split(text.substr(sign + 1), ',');
    if (std::string reason = CheckAttributes(attrs); !reason.empty()) return Fail(why, reason);
    auto& out = plus != std::string_view::npos ? p.attributes : p.negated_attributes;
    for (std::string_view a : attrs) out.emplace_back(a);
    text = text.substr(0, sign);
  }
  std::vector<std::string_view> fields = Split(text, '.');
  if (fields.size() != 2 && fields.size() != 3) {
    return Fail(why, "profile '" + std::string(text) +
                         "' needs the form [<C>c.]<G>g.<GB>gb (2 or 3 dot-separated fields)");
  }
  const bool with_c = fields.size() == 3;
  std::optional<int> c = with_c ? ParseField(fields[0], "c") : std::nullopt;
  std::optional<int> g = ParseField(fields[with_c ? 1 : 0], "g");
  std::optional<int> gb = ParseField(fields[with_c ? 2 : 1], "gb");
  if (with_c && !c) return Fail(why, "malformed '<C>c' field '" + std::string(fields[0]) + "'");
  if (!g) return Fail(why, "malformed '<G>g' field in '" + std::string(text) + "'");
  if (!gb) return Fail(why, "malformed '<GB>gb' field in '" + std::string(text) + "'");
  p.gpu_slices = *g;
  p.compute_slices = with_c ? *c : *g;
  p.memory_gb = *gb;
  if (p.compute_slices > p.gpu_slices) {
    return Fail(why, "compute slices (" + std::to_string(p.compute_slices) +
                         "c) exceed the GPU instance's slices (" + std::to_string(p.gpu_slices) +
                         "g)");
  }
  return p;
}

std::string ProfileNameList(const GpuModel& model) {
  std::string s;
  for (const MigProfile& p : model.profiles) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

}  // namespace accel::sharing
