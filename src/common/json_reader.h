// JsonReader: the one way accel reads typed fields out of a parsed JSON tree (nlohmann::json or
// ordered_json) — host and placement documents, DRA claims, the exporter's web config and other
// documents read whole with ParseJsonText or ParseStructuredText. Every check names the document
// and the field path, and every failure is an InputError, so a reader built on it lets nothing
// else escape (what the fuzz targets check).
//
//   JsonReader r("host.json");
//   r.Object(doc, "", {"schema", "hostname", "pci"});            // only these keys
//   std::string name = r.String(r.Require(doc, "", "hostname"), "hostname");
//   if (const nlohmann::json* v = r.Find(doc, "pci")) { ... r.Array(*v, "pci") ... }
//
// Messages, one vocabulary for every document:
//   "hostname: expected a string, got an integer"      (a mapping / a list with JsonWords::kYaml)
//   "numa_nodes[0].id: -1 is out of range (use 0..2147483647)"
//   "extra: unknown key (known here: schema, hostname, pci)"
//   "pci[2].class: is missing"
//
// A field is named by a JsonAt: a full path, or a path and a key joined only when an error is
// thrown (readers that run once per stored claim build no strings on the way).
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpuset.h"
#include "common/error.h"

namespace accel {

/// Names a value in errors: `path` ("cells[0].pinning"), or `path` and a `key` below it
/// ("cells[0]", "pinning"). Holds views: use it within the call it is passed to.
class JsonAt {
 public:
  JsonAt(std::string_view path) : path_(path) {}  // NOLINT: a path is a JsonAt
  JsonAt(const std::string& path) : path_(path) {}  // NOLINT
  JsonAt(const char* path) : path_(path) {}  // NOLINT
  JsonAt(std::string_view path, std::string_view key) : path_(path), key_(key) {}

  /// "path.key", "key" at the top (empty path), "path" without a key.
  std::string str() const {
    if (key_.empty()) return std::string(path_);
    return path_.empty() ? std::string(key_) : std::string(path_) + "." + std::string(key_);
  }

 private:
  std::string_view path_, key_;
};

/// How types are named in messages: JSON's words, or YAML's for a document people write in YAML.
enum class JsonWords { kJson, kYaml };

class JsonReader {
 public:
  /// `where` names the document in every error ("host.json", "ResourceClaim ns/name").
  explicit JsonReader(std::string where, JsonWords words = JsonWords::kJson)
      : where_(std::move(where)), words_(words) {}

  const std::string& where() const { return where_; }

  /// Throws InputError(where, at, problem, hint).
  [[noreturn]] void Fail(JsonAt at, const std::string& problem, const std::string& hint = "") const {
    throw InputError(where_, at.str(), problem, hint);
  }

  /// `path` + "." + `key` ("" path: `key`); `path` + "[i]".
  static std::string Join(std::string_view path, std::string_view key) { return JsonAt(path, key).str(); }
  static std::string Index(std::string_view path, size_t i) {
    return std::string(path) + "[" + std::to_string(i) + "]";
  }

  /// "an integer", "a fractional number", "a string", "a boolean", "null", "an array" ("a
  /// list"), "an object" ("a mapping").
  template <class Json>
  std::string TypeName(const Json& v) const {
    if (v.is_number_integer()) return "an integer";
    if (v.is_number_float()) return "a fractional number";
    if (v.is_string()) return "a string";
    if (v.is_boolean()) return "a boolean";
    if (v.is_null()) return "null";
    if (v.is_array()) return words_ == JsonWords::kYaml ? "a list" : "an array";
    return ObjectWord();
  }

  // ---- objects ----

  /// `v` when it is an object; else "expected an object, got a string".
  template <class Json>
  const Json& Object(const Json& v, JsonAt at) const {
    if (!v.is_object()) Fail(at, "expected " + ObjectWord() + ", got " + TypeName(v));
    return v;
  }

  /// Object() whose keys are all in `known`; else "PATH.KEY: unknown key (known here: ...)".
  template <class Json>
  const Json& Object(const Json& v, JsonAt at, std::initializer_list<std::string_view> known) const {
    Object(v, at);
    for (const auto& item : v.items()) {
      bool ok = false;
      for (std::string_view k : known) ok = ok || item.key() == k;
      if (ok) continue;
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      Fail(Join(at.str(), item.key()), "unknown key", "known here: " + list);
    }
    return v;
  }

