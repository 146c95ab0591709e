// The pod as the kubelet and the scheduler count it: a Kubernetes v1 Pod read as the API server
// stores it (requests default to limits; extended resources and hugepages need requests ==
// limits), its QoS class exactly as Kubernetes computes it (pkg/apis/core/helper/qos
// ComputePodQOS: only cpu and memory count; Guaranteed when every container — init containers
// too — has cpu and memory limits and the summed requests equal the summed limits; BestEffort
// when nothing is requested), and its effective requests (KEP-753: init containers, sidecars and
// app containers).
//
// Plain data and pure functions; thread-safe. Bad input throws InputError.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace accel::kubelet {

/// One container's resources as the API server stores them.
struct ContainerResources {
  std::string name;     ///< container name ("containers[1]" when the file gives none)
  bool init = false;    ///< from spec.initContainers
  bool sidecar = false; ///< an init container with restartPolicy: Always (runs beside the app)
  /// Requests in milli-units (1 CPU = 1000, 1 byte = 1000, 1 device = 1000), after defaulting:
  /// a resource with a limit and no request requests its limit. Zero quantities are dropped.
  std::map<std::string, int64_t> requests;
  std::map<std::string, int64_t> limits;  ///< limits, milli-units
};

/// A pod's resources: what `accel cluster pods` reads of a Pod.
struct PodResources {
  std::string name;    ///< metadata.name; "" when absent
  std::string source;  ///< the file (or `where`), for messages
  /// Init containers in spec order, then app containers in spec order.
  std::vector<ContainerResources> containers;
  /// spec.overhead (RuntimeClass): counted in node allocatable, not by the kubelet's managers.
  std::map<std::string, int64_t> overhead;
};

/// Reads a Kubernetes Pod (apiVersion v1, kind Pod) from YAML or JSON text; `where` names it in
/// errors. Throws InputError (where, key path, problem, fix) for: text that does not parse, a
/// document that is not a Pod (the error names its kind: a Deployment, Job, ... is refused with
/// how to extract its pod template), no containers, a quantity that does not parse or is
/// negative, a request above its limit, an extended resource or hugepages whose request differs
/// from its limit or that has no limit, a fractional extended resource, an unknown resource name
/// without a domain, hugepages without a cpu or memory request, pod-level spec.resources (not
/// modelled), or an unknown key under a container's resources.
PodResources ParsePodText(std::string_view text, const std::string& where);

/// ParsePodText of the file at `path`. Throws InputError naming the file.
PodResources LoadPod(const std::string& path);

/// Reads a Pod object as the API server and kube-scheduler hand it over (already parsed JSON):
/// the same rules as ParsePodText, except that kind and apiVersion may be absent (typed Go
/// clients leave them out; when present they must say v1 Pod). `where` names it in errors
/// ("pod ns/name"). Throws InputError as ParsePodText does.
PodResources ReadPodObject(const nlohmann::json& pod, const std::string& where);

/// Kubernetes' QoS classes.
enum class QosClass { kBestEffort, kBurstable, kGuaranteed };

/// "BestEffort", "Burstable", "Guaranteed".
const char* QosClassName(QosClass qos);

/// The pod's QoS class, exactly as ComputePodQOS (see the header comment).
QosClass QosOf(const PodResources& pod);

/// The pod's effective request of `resource` in milli-units, as the kubelet's managers and the
/// scheduler accumulate it (KEP-753): the larger of (any init container, plus the sidecars
/// started before it) and (every app container plus every sidecar). `limits` reads the limits
/// instead (the device manager counts limits). Overhead is not included.
int64_t PodRequestMilli(const PodResources& pod, const std::string& resource, bool limits = false);

/// The pod's effective value of `value` (a per-container amount), KEP-753's formula as the
/// kubelet's managers and the scheduler use it: the larger of (any init container, plus the
/// sidecars started before it) and (every app container plus every sidecar).
int64_t PodAccumulate(const PodResources& pod, const std::function<int64_t(const ContainerResources&)>& value);

/// The exclusive CPUs the static CPU Manager gives one container of a Guaranteed pod
/// (guaranteedCPUs): its CPU request when that is a whole number of CPUs, else 0.
int ExclusiveCpusOf(const ContainerResources& container);

/// `resource`'s amount in a milli-unit map (requests, limits); 0 when absent.
int64_t ResourceMilli(const std::map<std::string, int64_t>& amounts, const std::string& resource);

/// "hugepages-2Mi" -> 2048 (KiB); 0 when `resource` is not a hugepages resource or its size does
/// not parse.
uint64_t HugepageKib(std::string_view resource);

/// "hugepages-2Mi" for 2048 KiB.
std::string HugepageResourceName(uint64_t page_kib);

/// True for an extended resource: a domain-prefixed name outside kubernetes.io (apimachinery
/// IsExtendedResourceName; requests.* is a quota prefix, not a resource): "nvidia.com/gpu".
bool IsExtendedResource(std::string_view name);

/// Milli-bytes (a quantity's milli value) as MiB, rounded up.
uint64_t MilliBytesToMib(int64_t milli);

}  // namespace accel::kubelet
