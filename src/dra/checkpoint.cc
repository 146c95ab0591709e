#include "dra/checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_text.h"

namespace accel::dra {

namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

constexpr int kVersion = 1;

std::string GetString(const Json& obj, const std::string& where, const std::string& path,
                      const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (!it->is_string()) throw InputError(where, path + "." + key, "is not a string");
  return it->get<std::string>();
}

std::vector<std::string> GetStrings(const Json& obj, const std::string& where,
                                    const std::string& path, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end()) return out;
  if (!it->is_array()) throw InputError(where, path + "." + key, "is not a list");
  for (const Json& v : *it) {
    if (!v.is_string()) throw InputError(where, path + "." + key, "holds a non-string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

bool CheckpointEntry::operator==(const CheckpointEntry& o) const {
  if (namespace_ != o.namespace_ || name != o.name || cdi_spec_path != o.cdi_spec_path ||
      devices.size() != o.devices.size())
    return false;
  for (size_t i = 0; i < devices.size(); ++i) {
    const PreparedDevice& a = devices[i];
    const PreparedDevice& b = o.devices[i];
    if (a.request_names != b.request_names || a.pool_name != b.pool_name ||
        a.device_name != b.device_name || a.cdi_device_ids != b.cdi_device_ids)
      return false;
  }
  return true;
}

std::string CheckpointJson(const std::map<std::string, CheckpointEntry>& entries) {
  OJson claims = OJson::object();
  for (const auto& [uid, e] : entries) {
    OJson devices = OJson::array();
    for (const PreparedDevice& d : e.devices)
      devices.push_back({{"requestNames", d.request_names},
                         {"pool", d.pool_name},
                         {"device", d.device_name},
                         {"cdiDeviceIds", d.cdi_device_ids}});
    claims[uid] = {{"namespace", e.namespace_},
                   {"name", e.name},
                   {"cdiSpec", e.cdi_spec_path},
                   {"devices", devices}};
  }
  OJson out = {{"version", kVersion}, {"claims", claims}};
  return out.dump(1) + "\n";
}

std::map<std::string, CheckpointEntry> ParseCheckpoint(std::string_view text,
                                                       const std::string& where) {
  const Json doc = ParseJsonText(text, where);
  if (!doc.is_object()) throw InputError(where, "", "is not a JSON object");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int64_t>() != kVersion)
    throw InputError(where, "version", "is not 1");
  std::map<std::string, CheckpointEntry> out;
  auto claims = doc.find("claims");
  if (claims == doc.end()) return out;
  if (!claims->is_object()) throw InputError(where, "claims", "is not an object");
  for (auto it = claims->begin(); it != claims->end(); ++it) {
    std::string path = "claims." + it.key();
    if (it.key().empty()) throw InputError(where, path, "has an empty claim uid");
    const Json& c = *it;
    if (!c.is_object()) throw InputError(where, path, "is not an object");
    CheckpointEntry e;
    e.namespace_ = GetString(c, where, path, "namespace");
    e.name = GetString(c, where, path, "name");
    e.cdi_spec_path = GetString(c, where, path, "cdiSpec");
    auto devices = c.find("devices");
    if (devices != c.end()) {
      if (!devices->is_array()) throw InputError(where, path + ".devices", "is not a list");
      for (size_t i = 0; i < devices->size(); ++i) {
        const Json& d = (*devices)[i];
        std::string dpath = path + ".devices[" + std::to_string(i) + "]";
        if (!d.is_object()) throw InputError(where, dpath, "is not an object");
        PreparedDevice p;
        p.request_names = GetStrings(d, where, dpath, "requestNames");
        p.pool_name = GetString(d, where, dpath, "pool");
        p.device_name = GetString(d, where, dpath, "device");
        p.cdi_device_ids = GetStrings(d, where, dpath, "cdiDeviceIds");
        e.devices.push_back(std::move(p));
      }
    }
    out[it.key()] = std::move(e);
  }
  return out;
}

Checkpoint::Checkpoint(std::string state_dir, Log log)
    : path_((std::filesystem::path(state_dir) / "checkpoint.json").string()) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;  // first start
  std::ostringstream text;
  text << in.rdbuf();
  try {
    entries_ = ParseCheckpoint(text.str(), path_);
  } catch (const InputError& e) {
    std::string aside = path_ + ".corrupt";
    std::string what = "DRA checkpoint " + path_ + " cannot be read (" + e.what() +
                       "): starting with no prepared claims";
    if (std::rename(path_.c_str(), aside.c_str()) == 0)
      what += "; the file was moved to " + aside;
    else
      what += "; moving it to " + aside + " failed: " + std::strerror(errno);
    if (log) log(what);
  }
}

std::optional<CheckpointEntry> Checkpoint::Get(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(uid);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, CheckpointEntry> Checkpoint::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

void Checkpoint::WriteLocked(const std::map<std::string, CheckpointEntry>& entries) const {
  AtomicWriteOptions options;
  options.mode = 0600;  // the agent's own state
  options.create_directories = true;
  WriteFileAtomically(path_, CheckpointJson(entries), options);
}

void Checkpoint::Put(const std::string& uid, const CheckpointEntry& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, CheckpointEntry> next = entries_;
  next[uid] = entry;
  WriteLocked(next);
  entries_ = std::move(next);
}

void Checkpoint::Erase(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!entries_.count(uid)) return;
  std::map<std::string, CheckpointEntry> next = entries_;
  next.erase(uid);
  WriteLocked(next);
  entries_ = std::move(next);
}

}  // namespace accel::dra