  /// The member `key` of object `obj` (checked with Object() first), or nullptr when absent. A
  /// null member is returned: it is a value of the wrong type for most fields.
  template <class Json>
  const Json* Find(const Json& obj, std::string_view key) const {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  /// Find(), with null read as absent (Kubernetes objects, YAML's `key:` with no value).
  template <class Json>
  const Json* FindNonNull(const Json& obj, std::string_view key) const {
    const Json* v = Find(obj, key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  /// The member `key` of `obj` at `path`; "PATH.KEY: is missing" (with `hint`) when absent.
  template <class Json>
  const Json& Require(const Json& obj, std::string_view path, std::string_view key,
                      const std::string& hint = "") const {
    const Json* v = Find(obj, key);
    if (v == nullptr) Fail({path, key}, "is missing", hint);
    return *v;
  }

  // ---- values: each reads `v`, named `at` ----

  /// "expected an array, got ..." otherwise.
  template <class Json>
  const Json& Array(const Json& v, JsonAt at) const {
    if (!v.is_array()) Fail(at, "expected " + std::string(words_ == JsonWords::kYaml ? "a list" : "an array") + ", got " + TypeName(v));
    return v;
  }

  /// "expected a string, got ..." otherwise.
  template <class Json>
  std::string String(const Json& v, JsonAt at) const {
    if (!v.is_string()) Fail(at, "expected a string, got " + TypeName(v));
    return v.template get<std::string>();
  }

  /// "expected true or false, got ..." otherwise.
  template <class Json>
  bool Bool(const Json& v, JsonAt at) const {
    if (!v.is_boolean()) Fail(at, "expected true or false, got " + TypeName(v));
    return v.template get<bool>();
  }

  /// An integer in [min, max]: "expected an integer, got ..." or "V is out of range (use
  /// MIN..MAX)" otherwise.
  template <class Json>
  int64_t Integer(const Json& v, JsonAt at, int64_t min, int64_t max) const {
    if (v.is_number_unsigned()) {  // how a parser reads every number >= 0: check min too
      const uint64_t x = v.template get<uint64_t>();
      if (x > static_cast<uint64_t>(max) || (min > 0 && x < static_cast<uint64_t>(min))) OutOfRange(v, at, min, max);
      return static_cast<int64_t>(x);
    }
    if (!v.is_number_integer()) Fail(at, "expected an integer, got " + TypeName(v));
    const int64_t x = v.template get<int64_t>();
    if (x < min || x > max) OutOfRange(v, at, min, max);
    return x;
  }

  /// An integer >= 0: "expected a non-negative integer, got ..." or "V is negative" otherwise.
  template <class Json>
  uint64_t Unsigned(const Json& v, JsonAt at) const {
    if (v.is_number_unsigned()) return v.template get<uint64_t>();
    if (v.is_number_integer()) Fail(at, v.dump() + " is negative", "use a count >= 0");
    Fail(at, "expected a non-negative integer, got " + TypeName(v));
  }

  /// A list of strings; each item is named at[i].
  template <class Json>
  std::vector<std::string> Strings(const Json& v, JsonAt at) const {
    std::vector<std::string> out;
    const Json& list = Array(v, at);
    for (size_t i = 0; i < list.size(); ++i) out.push_back(String(list[i], Index(at.str(), i)));
    return out;
  }

  /// A CPU list string such as "0-3,8" (no '^' exclusions: a document lists its CPUs).
  template <class Json>
  CpuSet Cpus(const Json& v, JsonAt at) const {
    return ParseCpus(String(v, at), at);
  }

  /// Four hex digits ("10de"), as PCI ids are written.
  template <class Json>
  uint16_t Hex4(const Json& v, JsonAt at) const {
    return ParseHex4(String(v, at), at);
  }

 private:
  std::string ObjectWord() const { return words_ == JsonWords::kYaml ? "a mapping" : "an object"; }

  template <class Json>
  [[noreturn]] void OutOfRange(const Json& v, JsonAt at, int64_t min, int64_t max) const {
    Fail(at, v.dump() + " is out of range", "use " + std::to_string(min) + ".." + std::to_string(max));
  }

  CpuSet ParseCpus(const std::string& text, JsonAt at) const;
  uint16_t ParseHex4(const std::string& text, JsonAt at) const;

  std::string where_;
  JsonWords words_;
};

}  // namespace accel
