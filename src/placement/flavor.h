// Flavor: a Nova flavor (name, vCPUs, RAM, extra specs) and its translation into a
// PlacementRequest, following Nova's numa_get_constraints for a flavor without an image.
//
// Flavors are read from YAML or JSON in two shapes:
//   - accel's own:  {name: gpu-1g, vcpus: 16, ram: 131072, extra_specs: {hw:cpu_policy: dedicated}}
//   - what `openstack flavor show -f json` prints, as is: extra specs under "properties", either
//     an object or (older clients) a string "hw:cpu_policy='dedicated', hw:mem_page_size='1GB'";
//     disk, id, swap, rxtx_factor, "OS-FLV-EXT-DATA:ephemeral", ... are ignored.
// A file may also hold a list of flavors, {"flavors": [...]} (the compute API) or
// {"flavor": {...}}. `ram` is in MiB (Nova's memory_mb). Plain data and free functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "placement/pci_alias.h"
#include "placement/request.h"

namespace accel::placement {

/// The most vCPUs a flavor may ask for: CpuSet's range, far above any hypervisor's limit.
inline constexpr int kMaxFlavorVcpus = 65536;

struct Flavor {
  std::string name;      ///< flavor name
  int vcpus = 0;         ///< guest vCPUs, >= 1
  uint64_t ram_mib = 0;  ///< guest memory in MiB, >= 1
  /// Extra specs, sorted by key when read from an object (nlohmann::json keeps objects sorted),
  /// in written order when read from the properties string; values are text even when the file
  /// wrote a number (hw:numa_nodes: 2 -> "2", true -> "true").
  std::vector<std::pair<std::string, std::string>> extra_specs;
};

/// Reads every flavor in the file at `path` (one flavor or a list). Returns them in file order;
/// throws InputError naming the file and the field ("flavors.yaml: [1].vcpus: ...") when the
/// file is unreadable, malformed, empty, or two flavors share a name. Extra specs are only
/// checked for shape here; BuildRequest checks their meaning.
std::vector<Flavor> LoadFlavors(const std::string& path);

/// Reads the file at `path`, which must hold exactly one flavor (a list of one is fine).
/// Throws InputError as LoadFlavors, and when the file holds several flavors.
Flavor LoadFlavor(const std::string& path);

/// LoadFlavors for text in memory; `where` names it in errors.
std::vector<Flavor> ParseFlavorText(std::string_view text, const std::string& where);

/// LoadFlavors for an already parsed document.
std::vector<Flavor> ParseFlavors(const nlohmann::json& doc, const std::string& where);

/// Parses the string form of "properties" that older openstack clients print:
/// "hw:cpu_policy='dedicated', hw:mem_page_size='1GB'" (values may hold commas).
/// Returns the pairs in order; throws InputError(where, field, ...) when it is not that form.
std::vector<std::pair<std::string, std::string>> ParseOpenStackProperties(std::string_view text,
                                                                          const std::string& where,
                                                                          const std::string& field);

/// Checks the flavor's extra specs as Nova's numa_get_constraints (and its API validators,
/// pci_passthrough:alias parsing and guest CPU topology) would for this flavor with no image, and
/// returns what it asks of a host. `aliases` resolves pci_passthrough:alias. `where` names the
/// flavor in errors (e.g. "flavors.yaml (flavor gpu-1g)").
/// Throws InputError naming the extra spec ("extra_specs.hw:numa_nodes"), what is wrong as Nova
/// words it, and the Nova exception (e.g. "(Nova: ImageNUMATopologyAsymmetric)").
/// hw:* keys accel does not know are refused with the supported list; other namespaces
/// (quota:, aggregate_instance_extra_specs:, trait:, resources:, hw_rng:, ...) are kept in
/// extra_specs and otherwise ignored.
/// Where Nova would silently ignore something that changes what the flavor means, accel refuses
/// it instead: hw:numa_cpus.N / hw:numa_mem.N without a NUMA topology or with N >= hw:numa_nodes,
/// "HW:"-cased or image-style (hw_cpu_policy) keys, empty hw: values, a guest node without vCPUs,
/// a realtime mask leaving a mixed guest no shared vCPU, and hw:pmem (vPMEM, not supported).
/// As in Nova, "2M" is not a page size: strutils wants "2MB" (see flavor_page_size.h).
/// guest_topology holds Nova's best sockets/cores/threads (flavor_cpu_topology.h) when any
/// hw:cpu_sockets/cores/threads/max_* key is set, and zeros (hypervisor default) otherwise.
PlacementRequest BuildRequest(const Flavor& flavor, const PciAliasTable& aliases, const std::string& where);

}  // namespace accel::placement
