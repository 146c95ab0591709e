// libFuzzer target: arbitrary bytes as a mig-parted v1 config file or a Kubernetes ConfigMap
// holding one (what `accel mig validate` reads), then write the config back out, read that
// again, and resolve and validate the entries on every catalog model.
//
// Only accel::InputError may leave ParseMigPartedDocument; anything else is a bug, and so is a
// config that breaks the reader's promises, a written file that does not read back to the same
// config, or writing that is not stable.
//   scripts/fuzz.sh builds it (clang, -fsanitize=fuzzer,address,undefined), or by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc
//     fuzz/mig_parted_config_fuzz.cc src/common/*.cc src/sharing/*.cc -lyaml-cpp
//   ./mig_parted_config_fuzz -max_len=8192 fuzz/corpus/mig_parted_config examples/mig
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.h"
#include "sharing/mig_parted_config.h"
#include "sharing/mig_parted_configmap.h"

namespace {

using namespace accel::sharing;

void Check(bool ok) {
  if (!ok) std::abort();
}

// What ParseMigPartedConfig promises about every config it returns.
void CheckRead(const MigPartedConfig& config) {
  Check(!config.configs.empty());
  for (const MigConfig& c : config.configs) {
    Check(!c.name.empty() && !c.entries.empty() && config.Find(c.name) == &c);
    for (const MigConfigEntry& e : c.entries) {
      Check(e.line >= 1);
      Check(!e.all_devices || e.devices.empty());
      for (int d : e.devices) Check(d >= 0);
      Check(!e.device_filter_scalar || e.device_filter.size() == 1);
      Check(e.mig_enabled || e.mig_devices.empty());
      bool positive = false;
      for (const auto& [profile, count] : e.mig_devices) {
        Check(count >= 0 && ParseProfileName(profile).has_value());
        positive = positive || count > 0;
      }
      Check(e.mig_devices.empty() || positive);
    }
  }
}

bool SameEntry(const MigConfigEntry& a, const MigConfigEntry& b) {
  return a.all_devices == b.all_devices && a.devices == b.devices && a.device_filter == b.device_filter &&
         a.device_filter_scalar == b.device_filter_scalar && a.mig_enabled == b.mig_enabled &&
         a.mig_devices == b.mig_devices;
}

bool Same(const MigPartedConfig& a, const MigPartedConfig& b) {
  if (a.configs.size() != b.configs.size()) return false;
  for (size_t c = 0; c < a.configs.size(); ++c) {
    const MigConfig& x = a.configs[c];
    const MigConfig& y = b.configs[c];
    if (x.name != y.name || x.entries.size() != y.entries.size()) return false;
    for (size_t i = 0; i < x.entries.size(); ++i) {
      if (!SameEntry(x.entries[i], y.entries[i])) return false;
    }
  }
  return true;
}

void CheckSemantics(const MigPartedConfig& config) {
  size_t entries = 0;
  for (const MigConfig& c : config.configs) {
    for (const MigConfigEntry& e : c.entries) {
      ++entries;
      for (const GpuModel& m : MigCatalog()) {
        EntryMatchesModel(e, m);
        std::string why;
        std::optional<EntryOnModel> on = ResolveEntry(e, m, &why);
        Check(on ? on->gpu_instances.size() == m.profiles.size() : !why.empty());
        if (on) {
          for (int n : on->gpu_instances) Check(n >= 0);
        }
      }
    }
  }
  // Validation places instances; keep it to small files so each run stays fast.
  if (entries <= 16) {
    const std::vector<ConfigFinding> findings = ValidateMigPartedConfig(config);
    for (const ConfigFinding& f : findings) {
      Check(config.Find(f.config) != nullptr && !f.message.empty());
    }
    // An error is an error whatever the warnings around it.
    Check(HasErrors(findings) == std::any_of(findings.begin(), findings.end(), [](const ConfigFinding& f) {
            return f.severity == ConfigFinding::Severity::kError;
          }));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  MigPartedDocument doc;
  try {
    doc = ParseMigPartedDocument(text, "fuzz input");
  } catch (const accel::InputError&) {
    return 0;
  }
  const MigPartedConfig& config = doc.config;
  if (doc.configmap) {
    const ConfigMapSource& from = *doc.configmap;
    Check(std::find(from.keys.begin(), from.keys.end(), from.key) != from.keys.end());
  }
  CheckRead(config);
  std::string written = WriteMigPartedConfig(config);
  MigPartedConfig again;
  try {
    again = ParseMigPartedConfig(written, "written");
  } catch (const accel::InputError&) {
    std::abort();  // what we write must read back
  }
  Check(Same(config, again));
  Check(WriteMigPartedConfig(again) == written);
  CheckSemantics(config);
  return 0;
}
