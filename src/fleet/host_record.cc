#include "fleet/host_record.h"

#include <openssl/evp.h>

#include <cstdio>

#include "common/error.h"
#include "topology/host_json.h"

namespace accel::fleet {

const char* HostAdminStateName(HostAdminState s) {
  switch (s) {
    case HostAdminState::kEnabled: return "enabled";
    case HostAdminState::kDisabled: return "disabled";
    case HostAdminState::kMaintenance: return "maintenance";
  }
  return "enabled";
}

HostAdminState ParseHostAdminState(const std::string& text, const std::string& where) {
  if (text == "enabled") return HostAdminState::kEnabled;
  if (text == "disabled") return HostAdminState::kDisabled;
  if (text == "maintenance") return HostAdminState::kMaintenance;
  throw InputError(where, "", "unknown host state '" + text + "'",
                   "one of: enabled, disabled (no new placements), maintenance");
}

bool IsStale(const HostRecord& host, int64_t now_unix) {
  return host.heartbeat_at && host.stale_after_s > 0 &&
         now_unix - *host.heartbeat_at > host.stale_after_s;
}

topology::HostTopology Anonymized(const topology::HostTopology& host) {
  topology::HostTopology copy = host;
  copy.hostname = kSharedHostname;
  copy.source.clear();
  return copy;
}

std::string TopologyId(const topology::HostTopology& host) {
  const std::string json = topology::ToJson(Anonymized(host));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(json.data(), json.size(), digest, &length, EVP_sha256(), nullptr);
  std::string id = "sha256:";
  char hex[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", digest[i]);
    id += hex;
  }
  return id;
}

}  // namespace accel::fleet
