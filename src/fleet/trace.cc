#include "fleet/trace.h"

#include <cstdio>
#include <map>
#include <set>

#include "common/csv.h"
#include "common/error.h"
#include "fleet/workload_mix.h"

namespace accel::fleet {

namespace {

// A node has at most 4,096 CPUs: its host gets one CPU per thousand (larger machines do not
// exist, and a typo of a few digits would otherwise build a host of billions of CPUs).
constexpr int64_t kMaxNodeCpuMilli = 4096 * 1000;

std::vector<TraceNode> NodesOf(const CsvTable& t) {
  const int sn = t.RequireColumn("sn"), cpu = t.RequireColumn("cpu_milli"), mem = t.RequireColumn("memory_mib"),
            gpu = t.RequireColumn("gpu"), model = t.RequireColumn("model");
  std::vector<TraceNode> out;
  std::set<std::string> names;
  for (const std::vector<CsvCell>& row : t.rows) {
    TraceNode n;
    n.name = row[sn].text;
    if (n.name.empty()) throw InputError(t.Where(row[sn]), "sn", "is empty", "name every node");
    if (!names.insert(n.name).second)
      throw InputError(t.Where(row[sn]), "sn", "'" + n.name + "' is a node name twice", "name each node once");
    n.cpu_milli = t.Integer(row[cpu], "cpu_milli", 1, kMaxNodeCpuMilli);
    n.memory_mib = static_cast<uint64_t>(t.Integer(row[mem], "memory_mib", 1, int64_t{1} << 40));
    n.gpus = static_cast<int>(t.Integer(row[gpu], "gpu", 0, 64));
    n.model = row[model].text == "nan" ? "" : row[model].text;
    if (n.gpus > 0 && n.model.empty())
      throw InputError(t.Where(row[model]), "model", "is empty on a node with GPUs", "name the GPUs' model (e.g. T4)");
    out.push_back(std::move(n));
  }
  return out;
}

std::optional<int64_t> OptionalTime(const CsvTable& t, const std::vector<CsvCell>& row, int column, const char* name) {
  if (column < 0 || row[static_cast<size_t>(column)].text.empty() || row[static_cast<size_t>(column)].text == "nan")
    return std::nullopt;
  return t.Integer(row[static_cast<size_t>(column)], name, 0, int64_t{1} << 50);
}

std::vector<TracePod> PodsOf(const CsvTable& t) {
  const int name = t.RequireColumn("name"), cpu = t.RequireColumn("cpu_milli"), mem = t.RequireColumn("memory_mib"),
            num = t.RequireColumn("num_gpu"), milli = t.RequireColumn("gpu_milli");
  const int spec = t.Column("gpu_spec"), created = t.Column("creation_time"), deleted = t.Column("deletion_time");
  std::vector<TracePod> out;
  out.reserve(t.rows.size());
  for (const std::vector<CsvCell>& row : t.rows) {
    TracePod p;
    p.name = row[name].text;
    if (p.name.empty()) throw InputError(t.Where(row[name]), "name", "is empty", "name every pod");
    p.cpu_milli = t.Integer(row[cpu], "cpu_milli", 0, int64_t{1} << 40);
    p.memory_mib = static_cast<uint64_t>(t.Integer(row[mem], "memory_mib", 0, int64_t{1} << 40));
    p.num_gpu = static_cast<int>(t.Integer(row[num], "num_gpu", 0, 64));
    const int64_t m = t.Integer(row[milli], "gpu_milli", 0, 1000);
    if (p.num_gpu == 1 && m == 0)
      throw InputError(t.Where(row[milli]), "gpu_milli", "is 0 for a pod with one GPU",
                       "write the share of the GPU it takes, 1 to 1000 thousandths");
    p.gpu_milli = p.num_gpu == 0 ? 0 : p.num_gpu == 1 ? static_cast<int>(m) : 1000;
    if (spec >= 0) {
      const std::string& s = row[static_cast<size_t>(spec)].text;
      if (!s.empty() && s != "nan") {
        p.gpu_spec = s;
        size_t start = 0;
        while (true) {
          const size_t bar = s.find('|', start);
          const std::string part = s.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
          if (part.empty())
            throw InputError(t.Where(row[static_cast<size_t>(spec)]), "gpu_spec", "'" + s + "' has an empty model",
                             "write models separated by '|', e.g. V100M16|V100M32");
          p.models.push_back(part);
          if (bar == std::string::npos) break;
          start = bar + 1;
        }
      }
    }
    p.created = OptionalTime(t, row, created, "creation_time");
    p.deleted = OptionalTime(t, row, deleted, "deletion_time");
    if (p.created && p.deleted && *p.deleted < *p.created)
      throw InputError(t.Where(row[static_cast<size_t>(deleted)]), "deletion_time", "is before creation_time",
                       "a pod leaves after it arrives");
    out.push_back(std::move(p));
  }
  return out;
}

uint16_t DeviceIdOf(const std::string& model) {
  static const std::map<std::string, uint16_t> known = {
      {"T4", 0x1eb8}, {"P100", 0x15f8}, {"V100M16", 0x1db4}, {"V100M32", 0x1db5}, {"A10", 0x2236}};
  auto it = known.find(model);
  return it == known.end() ? 0 : it->second;
}

}  // namespace

std::vector<TraceNode> ParseTraceNodes(const std::string& text, const std::string& path) {
  return NodesOf(ParseCsv(text, path));
}
std::vector<TraceNode> ReadTraceNodes(const std::string& path) { return NodesOf(ReadCsvFile(path)); }
std::vector<TracePod> ParseTracePods(const std::string& text, const std::string& path) {
  return PodsOf(ParseCsv(text, path));
}
std::vector<TracePod> ReadTracePods(const std::string& path) { return PodsOf(ReadCsvFile(path)); }

topology::HostTopology TraceHostTopology(const TraceNode& node) {
  topology::HostTopology h;
  h.hostname = node.name;
  h.source = "trace";
  const int cpus = static_cast<int>((node.cpu_milli + 999) / 1000);
  topology::Package pkg;
  pkg.id = 0;
  topology::NumaNode n;
  n.id = 0;
  n.package = 0;
  for (int c = 0; c < cpus; ++c) {
    n.cpus.Add(c);
    CpuSet core;
    core.Add(c);
    n.cores.push_back(core);
  }
  pkg.cpus = n.cpus;
  n.memory_kib = node.memory_mib * 1024;
  n.pages.push_back({4, node.memory_mib * 256, node.memory_mib * 256});
  n.distances = {10};
  h.packages.push_back(pkg);
  h.numa_nodes.push_back(n);
  for (int g = 0; g < node.gpus; ++g) {
    topology::PciDevice d;
    char address[32];
    std::snprintf(address, sizeof address, "0000:%02x:00.0", 0x10 + g);
    d.address = address;
    d.role = topology::PciRole::kGpu;
    d.vendor_id = 0x10de;
    d.device_id = DeviceIdOf(node.model);
    d.class_id = 0x0302;
    d.numa_node = 0;
    d.name = node.model;
    h.pci.push_back(std::move(d));
  }
  return h;
}

placement::HostPolicy TraceHostPolicy(const TraceNode& node) {
  placement::HostPolicy p;
  const int64_t cpus = (node.cpu_milli + 999) / 1000;
  p.cpu_allocation_ratio = static_cast<double>(node.cpu_milli) / static_cast<double>(cpus * 1000);
  return p;
}

placement::PlacementRequest TracePodRequest(const TracePod& pod) {
  return PodRequest(pod.name, pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, pod.models);
}

}  // namespace accel::fleet
