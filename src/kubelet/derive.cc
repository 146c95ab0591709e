#include "kubelet/derive.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "kubelet/overrides.h"
#include "kubelet/settings.h"
#include "common/quantity.h"

namespace accel::kubelet {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// What a reservation or eviction threshold holds in MiB: absolute only (a percentage of a node's
// memory is not a number the sum rule can be checked with). nullopt for a percentage or garbage.
std::optional<int64_t> ThresholdMib(const QuantitySetting& q) {
  if (!q.milli || q.percent()) return std::nullopt;
  const int64_t bytes = (*q.milli + 999) / 1000;
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

std::string DevicesWithoutGuestCell(const GuestLayout& g) {
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
  const std::string remote = DevicesWithoutGuestCell(g);
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
    if (!in.overrides.contains("cpuManagerPolicyOptions") && !ReadKubeletSettings(json(c)).static_cpu() &&
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
  // The merged configuration, read as every other reader reads one.
  const KubeletSettings merged = ReadKubeletSettings(json(c));
  const bool forced_static = in.overrides.contains("memoryManagerPolicy");
  if (forced_static && !merged.static_memory()) return plan;
  // kubeReserved + systemReserved + evictionHard memory, as the sum rule counts it (a percentage
  // or garbage leaves no exact total).
  std::optional<int64_t> total = 0;
  for (const auto* reserved : {&merged.kube_reserved, &merged.system_reserved})
    if (auto it = reserved->find("memory"); total && it != reserved->end()) {
      const std::optional<int64_t> mib = ThresholdMib(it->second);
      total = mib ? std::optional<int64_t>(*total + *mib) : std::nullopt;
    }
  if (auto it = merged.eviction_hard.find("memory.available"); total && it != merged.eviction_hard.end()) {
    const std::optional<int64_t> mib = ThresholdMib(it->second);
    total = mib ? std::optional<int64_t>(*total + *mib) : std::nullopt;
  } else if (total && !merged.eviction_hard_set) {
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

}  // namespace accel::kubelet
