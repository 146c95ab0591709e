#include "cluster/kubelet_config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "cluster/kubelet_overrides.h"
#include "common/quantity.h"

namespace accel::cluster {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// A quantity in whole units (bytes), or -1 when it is not one (a percentage included: only
// eviction thresholds take those).
int64_t QuantityBytes(const std::string& q) {
  std::string error;
  const std::optional<Quantity> parsed = ParseQuantity(q, &error);
  return parsed ? parsed->Value() : -1;
}

// What an eviction threshold reserves in MiB: absolute only (a percentage of a node's memory is
// not a number the sum rule can be checked with). nullopt for a percentage or garbage.
std::optional<int64_t> ThresholdMib(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const int64_t bytes = QuantityBytes(v.get<std::string>());
  if (bytes < 0) return std::nullopt;
  return (bytes + kMiB - 1) / kMiB;
}

// The tiered reservation GKE and AKS apply to a node's memory for the kubelet and runtime.
uint64_t TieredKubeReservedMib(uint64_t memory_mib) {
  struct Tier {
    uint64_t size_mib;
    double share;
  };
  static const Tier kTiers[] = {{4096, 0.25}, {4096, 0.20}, {8192, 0.10}, {114688, 0.06}, {UINT64_MAX, 0.02}};
  double reserved = 0;
  uint64_t left = memory_mib;
  for (const Tier& t : kTiers) {
    const uint64_t in_tier = std::min(left, t.size_mib);
    reserved += static_cast<double>(in_tier) * t.share;
    left -= in_tier;
    if (left == 0) break;
  }
  return static_cast<uint64_t>(std::ceil(reserved));
}

// Guest cores whose every vCPU lies in `within`, lowest first.
std::vector<int> WholeCoresIn(const GuestLayout& g, const CpuSet& within) {
  std::vector<int> cores;
  std::set<int> seen;
  for (int v : within.ToVector()) {
    const int core = g.CoreOf(v);
    if (!seen.insert(core).second) continue;
    if (g.CoreVcpus(core).IsSubsetOf(within)) cores.push_back(core);
  }
  return cores;
}

CpuSet CoresToVcpus(const GuestLayout& g, const std::vector<int>& cores) {
  CpuSet s;
  for (int c : cores) s = s.Union(g.CoreVcpus(c));
  return s;
}

std::string ReasonCellsOfDevices(const GuestLayout& g) {
  std::string s;
  for (const GuestDevice& d : g.devices)
    if (d.guest_cell < 0) s += (s.empty() ? "" : ", ") + d.host_address + " (" + d.alias + ")";
  return s;
}

}  // namespace

std::string MiQuantity(uint64_t mib) {
  return mib == 0 ? "0Mi" : FormatBinaryQuantity(static_cast<int64_t>(mib) * kMiB);
}

