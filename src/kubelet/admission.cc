#include "kubelet/admission.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "kubelet/derive.h"
#include "kubelet/topology_policy.h"

namespace accel::kubelet {

using nlohmann::ordered_json;

NodeAdmission::NodeAdmission(KubeletNode node)
    : node_(std::make_shared<const KubeletNode>(std::move(node))),
      host_(std::make_shared<const topology::HostTopology>(GuestHostTopology(*node_))) {
  const size_t k = static_cast<size_t>(node_->cell_count());
  state_.cell_hugepages = node_->cell_hugepages_mib;
  state_.group.resize(k);
  for (size_t i = 0; i < k; ++i) state_.group[i] = {static_cast<int>(i)};
  state_.assignments.assign(k, 0);
}

bool NodeAdmission::AdmitDemand(const AdmissionDemand& d, State* state, bool keep, Admission* out) const {
  DemandContext c(*this, d, state, out);
  const std::string& policy = node_->topology_policy;
  const bool admitted = policy == "single-numa-node" ? AdmitUnderSingleNumaNode(c)
                        : policy == "restricted"     ? AdmitUnderRestricted(c)
                        : policy == "best-effort"    ? AdmitUnderBestEffort(c)
                                                     : AdmitUnderNone(c);
  if (!admitted) return false;
  if (keep) c.Keep();
  return true;
}

Admission NodeAdmission::Try(const PodResources& pod) const {
  const KubeletNode& n = *node_;
  Admission a;
  const bool guaranteed = QosOf(pod) == QosClass::kGuaranteed;
  // 1. Node allocatable.
  a.cpu_milli = PodRequestMilli(pod, "cpu") + ResourceMilli(pod.overhead, "cpu");
  a.memory_mib = MilliBytesToMib(PodRequestMilli(pod, "memory") + ResourceMilli(pod.overhead, "memory"));
  std::set<std::string> names;
  for (const ContainerResources& c : pod.containers) {
    for (const auto& [name, v] : c.requests) names.insert(name);
    for (const auto& [name, v] : c.limits) names.insert(name);
  }
  for (const std::string& name : names) {
    if (const uint64_t kib = HugepageKib(name); kib > 0) {
      const uint64_t mib = MilliBytesToMib(PodRequestMilli(pod, name));
      if (mib > 0) a.hugepages_mib[kib] += mib;
    } else if (IsExtendedResource(name)) {
      const int count = static_cast<int>(PodRequestMilli(pod, name, true) / 1000);
      if (count > 0) a.devices[name] = count;
    }
  }
  auto insufficient = [&](const std::string& resource, const std::string& message) {
    a.reason = "Insufficient " + resource;
    a.message = message;
    return a;
  };
  if (state_.pods >= n.max_pods)
    return insufficient("pods", "the node already runs maxPods (" + std::to_string(n.max_pods) + ") pods");
  if (state_.cpu_milli + a.cpu_milli > n.allocatable_cpu_milli)
    return insufficient("cpu", "the pod requests " + std::to_string(a.cpu_milli) + "m CPU; the node's allocatable is " +
                                   std::to_string(n.allocatable_cpu_milli) + "m, " + std::to_string(state_.cpu_milli) +
                                   "m of it requested already");
  if (state_.memory_mib + a.memory_mib > n.allocatable_memory_mib)
    return insufficient("memory", "the pod requests " + MiQuantity(a.memory_mib) + " of memory; the node's allocatable is " +
                                      MiQuantity(n.allocatable_memory_mib) + ", " + MiQuantity(state_.memory_mib) +
                                      " of it requested already");
  for (const auto& [kib, mib] : a.hugepages_mib) {
    auto have = n.allocatable_hugepages_mib.find(kib);
    const uint64_t total = have == n.allocatable_hugepages_mib.end() ? 0 : have->second;
    auto used = state_.hugepages_mib.find(kib);
    const uint64_t taken = used == state_.hugepages_mib.end() ? 0 : used->second;
    if (taken + mib > total)
      return insufficient(HugepageResourceName(kib), "the pod requests " + MiQuantity(mib) + " of " + HugepageResourceName(kib) +
                                                 "; the node has " + MiQuantity(total) + " (guest hugepage pools), " +
                                                 MiQuantity(taken) + " of it requested already");
  }
  for (const auto& [name, count] : a.devices) {
    const NodeResource* r = n.FindResource(name);
    auto used = state_.devices.find(name);
    const int taken = used == state_.devices.end() ? 0 : used->second;
    if (r == nullptr) {
      std::string offered;
      for (const NodeResource& x : n.resources) offered += (offered.empty() ? "" : ", ") + x.name;
      return insufficient(name, "the group's nodes advertise no " + name + " (they advertise: " +
                                    (offered.empty() ? "no extended resources" : offered) + ")");
    }
    if (taken + count > r->total())
      return insufficient(name, "the pod asks " + std::to_string(count) + " " + name + "; the node has " +
                                    std::to_string(r->total()) + ", " + std::to_string(taken) + " of them taken");
  }
  // 2-4 per demand.
  auto demand_of = [&](const ContainerResources* only) {
    AdmissionDemand d;
    PodResources one;
    if (only) {
      d.container = only->name;
      one.containers = {*only};
      one.containers[0].init = false;
      one.containers[0].sidecar = false;
    }
    const PodResources& p = only ? one : pod;
    if (n.static_cpu && guaranteed) d.exclusive_cpus = static_cast<int>(PodAccumulate(p, ExclusiveCpusOf));
    d.aligned_memory = n.static_memory && guaranteed;
    if (d.aligned_memory) {
      d.memory_mib = MilliBytesToMib(PodRequestMilli(p, "memory"));
      for (const std::string& name : names)
        if (const uint64_t kib = HugepageKib(name); kib > 0) {
          const uint64_t mib = MilliBytesToMib(PodRequestMilli(p, name));
          if (mib > 0) d.hugepages_mib[kib] = mib;
        }
    }
    for (const std::string& name : names)
      if (IsExtendedResource(name)) {
        const int count = static_cast<int>(PodRequestMilli(p, name, true) / 1000);
        if (count > 0) d.devices[name] = count;
      }
    return d;
  };
  State scratch = state_;
  if (n.pod_scope || n.topology_policy == "none") {
    // With topology none the managers allocate per container without alignment; one demand gives
    // the same answer (nothing ties a container to a cell).
    a.demands.push_back(demand_of(nullptr));
    if (!AdmitDemand(a.demands.back(), &scratch, true, &a)) return a;
  } else {
    for (const ContainerResources& c : pod.containers) {
      a.demands.push_back(demand_of(&c));
      // Init containers run to completion before the next starts: tried, then let go.
      const bool keep = !c.init || c.sidecar;
      if (!AdmitDemand(a.demands.back(), &scratch, keep, &a)) return a;
    }
  }
  for (const ContainerResources& c : pod.containers)
    for (const auto& [name, limit] : c.limits) {
      const NodeResource* r = n.FindResource(name);
      if (r != nullptr && r->max_per_container > 0 && limit / 1000 > r->max_per_container) {
        a.reason = "UnexpectedAdmissionError";
        a.message = "container " + c.name + " asks " + std::to_string(limit / 1000) + " " + name +
                    ": its device plugin refuses more than " + std::to_string(r->max_per_container) +
                    " per container (failRequestsGreaterThanOne)";
        a.cells.clear();
        a.placements.clear();
        a.memory_masks.clear();
        return a;
      }
    }
  a.admitted = true;
  return a;
}

void NodeAdmission::Commit(const Admission& a) {
  if (!a.admitted) throw std::logic_error("pod admission: Commit of a refused pod");
  State next = state_;
  for (const placement::Placement& p : a.placements) {
    const std::string error = next.usage.Apply(p);
    if (!error.empty()) throw std::logic_error("pod admission: stale admission: " + error);
  }
  for (const CellShare& s : a.cells)
    for (const auto& [kib, mib] : s.hugepages_mib) {
      uint64_t& free = next.cell_hugepages[static_cast<size_t>(s.cell)][kib];
      if (free < mib) throw std::logic_error("pod admission: stale admission (hugepages)");
      free -= mib;
    }
  for (const std::vector<int>& mask : a.memory_masks)
    for (int c : mask) {
      ++next.assignments[static_cast<size_t>(c)];
      next.group[static_cast<size_t>(c)] = mask;
    }
  next.cpu_milli += a.cpu_milli;
  next.memory_mib += a.memory_mib;
  for (const auto& [kib, mib] : a.hugepages_mib) next.hugepages_mib[kib] += mib;
  for (const auto& [name, count] : a.devices) next.devices[name] += count;
  ++next.pods;
  state_ = std::move(next);
}

std::vector<CellShare> NodeAdmission::HeldPerCell() const {
  const KubeletNode& n = *node_;
  std::vector<CellShare> out(static_cast<size_t>(n.cell_count()));
  for (size_t c = 0; c < out.size(); ++c) {
    out[c].cell = static_cast<int>(c);
    if (auto it = state_.usage.nodes.find(static_cast<int>(c)); it != state_.usage.nodes.end()) {
      out[c].cpus = it->second.pinned_cpus;
      if (auto p = it->second.pages_used.find(4); p != it->second.pages_used.end()) out[c].memory_mib = p->second / 256;
    }
    for (const auto& [kib, mib] : n.cell_hugepages_mib[c]) {
      auto left = state_.cell_hugepages[c].find(kib);
      const uint64_t free = left == state_.cell_hugepages[c].end() ? 0 : left->second;
      if (mib > free) out[c].hugepages_mib[kib] = mib - free;
    }
  }
  for (const std::string& address : state_.usage.devices)
    if (const topology::PciDevice* dev = host_->FindPci(address); dev != nullptr && dev->numa_node >= 0)
      ++out[static_cast<size_t>(dev->numa_node)].devices[n.resources[dev->device_id].name];
  return out;
}

// =============================================================================================
// FitPod

PodFit FitPod(const KubeletNode& node, const PodResources& pod) {
  PodFit f;
  f.group = node.group;
  f.pod = pod.name;
  f.qos = QosOf(pod);
  NodeAdmission na(node);
  f.first = na.Try(pod);
  if (f.first.admitted) {
    na.Commit(f.first);
    f.per_node = 1;
    while (f.per_node < kMaxPodsCounted) {
      const Admission next = na.Try(pod);
      if (!next.admitted) {
        f.stopped_reason = next.reason;
        f.stopped_message = next.message;
        break;
      }
      na.Commit(next);
      ++f.per_node;
    }
  }
  // Where the kubelet's own choice can differ, as it applies to this pod.
  const bool align = node.topology_policy == "restricted" || node.topology_policy == "single-numa-node";
  int exclusive = 0;
  bool aligned_memory = false, loose_devices = false;
  for (const AdmissionDemand& d : f.first.demands) {
    exclusive += d.exclusive_cpus;
    aligned_memory = aligned_memory || d.aligned_memory;
    for (const auto& [name, count] : d.devices)
      if (const NodeResource* r = node.FindResource(name); r != nullptr && !r->aligned()) loose_devices = true;
  }
  if (exclusive > 0)
    f.notes.push_back("the kubelet's CPU Manager picks the exclusive CPUs itself (takeByTopology: whole cores, lowest ids "
                      "first); the CPUs shown are the engine's, the count per cell is what admission depends on");
  if (align && f.per_node > 1 && !f.first.cells.empty())
    f.notes.push_back("the kubelet fills the lowest-numbered cell that fits first, the engine the fullest; for pods that "
                      "fit one cell the count per node is the same");
  if (f.first.cells.size() > 1 && align)
    f.notes.push_back("the pod spans " + std::to_string(f.first.cells.size()) +
                      " guest cells: the kubelet splits its CPUs and memory over them by its own order (accel fills the "
                      "cells in order), and the Memory Manager then uses those cells only as this group");
  if (!node.pod_scope && node.topology_policy != "none" && f.first.demands.size() > 1)
    f.notes.push_back("topologyManagerScope container: each container is aligned on its own, and CPUs an init "
                      "container released are reused first by the next ones, which can pin their hint "
                      "(kubernetes#123816)");
  if (loose_devices)
    f.notes.push_back("some requested devices report no NUMA node: the kubelet never aligns them with the pod's CPUs");
  if (aligned_memory)
    f.notes.push_back("memory per cell is the guest's RAM less the reservations; the kubelet reads MemTotal, slightly "
                      "less, so a pod sized to the last MiB of a cell can be refused there");
  if (!node.findings.empty())
    f.notes.push_back("the group's kubelet configuration has " + std::to_string(node.findings.size()) +
                      " problem(s) (accel cluster plan lists them); the node is modelled as configured");
  return f;
}

ordered_json PodFitJson(const PodFit& f, const KubeletNode& node) {
  ordered_json j;
  j["schema"] = "accel.cluster-pods/v1";
  j["group"] = f.group;
  j["pod"] = f.pod;
  j["qos"] = QosClassName(f.qos);
  j["kubelet"] = {{"cpuManagerPolicy", node.static_cpu ? "static" : "none"},
                  {"fullPcpusOnly", node.full_pcpus_only},
                  {"reservedSystemCPUs", node.reserved_cpus.ToString()},
                  {"topologyManagerPolicy", node.topology_policy},
                  {"topologyManagerScope", node.pod_scope ? "pod" : "container"},
                  {"memoryManagerPolicy", node.static_memory ? "Static" : "None"},
                  {"maxPods", node.max_pods}};
  j["admitted"] = f.first.admitted;
  j["reason"] = f.first.reason;
  j["message"] = f.first.message;
  j["demands"] = ordered_json::array();
  for (const AdmissionDemand& d : f.first.demands) {
    ordered_json dj;
    dj["container"] = d.container;
    dj["exclusive_cpus"] = d.exclusive_cpus;
    dj["aligned_memory"] = d.aligned_memory;
    dj["memory_mib"] = d.memory_mib;
    dj["hugepages_mib"] = ordered_json::object();
    for (const auto& [kib, mib] : d.hugepages_mib) dj["hugepages_mib"][HugepageResourceName(kib)] = mib;
    dj["devices"] = ordered_json::object();
    for (const auto& [name, count] : d.devices) dj["devices"][name] = count;
    j["demands"].push_back(dj);
  }
  j["cells"] = ordered_json::array();
  for (const CellShare& s : f.first.cells) {
    ordered_json cj;
    cj["cell"] = s.cell;
    cj["cpus"] = s.cpus.ToString();
    cj["memory_mib"] = s.memory_mib;
    cj["hugepages_mib"] = ordered_json::object();
    for (const auto& [kib, mib] : s.hugepages_mib) cj["hugepages_mib"][HugepageResourceName(kib)] = mib;
    cj["devices"] = ordered_json::object();
    for (const auto& [name, count] : s.devices) cj["devices"][name] = count;
    j["cells"].push_back(cj);
  }
  j["per_node"] = f.per_node;
  j["stopped_by"] = {{"reason", f.stopped_reason}, {"message", f.stopped_message}};
  j["notes"] = f.notes;
  return j;
}

}  // namespace accel::kubelet
