// The nvidia.com/mig.config{,.state} labels as a node-feature-discovery feature file.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/atomic_file.h"
#include "common/error.h"
#include "sharing/mig_apply.h"

namespace accel::sharing {

namespace {

constexpr const char* kConfigKey = "nvidia.com/mig.config";
constexpr const char* kStateKey = "nvidia.com/mig.config.state";

// Kubernetes label value rules: at most 63 characters of [A-Za-z0-9._-], alphanumeric first
// and last (the empty value is allowed by Kubernetes but names no config).
bool ValidLabelValue(const std::string& value) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (value.empty() || value.size() > 63 || !alnum(value.front()) || !alnum(value.back()))
    return false;
  return std::all_of(value.begin(), value.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

}  // namespace

const char* MigConfigStateName(MigConfigState state) {
  switch (state) {
    case MigConfigState::kPending:
      return "pending";
    case MigConfigState::kSuccess:
      return "success";
    case MigConfigState::kFailed:
      return "failed";
  }
  return "failed";
}

void WriteMigConfigState(const std::string& path, const std::string& config, MigConfigState state) {
  if (!ValidLabelValue(config)) {
    throw InputError(path, kConfigKey, "\"" + config + "\" is not a valid label value",
                     "config names must be at most 63 letters, digits, '.', '_' or '-', starting "
                     "and ending with a letter or digit");
  }
  std::string text = std::string(kConfigKey) + "=" + config + "\n" + kStateKey + "=" +
                     MigConfigStateName(state) + "\n";
  WriteFileAtomically(path, text);
}

std::optional<MigConfigLabels> ReadMigConfigState(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::optional<std::string> config, state;
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == kConfigKey) config = value;
    if (key == kStateKey) state = value;
  }
  if (!config || !state) return std::nullopt;
  return MigConfigLabels{*config, *state};
}

}  // namespace accel::sharing