KubeletPlan DeriveKubeletConfig(const GuestLayout& g, const KubeletInputs& in) {
  KubeletPlan plan;
  ordered_json& c = plan.config;
  auto choose = [&](const std::string& field, const std::string& value, const std::string& reason) {
    plan.choices.push_back({field, value, reason});
  };
  c["apiVersion"] = "kubelet.config.k8s.io/v1beta1";
  c["kind"] = "KubeletConfiguration";
  c["cgroupDriver"] = "systemd";
  choose("cgroupDriver", "systemd", "kubeadm's default and what containerd on systemd hosts uses");

  const std::vector<GuestCellLayout> cells = g.cells_or_one();
  const GuestCellLayout& cell0 = cells.front();

  // --- CPU Manager ---
  const int total_cores = (g.vcpus + g.threads_per_core - 1) / g.threads_per_core;
  std::vector<int> reserved_cores;
  std::string reserved_why;
  const bool pinned = !g.cells.empty() && cell0.dedicated_vcpus.Count() > 0;
  if (pinned && cell0.shared_vcpus.Count() > 0) {
    // Shared vCPUs float over the host's shared (housekeeping) CPUs: the natural home of the
    // guest's own housekeeping. Round up to whole guest cores.
    std::set<int> cores;
    for (int v : cell0.shared_vcpus.ToVector()) cores.insert(g.CoreOf(v));
    reserved_cores.assign(cores.begin(), cores.end());
    reserved_why = "guest cell 0's shared vCPUs (they run on the host's housekeeping CPUs), as whole guest cores";
  } else {
    const std::vector<int> whole = WholeCoresIn(g, cell0.vcpus);
    const size_t want = cell0.vcpus.Count() > 16 ? 2 : 1;
    for (size_t k = 0; k < whole.size() && k < want; ++k) reserved_cores.push_back(whole[k]);
    reserved_why = "the first " + std::string(want == 1 ? "guest core" : "2 guest cores") +
                   " of guest cell 0, whole (the kubelet, the runtime and node agents run there)";
  }
  if (reserved_cores.empty() || static_cast<int>(reserved_cores.size()) >= total_cores) {
    c["cpuManagerPolicy"] = "none";
    choose("cpuManagerPolicy", "none",
           "the guest has " + std::to_string(total_cores) +
               " core(s): reserving one for the system would leave none for exclusive CPUs");
  } else {
    c["cpuManagerPolicy"] = "static";
    choose("cpuManagerPolicy", "static",
           pinned ? "the flavor pins every dedicated vCPU to a host CPU: Guaranteed pods with integer CPUs get "
                    "exclusive vCPUs that are exclusive on the host too"
                  : "exclusive vCPUs for Guaranteed pods (the flavor does not pin them on the host: they are "
                    "exclusive in the guest only)");
    ordered_json options = ordered_json::object();
    if (g.threads_per_core > 1) {
      options["full-pcpus-only"] = "true";
      choose("cpuManagerPolicyOptions.full-pcpus-only", "true",
             "the guest sees " + std::to_string(g.threads_per_core) +
                 " threads per core: a container gets whole guest cores, so no two pods share a core's siblings");
    }
    if (in.version.AtLeast(1, 35)) {
      options["strict-cpu-reservation"] = "true";
      choose("cpuManagerPolicyOptions.strict-cpu-reservation", "true",
             "stable from Kubernetes 1.35: Burstable and BestEffort pods stay off the reserved cores too");
    }
    if (!options.empty()) c["cpuManagerPolicyOptions"] = options;
    const CpuSet reserved = CoresToVcpus(g, reserved_cores);
    c["reservedSystemCPUs"] = reserved.ToString();
    choose("reservedSystemCPUs", reserved.ToString(), reserved_why);
  }

  // --- Topology Manager ---
  const bool one_cell = cells.size() <= 1;
  const std::string remote = ReasonCellsOfDevices(g);
  c["topologyManagerScope"] = "pod";
  if (one_cell || remote.empty()) {
    c["topologyManagerPolicy"] = "single-numa-node";
    choose("topologyManagerPolicy", "single-numa-node",
           one_cell ? "the guest has one NUMA node: every pod aligns trivially"
                    : g.devices.empty() ? "no devices; CPUs and memory of a pod come from one guest cell"
                                        : "every accelerator and NIC the group offers reports one guest cell "
                                          "(accel's libvirt XML puts each behind a pxb-pcie expander of its cell)");
  } else {
    c["topologyManagerPolicy"] = "restricted";
    choose("topologyManagerPolicy", "restricted",
           "single-numa-node would reject, in a loop, pods asking for a device local to no guest cell: " + remote);
    if (in.version.AtLeast(1, 32)) {
      c["topologyManagerPolicyOptions"]["prefer-closest-numa-nodes"] = "true";
      choose("topologyManagerPolicyOptions.prefer-closest-numa-nodes", "true",
             "when a pod needs several guest cells, take the closest (stable from 1.32)");
    }
  }
  choose("topologyManagerScope", "pod", "all containers of a pod on the same guest cell(s)");
  if (cells.size() > 8) {
    c["topologyManagerPolicyOptions"]["max-allowable-numa-nodes"] = std::to_string(cells.size());
    choose("topologyManagerPolicyOptions.max-allowable-numa-nodes", std::to_string(cells.size()),
           "the kubelet refuses to start its topology manager on more than 8 NUMA nodes without it");
  }

  // --- Memory reservations (the overrides may change them; reservedMemory follows below) ---
  const uint64_t kube_mib = TieredKubeReservedMib(g.memory_mib);
  const uint64_t system_mib = std::clamp<uint64_t>(g.memory_mib / 100, 256, 1024);
  c["kubeReserved"] = {{"memory", MiQuantity(kube_mib)}};
  choose("kubeReserved.memory", MiQuantity(kube_mib),
         "tiered share of " + MiQuantity(g.memory_mib) + " (25 % of the first 4Gi, 20 % of the next 4, 10 % of the "
         "next 8, 6 % up to 128Gi, 2 % above), as GKE and AKS reserve");
  c["systemReserved"] = {{"memory", MiQuantity(system_mib)}};
  choose("systemReserved.memory", MiQuantity(system_mib), "1 % of the guest's memory, at least 256Mi, at most 1Gi");
  c["evictionHard"] = {{"memory.available", "100Mi"}};
  choose("evictionHard.memory.available", "100Mi", "the kubelet's default, written out: the sum rule counts it");

  // --- Overrides ---
  if (!in.overrides.is_object())
    throw InputError("kubelet overrides", "", "must be a mapping of KubeletConfiguration fields", "");
  if (!in.overrides.empty()) {
    c = MergeKubeletOverrides(json(c), in.overrides);
    for (auto it = in.overrides.begin(); it != in.overrides.end(); ++it) {
      auto same = [&](const KubeletChoice& k) { return k.field == it.key() || k.field.rfind(it.key() + ".", 0) == 0; };
      plan.choices.erase(std::remove_if(plan.choices.begin(), plan.choices.end(), same), plan.choices.end());
      choose(it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump(),
             "set by the template's kubelet override");
    }
    // Options of a policy the override turned off would only draw the kubelet's complaint.
    if (!in.overrides.contains("cpuManagerPolicyOptions") && c.value("cpuManagerPolicy", "none") != "static" &&
        c.contains("cpuManagerPolicyOptions")) {
      c.erase("cpuManagerPolicyOptions");
      plan.choices.erase(std::remove_if(plan.choices.begin(), plan.choices.end(),
                                        [](const KubeletChoice& k) {
                                          return k.field.rfind("cpuManagerPolicyOptions", 0) == 0;
                                        }),
                         plan.choices.end());
    }
  }

  // --- Memory Manager: reservedMemory from the final reservations, unless the override gave it ---
  if (in.overrides.contains("reservedMemory")) {
    // reservedMemory is used by the Static policy only: given without a policy, it means Static
    // (and the sum rule is then checked), never a silently ignored list.
    if (!in.overrides.contains("memoryManagerPolicy")) {
      c["memoryManagerPolicy"] = "Static";
      choose("memoryManagerPolicy", "Static", "the template gives reservedMemory, which only the Static policy uses");
    }
    return plan;
  }
  const bool forced_static = in.overrides.contains("memoryManagerPolicy");
  if (forced_static && c.value("memoryManagerPolicy", "None") != "Static") return plan;
  std::optional<int64_t> total = 0;
  for (const char* key : {"kubeReserved", "systemReserved"})
    if (total && c.contains(key) && c[key].is_object() && c[key].contains("memory")) {
      const std::optional<int64_t> mib = ThresholdMib(c[key]["memory"]);
      total = mib ? std::optional<int64_t>(*total + *mib) : std::nullopt;
    }
  if (total && c.contains("evictionHard") && c["evictionHard"].is_object() && c["evictionHard"].contains("memory.available")) {
    const std::optional<int64_t> mib = ThresholdMib(c["evictionHard"]["memory.available"]);
    total = mib ? std::optional<int64_t>(*total + *mib) : std::nullopt;
  } else if (total && !c.contains("evictionHard")) {
    total = *total + 100;  // the kubelet's default memory.available
  }
  std::map<int, uint64_t> pool_mib;  // guest hugepage pools per cell: no memory reservation there
  for (const GuestHugepagePool& p : in.hugepages) pool_mib[p.cell] += p.pages * p.page_kib / 1024;
  ordered_json reserved = ordered_json::array();
  uint64_t left = total ? static_cast<uint64_t>(*total) : 0;
  for (const GuestCellLayout& cell : cells) {
    if (left == 0) break;
    const uint64_t room = cell.memory_mib > pool_mib[cell.cell] ? cell.memory_mib - pool_mib[cell.cell] : 0;
    const uint64_t take = std::min(left, room);
    if (take == 0) continue;
    reserved.push_back({{"numaNode", cell.cell}, {"limits", {{"memory", MiQuantity(take)}}}});
    left -= take;
  }
  if (!total || left > 0) {
    c["memoryManagerPolicy"] = "None";
    choose("memoryManagerPolicy", "None",
           !total ? "evictionHard memory.available or a reservation is not an absolute quantity: the Static policy's "
                    "sum rule cannot be met exactly"
                  : "the guest's memory outside hugepage pools cannot hold kubeReserved + systemReserved + evictionHard");
    return plan;
  }
  c["memoryManagerPolicy"] = "Static";
  if (!forced_static)
    choose("memoryManagerPolicy", "Static",
           "Guaranteed pods get memory and hugepages from the guest cell of their CPUs and devices");
  c["reservedMemory"] = reserved;
  choose("reservedMemory", reserved.dump(),
         "sums exactly to kubeReserved + systemReserved + evictionHard memory = " + MiQuantity(*total) +
             " (the kubelet refuses to start otherwise), cell 0 first, never into a cell's hugepage pool");
  return plan;
}

