#include "dra/claim_allocation.h"

#include "common/error.h"
#include "common/json_reader.h"
#include "common/json_text.h"

namespace accel::dra {

namespace {

using Json = nlohmann::json;

constexpr const char* kParametersApiVersion = "accel.io/v1alpha1";
constexpr const char* kParametersKind = "ClaimParameters";

// Kubernetes leaves out what is not set (or writes null): an absent or null member reads as
// absent. Each helper checks `obj` is an object first.
const Json* ClaimMember(const JsonReader& r, const Json& obj, const std::string& path, const char* key) {
  return r.FindNonNull(r.Object(obj, path), key);
}

const Json& ClaimObject(const JsonReader& r, const Json& obj, const std::string& path, const char* key,
                        const std::string& missing_problem) {
  const Json* v = ClaimMember(r, obj, path, key);
  if (!v) r.Fail({path, key}, missing_problem);
  return r.Object(*v, {path, key});
}

// A string member; "" when absent. `required`: absent or empty is an error.
std::string ClaimString(const JsonReader& r, const Json& obj, const std::string& path, const char* key,
                        bool required) {
  const Json* v = ClaimMember(r, obj, path, key);
  if (!v) {
    if (required) r.Fail({path, key}, "is missing");
    return "";
  }
  std::string s = r.String(*v, {path, key});
  if (required && s.empty()) r.Fail({path, key}, "is empty");
  return s;
}

bool ClaimBool(const JsonReader& r, const Json& obj, const std::string& path, const char* key, bool fallback) {
  const Json* v = ClaimMember(r, obj, path, key);
  return v ? r.Bool(*v, {path, key}) : fallback;
}

void ReadParameters(const JsonReader& r, const Json& params, const std::string& path,
                    ClaimParameters* out) {
  r.Object(params, path);
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string& key = it.key();
    std::string field = JsonReader::Join(path, key);
    if (key == "apiVersion") {
      if (!it->is_string() || it->get<std::string>() != kParametersApiVersion)
        r.Fail(field, "is not \"" + std::string(kParametersApiVersion) + "\"");
    } else if (key == "kind") {
      if (!it->is_string() || it->get<std::string>() != kParametersKind)
        r.Fail(field, "is not \"" + std::string(kParametersKind) + "\"");
    } else if (key == "nccl") {
      out->nccl = ClaimBool(r, params, path, "nccl", true);
    } else if (key == "ncclSocketIfname") {
      if (it->is_null()) continue;
      std::string ifname = r.String(*it, field);
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
      r.Fail(field, "unknown key", "known here: apiVersion, kind, nccl, ncclSocketIfname");
    }
  }
}

}  // namespace

ClaimAllocation ParseClaimAllocation(const Json& claim, const ClaimRef& ref,
                                     const std::string& driver) {
  const JsonReader pre("ResourceClaim " + ref.namespace_ + "/" + ref.name);
  if (!claim.is_object()) pre.Fail("", "is not a JSON object");
  ClaimAllocation out;
  const Json& metadata = ClaimObject(pre, claim, "", "metadata", "is missing");
  out.uid = ClaimString(pre, metadata, "metadata", "uid", true);
  out.namespace_ = ClaimString(pre, metadata, "metadata", "namespace", false);
  out.name = ClaimString(pre, metadata, "metadata", "name", false);
  const JsonReader r("ResourceClaim " + (out.namespace_.empty() ? ref.namespace_ : out.namespace_) + "/" +
                     (out.name.empty() ? ref.name : out.name));
  if (!ref.uid.empty() && out.uid != ref.uid)
    r.Fail("metadata.uid",
           "is " + out.uid + ", not " + ref.uid +
               " as the kubelet asked: the claim was deleted and re-created since",
           "the kubelet retries with the new claim");
  if (out.namespace_.empty()) out.namespace_ = ref.namespace_;
  if (out.name.empty()) out.name = ref.name;

  const Json* status = ClaimMember(r, claim, "", "status");
  if (!status) r.Fail("status.allocation", "is missing: the claim is not allocated");
  const Json& allocation =
      ClaimObject(r, *status, "status", "allocation", "is missing: the claim is not allocated");
  const Json* devices = ClaimMember(r, allocation, "status.allocation", "devices");
  if (!devices) return out;  // allocated, but no devices at all (nothing of ours)
  const std::string dpath = "status.allocation.devices";

  if (const Json* results = ClaimMember(r, *devices, dpath, "results")) {
    r.Array(*results, {dpath, "results"});
    for (size_t i = 0; i < results->size(); ++i) {
      const Json& result = (*results)[i];
      std::string path = JsonReader::Index(dpath + ".results", i);
      AllocatedDevice d;
      d.driver = ClaimString(r, result, path, "driver", true);
      if (d.driver != driver) continue;  // another kubelet plugin's device
      d.request = ClaimString(r, result, path, "request", true);
      d.pool = ClaimString(r, result, path, "pool", true);
      d.device = ClaimString(r, result, path, "device", true);
      d.admin_access = ClaimBool(r, result, path, "adminAccess", false);
      out.devices.push_back(std::move(d));
    }
  }

  if (const Json* configs = ClaimMember(r, *devices, dpath, "config")) {
    r.Array(*configs, {dpath, "config"});
    for (size_t i = 0; i < configs->size(); ++i) {
      const Json& config = (*configs)[i];
      std::string path = JsonReader::Index(dpath + ".config", i);
      const Json* opaque = ClaimMember(r, config, path, "opaque");
      if (!opaque) continue;  // another kind of configuration: not for drivers
      if (ClaimString(r, *opaque, path + ".opaque", "driver", true) != driver) continue;
      const Json* params = ClaimMember(r, *opaque, path + ".opaque", "parameters");
      if (!params) continue;
      ReadParameters(r, *params, path + ".opaque.parameters", &out.parameters);
    }
  }
  return out;
}

ClaimAllocation ParseClaimAllocationText(std::string_view json_text, const ClaimRef& ref,
                                         const std::string& driver) {
  return ParseClaimAllocation(ParseJsonText(json_text, "ResourceClaim " + ref.namespace_ + "/" + ref.name), ref,
                              driver);
}

}  // namespace accel::dra
