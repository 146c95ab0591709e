#include "topology/host_json.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/strings.h"

namespace accel::topology {

namespace {

using Json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Writing. The layout follows the example in docs/schemas.md; scalars go through nlohmann so
// that strings are escaped and doubles printed in their shortest round-trip form.

std::string Quote(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string QuotedHex4(uint16_t v) { return Quote(Hex4(v)); }

// Integral values print without ".0" ("0", "16"); others in the shortest form that reads back
// to the same double ("63.015").
std::string Number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<long long>(v));
  return Json(v).dump();
}

std::string Field(const char* key, const std::string& value) { return Quote(key) + ": " + value; }

std::string InlineList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

std::string InlineObject(const std::vector<std::string>& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? ", " : "") + fields[i];
  return out + "}";
}

std::vector<std::string> Quoted(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& s : items) out.push_back(Quote(s));
  return out;
}

// Writes `items` one per line at `indent`, as the body of a JSON array.
std::string Block(const std::vector<std::string>& items, const std::string& indent) {
  if (items.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i)
    out += indent + "  " + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return out + indent + "]";
}

// An object with one member per line; members sit two spaces deeper than `indent`, where the
// closing brace goes.
std::string MultiLineObject(const std::vector<std::string>& fields, const std::string& indent) {
  std::string out = "{\n";
  for (size_t i = 0; i < fields.size(); ++i)
    out += indent + "  " + fields[i] + (i + 1 < fields.size() ? ",\n" : "\n");
  return out + indent + "}";
}

std::string PackageJson(const Package& pkg) {
  std::vector<std::string> fields = {Field("id", std::to_string(pkg.id)),
                                     Field("cpus", Quote(pkg.cpus.ToString()))};
  if (!pkg.model.empty()) fields.push_back(Field("model", Quote(pkg.model)));
  return InlineObject(fields);
}

std::string NodeJson(const NumaNode& node) {
  std::vector<std::string> cores, pools, distances;
  for (const CpuSet& core : node.cores) cores.push_back(Quote(core.ToString()));
  for (const HugepagePool& p : node.pages)
    pools.push_back(InlineObject({Field("size_kib", std::to_string(p.size_kib)),
                                  Field("total", std::to_string(p.total)),
                                  Field("free", std::to_string(p.free))}));
  for (int d : node.distances) distances.push_back(std::to_string(d));
  return MultiLineObject(
      {Field("id", std::to_string(node.id)), Field("package", std::to_string(node.package)),
       Field("cpus", Quote(node.cpus.ToString())), Field("cores", InlineList(cores)),
       Field("memory_kib", std::to_string(node.memory_kib)),
       Field("hugepages", Block(pools, "      ")), Field("distances", InlineList(distances))},
      "    ");
}

// One PCI object as up to four lines: identity; ids and locality; name and OS devices; SR-IOV.
std::string PciJson(const PciDevice& dev) {
  std::vector<std::vector<std::string>> lines;
  lines.push_back({Field("address", Quote(dev.address)), Field("parent", Quote(dev.parent)),
                   Field("role", Quote(PciRoleName(dev.role)))});
  if (dev.role != PciRole::kHostBridge) {
    lines.push_back({Field("vendor_id", QuotedHex4(dev.vendor_id)),
                     Field("device_id", QuotedHex4(dev.device_id)), Field("class", QuotedHex4(dev.class_id)),
                     Field("numa_node", std::to_string(dev.numa_node)),
                     Field("link_gbps", Number(dev.link_gbps))});
    std::vector<std::string> names;
    if (!dev.name.empty()) names.push_back(Field("name", Quote(dev.name)));
    if (!dev.rdma_devices.empty())
      names.push_back(Field("rdma_devices", InlineList(Quoted(dev.rdma_devices))));
    if (!dev.netdevs.empty()) names.push_back(Field("netdevs", InlineList(Quoted(dev.netdevs))));
    if (!dev.os_devices.empty())
      names.push_back(Field("os_devices", InlineList(Quoted(dev.os_devices))));
    if (!names.empty()) lines.push_back(names);
    std::vector<std::string> sriov;
    if (dev.sriov_total_vfs != 0 || dev.sriov_num_vfs != 0) {
      sriov.push_back(Field("sriov_total_vfs", std::to_string(dev.sriov_total_vfs)));
      sriov.push_back(Field("sriov_num_vfs", std::to_string(dev.sriov_num_vfs)));
    }
    if (!dev.physfn.empty()) sriov.push_back(Field("physfn", Quote(dev.physfn)));
    if (!sriov.empty()) lines.push_back(sriov);
  }
  std::string out = "{";
  for (size_t l = 0; l < lines.size(); ++l) {
    if (l > 0) out += ",\n     ";
    for (size_t f = 0; f < lines[l].size(); ++f) out += (f ? ", " : "") + lines[l][f];
  }
  return out + "}";
}

