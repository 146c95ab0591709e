#include "kubelet/check.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/quantity.h"
#include "common/strings.h"

namespace accel::kubelet {

namespace {

// MiB a reservation or threshold holds, rounded up; nullopt for a percentage or a value that is
// not a quantity (only absolute quantities can be summed).
std::optional<int64_t> MibOf(const QuantitySetting& q) {
  if (!q.milli || q.percent()) return std::nullopt;
  const int64_t bytes = (*q.milli + 999) / 1000;
  return (bytes + kMiB - 1) / kMiB;
}

// The devices local to no guest cell, for messages: "0000:1b:00.0 (h100), ...".
std::string DevicesWithoutCell(const GuestLayout& g) {
  std::string s;
  for (const GuestDevice& d : g.devices)
    if (d.guest_cell < 0) s += (s.empty() ? "" : ", ") + d.host_address + " (" + d.alias + ")";
  return s;
}

class ConfigChecker {
 public:
  ConfigChecker(const KubeletSettings& s, const GuestLayout& g, const std::vector<GuestHugepagePool>& hugepages,
                const KubernetesVersion& version, std::vector<KubeletFinding>* out)
      : s_(s), g_(g), hugepages_(hugepages), version_(version), out_(out), cells_(g.cells_or_one()) {}

  void Run() {
    CpuManager();
    TopologyManager();
    MemoryManager();
  }

 private:
  void Find(const std::string& field, const std::string& problem, const std::string& fix) {
    out_->push_back({Severity::kError, field, problem, fix});
  }

  void CpuManager() {
    const std::string& policy = s_.cpu_manager_policy;
    if (policy != "none" && policy != "static")
      Find("cpuManagerPolicy", "'" + policy + "' is not a CPU Manager policy: the kubelet will not start",
           "use none or static");
    const CpuSet reserved = s_.reserved_system_cpus.value_or(CpuSet());
    if (s_.static_cpu()) {
      auto has_cpu = [](const std::map<std::string, QuantitySetting>& m) {
        auto it = m.find("cpu");
        return it != m.end() && (!it->second.milli || *it->second.milli != 0);
      };
      if (reserved.Count() == 0 && !has_cpu(s_.kube_reserved) && !has_cpu(s_.system_reserved))
        Find("reservedSystemCPUs", "the static CPU Manager needs a CPU reservation: the kubelet will not start",
             "set reservedSystemCPUs to whole guest cores of cell 0, e.g. \"" + g_.CoreVcpus(0).ToString() + "\"");
      CpuSet all;
      for (int v = 0; v < g_.vcpus; ++v) all.Add(v);
      if (!reserved.IsSubsetOf(all))
        Find("reservedSystemCPUs", "names CPUs the guest does not have (" + reserved.Minus(all).ToString() + ")",
             "keep it inside 0-" + std::to_string(g_.vcpus - 1));
      else if (reserved == all && g_.vcpus > 0)
        Find("reservedSystemCPUs", "reserves every guest CPU: no exclusive CPU is left for pods",
             "reserve one or two cores of cell 0");
      if (g_.threads_per_core > 1 || s_.CpuOption("full-pcpus-only"))
        for (int v : reserved.ToVector())
          if (!g_.CoreVcpus(g_.CoreOf(v)).IsSubsetOf(reserved)) {
            Find("reservedSystemCPUs",
                 "vCPU " + std::to_string(v) + " is reserved but its SMT sibling(s) " +
                     g_.CoreVcpus(g_.CoreOf(v)).Minus(reserved).ToString() + " are not: that core is split",
                 "reserve whole guest cores (" + g_.CoreVcpus(g_.CoreOf(v)).ToString() + ")");
            break;
          }
    }
    const std::map<std::string, std::string> gate_of = {
        {"full-pcpus-only", ""},
        {"distribute-cpus-across-numa", ""},
        {"align-by-socket", "CPUManagerPolicyAlphaOptions"},
        {"distribute-cpus-across-cores", "CPUManagerPolicyAlphaOptions"},
        {"strict-cpu-reservation", version_.AtLeast(1, 35) ? "" : "CPUManagerPolicyBetaOptions"},
        {"prefer-align-cpus-by-uncorecache", version_.AtLeast(1, 36) ? "" : "CPUManagerPolicyBetaOptions"}};
    for (const auto& [option, value] : s_.cpu_manager_options) {
      auto known = gate_of.find(option);
      if (known == gate_of.end()) {
        Find("cpuManagerPolicyOptions." + option, "is not a CPU Manager option: the kubelet will not start",
             "known: full-pcpus-only, distribute-cpus-across-numa, align-by-socket, distribute-cpus-across-cores, "
             "strict-cpu-reservation, prefer-align-cpus-by-uncorecache");
        continue;
      }
      if (known->second == "CPUManagerPolicyAlphaOptions" && !s_.FeatureGate(known->second))
        Find("cpuManagerPolicyOptions." + option, "is an alpha option: the kubelet refuses it without its gate",
             "set featureGates: {CPUManagerPolicyAlphaOptions: true}, or drop the option");
      if (!s_.static_cpu())
        Find("cpuManagerPolicyOptions." + option,
             "the " + policy + " CPU Manager policy takes no options: the kubelet does not start",
             "set cpuManagerPolicy: static, or drop cpuManagerPolicyOptions");
    }
  }

