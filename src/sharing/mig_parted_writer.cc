// Writing mig-parted v1 files the way NVIDIA's own files look (deployments/systemd/
// config-default.yaml): flow-style devices and device-filter, quoted profile keys, a blank line
// between configs, and a comment naming the GPU models a device-filter selects.
#include <cstdio>
#include <sstream>

#include "sharing/mig_parted_config.h"

namespace accel::sharing {

namespace {

// YAML 1.1 words mig-parted's reader would turn into booleans or null.
bool IsReservedWord(std::string_view s) {
  static const char* const kWords[] = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"};
  for (const char* w : kWords) {
    std::string_view word(w);
    if (s.size() != word.size()) continue;
    bool same = true;
    for (size_t i = 0; i < s.size(); ++i) same = same && (s[i] | 0x20) == word[i];
    if (same) return true;
  }
  return false;
}

// Plain when it starts with a letter and holds only name characters, as NVIDIA's names do.
bool CanBePlain(std::string_view s) {
  if (s.empty() || !((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') || IsReservedWord(s)) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == '_' || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

// Double-quoted YAML; the Unicode line and page separators, NEL and BOM are escaped so that no
// reader takes them for structure.
std::string DoubleQuoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::string_view rest = s.substr(i);
    char buf[8];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else if (rest.substr(0, 2) == "\xC2\x85") {
      out += "\\N";
      ++i;
    } else if (rest.substr(0, 3) == "\xE2\x80\xA8" || rest.substr(0, 3) == "\xE2\x80\xA9" ||
               rest.substr(0, 3) == "\xEF\xBB\xBF") {
      out += rest[2] == '\xA8' ? "\\L" : rest[2] == '\xA9' ? "\\P" : "\\uFEFF";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Key(std::string_view s) {
  return CanBePlain(s) ? std::string(s) : DoubleQuoted(s);
}

std::string FlowFilters(const MigConfigEntry& entry) {
  if (entry.device_filter_scalar && entry.device_filter.size() == 1) {
    return "\"" + entry.device_filter[0].ToString() + "\"";
  }
  std::string out = "[";
  for (size_t i = 0; i < entry.device_filter.size(); ++i) {
    out += (i ? ", \"" : "\"") + entry.device_filter[i].ToString() + "\"";
  }
  return out + "]";
}

std::string FlowDevices(const MigConfigEntry& entry) {
  if (entry.all_devices) return "all";
  std::string out = "[";
  for (size_t i = 0; i < entry.devices.size(); ++i) out += (i ? ", " : "") + std::to_string(entry.devices[i]);
  return out + "]";
}

// "# H100-SXM5-80GB, A100-80GB": the catalog models a filter selects, for a person reading it.
std::string ModelComment(const MigConfigEntry& entry) {
  std::vector<std::string> names;
  for (const DeviceFilter& f : entry.device_filter) {
    const GpuModel* model = FindGpuModelByPciId(f.pci_id);
    if (model == nullptr) continue;
    bool seen = false;
    for (const std::string& n : names) seen = seen || n == model->name;
    if (!seen) names.push_back(model->name);
  }
  if (names.empty()) return "";
  std::string out = "    #";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + names[i];
  return out + "\n";
}

void WriteEntry(std::ostringstream& out, const MigConfigEntry& entry) {
  out << ModelComment(entry);
  const char* lead = "    - ";
  if (!entry.device_filter.empty()) {
    out << lead << "device-filter: " << FlowFilters(entry) << "\n";
    lead = "      ";
  }
  out << lead << "devices: " << FlowDevices(entry) << "\n";
  out << "      mig-enabled: " << (entry.mig_enabled ? "true" : "false") << "\n";
  if (!entry.mig_enabled && entry.mig_devices.empty()) return;
  if (entry.mig_devices.empty()) {
    out << "      mig-devices: {}\n";
    return;
  }
  out << "      mig-devices:\n";
  for (const auto& [profile, count] : entry.mig_devices) {
    out << "        " << DoubleQuoted(profile) << ": " << count << "\n";
  }
}

}  // namespace

std::string DeviceFilter::ToString() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%04X%04X", static_cast<unsigned>(pci_id >> 16),
                static_cast<unsigned>(pci_id & 0xFFFF));
  std::string out = buf;
  if (subsystem_id) {
    std::snprintf(buf, sizeof buf, ":0x%04X%04X", static_cast<unsigned>(*subsystem_id >> 16),
                  static_cast<unsigned>(*subsystem_id & 0xFFFF));
    out += buf;
  }
  return out;
}

const MigConfig* MigPartedConfig::Find(std::string_view name) const {
  for (const MigConfig& c : configs) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string WriteMigPartedConfig(const MigPartedConfig& config) {
  std::ostringstream out;
  out << "version: v1\nmig-configs:\n";
  for (size_t i = 0; i < config.configs.size(); ++i) {
    const MigConfig& c = config.configs[i];
    if (i > 0) out << "\n";
    out << "  " << Key(c.name) << ":" << (c.entries.empty() ? " []" : "") << "\n";
    for (const MigConfigEntry& entry : c.entries) WriteEntry(out, entry);
  }
  return out.str();
}

}  // namespace accel::sharing
