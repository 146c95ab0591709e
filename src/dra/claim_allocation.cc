#include "dra/claim_allocation.h"

#include "common/error.h"

namespace accel::dra {

namespace {

using Json = nlohmann::json;

constexpr const char* kParametersApiVersion = "accel.io/v1alpha1";
constexpr const char* kParametersKind = "ClaimParameters";

// Reads claims field by field with the path of each, so every error names the field.
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void Fail(const std::string& field, const std::string& problem,
                         const std::string& hint = "") const {
    throw InputError(where_, field, problem, hint);
  }

  // The member `key` of object `obj` (at `path`), or null when absent or null.
  const Json* Member(const Json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) Fail(path, "is not an object");
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  const Json& Object(const Json& obj, const std::string& path, const char* key,
                     const std::string& missing_problem) const {
    const Json* v = Member(obj, path, key);
    std::string field = Join(path, key);
    if (!v) Fail(field, missing_problem);
    if (!v->is_object()) Fail(field, "is not an object");
    return *v;
  }

  // A string member; "" when absent. `required`: absent or empty is an error.
  std::string String(const Json& obj, const std::string& path, const char* key,
                     bool required) const {
    const Json* v = Member(obj, path, key);
    std::string field = Join(path, key);
    if (!v) {
      if (required) Fail(field, "is missing");
      return "";
    }
    if (!v->is_string()) Fail(field, "is not a string");
    std::string s = v->get<std::string>();
    if (required && s.empty()) Fail(field, "is empty");
    return s;
  }

  bool Bool(const Json& obj, const std::string& path, const char* key, bool fallback) const {
    const Json* v = Member(obj, path, key);
    if (!v) return fallback;
    if (!v->is_boolean()) Fail(Join(path, key), "is not a boolean");
    return v->get<bool>();
  }

  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string where_;
};

void ReadParameters(const Reader& r, const Json& params, const std::string& path,
                    ClaimParameters* out) {
  if (!params.is_object()) r.Fail(path, "is not an object");
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string& key = it.key();
    std::string field = Reader::Join(path, key);
    if (key == "apiVersion") {
      if (!it->is_string() || it->get<std::string>() != kParametersApiVersion)
        r.Fail(field, "is not \"" + std::string(kParametersApiVersion) + "\"");
    } else if (key == "kind") {
      if (!it->is_string() || it->get<std::string>() != kParametersKind)
        r.Fail(field, "is not \"" + std::string(kParametersKind) + "\"");
    } else if (key == "nccl") {
      out->nccl = r.Bool(params, path, "nccl", true);
    } else if (key == "ncclSocketIfname") {
      if (it->is_null()) continue;
      if (!it->is_string()) r.Fail(field, "is not a string");
      std::string ifname = it->get<std::string>();
      // NCCL reads a list of prefixes; keep the value to what an interface list can hold, so
      // the CDI env stays one plain line.
      for (char c : ifname) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_' || c == ',' || c == '=' || c == '^' ||
                  c == ':' || c == '@';
        if (!ok)
          r.Fail(field, "has a character an interface name list cannot hold",
                 "interface names, comma-separated, optionally prefixed by '=' or '^'");
      }
      if (ifname.size() > 256) r.Fail(field, "is longer than 256 characters");
      out->socket_ifname = ifname;
    } else {
      r.Fail(field, "is not a known parameter",
             "known: apiVersion, kind, nccl, ncclSocketIfname");
    }
  }
}

}  // namespace

ClaimAllocation ParseClaimAllocation(const Json& claim, const ClaimRef& ref,
                                     const std::string& driver) {
  Reader pre("ResourceClaim " + ref.namespace_ + "/" + ref.name);
  if (!claim.is_object()) pre.Fail("", "is not a JSON object");
  ClaimAllocation out;
  const Json& metadata = pre.Object(claim, "", "metadata", "is missing");
  out.uid = pre.String(metadata, "metadata", "uid", true);
  out.namespace_ = pre.String(metadata, "metadata", "namespace", false);
  out.name = pre.String(metadata, "metadata", "name", false);
  Reader r("ResourceClaim " + (out.namespace_.empty() ? ref.namespace_ : out.namespace_) + "/" +
           (out.name.empty() ? ref.name : out.name));
  if (!ref.uid.empty() && out.uid != ref.uid)
    r.Fail("metadata.uid",
           "is " + out.uid + ", not " + ref.uid +
               " as the kubelet asked: the claim was deleted and re-created since",
           "the kubelet retries with the new claim");
  if (out.namespace_.empty()) out.namespace_ = ref.namespace_;
  if (out.name.empty()) out.name = ref.name;

  const Json* status = r.Member(claim, "", "status");
  if (!status) r.Fail("status.allocation", "is missing: the claim is not allocated");
  if (!status->is_object()) r.Fail("status", "is not an object");
  const Json& allocation =
      r.Object(*status, "status", "allocation", "is missing: the claim is not allocated");
  const Json* devices = r.Member(allocation, "status.allocation", "devices");
  if (!devices) return out;  // allocated, but no devices at all (nothing of ours)
  if (!devices->is_object()) r.Fail("status.allocation.devices", "is not an object");
  const std::string dpath = "status.allocation.devices";

  if (const Json* results = r.Member(*devices, dpath, "results")) {
    if (!results->is_array()) r.Fail(dpath + ".results", "is not a list");
    for (size_t i = 0; i < results->size(); ++i) {
      const Json& result = (*results)[i];
      std::string path = dpath + ".results[" + std::to_string(i) + "]";
      if (!result.is_object()) r.Fail(path, "is not an object");
      AllocatedDevice d;
      d.driver = r.String(result, path, "driver", true);
      if (d.driver != driver) continue;  // another kubelet plugin's device
      d.request = r.String(result, path, "request", true);
      d.pool = r.String(result, path, "pool", true);
      d.device = r.String(result, path, "device", true);
      d.admin_access = r.Bool(result, path, "adminAccess", false);
      out.devices.push_back(std::move(d));
    }
  }

  if (const Json* configs = r.Member(*devices, dpath, "config")) {
    if (!configs->is_array()) r.Fail(dpath + ".config", "is not a list");
    for (size_t i = 0; i < configs->size(); ++i) {
      const Json& config = (*configs)[i];
      std::string path = dpath + ".config[" + std::to_string(i) + "]";
      if (!config.is_object()) r.Fail(path, "is not an object");
      const Json* opaque = r.Member(config, path, "opaque");
      if (!opaque) continue;  // another kind of configuration: not for drivers
      if (!opaque->is_object()) r.Fail(path + ".opaque", "is not an object");
      if (r.String(*opaque, path + ".opaque", "driver", true) != driver) continue;
      const Json* params = r.Member(*opaque, path + ".opaque", "parameters");
      if (!params) continue;
      ReadParameters(r, *params, path + ".opaque.parameters", &out.parameters);
    }
  }
  return out;
}

ClaimAllocation ParseClaimAllocationText(std::string_view json_text, const ClaimRef& ref,
                                         const std::string& driver) {
  Json claim = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (claim.is_discarded())
    throw InputError("ResourceClaim " + ref.namespace_ + "/" + ref.name, "",
                     "is not valid JSON");
  return ParseClaimAllocation(claim, ref, driver);
}

}  // namespace accel::dra