  void TopologyManager() {
    const std::string& topo = s_.topology_manager_policy;
    static const std::set<std::string> kPolicies = {"none", "best-effort", "restricted", "single-numa-node"};
    if (!kPolicies.count(topo))
      Find("topologyManagerPolicy", "'" + topo + "' is not a Topology Manager policy: the kubelet will not start",
           "use none, best-effort, restricted or single-numa-node");
    const std::string& scope = s_.topology_manager_scope;
    if (scope != "container" && scope != "pod") Find("topologyManagerScope", "'" + scope + "' is not a scope", "use container or pod");
    if (topo == "single-numa-node" && s_.CpuOption("align-by-socket"))
      Find("cpuManagerPolicyOptions.align-by-socket",
           "cannot be combined with topologyManagerPolicy single-numa-node: the kubelet refuses the pair",
           "drop align-by-socket, or use topologyManagerPolicy restricted");
    const std::string remote = DevicesWithoutCell(g_);
    if (topo == "single-numa-node" && cells_.size() > 1 && !remote.empty())
      Find("topologyManagerPolicy",
           "single-numa-node will reject every pod asking for a device local to no guest cell (" + remote +
               "): TopologyAffinityError, in a loop (kubernetes#84869)",
           "use topologyManagerPolicy restricted with prefer-closest-numa-nodes, or give the devices a guest NUMA "
           "node (accel's libvirt XML: a pxb-pcie expander per guest cell)");
    if (topo != "none" && cells_.size() > 8) {
      int allowed = 8;
      if (auto it = s_.topology_manager_options.find("max-allowable-numa-nodes");
          it != s_.topology_manager_options.end() && !it->second.empty())
        try {
          allowed = std::stoi(it->second);
        } catch (...) {
          allowed = -1;
        }
      if (allowed < static_cast<int>(cells_.size()))
        Find("topologyManagerPolicyOptions.max-allowable-numa-nodes",
             "the guest has " + std::to_string(cells_.size()) +
                 " NUMA nodes: the kubelet refuses to start its topology manager past " +
                 (allowed < 0 ? std::string("8 (the value is not a number)") : std::to_string(allowed)),
             "set max-allowable-numa-nodes: \"" + std::to_string(cells_.size()) + "\"");
    }
  }

