// ResourceSlices: the resource.k8s.io/v1 objects that publish an Inventory's devices for the
// scheduler — one pool per node (named after the node), split into slices the API server
// accepts.
//
// Limits kept (resource.k8s.io/v1 ResourceSliceSpec): a slice holds either devices or
// sharedCounters, never both; ≤ 128 devices per slice, ≤ 64 when any of its devices consumes
// counters; ≤ 8 counter sets per slice. Slices with counter sets come first, then device
// slices in inventory order (a GPU and its MIG devices stay together where they fit). Every
// slice carries the same pool generation and the pool's slice count, so the scheduler only
// uses a complete, current pool: the publisher bumps the generation whenever anything changes
// and deletes slices of older generations.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/inventory.h"

namespace accel::dra {

/// resource.k8s.io/v1 limits the builder keeps.
inline constexpr size_t kMaxDevicesPerSlice = 128;
inline constexpr size_t kMaxDevicesPerSliceWithCounters = 64;
inline constexpr size_t kMaxCounterSetsPerSlice = 8;

/// Label on every slice accel publishes, with value "accel": lets the publisher list (and
/// delete) exactly its own slices with a label selector.
inline constexpr const char* kSliceManagedByLabel = "app.kubernetes.io/managed-by";

/// The ResourceSlice objects of `inventory`'s pool at `generation` (≥ 0), each a complete
/// object (apiVersion resource.k8s.io/v1, kind ResourceSlice, metadata.name, metadata.labels,
/// spec.driver, spec.nodeName, spec.pool{name, generation, resourceSliceCount}, and either
/// spec.devices or spec.sharedCounters). Names are ResourceSliceName(node, driver, n) for
/// n = 0, 1, ...: the same inventory gives the same objects. An inventory without devices gives
/// one slice with no devices (the pool still exists, so a stale one is replaced).
/// Device JSON: name; attributes as {"int"|"bool"|"string"|"version": value}; capacity as
/// {"value": quantity}; consumesCounters as [{counterSet, counters{name: {value}}}]; empty maps
/// left out.
std::vector<nlohmann::json> BuildResourceSlices(const Inventory& inventory, int64_t generation);

/// One device as it appears in a slice's spec.devices (see above).
nlohmann::json DeviceJson(const DraDevice& device);

/// `slices` as a multi-document YAML stream ("---" between documents), keys in the API's
/// order (apiVersion, kind, metadata, spec), for `accel dra slices -o yaml` and docs.
std::string ResourceSlicesYaml(const std::vector<nlohmann::json>& slices);

/// `slices` as a v1 ResourceSliceList JSON object (for `-o json`).
nlohmann::json ResourceSliceList(const std::vector<nlohmann::json>& slices);

}  // namespace accel::dra