// ---------------------------------------------------------------------------------------------
// Reading. Every accessor checks the JSON type first, so nothing but InputError escapes.

class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void Fail(const std::string& path, const std::string& problem,
                         const std::string& hint = "") const {
    throw InputError(where_, path, problem, hint);
  }

  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string Index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  // Checks that `v` is an object holding only `known` keys.
  void Object(const Json& v, const std::string& path,
              std::initializer_list<const char*> known) const {
    if (!v.is_object()) Fail(path, "expected an object, got " + TypeName(v));
    for (const auto& item : v.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || item.key() == k;
      if (ok) continue;
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      Fail(Join(path, item.key()), "is not a known key", "known keys here: " + list);
    }
  }

  const Json* Find(const Json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  const Json& Require(const Json& obj, const std::string& path, const char* key) const {
    const Json* v = Find(obj, key);
    if (v == nullptr) Fail(Join(path, key), "is missing", "it is required; see docs/schemas.md");
    return *v;
  }

  long long Integer(const Json& v, const std::string& path, long long min, long long max) const {
    if (v.is_number_unsigned()) {
      if (v.get<unsigned long long>() > static_cast<unsigned long long>(max))
        Fail(path, v.dump() + " is out of range", RangeHint(min, max));
      return static_cast<long long>(v.get<unsigned long long>());
    }
    if (!v.is_number_integer()) Fail(path, "expected an integer, got " + TypeName(v));
    long long x = v.get<long long>();
    if (x < min || x > max) Fail(path, v.dump() + " is out of range", RangeHint(min, max));
    return x;
  }

  int Int(const Json& v, const std::string& path, int min) const {
    return static_cast<int>(Integer(v, path, min, std::numeric_limits<int>::max()));
  }

  uint64_t Unsigned(const Json& v, const std::string& path) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) Fail(path, v.dump() + " is negative", "use a count >= 0");
    Fail(path, "expected a non-negative integer, got " + TypeName(v));
  }

  std::string String(const Json& v, const std::string& path) const {
    if (!v.is_string()) Fail(path, "expected a string, got " + TypeName(v));
    return v.get<std::string>();
  }

  CpuSet Cpus(const Json& v, const std::string& path) const {
    std::string text = String(v, path);
    if (text.find('^') != std::string::npos)
      Fail(path, "\"" + text + "\" uses an exclusion '^'", "list the CPUs, e.g. \"0-3,8\"");
    CpuSet cpus;
    std::string error;
    if (!CpuSet::Parse(text, &cpus, &error)) Fail(path, error, "write it like \"0-3,8\"");
    return cpus;
  }

  uint16_t Hex16(const Json& v, const std::string& path) const {
    std::string text = String(v, path);
    bool ok = text.size() == 4;
    unsigned value = 0;
    for (char c : text) {
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      ok = ok && digit >= 0;
      value = value * 16 + (digit < 0 ? 0 : digit);
    }
    if (!ok) Fail(path, "\"" + text + "\" is not 4 hex digits", "write it like \"10de\"");
    return static_cast<uint16_t>(value);
  }

  double Gbps(const Json& v, const std::string& path) const {
    if (!v.is_number()) Fail(path, "expected a number, got " + TypeName(v));
    double x = v.get<double>();
    if (!std::isfinite(x) || x < 0) Fail(path, v.dump() + " is not a bandwidth", "use GB/s >= 0");
    return x;
  }

  const Json& Array(const Json& v, const std::string& path) const {
    if (!v.is_array()) Fail(path, "expected an array, got " + TypeName(v));
    return v;
  }

  std::vector<std::string> Strings(const Json& v, const std::string& path) const {
    std::vector<std::string> out;
    const Json& list = Array(v, path);
    for (size_t i = 0; i < list.size(); ++i) out.push_back(String(list[i], Index(path, i)));
    return out;
  }

 private:
  static std::string TypeName(const Json& v) {
    if (v.is_number_integer()) return "an integer";
    if (v.is_number_float()) return "a fractional number";
    if (v.is_string()) return "a string";
    if (v.is_boolean()) return "a boolean";
    if (v.is_null()) return "null";
    if (v.is_array()) return "an array";
    return "an object";
  }
  static std::string RangeHint(long long min, long long max) {
    return "use " + std::to_string(min) + ".." + std::to_string(max);
  }
  std::string where_;
};