  void MemoryManager() {
    const std::string& mem = s_.memory_manager_policy;
    if (mem != "None" && mem != "Static")
      Find("memoryManagerPolicy", "'" + mem + "' is not a Memory Manager policy (they are capitalized)",
           "use None or Static");
    if (!s_.static_memory()) return;
    // Expected reservation per memory type.
    std::map<std::string, int64_t> expected;
    bool exact = true;
    for (const auto* reserved : {&s_.kube_reserved, &s_.system_reserved})
      for (const auto& [type, q] : *reserved) {
        if (type != "memory" && type.rfind("hugepages-", 0) != 0) continue;
        if (const std::optional<int64_t> mib = MibOf(q))
          expected[type] += *mib;
        else
          exact = false;  // the reader reported it
      }
    if (!s_.eviction_hard_set) {
      expected["memory"] += 100;  // the kubelet's default memory.available
    } else if (auto it = s_.eviction_hard.find("memory.available"); it != s_.eviction_hard.end()) {
      if (const std::optional<int64_t> mib = MibOf(it->second)) {
        expected["memory"] += *mib;
      } else {
        if (it->second.percent())
          Find("evictionHard.memory.available",
               "a percentage cannot be checked against reservedMemory, which the Static Memory Manager needs exactly",
               "write an absolute quantity, e.g. 100Mi");
        exact = false;
      }
    }
    std::map<std::string, int64_t> got;
    std::map<std::pair<int, std::string>, int64_t> per_cell;
    std::map<int, uint64_t> cell_memory;
    for (const GuestCellLayout& cell : cells_) cell_memory[cell.cell] = cell.memory_mib;
    std::map<std::pair<int, uint64_t>, uint64_t> pool_mib;  // (cell, page_kib) -> MiB
    for (const GuestHugepagePool& p : hugepages_) pool_mib[{p.cell, p.page_kib}] += p.pages * p.page_kib / 1024;
    for (const ReservedMemoryEntry& e : s_.reserved_memory) {
      const std::string where = "reservedMemory[" + std::to_string(e.index) + "]";
      const int node = e.numa_node;
      if (!cell_memory.count(node))
        Find(where + ".numaNode", "NUMA node " + std::to_string(node) + " does not exist in the guest",
             "use 0-" + std::to_string(cells_.size() - 1));
      for (const auto& [type, q] : e.limits) {
        if (type != "memory" && type.rfind("hugepages-", 0) != 0) {
          Find(where + ".limits." + type, "only memory and hugepages-<size> can be reserved", "remove it");
          continue;
        }
        const std::optional<int64_t> mib = MibOf(q);
        if (!mib || *mib == 0) {
          if (q.milli) Find(where + ".limits." + type, "must be a non-zero quantity", "remove the entry or give e.g. 1Gi");
          continue;
        }
        if (per_cell.count({node, type}))
          Find(where, "reserves " + type + " on NUMA node " + std::to_string(node) + " twice", "merge the entries");
        per_cell[{node, type}] += *mib;
        got[type] += *mib;
        if (type.rfind("hugepages-", 0) == 0) {
          std::string error;
          const std::optional<Quantity> page = ParseQuantity(type.substr(10), &error);
          const int64_t page_bytes = page ? page->Value() : -1;
          const uint64_t pool = page_bytes > 0 ? pool_mib[{node, static_cast<uint64_t>(page_bytes / 1024)}] : 0;
          if (static_cast<uint64_t>(*mib) > pool)
            Find(where + ".limits." + type,
                 "reserves " + MiQuantity(static_cast<uint64_t>(*mib)) + " of " + type + " on guest node " +
                     std::to_string(node) + ", whose pool holds " + MiQuantity(pool),
                 "reserve at most the pool, or grow the guest's hugepage pool on that node");
        } else if (cell_memory.count(node) && static_cast<uint64_t>(*mib) > cell_memory[node]) {
          Find(where + ".limits.memory",
               "reserves " + MiQuantity(static_cast<uint64_t>(*mib)) + " on a guest node of " +
                   MiQuantity(cell_memory[node]),
               "spread the reservation over the guest's nodes");
        }
      }
    }
    if (!exact) return;
    std::set<std::string> types;
    for (const auto& [t, v] : expected) types.insert(t);
    for (const auto& [t, v] : got) types.insert(t);
    for (const std::string& t : types)
      if (expected[t] != got[t])
        Find("reservedMemory",
             "the Static Memory Manager needs reservedMemory " + t + " summed over NUMA nodes (" +
                 MiQuantity(static_cast<uint64_t>(got[t])) + ") to equal kubeReserved + systemReserved" +
                 (t == "memory" ? " + evictionHard memory.available" : "") + " (" +
                 MiQuantity(static_cast<uint64_t>(expected[t])) + "): the kubelet will not start",
             "make the " + t + " entries sum to " + MiQuantity(static_cast<uint64_t>(expected[t])) +
                 (t == "memory" && !s_.eviction_hard_set
                      ? " (evictionHard is unset, so its default 100Mi counts: the usual mistake)"
                      : ""));
  }

