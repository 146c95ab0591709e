#include "topology/host_json.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/json_reader.h"
#include "common/json_text.h"
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

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

// The host's own fields on top of the common reader.
class HostReader : public JsonReader {
 public:
  using JsonReader::JsonReader;

  int Int(const Json& v, JsonAt at, int min) const { return static_cast<int>(Integer(v, at, min, kMaxInt)); }

  double Gbps(const Json& v, JsonAt at) const {
    if (!v.is_number()) Fail(at, "expected a number, got " + TypeName(v));
    double x = v.get<double>();
    if (!std::isfinite(x) || x < 0) Fail(at, v.dump() + " is not a bandwidth", "use GB/s >= 0");
    return x;
  }

  const Json& Require(const Json& obj, std::string_view path, std::string_view key) const {
    return JsonReader::Require(obj, path, key, "it is required; see docs/schemas.md");
  }
};

Package ReadPackage(const HostReader& r, const Json& v, const std::string& path) {
  r.Object(v, path, {"id", "cpus", "model"});
  Package pkg;
  pkg.id = r.Int(r.Require(v, path, "id"), {path, "id"}, 0);
  pkg.cpus = r.Cpus(r.Require(v, path, "cpus"), {path, "cpus"});
  if (const Json* m = r.Find(v, "model")) pkg.model = r.String(*m, {path, "model"});
  return pkg;
}

HugepagePool ReadPool(const HostReader& r, const Json& v, const std::string& path) {
  r.Object(v, path, {"size_kib", "total", "free"});
  HugepagePool pool;
  pool.size_kib = r.Unsigned(r.Require(v, path, "size_kib"), {path, "size_kib"});
  pool.total = r.Unsigned(r.Require(v, path, "total"), {path, "total"});
  pool.free = r.Unsigned(r.Require(v, path, "free"), {path, "free"});
  return pool;
}

NumaNode ReadNode(const HostReader& r, const Json& v, const std::string& path) {
  r.Object(v, path, {"id", "package", "cpus", "cores", "memory_kib", "hugepages", "distances"});
  NumaNode node;
  node.id = r.Int(r.Require(v, path, "id"), {path, "id"}, 0);
  if (const Json* p = r.Find(v, "package"))
    node.package = r.Int(*p, {path, "package"}, -1);
  node.cpus = r.Cpus(r.Require(v, path, "cpus"), {path, "cpus"});
  std::string cores_path = JsonReader::Join(path, "cores");
  const Json& cores = r.Array(r.Require(v, path, "cores"), cores_path);
  for (size_t i = 0; i < cores.size(); ++i)
    node.cores.push_back(r.Cpus(cores[i], JsonReader::Index(cores_path, i)));
  node.memory_kib = r.Unsigned(r.Require(v, path, "memory_kib"), {path, "memory_kib"});
  std::string pools_path = JsonReader::Join(path, "hugepages");
  const Json& pools = r.Array(r.Require(v, path, "hugepages"), pools_path);
  for (size_t i = 0; i < pools.size(); ++i)
    node.pages.push_back(ReadPool(r, pools[i], JsonReader::Index(pools_path, i)));
  if (const Json* d = r.Find(v, "distances")) {
    std::string dist_path = JsonReader::Join(path, "distances");
    const Json& list = r.Array(*d, dist_path);
    for (size_t i = 0; i < list.size(); ++i)
      node.distances.push_back(r.Int(list[i], JsonReader::Index(dist_path, i), 0));
  }
  return node;
}

// Reads the optional fields a host bridge must not carry, and the rest of a PCI function.
void ReadPciFunction(const HostReader& r, const Json& v, const std::string& path, PciDevice* dev) {
  auto at = [&](const char* key) { return JsonAt(path, key); };
  dev->vendor_id = r.Hex4(r.Require(v, path, "vendor_id"), at("vendor_id"));
  dev->device_id = r.Hex4(r.Require(v, path, "device_id"), at("device_id"));
  dev->class_id = r.Hex4(r.Require(v, path, "class"), at("class"));
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

PciDevice ReadPci(const HostReader& r, const Json& v, const std::string& path) {
  r.Object(v, path,
           {"address", "parent", "role", "vendor_id", "device_id", "class", "numa_node",
            "link_gbps", "name", "rdma_devices", "netdevs", "os_devices", "sriov_total_vfs",
            "sriov_num_vfs", "physfn"});
  PciDevice dev;
  dev.address = r.String(r.Require(v, path, "address"), {path, "address"});
  dev.parent = r.String(r.Require(v, path, "parent"), {path, "parent"});
  std::string role_path = JsonReader::Join(path, "role");
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
      r.Fail(JsonReader::Join(path, item.key()), "does not apply to a host bridge",
             "a host_bridge has only address, parent and role");
  return dev;
}

HostTopology ReadHost(const HostReader& r, const Json& doc) {
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
    host.packages.push_back(ReadPackage(r, packages[i], JsonReader::Index("packages", i)));
  const Json& nodes = r.Array(r.Require(doc, "", "numa_nodes"), "numa_nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    host.numa_nodes.push_back(ReadNode(r, nodes[i], JsonReader::Index("numa_nodes", i)));
  const Json& pci = r.Array(r.Require(doc, "", "pci"), "pci");
  for (size_t i = 0; i < pci.size(); ++i)
    host.pci.push_back(ReadPci(r, pci[i], JsonReader::Index("pci", i)));
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
  HostReader reader(where);
  HostTopology host = ReadHost(reader, ParseJsonText(text, where));
  if (std::string problem = CheckInvariants(host); !problem.empty()) reader.Fail("", problem);
  return host;
}

}  // namespace accel::topology