std::vector<KubeletFinding> CheckKubeletConfig(const json& c, const GuestLayout& g,
                                               const std::vector<GuestHugepagePool>& hugepages,
                                               const KubernetesVersion& version) {
  std::vector<KubeletFinding> out;
  auto find = [&](const std::string& field, const std::string& problem, const std::string& fix) {
    out.push_back({field, problem, fix});
  };
  auto str = [&](const char* key, const std::string& dflt) {
    return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : dflt;
  };
  auto gates = [&](const std::string& gate) {
    return c.contains("featureGates") && c["featureGates"].is_object() && c["featureGates"].value(gate, false);
  };
  const std::vector<GuestCellLayout> cells = g.cells_or_one();

  // --- CPU Manager ---
  const std::string cpu_policy = str("cpuManagerPolicy", "none");
  if (cpu_policy != "none" && cpu_policy != "static")
    find("cpuManagerPolicy", "'" + cpu_policy + "' is not a CPU Manager policy: the kubelet will not start",
         "use none or static");
  json cpu_options = c.value("cpuManagerPolicyOptions", json::object());
  auto option_on = [](const json& options, const char* name) {
    return options.is_object() && options.contains(name) && options[name].is_string() && options[name] == "true";
  };
  CpuSet reserved;
  if (c.contains("reservedSystemCPUs")) {
    std::string error;
    if (!c["reservedSystemCPUs"].is_string() ||
        !CpuSet::Parse(c["reservedSystemCPUs"].get<std::string>(), &reserved, &error))
      find("reservedSystemCPUs", "is not a CPU list" + (error.empty() ? "" : ": " + error),
           "write it as a cpuset, e.g. \"0-1\"");
  }
  if (cpu_policy == "static") {
    auto has_cpu = [&](const char* key) {
      return c.contains(key) && c[key].is_object() && c[key].contains("cpu") && c[key]["cpu"].is_string() &&
             QuantityBytes(c[key]["cpu"].get<std::string>()) != 0;
    };
    if (reserved.Count() == 0 && !has_cpu("kubeReserved") && !has_cpu("systemReserved"))
      find("reservedSystemCPUs", "the static CPU Manager needs a CPU reservation: the kubelet will not start",
           "set reservedSystemCPUs to whole guest cores of cell 0, e.g. \"" + g.CoreVcpus(0).ToString() + "\"");
    CpuSet all;
    for (int v = 0; v < g.vcpus; ++v) all.Add(v);
    if (!reserved.IsSubsetOf(all))
      find("reservedSystemCPUs", "names CPUs the guest does not have (" + reserved.Minus(all).ToString() + ")",
           "keep it inside 0-" + std::to_string(g.vcpus - 1));
    else if (reserved == all && g.vcpus > 0)
      find("reservedSystemCPUs", "reserves every guest CPU: no exclusive CPU is left for pods",
           "reserve one or two cores of cell 0");
    if (g.threads_per_core > 1 || option_on(cpu_options, "full-pcpus-only"))
      for (int v : reserved.ToVector())
        if (!g.CoreVcpus(g.CoreOf(v)).IsSubsetOf(reserved)) {
          find("reservedSystemCPUs",
               "vCPU " + std::to_string(v) + " is reserved but its SMT sibling(s) " +
                   g.CoreVcpus(g.CoreOf(v)).Minus(reserved).ToString() + " are not: that core is split",
               "reserve whole guest cores (" + g.CoreVcpus(g.CoreOf(v)).ToString() + ")");
          break;
        }
  }
  static const std::map<std::string, std::string> kCpuOptionGate = {
      {"full-pcpus-only", ""},
      {"distribute-cpus-across-numa", ""},
      {"align-by-socket", "CPUManagerPolicyAlphaOptions"},
      {"distribute-cpus-across-cores", "CPUManagerPolicyAlphaOptions"},
      {"strict-cpu-reservation", version.AtLeast(1, 35) ? "" : "CPUManagerPolicyBetaOptions"},
      {"prefer-align-cpus-by-uncorecache", version.AtLeast(1, 36) ? "" : "CPUManagerPolicyBetaOptions"}};
  if (cpu_options.is_object())
    for (auto it = cpu_options.begin(); it != cpu_options.end(); ++it) {
      auto known = kCpuOptionGate.find(it.key());
      if (known == kCpuOptionGate.end()) {
        find("cpuManagerPolicyOptions." + it.key(), "is not a CPU Manager option: the kubelet will not start",
             "known: full-pcpus-only, distribute-cpus-across-numa, align-by-socket, distribute-cpus-across-cores, "
             "strict-cpu-reservation, prefer-align-cpus-by-uncorecache");
        continue;
      }
      if (known->second == "CPUManagerPolicyAlphaOptions" && !gates(known->second))
        find("cpuManagerPolicyOptions." + it.key(), "is an alpha option: the kubelet refuses it without its gate",
             "set featureGates: {CPUManagerPolicyAlphaOptions: true}, or drop the option");
      if (cpu_policy != "static")
        find("cpuManagerPolicyOptions." + it.key(),
             "the " + cpu_policy + " CPU Manager policy takes no options: the kubelet does not start",
             "set cpuManagerPolicy: static, or drop cpuManagerPolicyOptions");
    }

  // --- Topology Manager ---
  const std::string topo = str("topologyManagerPolicy", "none");
  static const std::set<std::string> kTopo = {"none", "best-effort", "restricted", "single-numa-node"};
  if (!kTopo.count(topo))
    find("topologyManagerPolicy", "'" + topo + "' is not a Topology Manager policy: the kubelet will not start",
         "use none, best-effort, restricted or single-numa-node");
  const std::string scope = str("topologyManagerScope", "container");
  if (scope != "container" && scope != "pod")
    find("topologyManagerScope", "'" + scope + "' is not a scope", "use container or pod");
  if (topo == "single-numa-node" && option_on(cpu_options, "align-by-socket"))
    find("cpuManagerPolicyOptions.align-by-socket",
         "cannot be combined with topologyManagerPolicy single-numa-node: the kubelet refuses the pair",
         "drop align-by-socket, or use topologyManagerPolicy restricted");
  const std::string remote = ReasonCellsOfDevices(g);
  if (topo == "single-numa-node" && cells.size() > 1 && !remote.empty())
    find("topologyManagerPolicy",
         "single-numa-node will reject every pod asking for a device local to no guest cell (" + remote +
             "): TopologyAffinityError, in a loop (kubernetes#84869)",
         "use topologyManagerPolicy restricted with prefer-closest-numa-nodes, or give the devices a guest NUMA "
         "node (accel's libvirt XML: a pxb-pcie expander per guest cell)");
  if (topo != "none" && cells.size() > 8) {
    const json opts = c.value("topologyManagerPolicyOptions", json::object());
    int allowed = 8;
    if (opts.is_object() && opts.contains("max-allowable-numa-nodes") && opts["max-allowable-numa-nodes"].is_string())
      try {
        allowed = std::stoi(opts["max-allowable-numa-nodes"].get<std::string>());
      } catch (...) {
        allowed = -1;
      }
    if (allowed < static_cast<int>(cells.size()))
      find("topologyManagerPolicyOptions.max-allowable-numa-nodes",
           "the guest has " + std::to_string(cells.size()) +
               " NUMA nodes: the kubelet refuses to start its topology manager past " +
               (allowed < 0 ? std::string("8 (the value is not a number)") : std::to_string(allowed)),
           "set max-allowable-numa-nodes: \"" + std::to_string(cells.size()) + "\"");
  }

  // --- Memory Manager ---
  const std::string mem = str("memoryManagerPolicy", "None");
  if (mem != "None" && mem != "Static")
    find("memoryManagerPolicy", "'" + mem + "' is not a Memory Manager policy (they are capitalized)",
         "use None or Static");
  if (mem == "Static") {
    // Expected reservation per memory type.
    std::map<std::string, int64_t> expected;
    bool exact = true;
    for (const char* key : {"kubeReserved", "systemReserved"})
      if (c.contains(key) && c[key].is_object())
        for (auto it = c[key].begin(); it != c[key].end(); ++it) {
          if (it.key() != "memory" && it.key().rfind("hugepages-", 0) != 0) continue;
          const std::optional<int64_t> mib = ThresholdMib(it.value());
          if (!mib) {
            find(std::string(key) + "." + it.key(), "is not a quantity", "write it as e.g. 1Gi");
            exact = false;
          } else {
            expected[it.key()] += *mib;
          }
        }
    if (!c.contains("evictionHard")) {
      expected["memory"] += 100;  // the kubelet's default memory.available
    } else if (c["evictionHard"].is_object() && c["evictionHard"].contains("memory.available")) {
      const std::optional<int64_t> mib = ThresholdMib(c["evictionHard"]["memory.available"]);
      if (!mib) {
        find("evictionHard.memory.available",
             "a percentage cannot be checked against reservedMemory, which the Static Memory Manager needs exactly",
             "write an absolute quantity, e.g. 100Mi");
        exact = false;
      } else {
        expected["memory"] += *mib;
      }
    }
    std::map<std::string, int64_t> got;
    std::map<std::pair<int, std::string>, int64_t> per_cell;
    const json entries = c.value("reservedMemory", json::array());
    std::map<int, uint64_t> cell_memory;
    for (const GuestCellLayout& cell : cells) cell_memory[cell.cell] = cell.memory_mib;
    std::map<std::pair<int, uint64_t>, uint64_t> pool_mib;  // (cell, page_kib) -> MiB
    for (const GuestHugepagePool& p : hugepages) pool_mib[{p.cell, p.page_kib}] += p.pages * p.page_kib / 1024;
    for (size_t i = 0; entries.is_array() && i < entries.size(); ++i) {
      const json& e = entries[i];
      const std::string where = "reservedMemory[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("numaNode") || !e["numaNode"].is_number_integer() || !e.contains("limits") ||
          !e["limits"].is_object()) {
        find(where, "needs numaNode (an integer) and limits (a mapping)", "e.g. {numaNode: 0, limits: {memory: 1Gi}}");
        continue;
      }
      const int node = e["numaNode"].get<int>();
      if (!cell_memory.count(node))
        find(where + ".numaNode", "NUMA node " + std::to_string(node) + " does not exist in the guest",
             "use 0-" + std::to_string(cells.size() - 1));
      for (auto it = e["limits"].begin(); it != e["limits"].end(); ++it) {
        const std::string& type = it.key();
        if (type != "memory" && type.rfind("hugepages-", 0) != 0) {
          find(where + ".limits." + type, "only memory and hugepages-<size> can be reserved", "remove it");
          continue;
        }
        const std::optional<int64_t> mib = ThresholdMib(it.value());
        if (!mib || *mib == 0) {
          find(where + ".limits." + type, "must be a non-zero quantity", "remove the entry or give e.g. 1Gi");
          continue;
        }
        if (per_cell.count({node, type}))
          find(where, "reserves " + type + " on NUMA node " + std::to_string(node) + " twice", "merge the entries");
        per_cell[{node, type}] += *mib;
        got[type] += *mib;
        if (type.rfind("hugepages-", 0) == 0) {
          const int64_t page_bytes = QuantityBytes(type.substr(10));
          const uint64_t pool = page_bytes > 0 ? pool_mib[{node, static_cast<uint64_t>(page_bytes / 1024)}] : 0;
          if (static_cast<uint64_t>(*mib) > pool)
            find(where + ".limits." + type,
                 "reserves " + MiQuantity(*mib) + " of " + type + " on guest node " + std::to_string(node) +
                     ", whose pool holds " + MiQuantity(pool),
                 "reserve at most the pool, or grow the guest's hugepage pool on that node");
        } else if (cell_memory.count(node) && static_cast<uint64_t>(*mib) > cell_memory[node]) {
          find(where + ".limits.memory",
               "reserves " + MiQuantity(*mib) + " on a guest node of " + MiQuantity(cell_memory[node]),
               "spread the reservation over the guest's nodes");
        }
      }
    }
    if (exact) {
      std::set<std::string> types;
      for (const auto& [t, v] : expected) types.insert(t);
      for (const auto& [t, v] : got) types.insert(t);
      for (const std::string& t : types)
        if (expected[t] != got[t])
          find("reservedMemory",
               "the Static Memory Manager needs reservedMemory " + t + " summed over NUMA nodes (" +
                   MiQuantity(got[t]) + ") to equal kubeReserved + systemReserved" +
                   (t == "memory" ? " + evictionHard memory.available" : "") + " (" + MiQuantity(expected[t]) +
                   "): the kubelet will not start",
               "make the " + t + " entries sum to " + MiQuantity(expected[t]) +
                   (t == "memory" && !c.contains("evictionHard")
                        ? " (evictionHard is unset, so its default 100Mi counts: the usual mistake)"
                        : ""));
    }
  }
  return out;
}

}  // namespace accel::cluster