Package ReadPackage(const Reader& r, const Json& v, const std::string& path) {
  r.Object(v, path, {"id", "cpus", "model"});
  Package pkg;
  pkg.id = r.Int(r.Require(v, path, "id"), Reader::Join(path, "id"), 0);
  pkg.cpus = r.Cpus(r.Require(v, path, "cpus"), Reader::Join(path, "cpus"));
  if (const Json* m = r.Find(v, "model")) pkg.model = r.String(*m, Reader::Join(path, "model"));
  return pkg;
}

HugepagePool ReadPool(const Reader& r, const Json& v, const std::string& path) {
  r.Object(v, path, {"size_kib", "total", "free"});
  HugepagePool pool;
  pool.size_kib = r.Unsigned(r.Require(v, path, "size_kib"), Reader::Join(path, "size_kib"));
  pool.total = r.Unsigned(r.Require(v, path, "total"), Reader::Join(path, "total"));
  pool.free = r.Unsigned(r.Require(v, path, "free"), Reader::Join(path, "free"));
  return pool;
}

NumaNode ReadNode(const Reader& r, const Json& v, const std::string& path) {
  r.Object(v, path, {"id", "package", "cpus", "cores", "memory_kib", "hugepages", "distances"});
  NumaNode node;
  node.id = r.Int(r.Require(v, path, "id"), Reader::Join(path, "id"), 0);
  if (const Json* p = r.Find(v, "package"))
    node.package = r.Int(*p, Reader::Join(path, "package"), -1);
  node.cpus = r.Cpus(r.Require(v, path, "cpus"), Reader::Join(path, "cpus"));
  std::string cores_path = Reader::Join(path, "cores");
  const Json& cores = r.Array(r.Require(v, path, "cores"), cores_path);
  for (size_t i = 0; i < cores.size(); ++i)
    node.cores.push_back(r.Cpus(cores[i], Reader::Index(cores_path, i)));
  node.memory_kib = r.Unsigned(r.Require(v, path, "memory_kib"), Reader::Join(path, "memory_kib"));
  std::string pools_path = Reader::Join(path, "hugepages");
  const Json& pools = r.Array(r.Require(v, path, "hugepages"), pools_path);
  for (size_t i = 0; i < pools.size(); ++i)
    node.pages.push_back(ReadPool(r, pools[i], Reader::Index(pools_path, i)));
  if (const Json* d = r.Find(v, "distances")) {
    std::string dist_path = Reader::Join(path, "distances");
    const Json& list = r.Array(*d, dist_path);
    for (size_t i = 0; i < list.size(); ++i)
      node.distances.push_back(r.Int(list[i], Reader::Index(dist_path, i), 0));
  }
  return node;
}

// Reads the optional fields a host bridge must not carry, and the rest of a PCI function.
void ReadPciFunction(const Reader& r, const Json& v, const std::string& path, PciDevice* dev) {
  auto at = [&](const char* key) { return Reader::Join(path, key); };
  dev->vendor_id = r.Hex16(r.Require(v, path, "vendor_id"), at("vendor_id"));
  dev->device_id = r.Hex16(r.Require(v, path, "device_id"), at("device_id"));
  dev->class_id = r.Hex16(r.Require(v, path, "class"), at("class"));
  if (const Json* x = r.Find(v, "numa_node")) dev->numa_node = r.Int(*x, at("numa_node"), -1);
  if (const Json* x = r.Find(v, "link_gbps")) dev->link_gbps = r.Gbps(*x, at("link_gbps"));
  if (const Json* x = r.Find(v, "name")) dev->name = r.String(*x, at("name"));
  if (const Json* x = r.Find(v, "rdma_devices"))
    dev->rdma_devices = r.Strings(*x, at("rdma_devices"));
  if (const Json* x = r.Find(v, "netdevs")) dev->netdevs = r.Strings(*x, at("netdevs"));
  if (const Json* x = r.Find(v, "os_devices")) dev->os_devices = r.Strings(*x, at("os_devices"));
  if (const Json* x = r.Find(v, "sriov_total_vfs"))
    dev->sriov_total_vfs = r.Int(*x, at("sriov_total_vfs"), 0);
  if (const Json* x = r.Find(v, "sriov_num_vfs"))
    dev->sriov_num_vfs = r.Int(*x, at("sriov_num_vfs"), 0);
  if (const Json* x = r.Find(v, "physfn")) dev->physfn = r.String(*x, at("physfn"));
}