  const KubeletSettings& s_;
  const GuestLayout& g_;
  const std::vector<GuestHugepagePool>& hugepages_;
  const KubernetesVersion& version_;
  std::vector<KubeletFinding>* out_;
  const std::vector<GuestCellLayout> cells_;
};

}  // namespace

std::vector<KubeletFinding> CheckKubeletConfig(const nlohmann::json& config, const GuestLayout& layout,
                                               const std::vector<GuestHugepagePool>& hugepages,
                                               const KubernetesVersion& version) {
  std::vector<KubeletFinding> out;
  const KubeletSettings settings = ReadKubeletSettings(config, &out);
  ConfigChecker(settings, layout, hugepages, version, &out).Run();
  return out;
}

std::vector<KubeletFinding> CheckKubeletOptions(const KubeletSettings& s, const GuestLayout& g) {
  std::vector<KubeletFinding> out;
  auto error = [&](const std::string& key, const std::string& problem, const std::string& fix) {
    out.push_back({Severity::kError, key, problem, fix});
  };
  auto warning = [&](const std::string& key, const std::string& problem, const std::string& fix) {
    out.push_back({Severity::kWarning, key, problem, fix});
  };
  auto on = [&](const char* name) { return s.CpuOption(name); };

  // CPU Manager options that exclude each other (kubelet cpumanager/policy_options.go,
  // NewStaticPolicyOptions and ValidateStaticPolicyOptions; k8s-device-plugin.md §4.3).
  if (s.static_cpu()) {
    if (on("distribute-cpus-across-cores") && on("full-pcpus-only"))
      error("cpuManagerPolicyOptions.distribute-cpus-across-cores",
            "cannot be used with full-pcpus-only: the kubelet refuses the pair (\"static policy options ... can not be "
            "used at the same time\") and does not start",
            "keep full-pcpus-only (whole cores for a guest that sees SMT siblings) and drop "
            "distribute-cpus-across-cores");
    if (on("distribute-cpus-across-cores") && on("distribute-cpus-across-numa"))
      error("cpuManagerPolicyOptions.distribute-cpus-across-cores",
            "cannot be used with distribute-cpus-across-numa: the kubelet refuses the pair and does not start",
            "keep one of the two distribute options");
    if (on("prefer-align-cpus-by-uncorecache") && (on("distribute-cpus-across-numa") || on("distribute-cpus-across-cores")))
      error("cpuManagerPolicyOptions.prefer-align-cpus-by-uncorecache",
            std::string("cannot be used with ") +
                (on("distribute-cpus-across-numa") ? "distribute-cpus-across-numa" : "distribute-cpus-across-cores") +
                ": the kubelet refuses the pair and does not start",
            "drop one of them");
    const size_t numa_nodes = g.cells_or_one().size();
    if (on("align-by-socket") && static_cast<size_t>(g.sockets) > numa_nodes)
      error("cpuManagerPolicyOptions.align-by-socket",
            "the guest has " + CountOf(static_cast<size_t>(g.sockets), "socket") + " on " + CountOf(numa_nodes, "NUMA node") +
                ": the kubelet refuses align-by-socket where sockets outnumber NUMA nodes and does not start",
            "drop align-by-socket, or give the flavor one socket per guest cell (hw:cpu_sockets)");
  }

  // Topology Manager options (topologymanager/policy_options.go: unknown options are refused).
  for (const auto& [option, value] : s.topology_manager_options) {
    const std::string key = "topologyManagerPolicyOptions." + option;
    if (option == "prefer-closest-numa-nodes") {
      if (value != "true" && value != "false")
        error(key, "must be \"true\" or \"false\" (a string): the kubelet does not start", "write \"true\"");
    } else if (option == "max-allowable-numa-nodes") {
      const bool number = !value.empty() && std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (!number) error(key, "must be a number as a string: the kubelet does not start", "e.g. \"16\"");
    } else {
      error(key, "is not a Topology Manager option: the kubelet does not start",
            "known: prefer-closest-numa-nodes, max-allowable-numa-nodes");
    }
  }

  // kubelet validation.go (ValidateKubeletConfiguration).
  const std::string& reserved_cpus = s.reserved_system_cpus_text;
  if (!reserved_cpus.empty() && (!s.system_reserved_cgroup.empty() || !s.kube_reserved_cgroup.empty()))
    error("reservedSystemCPUs",
          "cannot be used with systemReservedCgroup or kubeReservedCgroup: the kubelet refuses to start "
          "(\"can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup ... or kubeReservedCgroup\")",
          "set systemReservedCgroup: \"\" and kubeReservedCgroup: \"\" in the kubelet override, or drop "
          "reservedSystemCPUs");
  for (const std::string& e : s.enforce_node_allocatable) {
    if (e == "pods") continue;
    if (e == "system-reserved") {
      if (s.system_reserved_cgroup.empty())
        error("enforceNodeAllocatable", "lists system-reserved without systemReservedCgroup: the kubelet does not start",
              "set systemReservedCgroup (e.g. /system.slice), or enforce pods only");
    } else if (e == "kube-reserved") {
      if (s.kube_reserved_cgroup.empty())
        error("enforceNodeAllocatable", "lists kube-reserved without kubeReservedCgroup: the kubelet does not start",
              "set kubeReservedCgroup (e.g. /kube.slice), or enforce pods only");
    } else if (e == "none") {
      if (s.enforce_node_allocatable.size() > 1)
        error("enforceNodeAllocatable", "lists none beside other enforcements: the kubelet does not start",
              "write [none] alone, or drop none");
    } else {
      error("enforceNodeAllocatable", "'" + e + "' is not an enforcement: the kubelet does not start",
            "use pods, system-reserved, kube-reserved or none");
    }
  }
  auto duration = [](const std::string& text) -> std::optional<int64_t> {
    std::string err;
    return text.empty() ? std::nullopt : ParseGoDuration(text, &err);
  };
  const std::optional<int64_t> grace = duration(s.shutdown_grace_period);
  const std::optional<int64_t> critical = duration(s.shutdown_grace_period_critical_pods);
  if (critical && *critical > grace.value_or(0))
    error("shutdownGracePeriodCriticalPods",
          "is longer than shutdownGracePeriod (" + (grace ? s.shutdown_grace_period : std::string("0s")) +
              "): the kubelet does not start",
          "make shutdownGracePeriodCriticalPods at most shutdownGracePeriod (it is a part of it)");
  if (s.shutdown_by_pod_priority && ((grace && *grace > 0) || (critical && *critical > 0)))
    error("shutdownGracePeriodByPodPriority",
          "cannot be used with shutdownGracePeriod or shutdownGracePeriodCriticalPods: the kubelet does not start",
          "keep one way of giving the shutdown grace periods");

  // Not refused, but ignored: the None Memory Manager does not read reservedMemory.
  if (!s.static_memory() && !s.reserved_memory.empty())
    warning("reservedMemory",
            "is set but memoryManagerPolicy is " + s.memory_manager_policy +
                ": the kubelet ignores it, and Guaranteed pods get memory and hugepages from any NUMA node",
            "set memoryManagerPolicy: Static (reservedMemory must then sum exactly to kubeReserved + systemReserved + "
            "evictionHard memory.available), or drop reservedMemory");

  // Not refused, but not what it says: with reservedSystemCPUs the kubelet reserves exactly those
  // CPUs and drops the cpu of kubeReserved/systemReserved (cmd/kubelet/app/server.go: "Option
  // --reserved-cpus is specified, it will overwrite the cpu setting in KubeReserved and
  // SystemReserved").
  if (!reserved_cpus.empty())
    for (const auto& [key, reserved] : {std::pair{"kubeReserved", &s.kube_reserved}, std::pair{"systemReserved", &s.system_reserved}})
      if (auto it = reserved->find("cpu"); it != reserved->end())
        warning(std::string(key) + ".cpu",
                std::string(key) + ".cpu " + it->second.text + " is ignored: with reservedSystemCPUs (" + reserved_cpus +
                    ") the kubelet reserves exactly those CPUs",
                "drop " + std::string(key) + ".cpu, or reserve more whole cores in reservedSystemCPUs");
  return out;
}

}  // namespace accel::kubelet
