// Reading mig-parted v1 files with mig-parted's own strict rules (api/spec/v1/spec.go), plus a few
// checks mig-parted leaves to apply time (device-filter syntax; duplicate keys, which YAML→JSON
// would silently collapse, are refused by the common check LoadOneDocument runs). Scalars are judged as mig-parted's YAML 1.1 reader would type them:
// an unquoted 0x233010DE is a number there, so it is refused as a device-filter.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <climits>

#include "common/error.h"
#include "common/structured_file.h"
#include "sharing/mig_parted_config.h"
#include "sharing/mig_parted_yaml.h"

namespace accel::sharing {

namespace {

using namespace parted_detail;

// A mapping's keys and values in file order, after checking that keys are scalars (a key given
// twice was refused when the text was loaded: LoadOneDocument).
struct Field {
  std::string key;
  YAML::Node value;
  int line = 0;
};

std::string Quoted(const std::string& s) {
  return "\"" + s + "\"";
}

class Reader {
 public:
  Reader(const std::string& source, int line_offset) : source_(source), line_offset_(line_offset) {}

  MigPartedConfig Read(const YAML::Node& root) {
    if (root.IsNull()) Fail(1, "", "the file is empty", "start it with `version: v1` and `mig-configs:`");
    if (!root.IsMap()) {
      Fail(LineOf(root, 1), "", "expected a mapping with `version` and `mig-configs`");
    }
    std::vector<Field> fields = Fields(root, "", 1);
    const Field* version = nullptr;
    const Field* configs = nullptr;
    for (const Field& f : fields) {
      if (f.key == "version") version = &f;
      if (f.key == "mig-configs") configs = &f;
    }
    if (version == nullptr) Fail(1, "version", "missing required field", "add `version: v1` at the top");
    if (!version->value.IsScalar() || version->value.Scalar() != "v1") {
      Fail(version->line, "version", "unknown version" + Shown(version->value),
           "mig-parted only knows `version: v1`");
    }
    for (const Field& f : fields) {
      if (&f != version && &f != configs) Unexpected(f, "");
    }
    if (configs == nullptr)
      Fail(version->line, "mig-configs", "missing required field",
           "add `mig-configs:` with at least one named config");
    return ReadConfigs(*configs);
  }

 private:
  [[noreturn]] void Fail(int line, const std::string& field, const std::string& problem,
                         const std::string& hint = "") const {
    throw InputError(source_ + ":" + std::to_string(line + line_offset_), field, problem, hint);
  }

  [[noreturn]] void Unexpected(const Field& f, const std::string& path) const {
    std::string hint = f.key == "<<" ? "YAML merge keys are not supported; write the fields out"
                                     : "mig-parted refuses unknown keys; check the spelling";
    Fail(f.line, Join(path, f.key), "unexpected field", hint);
  }

  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  static std::string Shown(const YAML::Node& node) {
    if (node.IsNull()) return " (empty)";
    if (!node.IsScalar()) return " (not a string)";
    std::string s = node.Scalar();
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return ": " + (IsPlain(node) ? s : Quoted(s));
  }

  std::vector<Field> Fields(const YAML::Node& map, const std::string& path, int line) {
    std::vector<Field> out;
    for (auto it = map.begin(); it != map.end(); ++it) {
      int key_line = LineOf(it->first, line);
      if (!it->first.IsScalar()) Fail(key_line, path, "a key is not a plain string");
      Count(key_line);
      out.push_back(Field{it->first.Scalar(), it->second, key_line});
    }
    return out;
  }

  MigPartedConfig ReadConfigs(const Field& configs) {
    if (!configs.value.IsMap() || configs.value.size() == 0) {
      Fail(configs.line, "mig-configs", "at least one named config is required",
           "write `mig-configs:` followed by `  <name>:` and a list of entries");
    }
    MigPartedConfig out;
    for (const Field& c : Fields(configs.value, "mig-configs", configs.line)) {
      std::string path = "mig-configs." + c.key;
      if (!IsCleanName(c.key)) {
        Fail(c.line, path, "config name is empty or has control characters or invalid UTF-8",
             "use a name such as all-1g.10gb");
      }
      if (!c.value.IsSequence() || c.value.size() == 0) {
        Fail(c.line, path, "at least one entry is required", "write a list: `- devices: all` ...");
      }
      MigConfig config{c.key, {}};
      for (size_t i = 0; i < c.value.size(); ++i) {
        Count(c.line);
        config.entries.push_back(ReadEntry(c.value[i], path + "[" + std::to_string(i) + "]", c.line));
        config.entries.back().line += line_offset_;
      }
      out.configs.push_back(std::move(config));
    }
    return out;
  }

