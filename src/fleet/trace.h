// Workload traces: a cluster's nodes and the pods that arrive on it, as Alibaba's openb GPU
// cluster trace writes them (../shared/data/openb/README.md) — the input of `accel fleet replay`.
//
// Nodes CSV: sn,cpu_milli,memory_mib,gpu,model (a node of `gpu` GPUs of one model; 0 = CPU only).
// Pods CSV: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,
// deletion_time,scheduled_time] — num_gpu 0..64; gpu_milli the share of one GPU when num_gpu
// is 1 (1..1000), whole GPUs otherwise; gpu_spec empty, "nan" or "A|B" (allowed models); times
// in seconds (needed only with departures). Extra columns are ignored.
//
// Each node becomes a fleet host (TraceHostTopology): one NUMA node with its CPUs and memory and
// its GPUs as PCI devices named by the model, so the trace is placed by the same scheduler and
// engine as any host of the fleet. Plain data; the readers throw InputError naming file, line
// and column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "placement/request.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::fleet {

struct TraceNode {
  std::string name;          ///< sn
  int64_t cpu_milli = 0;     ///< CPUs x 1000 (1 .. 4,096,000)
  uint64_t memory_mib = 0;
  int gpus = 0;              ///< GPUs on the node
  std::string model;         ///< their model ("" with no GPUs)
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  int num_gpu = 0;           ///< 0 = CPU only
  int gpu_milli = 0;         ///< thousandths of each GPU: the share for num_gpu 1, 1000 otherwise
  std::vector<std::string> models;  ///< allowed GPU models (gpu_spec split at '|'); empty = any
  std::string gpu_spec;      ///< as written ("" for none or "nan")
  std::optional<int64_t> created;   ///< creation_time, seconds
  std::optional<int64_t> deleted;   ///< deletion_time, seconds
  /// GPU thousandths asked for: num_gpu x gpu_milli.
  int64_t GpuMilli() const { return static_cast<int64_t>(num_gpu) * gpu_milli; }
};

/// Reads a nodes CSV. Throws InputError (file:line:column) for a bad value, a duplicate name,
/// or a missing column.
std::vector<TraceNode> ReadTraceNodes(const std::string& path);
std::vector<TraceNode> ParseTraceNodes(const std::string& text, const std::string& path);

/// Reads a pods CSV (same errors; a time column present but empty on a row is left unset).
std::vector<TracePod> ReadTracePods(const std::string& path);
std::vector<TracePod> ParseTracePods(const std::string& text, const std::string& path);

/// The host of a trace node: hostname = name; one NUMA node 0 with ceil(cpu_milli / 1000) CPUs
/// (one core each) and memory_mib of base pages; `gpus` NVIDIA GPUs named `model` at
/// 0000:NN:00.0 on node 0 (device id of the model where known: T4, P100, V100M16, V100M32, A10).
topology::HostTopology TraceHostTopology(const TraceNode& node);

/// The host policy of a trace node: every CPU shared, cpu_allocation_ratio such that the shared
/// capacity is exactly cpu_milli (Kubernetes' allocatable CPU, no overcommit), no reserved memory.
placement::HostPolicy TraceHostPolicy(const TraceNode& node);

/// The request of a pod (fleet/workload_mix.h PodRequest).
placement::PlacementRequest TracePodRequest(const TracePod& pod);

}  // namespace accel::fleet
