#include "fleet/host_policy_file.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"

namespace accel::fleet {

namespace {

const std::vector<std::string_view> kKeys = {"cpu_dedicated_set", "cpu_shared_set",
                                             "cpu_allocation_ratio", "reserved_host_memory_mb",
                                             "packing_host_numa_cells_allocation_strategy"};

CpuSet CpuSetField(const nlohmann::json& v, const std::string& where, const std::string& key) {
  if (!v.is_string())
    throw InputError(where, key, "must be a CPU list string", "e.g. " + key + ": \"2-31,34-63\"");
  CpuSet set;
  std::string err;
  if (!CpuSet::Parse(v.get<std::string>(), &set, &err))
    throw InputError(where, key, err, "e.g. " + key + ": \"2-31,34-63\"");
  return set;
}

}  // namespace

placement::HostPolicy HostPolicyFromJson(const nlohmann::json& doc, const std::string& where) {
  placement::HostPolicy p;
  if (doc.is_null()) return p;
  if (!doc.is_object())
    throw InputError(where, "", "a host policy must be a mapping of nova.conf option names",
                     "e.g. cpu_dedicated_set: \"2-31\"");
  for (const auto& [key, v] : doc.items()) {
    if (key == "cpu_dedicated_set") {
      p.cpu_dedicated_set = CpuSetField(v, where, key);
    } else if (key == "cpu_shared_set") {
      p.cpu_shared_set = CpuSetField(v, where, key);
    } else if (key == "cpu_allocation_ratio") {
      if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() > 1000)
        throw InputError(where, key, "must be a number above 0 (at most 1000)", "e.g. 4.0");
      p.cpu_allocation_ratio = v.get<double>();
    } else if (key == "reserved_host_memory_mb") {
      if (!v.is_number_integer() || v.get<long long>() < 0)
        throw InputError(where, key, "must be a whole number of MiB, 0 or more", "e.g. 4096");
      p.reserved_host_memory_mib_per_node = v.get<uint64_t>();
    } else if (key == "packing_host_numa_cells_allocation_strategy") {
      if (!v.is_boolean()) throw InputError(where, key, "must be true (pack) or false (spread)");
      p.strategy = v.get<bool>() ? placement::Strategy::kPack : placement::Strategy::kSpread;
    } else {
      std::string near(ClosestMatch(key, kKeys, 4));
      throw InputError(where, key, "unknown host policy key",
                       near.empty() ? "known: cpu_dedicated_set, cpu_shared_set, cpu_allocation_ratio, "
                                      "reserved_host_memory_mb, packing_host_numa_cells_allocation_strategy"
                                    : "did you mean " + near + "?");
    }
  }
  return p;
}

placement::HostPolicy LoadHostPolicy(const std::string& path) {
  return HostPolicyFromJson(ReadStructuredFile(path), path);
}

nlohmann::json HostPolicyToJson(const placement::HostPolicy& p) {
  nlohmann::json j = nlohmann::json::object();
  if (p.cpu_dedicated_set) j["cpu_dedicated_set"] = p.cpu_dedicated_set->ToString();
  if (p.cpu_shared_set) j["cpu_shared_set"] = p.cpu_shared_set->ToString();
  const placement::HostPolicy defaults;
  if (p.cpu_allocation_ratio != defaults.cpu_allocation_ratio) j["cpu_allocation_ratio"] = p.cpu_allocation_ratio;
  if (p.reserved_host_memory_mib_per_node != 0) j["reserved_host_memory_mb"] = p.reserved_host_memory_mib_per_node;
  if (p.strategy != defaults.strategy)
    j["packing_host_numa_cells_allocation_strategy"] = p.strategy == placement::Strategy::kPack;
  return j;
}

}  // namespace accel::fleet