  MigConfigEntry ReadEntry(const YAML::Node& node, const std::string& path, int parent_line) {
    MigConfigEntry entry;
    entry.line = LineOf(node, parent_line);
    if (!node.IsMap()) Fail(entry.line, path, "an entry must be a mapping", "e.g. `- devices: all`");
    std::vector<Field> fields = Fields(node, path, entry.line);
    const Field* devices = nullptr;
    const Field* enabled = nullptr;
    const Field* mig_devices = nullptr;
    for (const Field& f : fields) {
      if (f.key == "devices")
        devices = &f;
      else if (f.key == "mig-enabled")
        enabled = &f;
      else if (f.key == "mig-devices")
        mig_devices = &f;
      else if (f.key != "device-filter")
        Unexpected(f, path);
    }
    if (devices == nullptr)
      Fail(entry.line, Join(path, "devices"), "missing required field",
           "add `devices: all` or `devices: [0, 1]`");
    if (enabled == nullptr)
      Fail(entry.line, Join(path, "mig-enabled"), "missing required field",
           "add `mig-enabled: true` or `false`");
    for (const Field& f : fields) {
      if (f.key == "device-filter") ReadFilter(f, path, entry);
    }
    ReadDevices(*devices, path, entry);
    std::optional<bool> on = PlainBool(enabled->value);
    if (!on)
      Fail(enabled->line, Join(path, "mig-enabled"), "must be true or false" + Shown(enabled->value),
           "write it unquoted");
    entry.mig_enabled = *on;
    bool has_map = mig_devices != nullptr && !mig_devices->value.IsNull();
    if (has_map) ReadMigDevices(*mig_devices, Join(path, "mig-devices"), entry);
    if (entry.mig_enabled && !has_map) {
      Fail(enabled->line, Join(path, "mig-devices"), "missing required field when mig-enabled is true",
           "list the instances, e.g. `mig-devices: {\"1g.10gb\": 7}`, or `mig-devices: {}` for none");
    }
    if (!entry.mig_enabled && !entry.mig_devices.empty()) {
      Fail(mig_devices->line, Join(path, "mig-devices"), "MIG devices given while mig-enabled is false",
           "set `mig-enabled: true` or remove mig-devices");
    }
    return entry;
  }

  void ReadFilter(const Field& f, const std::string& path, MigConfigEntry& entry) {
    std::string field = Join(path, "device-filter");
    if (f.value.IsNull()) return;  // mig-parted reads null as "" = no filter
    if (f.value.IsScalar()) {
      if (!f.value.Scalar().empty()) entry.device_filter.push_back(OneFilter(f.value, field, f.line));
      entry.device_filter_scalar = !entry.device_filter.empty();
      return;
    }
    if (!f.value.IsSequence())
      Fail(f.line, field, "must be a string or a list of strings", "e.g. [\"0x233010DE\"]");
    for (size_t i = 0; i < f.value.size(); ++i) {
      Count(f.line);
      const YAML::Node& item = f.value[i];
      std::string item_field = field + "[" + std::to_string(i) + "]";
      if (!item.IsScalar()) Fail(LineOf(item, f.line), item_field, "must be a string", "e.g. \"0x233010DE\"");
      entry.device_filter.push_back(OneFilter(item, item_field, LineOf(item, f.line)));
    }
  }