PciDevice ReadPci(const Reader& r, const Json& v, const std::string& path) {
  r.Object(v, path,
           {"address", "parent", "role", "vendor_id", "device_id", "class", "numa_node",
            "link_gbps", "name", "rdma_devices", "netdevs", "os_devices", "sriov_total_vfs",
            "sriov_num_vfs", "physfn"});
  PciDevice dev;
  dev.address = r.String(r.Require(v, path, "address"), Reader::Join(path, "address"));
  dev.parent = r.String(r.Require(v, path, "parent"), Reader::Join(path, "parent"));
  std::string role_path = Reader::Join(path, "role");
  std::string role = r.String(r.Require(v, path, "role"), role_path);
  std::optional<PciRole> parsed = ParsePciRole(role);
  if (!parsed)
    r.Fail(role_path, "\"" + role + "\" is not a PCI role",
           "use host_bridge, bridge, gpu, hpu, nvswitch, nic, storage or other");
  dev.role = *parsed;
  if (dev.role != PciRole::kHostBridge) {
    ReadPciFunction(r, v, path, &dev);
    return dev;
  }
  for (const auto& item : v.items())
    if (item.key() != "address" && item.key() != "parent" && item.key() != "role")
      r.Fail(Reader::Join(path, item.key()), "does not apply to a host bridge",
             "a host_bridge has only address, parent and role");
  return dev;
}

HostTopology ReadHost(const Reader& r, const Json& doc) {
  r.Object(doc, "", {"schema", "hostname", "source", "packages", "numa_nodes", "pci"});
  std::string schema = r.String(r.Require(doc, "", "schema"), "schema");
  if (schema != kHostSchema)
    r.Fail("schema", "\"" + schema + "\" is not a host document",
           std::string("expected \"") + kHostSchema + "\"");
  HostTopology host;
  host.hostname = r.String(r.Require(doc, "", "hostname"), "hostname");
  if (const Json* s = r.Find(doc, "source")) host.source = r.String(*s, "source");
  const Json& packages = r.Array(r.Require(doc, "", "packages"), "packages");
  for (size_t i = 0; i < packages.size(); ++i)
    host.packages.push_back(ReadPackage(r, packages[i], Reader::Index("packages", i)));
  const Json& nodes = r.Array(r.Require(doc, "", "numa_nodes"), "numa_nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    host.numa_nodes.push_back(ReadNode(r, nodes[i], Reader::Index("numa_nodes", i)));
  const Json& pci = r.Array(r.Require(doc, "", "pci"), "pci");
  for (size_t i = 0; i < pci.size(); ++i)
    host.pci.push_back(ReadPci(r, pci[i], Reader::Index("pci", i)));
  return host;
}

}  // namespace

std::string ToJson(const HostTopology& host) {
  std::vector<std::string> packages, nodes, pci;
  for (const Package& pkg : host.packages) packages.push_back(PackageJson(pkg));
  for (const NumaNode& node : host.numa_nodes) nodes.push_back(NodeJson(node));
  for (const PciDevice& dev : host.pci) pci.push_back(PciJson(dev));
  return MultiLineObject(
             {Field("schema", Quote(kHostSchema)), Field("hostname", Quote(host.hostname)),
              Field("source", Quote(host.source)), Field("packages", Block(packages, "  ")),
              Field("numa_nodes", Block(nodes, "  ")), Field("pci", Block(pci, "  "))},
             "") +
         "\n";
}

HostTopology HostFromJson(const std::string& text, const std::string& where) {
  Reader reader(where);
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {
    // nlohmann's message starts with "[json.exception.parse_error.101] "; keep the rest.
    std::string what = e.what();
    size_t end = what.find("] ");
    reader.Fail("",
                "is not valid JSON: " + (end == std::string::npos ? what : what.substr(end + 2)),
                "check the syntax; docs/schemas.md shows a complete host");
  }
  HostTopology host = ReadHost(reader, doc);
  if (std::string problem = CheckInvariants(host); !problem.empty()) reader.Fail("", problem);
  return host;
}

}  // namespace accel::topology
