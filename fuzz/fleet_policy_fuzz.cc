// libFuzzer target: what operators hand `accel fleet host add|update|list` — a host policy file
// (YAML or JSON, nova.conf option names) and label / --where terms.
//
// The input is parsed whole as a policy document (ParseStructuredText + HostPolicyFromJson), and
// each of its lines as a --label (ParseLabel) and as a --where term (ParseRequirement). Only
// accel::InputError may leave them. What parses must survive the way the store keeps it: a
// policy through its JSON text form (HostPolicyToJson, dump, parse, HostPolicyFromJson) reads back
// to the same policy; a label re-parses from key=value to itself; a term re-parses from its
// ToString() to itself. A violation aborts.
//   scripts/fuzz.sh builds it with the others (fuzz/CMakeLists.txt); seeds in fuzz/corpus/fleet_policy/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/structured_file.h"
#include "fleet/host_policy_file.h"
#include "fleet/labels.h"

namespace {

using namespace accel::fleet;

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzPolicy(std::string_view text) {
  accel::placement::HostPolicy policy;
  try {
    policy = HostPolicyFromJson(accel::ParseStructuredText(text, "fuzz policy"), "fuzz policy");
  } catch (const accel::InputError&) {
    return;
  }
  Check(policy.cpu_allocation_ratio > 0 && policy.cpu_allocation_ratio <= 1000);
  const nlohmann::json stored = HostPolicyToJson(policy);
  accel::placement::HostPolicy again;
  try {
    again = HostPolicyFromJson(nlohmann::json::parse(stored.dump()), "stored policy");
  } catch (const std::exception&) {
    std::abort();  // what the store writes must read back
  }
  Check(HostPolicyToJson(again) == stored);
  Check(again.cpu_dedicated_set == policy.cpu_dedicated_set && again.cpu_shared_set == policy.cpu_shared_set);
  Check(again.cpu_allocation_ratio == policy.cpu_allocation_ratio);
  Check(again.reserved_host_memory_mib_per_node == policy.reserved_host_memory_mib_per_node);
  Check(again.strategy == policy.strategy);
}

void FuzzLabel(const std::string& line) {
  std::pair<std::string, std::string> label;
  try {
    label = ParseLabel(line, "--label");
  } catch (const accel::InputError&) {
    return;
  }
  Check(!label.first.empty() && label.first.size() <= 253 + 1 + 63 && label.second.size() <= 63);
  Check(label.first + "=" + label.second == line);
  try {
    Check(ParseLabel(label.first + "=" + label.second, "again") == label);
    // Every valid label is a valid --where term selecting exactly it.
    const LabelRequirement r = ParseRequirement(line, "--where");
    Check(r.op == LabelRequirement::kEquals && r.Matches({{label.first, label.second}}));
  } catch (const accel::InputError&) {
    std::abort();
  }
}

void FuzzRequirement(const std::string& line) {
  LabelRequirement r;
  try {
    r = ParseRequirement(line, "--where");
  } catch (const accel::InputError&) {
    return;
  }
  Check(!r.key.empty());
  try {
    const LabelRequirement again = ParseRequirement(r.ToString(), "again");
    Check(again.op == r.op && again.key == r.key && again.value == r.value);
  } catch (const accel::InputError&) {
    std::abort();
  }
  // The four operators partition: a host without the key, with the value, with another value.
  const Labels without = {}, with = {{r.key, r.value}}, other = {{r.key, r.value + "x"}};
  switch (r.op) {
    case LabelRequirement::kEquals: Check(!r.Matches(without) && r.Matches(with) && !r.Matches(other)); break;
    case LabelRequirement::kNotEquals: Check(r.Matches(without) && !r.Matches(with) && r.Matches(other)); break;
    case LabelRequirement::kExists: Check(!r.Matches(without) && r.Matches(with)); break;
    case LabelRequirement::kNotExists: Check(r.Matches(without) && !r.Matches(with)); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzPolicy(text);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(text.substr(start, end - start));
    FuzzLabel(line);
    FuzzRequirement(line);
    start = end + 1;
  }
  return 0;
}