  DeviceFilter OneFilter(const YAML::Node& node, const std::string& field, int line) {
    const std::string& text = node.Scalar();
    std::optional<DeviceFilter> filter = ParseDeviceFilter(text);
    if (!filter) {
      Fail(line, field, "not a PCI id: " + Quoted(text.substr(0, 40)),
           "write \"0x<device><vendor>\" such as \"0x233010DE\", optionally \":0x<subsystem "
           "device><subsystem vendor>\"");
    }
    if (IsPlain(node) && text.find(':') == std::string::npos) {
      Fail(line, field, "unquoted PCI id " + text + " is a number in YAML, not a string",
           "quote it: \"" + text + "\"");
    }
    return *filter;
  }

  void ReadDevices(const Field& f, const std::string& path, MigConfigEntry& entry) {
    std::string field = Join(path, "devices");
    const char* hint = "write `devices: all` or a list of GPU indices such as `devices: [0, 1]`";
    if (f.value.IsScalar() && f.value.Scalar() == "all") {
      entry.all_devices = true;
      return;
    }
    if (!f.value.IsSequence())
      Fail(f.line, field, "must be \"all\" or a list of GPU indices" + Shown(f.value), hint);
    entry.all_devices = false;
    for (size_t i = 0; i < f.value.size(); ++i) {
      Count(f.line);
      const YAML::Node& item = f.value[i];
      std::optional<long long> index = PlainDecimal(item);
      if (!index || *index < 0 || *index > INT_MAX) {
        Fail(LineOf(item, f.line), field + "[" + std::to_string(i) + "]",
             "GPU index must be a whole number >= 0" + Shown(item), hint);
      }
      entry.devices.push_back(static_cast<int>(*index));
    }
  }

  void ReadMigDevices(const Field& f, const std::string& field, MigConfigEntry& entry) {
    if (!f.value.IsMap())
      Fail(f.line, field, "must be a mapping of profile to count", "e.g. {\"1g.10gb\": 7}");
    bool any_positive = false;
    for (const Field& d : Fields(f.value, field, f.line)) {
      std::string key_field = field + "." + Quoted(d.key);
      std::string why;
      if (!ParseProfileName(d.key, &why)) {
        Fail(d.line, key_field, "not a MIG profile: " + why,
             "write e.g. \"1g.10gb\", \"1g.10gb+me\" or \"1c.3g.40gb\"");
      }
      std::optional<long long> count = PlainDecimal(d.value);
      int line = LineOf(d.value, d.line);
      if (!count)
        Fail(line, key_field, "count must be a whole number" + Shown(d.value), "write it unquoted, e.g. 2");
      if (*count < 0) Fail(line, key_field, "count must be >= 0, not " + std::to_string(*count));
      if (*count > INT_MAX) Fail(line, key_field, "count is too large: " + std::to_string(*count));
      any_positive = any_positive || *count > 0;
      entry.mig_devices.emplace_back(d.key, static_cast<int>(*count));
    }
    if (!entry.mig_devices.empty() && !any_positive) {
      Fail(f.line, field, "all counts are 0",
           "give at least one profile a count > 0, or write `mig-devices: {}`");
    }
  }

  // Aliases let a small file name the same list many times; what it expands to is bounded so
  // that reading and writing it back stay cheap.
  void Count(int line) {
    constexpr size_t kMaxValues = 20000;  // NVIDIA's default file has about 1500
    if (++values_ > kMaxValues) {
      Fail(line, "", "the file expands to more than " + std::to_string(kMaxValues) + " values",
           "YAML aliases (*name) repeat what they point to; write configs out instead");
    }
  }

  const std::string& source_;
  const int line_offset_;
  size_t values_ = 0;
};

}  // namespace

MigPartedConfig ParseMigPartedConfig(std::string_view yaml, const std::string& source,
                                     int first_line) {
  const int offset = first_line - 1;
  const auto where = [&](int line) { return source + ":" + std::to_string(line + offset); };
  YAML::Node root;
  try {
    root = LoadOneDocument(yaml, source, offset);
  } catch (const YAML::ParserException& e) {
    throw InputError(where(e.mark.is_null() ? 1 : e.mark.line + 1), "",
                     "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError(where(1), "", std::string("YAML error: ") + e.what());
  }
  try {
    return Reader(source, offset).Read(root);
  } catch (const YAML::Exception& e) {
    throw InputError(where(1), "", std::string("YAML error: ") + e.what());
  }
}

}  // namespace accel::sharing
