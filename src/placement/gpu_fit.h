// GPU fit by model and size: which GPUs of one host can take a GpuRequest (whole GPUs of a
// model list, a time-slicing/MPS share of one GPU, one MIG slice), and every distinct way to
// give it. The engine (placement/engine.h) uses it for requests with a GpuRequest; the fleet's
// share scheduler (fleet/share_scheduler.h) ranks the options with a fragmentation policy.
//
// A host's GPUs are its accelerators (PciDevice::is_accelerator) in PCI order; their index in
// that order is what a GpuChoice names. Each GPU is in one of four states under a HostUsage:
// free (in no placement), held whole (HostUsage::devices without a SharedGpu entry), holding
// time-slicing/MPS shares (SharedGpu with mig_slices 0), or holding MIG slices.
//
// MIG geometry is not known here (it lives in sharing/, above this layer): a request for a MIG
// profile carries, per GPU model, the profile's size and allowed starts (GpuRequest::mig_shapes),
// resolved by the caller from the MIG catalog; a GPU of a model without a shape cannot take it.
//
// Everything here is a pure function of its arguments: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placement/placement.h"
#include "placement/request.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::placement {

/// The model name of GPU `d` as requests name it: its PCI name when it has one (hwloc's
/// "GH100 [H100 SXM5 80GB]", or a name set by whoever described the host), else "vvvv:dddd".
std::string GpuModelOf(const topology::PciDevice& d);

/// Whether a GPU whose model is `model` and PCI ids `vendor_id:device_id` is one of `allowed`
/// (empty = any). An entry matches when it equals, ignoring ASCII case, the whole model name,
/// one of its words (split at anything not a letter or digit: "A10" matches "GA102GL [A10]" but
/// not "A100"), or the PCI ids written "vvvv:dddd" in hex.
bool GpuModelMatches(const std::string& model, uint16_t vendor_id, uint16_t device_id,
                     const std::vector<std::string>& allowed);

/// One GPU of a host under a usage, compactly (what policies score).
struct GpuSlot {
  int index = 0;            ///< among the host's accelerators, PCI order
  /// 1000 free; 0 held whole; else 1000 - the thousandths its shares (or MIG slices) hold
  int free_milli = 1000;
  uint32_t mig_slices = 0;  ///< memory slices held by MIG instances (bit i = slice i)
  bool whole_held = false;  ///< held whole (a passthrough device or a whole-GPU placement)
  int node = -1;            ///< host NUMA node OS id (-1 unknown)
};

/// The host's accelerators in PCI order (pointers into `host`).
std::vector<const topology::PciDevice*> AcceleratorsOf(const topology::HostTopology& host);

/// The state of each of `accelerators` (AcceleratorsOf(host)) under `usage`, in the same order.
std::vector<GpuSlot> GpuSlotsOf(const std::vector<const topology::PciDevice*>& accelerators,
                                const HostUsage& usage);

/// One way to give a GpuRequest on a host: which GPUs (indexes into the host's accelerators) and,
/// for a MIG slice, where.
struct GpuChoice {
  std::vector<int> gpus;  ///< accelerator indexes, ascending
  int mig_start = -1;     ///< first memory slice for a MIG slice; -1 otherwise
  int mig_slices = 0;     ///< memory slices of the MIG slice; 0 otherwise
  int mig_gpu_slices = 0; ///< memory slices of the GPU (for the slice's thousandths)
};

/// Every distinct way to give `ask` on the GPUs `slots` (of `accelerators`):
///   - a share: each GPU of an allowed model with free_milli >= milli that holds no MIG slice
///     and is not held whole (a free GPU or one already shared);
///   - a MIG slice: each (GPU, start) of an allowed model with a shape where the slices are free
///     and the GPU holds no time-slicing share and is not held whole;
///   - count whole GPUs: one choice, the free GPUs of allowed models packed on the fewest NUMA
///     nodes (the nodes with the most such GPUs first, then PCI order), so a multi-GPU job's
///     GPUs share a node (and its PCIe/NVLink neighbourhood) when they can.
/// Empty when none fits; `why` (when not null) says why then.
std::vector<GpuChoice> GpuChoices(const std::vector<const topology::PciDevice*>& accelerators,
                                  const std::vector<GpuSlot>& slots, const GpuRequest& ask, std::string* why);

/// The GPU placements of `choice` for `ask` on `accelerators` (models, addresses, thousandths).
std::vector<GpuPlacement> GpuPlacementsOf(const std::vector<const topology::PciDevice*>& accelerators,
                                          const GpuChoice& choice, const GpuRequest& ask);

/// The thousandths of a GPU one MIG instance of `memory_slices` of `gpu_slices` stands for
/// (rounded down, at least 1): what it counts in allocation figures.
int MigMilli(int memory_slices, int gpu_slices);

}  // namespace accel::placement
